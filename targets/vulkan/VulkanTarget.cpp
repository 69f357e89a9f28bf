//===- VulkanTarget.cpp - Vulkan / SPIR-V GPUs as an ignc target ----------===//
//
// A device target: it claims the kernels whose tensors the Vulkan kernels
// can store, maps each through the shared GPU layer (targets/gpu) and
// emits SPIR-V; a kernel with no mapping is declined and runs on the host.
// Kernels run through libignrt's Vulkan driver (runtime/), on lavapipe
// here; tuning measures them there with the worker processes and the one
// validator, as on the host.
//
//===----------------------------------------------------------------------===//

#include "VulkanChips.h"
#include "VulkanCompiler.h"
#include "VulkanDevice.h"

#include "GpuTarget.h"

#include "ign/Target/TargetRegistry.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

namespace ign::vulkan {

namespace {

const target::Target &host() { return *target::fallbackTarget(); }

target::TargetConfig hostConfig(const target::TargetConfig &config) {
  return {host().defaultChip(), config.schedule, config.fuse};
}

/// The chip of a configuration the driver has already checked.
VulkanChip chipOf(const target::TargetConfig &config) {
  std::string why;
  std::optional<VulkanChip> chip = vulkanChip(config.chip, why);
  return chip ? *chip : VulkanChip();
}

/// The model's time of `kernel` under `s` on a preset, compiled as a
/// bundle would be (gpu::PredictedRunner's Predict).
mlir::FailureOr<std::optional<double>>
predictOnPreset(mlir::func::FuncOp kernel, const search::Schedule &s,
                const VulkanChip &chip, std::string &why) {
  mlir::FailureOr<CompiledKernel> compiled =
      compileVulkanKernel(kernel, &s, chip, why);
  if (failed(compiled))
    return mlir::failure();
  return compiled->predictedMs;
}

class VulkanTarget : public target::Target {
public:
  std::string name() const override { return "vulkan"; }
  std::string description() const override {
    return "GPUs through Vulkan compute (SPIR-V); --chip " +
           llvm::join(vulkanChipNames(), ", ");
  }
  std::vector<target::ChipInfo> chips() const override;
  std::string defaultChip() const override { return "device"; }
  std::string checkChip(const std::string &chip) const override {
    std::string why;
    return vulkanChip(chip, why) ? "" : why;
  }
  std::optional<target::ChipInfo>
  chipInfo(const std::string &chip) const override;
  std::string fingerprint(const target::TargetConfig &config) const override {
    VulkanChip chip = chipOf(config);
    std::string text = spirvTargetEnv(chip) + "|" + vulkanDeviceName(chip) +
                       "|" IGN_VERSION_STRING;
    return "vulkan/" + config.chip + "/" +
           llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true);
  }
  bool claims(mlir::func::FuncOp kernel, const target::TargetConfig &config,
              std::string &why) const override {
    return hasVulkanTypes(kernel, chipOf(config), why);
  }
  std::string placementPhrase() const override { return "on the GPU"; }
  std::string lowLevelIRName() const override { return "gpu"; }
  mlir::LogicalResult
  compileKernels(mlir::ModuleOp module,
                 llvm::MutableArrayRef<target::PlacedKernel> kernels,
                 const target::CompileOptions &options,
                 bundle::BundleContents &contents) const override;
  std::string tuningRefusal(const target::TargetConfig &config) const override;
  mlir::FailureOr<target::TuningTask>
  tuningTask(const target::TaskModule &task, const target::TargetConfig &config,
             const target::RunnerContext &context) const override;
  std::unique_ptr<target::Runner>
  createRunner(const std::vector<const target::TaskModule *> &tasks,
               const target::TargetConfig &config,
               const target::RunnerContext &context) const override;
  void registerRuntimeDriver() const override { registerVulkanDevice(); }
};

std::optional<target::ChipInfo>
VulkanTarget::chipInfo(const std::string &name) const {
  std::string why;
  std::optional<VulkanChip> chip = vulkanChip(name, why);
  if (!chip)
    return std::nullopt;
  target::ChipInfo c;
  c.name = chip->name;
  c.summary = chip->summary;
  c.cores = chip->computeUnits;
  c.lanes = chip->limits.subgroupSize;
  // A device that runs here is measured: lavapipe's numbers are nominal
  // (for checking the analytical model), not a peak to report against.
  if (!chip->runsHere) {
    c.clockMHz = chip->clockMHz;
    c.peakGflops = chip->peakGflops;
    c.bandwidthGBs = chip->bandwidthGBs;
  }
  c.memoryBytes = {{"shared", chip->limits.sharedMemoryBytes}};
  return c;
}

std::vector<target::ChipInfo> VulkanTarget::chips() const {
  std::vector<target::ChipInfo> out;
  // "device" only where this machine has one.
  for (const std::string &name : vulkanChipNames())
    if (std::optional<target::ChipInfo> c = chipInfo(name))
      out.push_back(std::move(*c));
  return out;
}

mlir::LogicalResult VulkanTarget::compileKernels(
    mlir::ModuleOp module, llvm::MutableArrayRef<target::PlacedKernel> kernels,
    const target::CompileOptions &options,
    bundle::BundleContents &contents) const {
  std::string why;
  std::optional<VulkanChip> chip = vulkanChip(options.config.chip, why);
  if (!chip)
    return module.emitError(why);
  contents.chip = options.config.chip;
  gpu::placeKernels(kernels, options, name(),
                    [&](target::PlacedKernel &k, std::string &why)
                        -> mlir::FailureOr<gpu::DeviceKernel> {
                      auto c = compileVulkanKernel(k.kernel, k.tuned, *chip,
                                                   why, options.lowLevelIR);
                      if (failed(c))
                        return mlir::failure();
                      return gpu::DeviceKernel(std::move(*c));
                    });
  return mlir::success();
}

std::unique_ptr<target::Runner>
VulkanTarget::createRunner(const std::vector<const target::TaskModule *> &tasks,
                           const target::TargetConfig &config,
                           const target::RunnerContext &context) const {
  VulkanChip chip = chipOf(config);
  if (!chip.runsHere) {
    // A preset: the analytical model ranks what cannot be measured.
    return gpu::predictedRunner(
        tasks, chip.computeUnits,
        [chip](mlir::func::FuncOp k, const search::Schedule &s,
               std::string &why) { return predictOnPreset(k, s, chip, why); });
  }
  // The host's worker processes; they build for this target (the
  // context's target arguments name it) and run on the Vulkan device.
  return host().createRunner(tasks, hostConfig(config), context);
}

std::string
VulkanTarget::tuningRefusal(const target::TargetConfig &config) const {
  VulkanChip chip = chipOf(config);
  if (!chip.runsHere && chip.peakGflops > 0)
    return ""; // ranked by the analytical model (PredictedRunner)
  if (!chip.runsHere)
    return "tuning measures on the device: '" + config.chip +
           "' is a preset of another GPU without numbers for the analytical "
           "model (tune with --chip=device on a machine that has it)";
  std::string why;
  VulkanDeviceInfo info;
  if (!probeVulkanDevice(info, why))
    return "tuning measures on the device, and there is none: " + why;
  return "";
}

mlir::FailureOr<target::TuningTask>
VulkanTarget::tuningTask(const target::TaskModule &task,
                         const target::TargetConfig &config,
                         const target::RunnerContext &) const {
  VulkanChip chip = chipOf(config);
  return gpu::tuningTask(task, chip.limits, [&](mlir::func::FuncOp kernel) {
    return defaultVulkanKnobs(kernel, chip);
  });
}

} // namespace

void registerVulkanTarget() {
  target::registerTarget(std::make_unique<VulkanTarget>());
}

} // namespace ign::vulkan
