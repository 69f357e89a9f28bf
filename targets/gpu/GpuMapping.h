//===- GpuMapping.h - a bufferized kernel onto GPU workgroups ---*- C++ -*-===//
//
// The target-neutral half of every GPU backend: a kernel after the
// reference lowering and bufferization is mapped by a Transform-dialect
// script (each linalg op tiled to workgroups and threads, scf.forall mapped
// to gpu.launch) and its launches outlined into gpu.modules. Vulkan lowers
// the result to SPIR-V; CUDA and ROCm will lower the same IR to NVVM and
// ROCDL.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_GPU_GPUMAPPING_H
#define IGN_TARGETS_GPU_GPUMAPPING_H

#include "GpuCostModel.h"
#include "GpuSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"

#include "llvm/ADT/MapVector.h"

namespace ign::gpu {

/// The dialects, tiling interfaces and Transform-dialect extensions a
/// mapping script uses (ign-opt registers them to replay one).
void registerGpuMappingDialects(mlir::DialectRegistry &registry);

/// Loads the dialects and registers the interfaces and Transform-dialect
/// extensions the GPU mapping needs.
void prepareGpuContext(mlir::MLIRContext *ctx);

/// Static tensor.reshape ops of `kernel` (after the reference lowering)
/// become collapse_shape/expand_shape views: SPIR-V has no lowering of
/// memref.reshape, and views fold into the kernels' loads and stores.
void rewriteReshapesAsViews(mlir::func::FuncOp kernel);

/// Fully unrolls the loops of `kernel` (on tensors, after the reference
/// lowering) whose bodies hold linalg ops, such as a recurrent cell's loop
/// over time steps: each step's ops become dispatches of their own. Fails,
/// with `why`, for a loop without a constant trip count or one that would
/// unroll to more than `maxOps` linalg ops.
mlir::LogicalResult unrollRecurrences(mlir::func::FuncOp kernel, int64_t maxOps,
                                      std::string &why);

/// Fuses elementwise producers into their only consumer (on tensors, after
/// the reference lowering): one dispatch and no scratch buffer for a chain
/// of elementwise ops.
void fuseElementwiseChains(mlir::func::FuncOp kernel);

/// What `ignc inspect` says of one dispatch beyond its grid.
struct DispatchNote {
  std::string oneThread;       // why it runs as one thread, or ""
  int64_t registerOutputs = 0; // outputs a thread keeps in registers
  /// The analytical model's time (GpuCostModel.h), where the chip has
  /// numbers; with its bound ("issue", "memory", "launch").
  std::optional<double> predictedMs;
  std::string bound;
  /// What a backend's own launch computes on the chip's matrix units
  /// ("mma.sync.m16n8k16 f16, 64x64x32 blocks"), or "".
  std::string matrixUnits;
  /// Bytes of workgroup (shared) memory a block of a backend's own launch
  /// stages its tiles in; 0 for the mapping script's launches.
  int64_t sharedBytes = 0;
};

/// Launches a backend built itself before the mapping (OwnLaunches in
/// GpuCompile.h), each with its note.
using OwnLaunches = llvm::MapVector<mlir::Operation *, DispatchNote>;

/// A reduction with few outputs gives a GPU few threads (a sum to one
/// element runs in one): on tensors, before bufferization, each op with
/// one reduction loop of at least kSplitMinLength iterations and fewer than
/// kSplitMaxOutputs outputs is split into partial reductions over chunks
/// (a new parallel loop, innermost: up to kSplitMaxParts chunks of at
/// least kSplitMinChunk) and an op combining the partials
/// (linalg::splitReduction; the combiner must be recognized).
inline constexpr int64_t kSplitMinLength = 1024;
inline constexpr int64_t kSplitMaxOutputs = 256;
inline constexpr int64_t kSplitMaxParts = 64;
inline constexpr int64_t kSplitMinChunk = 64;
void splitSmallReductions(mlir::func::FuncOp kernel);

/// Register tiles need a thread's tile to divide its loops: an op with a
/// reduction whose x or y loop (GpuSchedule.h, mappedLoops) is not a
/// multiple of kPeelMultiple is split (on buffers, after bufferization)
/// into the part such tiles divide and the rest, one dispatch each: a
/// 197-row matmul becomes 192 rows and 5. Only ops of at least
/// kPeelMinIterations iterations (a dispatch costs more than small ones
/// gain), and only where the rest is the smaller part.
inline constexpr int64_t kPeelMultiple = 8;
inline constexpr int64_t kPeelMinIterations = int64_t(1) << 20;
void peelForRegisterTiles(mlir::func::FuncOp kernel);

/// The Transform-dialect script that maps `kernel` (bufferized) under
/// `schedule`; tags each of its linalg ops with `ign.gpu_op` for the
/// script to match. Empty, with `why` set, when an op has no mapping.
/// `notes` receives a note per op (one dispatch each, in order), with the
/// model's prediction where `numbers` is given; a gpu.launch already in
/// `kernel` is a dispatch too, noted as `own` says.
std::string buildTransformScript(mlir::func::FuncOp kernel,
                                 const GpuSchedule &schedule,
                                 const ChipLimits &limits, std::string &why,
                                 std::vector<DispatchNote> &notes,
                                 const ChipNumbers *numbers = nullptr,
                                 const OwnLaunches *own = nullptr);

/// Applies `script` to `module` (holding `kernel`), then lowers the
/// launches' bodies to loops and outlines them: `kernel` is left with
/// constants, allocations (scratch buffers) and gpu.launch_func ops.
/// Failure with `why` set (diagnostics are captured, not printed).
mlir::LogicalResult mapKernelToGpu(mlir::ModuleOp module,
                                   mlir::func::FuncOp kernel,
                                   llvm::StringRef script, std::string &why);

} // namespace ign::gpu

#endif // IGN_TARGETS_GPU_GPUMAPPING_H
