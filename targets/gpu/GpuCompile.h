//===- GpuCompile.h - the backend-neutral half of a GPU compile -*- C++ -*-===//
//
// What every GPU backend does to a kernel before its own lowering: a copy
// through the reference lowering and bufferization every target shares,
// the GPU layer's preparation (recurrences unrolled, elementwise chains
// fused, small reductions split, loops peeled for register tiles), the
// schedule (tuned knobs, the analytical model's pick, or the fixed
// default), and the mapping onto gpu.launch with outlined gpu.modules.
// Vulkan lowers the result to SPIR-V, CUDA to NVVM and PTX. Also the
// schedule JSON every backend's kernels carry (GpuTarget.h has what the
// GPU targets share at the Target interface).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_GPU_GPUCOMPILE_H
#define IGN_TARGETS_GPU_GPUCOMPILE_H

#include "GpuMapping.h"

#include "ign/Search/ScheduleSpace.h"

#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/PatternMatch.h"

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ign::gpu {

/// A chip as the shared half sees it: its limits, and its public numbers
/// where it has them (then untuned compiles take the model's pick and
/// dispatches get predicted times).
struct GpuChip {
  ChipLimits limits;
  ChipNumbers numbers;
  /// A backend's own emission of the ops its chip has special units for
  /// (CUDA's tensor cores): given the bufferized kernel, replaces such ops
  /// by gpu.launch ops of its own, which the mapping leaves as they are.
  /// Empty: every op goes through the mapping script.
  std::function<OwnLaunches(mlir::func::FuncOp)> ownLaunches;
  /// Whether an untuned compile sends the contractions the backend left to
  /// the layer's staged launch (StagedGemm.h); the kStagedGemm knob
  /// decides where a kernel's knobs have it.
  bool stagedGemms = false;
  /// What tuned records made before the kStagedGemm knob (2026-12-05) were
  /// measured with: CUDA staged at fp32 already, Vulkan did not.
  bool stagedGemmsBefore = false;
  /// The same for reductions with a workgroup per output
  /// (GroupReduction.h; kGroupReduce).
  bool groupReductions = false;
  /// Whether the chip's subgroups reduce (gpu.subgroup_reduce: SPIR-V's
  /// group arithmetic, CUDA's shuffles): a group reduction then combines
  /// each subgroup's partials with one instead of halving them in
  /// workgroup memory, a barrier a step.
  bool subgroupReductions = false;
};

/// A kernel mapped onto the GPU: `module` holds `kernel` (constants,
/// allocations and gpu.launch_func ops) and the outlined gpu.modules.
struct MappedKernel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp kernel;
  GpuSchedule schedule;
  std::vector<DispatchNote> notes; // one per op (dispatch), in order
  /// Each argument's type after bufferization (read before a backend's
  /// lowering rewrites the function).
  std::vector<mlir::Type> argumentTypes;
};

/// Maps a copy of `kernel` (ign dialect; left unchanged) for `chip` with
/// `tuned`'s knobs, or, untuned, the model's pick (the fixed default on a
/// chip without numbers). With `replay`, appends the bufferized kernel and
/// its mapping script as `ign-opt --transform-interpreter` reads them
/// (inputs `// -----` separated). Failure with `why` set.
mlir::FailureOr<MappedKernel> mapKernelCopy(mlir::func::FuncOp kernel,
                                            const search::Schedule *tuned,
                                            const GpuChip &chip,
                                            std::string &why,
                                            std::string *replay = nullptr);

/// The knobs an untuned compile of `kernel` uses on `chip`: the analytical
/// model's pick where the chip has numbers (modelDefaultSchedule), else
/// the fixed default. The search starts from the same knobs.
search::Schedule defaultKnobs(mlir::func::FuncOp kernel, const GpuChip &chip);

/// Math functions no GPU backend has an instruction for, expanded into ones
/// they have: tan, the hyperbolic functions and their inverses (through
/// exp and log), and powers with an integer exponent (of a float, or
/// integers: math.ipowi by squaring).
void populateGpuMathExpansions(mlir::RewritePatternSet &patterns);

/// powf of a negative base and a non-integer exponent is NaN, as ONNX's
/// Pow: every math.powf in `gpuModule` is wrapped in a select that says so
/// (GLSL's Pow leaves it undefined and MathToSPIRV returns |x|^y; MLIR's
/// powf expansion returns -|x|^y).
void markNegativePowNaN(mlir::Operation *gpuModule);

/// One dispatch's launch: workgroups (blocks) and their size.
struct LaunchShape {
  std::array<int64_t, 3> groups{1, 1, 1}, local{1, 1, 1};
};

/// A backend's own figures of one dispatch (CUDA: ptxas's registers and
/// spills), by name.
using DispatchFields = std::map<std::string, int64_t>;

/// A kernel's schedule as `ignc inspect` shows it, as JSON text: knobs,
/// and per dispatch its grid and size, why it runs as one thread, its
/// register tile's outputs per thread, its staged shared memory, the
/// model's predicted time (one note per dispatch, in order) and
/// `fields[i]` where given; the kernel's shared_bytes is the largest of
/// `sharedBytes` and the dispatches'; `predicted` receives the predicted
/// times' sum.
std::string scheduleJson(const GpuSchedule &schedule,
                         const std::vector<LaunchShape> &launches,
                         const std::vector<DispatchNote> &notes,
                         int64_t sharedBytes, std::optional<double> &predicted,
                         const std::vector<DispatchFields> &fields = {});

} // namespace ign::gpu

#endif // IGN_TARGETS_GPU_GPUCOMPILE_H
