//===- Pipeline.h - the forward compile pipeline of every target -*- C++
//-*-===//
//
// import -> graph pipeline (the target's policy) -> tasks -> placement (which
// target runs which kernel: the selected device target where it claims a
// kernel, the host elsewhere) -> per-target kernel compile -> bundle
// contents. Each stage hands the next a value; no stage names a target.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGET_PIPELINE_H
#define IGN_TARGET_PIPELINE_H

#include "ign/Target/Target.h"

#include <functional>
#include <vector>

namespace ign::target {

/// The tuned schedule of a kernel placed on `target`, if any.
using ScheduleLookup = std::function<const search::Schedule *(
    const Target &target, const KernelSummary &kernel)>;

struct PipelineOptions {
  CompileOptions compile;
  ScheduleLookup lookup; // null: default schedules
  /// The module's kernels are already formed and outlined (a task module).
  bool kernelsFormed = false;
};

/// The configuration `where` compiles with when `selected` was asked for
/// with `config`: the same, or (the host running what a device does not
/// claim) its default chip with the same schedule and fusion.
TargetConfig configFor(const Target &where, const Target &selected,
                       const TargetConfig &config);

/// Which target runs `kernel` when compiling for `selected`.
const Target &placeKernel(const Target &selected, mlir::func::FuncOp kernel,
                          const TargetConfig &config);

/// Forms the kernels of `module` (consumed) and describes them; nothing
/// is lowered (--emit=kernels).
mlir::FailureOr<std::vector<KernelSummary>>
planKernels(mlir::ModuleOp module, const Target &target,
            const TargetConfig &config);

/// A tuning task and the target the placement gives it.
struct PlacedTask {
  TaskModule task;
  const Target *target = nullptr;
};

/// Forms the kernels of `module` (consumed): one task per distinct kernel,
/// in launch order.
mlir::FailureOr<std::vector<PlacedTask>>
extractTasks(mlir::ModuleOp module, const Target &target,
             const TargetConfig &config);

/// Compiles `module` (ign dialect as imported, consumed) for `target`: the
/// contents of a bundle but for the model's provenance fields. Weights
/// point into the module's resource blobs, so it must outlive the result.
mlir::FailureOr<bundle::BundleContents>
compileModule(mlir::ModuleOp module, const Target &target,
              const PipelineOptions &options);

} // namespace ign::target

#endif // IGN_TARGET_PIPELINE_H
