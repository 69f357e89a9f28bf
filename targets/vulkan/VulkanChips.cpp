//===- VulkanChips.cpp - the chips --target=vulkan compiles for -----------===//
//
// Preset numbers are the vendors' public figures (fp32 peak with FMA at
// boost clock, memory bandwidth) and the limits their Vulkan drivers
// report; lavapipe's were read on these machines (../shared/gpu-notes.md).
//
//===----------------------------------------------------------------------===//

#include "VulkanChips.h"

#include "VulkanDevice.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <thread>

namespace ign::vulkan {

namespace {

VulkanChip preset(std::string name, std::string summary, bool float64,
                  int64_t subgroup, int64_t invocations, int64_t shared,
                  int64_t buffers, int64_t units, double mhz, double gflops,
                  double gbs) {
  VulkanChip c;
  c.limits.maxStorageBuffers = buffers;
  c.float64 = float64;
  c.name = std::move(name);
  c.summary = std::move(summary);
  c.limits.subgroupSize = subgroup;
  c.limits.maxInvocations = invocations;
  c.limits.maxWorkgroupSize = {invocations, invocations, 64};
  c.limits.sharedMemoryBytes = shared;
  c.computeUnits = units;
  c.clockMHz = mhz;
  c.peakGflops = gflops;
  c.bandwidthGBs = gbs;
  return c;
}

std::vector<VulkanChip> presets() {
  // Storage buffers per stage: the mobile presets assume 24 (what Android's
  // baseline profiles guarantee, not a measured driver's figure); desktop
  // drivers report millions.
  std::vector<VulkanChip> chips = {
      preset("mali-g710", "Arm Mali-G710 MC10 (mobile)", false, 16, 512, 32768,
             24, 10, 850, 1088, 51.2),
      preset("adreno-740", "Qualcomm Adreno 740 (mobile)", false, 64, 1024,
             32768, 24, 6, 680, 2089, 67.0),
      preset("rdna3", "AMD RDNA3, Radeon RX 7900 XTX (desktop)", true, 64, 1024,
             65536, 1 << 20, 96, 2500, 61400, 960),
      preset("nvidia-vulkan", "NVIDIA Ada, GeForce RTX 4090 (desktop)", true,
             32, 1024, 49152, 1 << 20, 128, 2520, 82600, 1008),
  };
  // Bytes a bound buffer may span: desktop drivers report 4 GiB - 1; the
  // mobile ones are assumed to give Vulkan's guaranteed 128 MiB (ChipLimits'
  // default), as lavapipe does.
  for (VulkanChip &c : chips)
    if (c.name == "rdna3" || c.name == "nvidia-vulkan")
      c.limits.maxStorageBufferBytes = (int64_t(1) << 32) - 1;
  return chips;
}

/// The probed device's limits (the driver's VulkanDevice.h).
std::optional<VulkanChip> probedChip(std::string name, std::string &why) {
  VulkanDeviceInfo info;
  if (!probeVulkanDevice(info, why))
    return std::nullopt;
  VulkanChip c;
  c.name = std::move(name);
  c.summary =
      "this machine's Vulkan device: " + info.name + "; buffers " + info.memory;
  c.limits.subgroupSize = info.subgroupSize;
  c.limits.maxInvocations = info.maxInvocations;
  c.limits.sharedMemoryBytes = info.maxSharedMemoryBytes;
  c.limits.maxStorageBuffers = info.maxStorageBuffersPerStage;
  c.limits.maxStorageBufferBytes = info.maxStorageBufferRange;
  for (int i = 0; i < 3; ++i) {
    c.limits.maxWorkgroupSize[i] = info.maxWorkgroupSize[i];
    c.limits.maxWorkgroupCount[i] = info.maxWorkgroupCount[i];
  }
  c.float16 = info.shaderFloat16 && info.storageBuffer16BitAccess;
  c.float64 = info.shaderFloat64;
  c.runsHere = true;
  c.deviceName = info.name;
  c.stagedGemms = info.type != "CPU"; // as lavapipe below
  c.subgroupArithmetic = info.subgroupArithmetic;
  c.groupReductions = c.stagedGemms || c.subgroupArithmetic;

  return c;
}

} // namespace

std::vector<std::string> vulkanChipNames() {
  std::vector<std::string> names = {"device", "lavapipe"};
  for (const VulkanChip &c : presets())
    names.push_back(c.name);
  return names;
}

std::optional<VulkanChip> vulkanChip(const std::string &name,
                                     std::string &why) {
  if (name == "device") {
    std::optional<VulkanChip> chip = probedChip(name, why);
    if (!chip)
      why = "--chip=device needs this machine's Vulkan device: " + why +
            "; compile for a preset instead (--chip " +
            llvm::join(llvm::drop_begin(vulkanChipNames()), ", ") + ")";
    return chip;
  }
  if (name == "lavapipe") {
    // Its limits as read here; compiling for it needs no device, running
    // does (the tests skip without one).
    VulkanChip c = preset("lavapipe", "Mesa lavapipe (Vulkan on the CPU)", true,
                          8, 1024, 32768, 32, 0, 0, 0, 0);
    c.limits.maxWorkgroupSize = {1024, 1024, 1024};
    // gallivm ends every loop after 65535 iterations (a sum of 70000 ones
    // gave 65535): kernels with a longer loop in one thread stay on the host.
    c.limits.maxLoopIterations = 65535;
    c.runsHere = true;
    // A CPU's threads gain nothing from staging (2026-12-05: the staged
    // launches took 1.0-3.1x the register tiles' device time,
    // benchmarks/results/2026-12-05-staged-gemm-lavapipe.md); tuning may
    // still pick them.
    c.stagedGemms = false;
    // A workgroup per output of a long reduction pays only with subgroup
    // reductions there (2026-12-05: a ReduceSum over 768 0.56-0.59 ms of
    // device time against 0.86-0.96 with a thread per output, BERT's
    // ReduceMean 0.73 against 0.98; halving in workgroup memory had been
    // slower, 1.0 and 1.2).
    c.groupReductions = c.subgroupArithmetic;
    // Nominal numbers for the analytical model (its predictions are shown
    // beside lavapipe's measurements, to check the model against a device
    // that runs): one compute unit per core, llvmpipe's 256-bit vectors as
    // 8 lanes with one FMA per cycle at a nominal 3 GHz, 20 GB/s.
    c.computeUnits = std::max(1u, std::thread::hardware_concurrency());
    c.clockMHz = 3000;
    c.peakGflops = double(c.computeUnits) * 8 * 2 * 3.0;
    c.bandwidthGBs = 20;
    return c;
  }
  for (VulkanChip &c : presets())
    if (c.name == name)
      return c;
  why = "unknown vulkan chip '" + name +
        "' (known: " + llvm::join(vulkanChipNames(), ", ") + ")";
  return std::nullopt;
}

std::string vulkanDeviceName(const VulkanChip &chip) {
  if (!chip.runsHere || !chip.deviceName.empty())
    return chip.deviceName;
  std::string ignored;
  VulkanDeviceInfo info;
  return probeVulkanDevice(info, ignored) ? info.name : "";
}

std::string spirvTargetEnv(const VulkanChip &chip) {
  const gpu::ChipLimits &l = chip.limits;
  std::string caps = "Shader, Int64, Int16, Int8, StorageBuffer8BitAccess, "
                     "StorageBuffer16BitAccess, GroupNonUniform, "
                     "GroupNonUniformArithmetic, GroupNonUniformShuffle";
  if (chip.float16)
    caps += ", Float16";
  if (chip.float64)
    caps += ", Float64";
  return llvm::formatv(
             "#spirv.target_env<#spirv.vce<v1.3, [{0}], "
             "[SPV_KHR_storage_buffer_storage_class, SPV_KHR_8bit_storage, "
             "SPV_KHR_16bit_storage]>, api=Vulkan, "
             "#spirv.resource_limits<max_compute_shared_memory_size = {1}, "
             "max_compute_workgroup_invocations = {2}, "
             "max_compute_workgroup_size = [{3}, {4}, {5}], subgroup_size = "
             "{6}>>",
             caps, l.sharedMemoryBytes, l.maxInvocations, l.maxWorkgroupSize[0],
             l.maxWorkgroupSize[1], l.maxWorkgroupSize[2], l.subgroupSize)
      .str();
}

} // namespace ign::vulkan
