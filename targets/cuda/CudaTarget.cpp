//===- CudaTarget.cpp - NVIDIA GPUs as an ignc target ---------------------===//
//
// A device target: `--target=sm80|sm86|sm89|sm90`, or `--target=cuda
// --chip=a100|...`. It claims the kernels whose tensors the CUDA kernels
// can store, maps each through the shared GPU layer (targets/gpu), emits
// PTX and, where the toolkit is here, a cubin; a kernel with no mapping is
// declined and runs on the host. Kernels run through libignrt's CUDA
// driver (runtime/). Tuning measures candidates on this machine's GPU
// (--chip=device), and ranks them by the analytical model for a preset
// (records say *predicted*).
//
//===----------------------------------------------------------------------===//

#include "CudaChips.h"
#include "CudaCompiler.h"
#include "CudaDevice.h"
#include "Ptxas.h"

#include "GpuTarget.h"

#include "ign/Target/TargetRegistry.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

namespace ign::cuda {

namespace {

/// The chip of a configuration the registry has already checked.
CudaChip chipOf(const target::TargetConfig &config) {
  std::string why;
  std::optional<CudaChip> chip = cudaChip(config.chip, why);
  return chip ? *chip : CudaChip();
}

/// The model's time of `kernel` under `s`, compiled and assembled as a
/// bundle would be; a candidate ptxas spills for is refused.
mlir::FailureOr<std::optional<double>>
predictCandidate(mlir::func::FuncOp kernel, const search::Schedule &s,
                 const CudaChip &chip, const std::string &precision,
                 std::string &why) {
  mlir::FailureOr<CompiledKernel> compiled =
      compileCudaKernel(kernel, &s, chip, precision, why);
  if (failed(compiled))
    return mlir::failure();
  if (compiled->spillBytes > 0) {
    why = "ptxas spills " + std::to_string(compiled->spillBytes) +
          " bytes to local memory";
    return mlir::failure();
  }
  return compiled->predictedMs;
}

/// Says once per process that bundles hold PTX only.
void noteMissingToolkit() {
  static bool said = false;
  if (said || cudaToolkit())
    return;
  said = true;
  llvm::errs() << "ignc: note: no CUDA toolkit (ptxas) here: the CUDA kernels "
                  "are PTX only, compiled by the driver when the bundle "
                  "loads; their registers and spills are unknown (set "
                  "IGN_CUDA_PATH to a toolkit)\n";
}

class CudaTarget : public target::Target {
public:
  std::string name() const override { return "cuda"; }
  std::string description() const override {
    return "NVIDIA GPUs through CUDA (PTX, cubin with ptxas); --target=sm80, "
           "sm86, sm89, sm90 or --chip " +
           llvm::join(cudaChipNames(), ", ");
  }
  std::optional<std::string>
  chipForSpelling(llvm::StringRef spelling) const override {
    return chipForArch(spelling);
  }
  std::vector<target::ChipInfo> chips() const override;
  std::string defaultChip() const override { return "a100"; }
  std::string checkChip(const std::string &chip) const override {
    std::string why;
    return cudaChip(chip, why) ? "" : why;
  }
  std::string checkPrecision(const std::string &precision) const override {
    return checkCudaPrecision(precision);
  }
  std::string fingerprint(const target::TargetConfig &config) const override {
    CudaChip chip = chipOf(config);
    // What a schedule's cubin and its measurements depend on: the chip,
    // ptxas being here, the GPU that measured it and the precision.
    std::string text = chip.arch() + chip.ptxFeature() + "|" +
                       (cudaToolkit() ? cudaToolkit()->ptxas : "") + "|" +
                       chip.deviceName + "|" + config.precision +
                       "|" IGN_VERSION_STRING;
    return "cuda/" + config.chip + "/" +
           llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true);
  }
  bool claims(mlir::func::FuncOp kernel, const target::TargetConfig &,
              std::string &why) const override {
    return hasCudaTypes(kernel, why);
  }
  std::string placementPhrase() const override { return "on the GPU"; }
  std::string lowLevelIRName() const override { return "ptx"; }
  mlir::LogicalResult
  compileKernels(mlir::ModuleOp module,
                 llvm::MutableArrayRef<target::PlacedKernel> kernels,
                 const target::CompileOptions &options,
                 bundle::BundleContents &contents) const override;
  mlir::FailureOr<target::TuningTask>
  tuningTask(const target::TaskModule &task, const target::TargetConfig &config,
             const target::RunnerContext &context) const override;
  std::unique_ptr<target::Runner>
  createRunner(const std::vector<const target::TaskModule *> &tasks,
               const target::TargetConfig &config,
               const target::RunnerContext &context) const override;
  void registerRuntimeDriver() const override { registerCudaDevice(); }
};

std::vector<target::ChipInfo> CudaTarget::chips() const {
  std::vector<target::ChipInfo> out;
  // "device" only where this machine has a GPU.
  for (const std::string &name : cudaChipNames()) {
    std::string why;
    std::optional<CudaChip> probed = cudaChip(name, why);
    if (!probed)
      continue;
    const CudaChip &chip = *probed;
    target::ChipInfo c;
    c.name = chip.name;
    c.summary = chip.summary;
    c.cores = chip.gpu.numbers.computeUnits;
    c.lanes = chip.gpu.limits.subgroupSize;
    c.clockMHz = chip.gpu.numbers.clockMHz;
    c.peakGflops = chip.gpu.numbers.peakGflops;
    c.bandwidthGBs = chip.gpu.numbers.bandwidthGBs;
    c.memoryBytes = {{"shared per SM", chip.sharedPerSMBytes},
                     {"registers per SM", chip.registersPerSM * 4},
                     {"device", chip.memoryBytes}};
    out.push_back(std::move(c));
  }
  return out;
}

mlir::LogicalResult
CudaTarget::compileKernels(mlir::ModuleOp module,
                           llvm::MutableArrayRef<target::PlacedKernel> kernels,
                           const target::CompileOptions &options,
                           bundle::BundleContents &contents) const {
  std::string why;
  std::optional<CudaChip> chip = cudaChip(options.config.chip, why);
  if (!chip)
    return module.emitError(why);
  contents.chip = options.config.chip;
  if (!kernels.empty())
    noteMissingToolkit();
  gpu::placeKernels(kernels, options, name(),
                    [&](target::PlacedKernel &k, std::string &why)
                        -> mlir::FailureOr<gpu::DeviceKernel> {
                      auto c = compileCudaKernel(k.kernel, k.tuned, *chip,
                                                 options.config.precision, why,
                                                 options.lowLevelIR);
                      if (failed(c))
                        return mlir::failure();
                      return gpu::DeviceKernel(std::move(*c));
                    });
  return mlir::success();
}

std::unique_ptr<target::Runner>
CudaTarget::createRunner(const std::vector<const target::TaskModule *> &tasks,
                         const target::TargetConfig &config,
                         const target::RunnerContext &context) const {
  CudaChip chip = chipOf(config);
  if (chip.runsHere) {
    // This machine's GPU measures: the host's worker processes build for
    // this target (the context's target arguments name it) and run the
    // candidates there, checked by the one validator; those on the tensor
    // cores at f16's thresholds (bf16's are the same; the host's own bf16
    // rule asks for a CPU with AVX512-BF16).
    const target::Target &host = *target::fallbackTarget();
    std::string checkedAs = config.precision == "fp32" ? "fp32" : "fp16";
    return gpu::onWholeChip(
        host.createRunner(
            tasks,
            {host.defaultChip(), config.schedule, config.fuse, checkedAs},
            context),
        chip.gpu.numbers.computeUnits);
  }
  // A preset: the analytical model ranks what cannot be measured.
  return gpu::predictedRunner(
      tasks, chip.gpu.numbers.computeUnits,
      [chip, precision = config.precision](
          mlir::func::FuncOp k, const search::Schedule &s, std::string &why) {
        return predictCandidate(k, s, chip, precision, why);
      });
}

mlir::FailureOr<target::TuningTask>
CudaTarget::tuningTask(const target::TaskModule &task,
                       const target::TargetConfig &config,
                       const target::RunnerContext &) const {
  CudaChip chip = chipOf(config);
  return gpu::tuningTask(task, chip.gpu.limits, [&](mlir::func::FuncOp kernel) {
    return defaultCudaKnobs(kernel, chip, config.precision);
  });
}

} // namespace

void registerCudaTarget() {
  target::registerTarget(std::make_unique<CudaTarget>());
}

} // namespace ign::cuda
