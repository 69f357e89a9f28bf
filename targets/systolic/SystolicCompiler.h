//===- SystolicCompiler.h - ign kernels onto the systolic array -*- C++ -*-===//
//
// The compiler side of --target=systolic: decides which of a model's fused
// kernels the array runs (a matrix product, from a MatMul, Gemm or a
// convolution's im2col + matmul, with a bias and/or residual add and a ReLU
// epilogue, in f32), describes each as one GEMM on the array, picks its
// mapping by simulated cycles and emits the ISA program. Every other kernel
// stays on the host; the bundle's manifest says which ran where.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_SYSTOLIC_SYSTOLICCOMPILER_H
#define IGN_TARGETS_SYSTOLIC_SYSTOLICCOMPILER_H

#include "Config.h"
#include "GemmMapping.h"
#include "HostCompiler.h"

#include <optional>
#include <string>

namespace ign::systolic {

/// A kernel as the array runs it (docs/systolic.md, "The compiler target").
struct ArrayKernel {
  /// weight_lhs: W[M,K] x X[B,K,P] -> [B,M,P] (a convolution: M filters,
  /// P pixels); the array computes C = X_b^T W^T, [P x M], per batch item.
  /// weight_rhs: X[...,M,K] x W[K,N] -> [...,M,N]; one GEMM over all rows.
  enum class Form { WeightLhs, WeightRhs } form = Form::WeightRhs;
  int64_t batch = 1, M = 0, K = 0, N = 0; // of the model's product
  /// Where an operand comes from: a kernel argument, or a constant of the
  /// kernel (its values stored after the program in the device blob).
  struct Source {
    int arg = -1;
    int64_t offset = -1, count = 0; // floats into `constants`
    bool valid() const { return arg >= 0 || offset >= 0; }
  };
  Source x, w, bias, residual;
  std::vector<float> constants;
  bool transW = false; // Gemm transB: W is [N, K]
  struct Im2col {
    int arg = -1;
    ConvGeometry g;
  };
  std::optional<Im2col> im2col; // x is computed from this input
  bool relu = false;
  float clampMax = 0; // Clip(0, max) (ReLU6); 0: none
  /// The array's GEMM per launch of its program, and the launches.
  GemmShape gemm;
  int64_t programRuns = 1;
};

/// Recognizes \p kernel; std::nullopt when the array cannot run it (the
/// reason in \p why).
std::optional<ArrayKernel> matchArrayKernel(mlir::func::FuncOp kernel,
                                            std::string &why);

/// The geometry of an implicit im2col for a kernel that convolves, if it
/// fits MVIN_IM2COL's fields (else the driver stages the im2col matrix).
std::optional<Instr::Im2col> implicitIm2col(const ArrayKernel &kernel);

/// The GEMM buffers (layout, D, ReLU) of an array kernel.
GemmBuffers arrayKernelBuffers(const ArrayConfig &machine,
                               const ArrayKernel &kernel);

/// The search agent's view of an array kernel: knobs `sys.dataflow` (0 OS,
/// 1 WS, 2 IS; those the chip runs), `sys.accumulate`, `sys.chunk_div`
/// (stream chunk = the largest / div), `sys.stream_pct` (scratchpad share
/// of the streamed operand; 0: what the stationary slots leave) and
/// `sys.resident` (the stationary operand loaded once).
/// Illegal: mappings that do not compute the product or do not fit.
/// The defaults are \p heuristic's knobs when it is one of the space's
/// points (what compiling without tuning picks), else WS/accumulate/max.
search::ScheduleSpace
arrayScheduleSpace(const ArrayConfig &machine, const ArrayKernel &kernel,
                   const GemmMapping *heuristic = nullptr);
GemmMapping mappingFromSchedule(const ArrayConfig &machine,
                                const ArrayKernel &kernel,
                                const search::Schedule &schedule);
/// "systolic/<chip>/<hash of the machine description and ignc version>":
/// simulated cycles depend on nothing else.
std::string systolicFingerprint(const ArrayConfig &machine,
                                llvm::StringRef ignVersion);

/// A kernel's tuned schedule, if any (from the tuning database).
using ArrayScheduleLookup =
    std::function<const search::Schedule *(const KernelSummary &)>;

/// The host compiler's offload hook for --target=systolic on \p machine.
/// A kernel with a schedule from \p lookup gets that mapping (checked
/// against the reference once more); the others are mapped with
/// tuneGemmMapping (analytical ranking, cycle-level measurement, checked).
/// \p log receives one line per kernel.
std::function<mlir::FailureOr<std::optional<host::HostOptions::Offloaded>>(
    mlir::func::FuncOp, const KernelSummary *)>
systolicOffload(const ArrayConfig &machine,
                std::function<void(const std::string &)> log,
                ArrayScheduleLookup lookup = nullptr);

} // namespace ign::systolic

#endif
