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
#include "ign/Search/ScheduleSpace.h"
#include "ign/Transforms/KernelTasks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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

/// The search agent's view of an array kernel: the knobs of SystolicKnobs.h.
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

/// The knobs of `mapping` (the inverse of mappingFromSchedule), when it is
/// one of the space's points.
std::optional<search::Schedule> scheduleOfMapping(const ArrayConfig &machine,
                                                  const ArrayKernel &kernel,
                                                  const GemmMapping &mapping);

/// A kernel compiled for the array: the driver's descriptor (JSON), the
/// device blob (program, then constants) and the schedule the bundle
/// records (mapping, cycles, applied knobs).
struct CompiledArrayKernel {
  std::string deviceJson, blob, scheduleJson;
};

/// Maps `kernel` onto `machine`: with `tuned` (the database's knobs) when
/// that mapping still builds and passes the check, else by tuneGemmMapping
/// (analytical ranking, cycle-level measurement, checked). nullopt when the
/// array cannot run it after all; `log` receives one line per kernel.
std::optional<CompiledArrayKernel>
compileArrayKernel(const ArrayConfig &machine, mlir::func::FuncOp kernel,
                   const search::Schedule *tuned,
                   const std::function<void(const std::string &)> &log);

/// Registers the systolic target (targets/CMakeLists.txt calls it).
void registerSystolicTarget();

} // namespace ign::systolic

#endif
