//===- GpuTarget.h - what the GPU targets share at the Target seam -*- C++ -*-//
//
// Vulkan and CUDA implement the Target interface (ign/Target/Target.h) the
// same way around their own compile of a kernel: each placed kernel is
// compiled and placed on the device or declined with its reason; a tuning
// task is the GPU schedule space from the untuned compile's knobs; a chip
// without a device at hand is tuned by the analytical model, its records
// marked as predictions.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_GPU_GPUTARGET_H
#define IGN_TARGETS_GPU_GPUTARGET_H

#include "GpuSchedule.h"

#include "ign/Search/Runner.h"
#include "ign/Target/Target.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ign::gpu {

/// What a backend's compile of one kernel gives the bundle.
struct DeviceKernel {
  std::string deviceJson;   // the manifest's "device" object
  std::string blob;         // the bytes it indexes
  std::string scheduleJson; // {"kind": "gpu", ...}
  std::string summary;      // one line for -v
};

/// Compiles each of `kernels` with `compile`: placed on device `device`,
/// or declined (the host runs it) with the reason; `options.log` gets a
/// line per kernel.
void placeKernels(llvm::MutableArrayRef<target::PlacedKernel> kernels,
                  const target::CompileOptions &options,
                  const std::string &device,
                  const std::function<mlir::FailureOr<DeviceKernel>(
                      target::PlacedKernel &, std::string &why)> &compile);

/// The tuning task of `task` for a GPU of `limits`: the GPU schedule space,
/// starting from `defaults` (the untuned compile's knobs) of its kernel.
target::TuningTask
tuningTask(const target::TaskModule &task, const ChipLimits &limits,
           const std::function<search::Schedule(mlir::func::FuncOp)> &defaults);

/// Ranks candidates without a device: `predict` compiles one as a bundle
/// would and returns the model's time of its dispatches (nullopt: the chip
/// has no numbers) or failure with `why`. Records are Ok with no runs and
/// say they are predictions (kPredictedMessage).
class PredictedRunner : public search::Runner {
public:
  using Predict = std::function<mlir::FailureOr<std::optional<double>>(
      mlir::func::FuncOp, const search::Schedule &, std::string &)>;
  PredictedRunner(std::vector<mlir::func::FuncOp> kernels, int computeUnits,
                  Predict predict)
      : kernels_(std::move(kernels)), computeUnits_(computeUnits),
        predict_(std::move(predict)) {}

  std::vector<search::TuningRecord>
  run(size_t task, const std::vector<search::Schedule> &schedules) override;
  /// The whole chip runs each candidate (the report's peak is the chip's).
  int threads() const override { return computeUnits_; }
  bool predicts() const override { return true; }

private:
  std::vector<mlir::func::FuncOp> kernels_;
  int computeUnits_;
  Predict predict_;
};

/// A PredictedRunner over the kernels of `tasks`; null when a task module
/// lacks its kernel.
std::unique_ptr<search::Runner>
predictedRunner(const std::vector<const target::TaskModule *> &tasks,
                int64_t computeUnits, PredictedRunner::Predict predict);

/// `inner` (the host's worker runner, measuring on this machine's GPU),
/// reporting the whole chip of `computeUnits` as what each candidate ran
/// on (the report's peak is the chip's, not the host threads').
std::unique_ptr<search::Runner>
onWholeChip(std::unique_ptr<search::Runner> inner, int64_t computeUnits);

/// What a predicted record says of itself (its message).
inline constexpr const char *kPredictedMessage =
    "predicted by the analytical GPU model (targets/gpu/GpuCostModel.h); "
    "not run";

} // namespace ign::gpu

#endif // IGN_TARGETS_GPU_GPUTARGET_H
