//===- VulkanChips.h - the chips --target=vulkan compiles for ---*- C++ -*-===//
//
// Presets of mobile and desktop GPUs with their limits and public numbers,
// lavapipe (Mesa's Vulkan on the CPU, what runs here), and "device": the
// Vulkan device this machine has, probed at compile time. Each gives the
// GPU layer's chip limits and the SPIR-V target environment.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_VULKAN_VULKANCHIPS_H
#define IGN_TARGETS_VULKAN_VULKANCHIPS_H

#include "GpuSchedule.h"

#include <optional>
#include <string>
#include <vector>

namespace ign::vulkan {

struct VulkanChip {
  std::string name, summary;
  gpu::ChipLimits limits;
  bool float16 = true, float64 = false; // arithmetic and storage
  int64_t computeUnits = 0;
  double clockMHz = 0, peakGflops = 0, bandwidthGBs = 0;
  /// Kernels for it run on this machine's Vulkan device (tuning measures
  /// there); a preset of another GPU is compiled for, not run.
  bool runsHere = false;
  /// Whether untuned compiles stage large contractions in workgroup memory
  /// (the GPU layer's staged GEMM launch, targets/gpu/StagedGemm.h).
  bool stagedGemms = true;
  /// Whether they give long reductions a workgroup per output
  /// (targets/gpu/GroupReduction.h).
  bool groupReductions = true;
  /// Whether its subgroups have arithmetic (Vulkan's subgroup arithmetic
  /// operations in compute shaders): GpuChip::subgroupReductions.
  bool subgroupArithmetic = true;
  /// The probed device's name, for "device" (vulkanDeviceName gives it
  /// for lavapipe too, opening the device only then).
  std::string deviceName;
};

/// "device", "lavapipe" and the presets, in `ignc targets` order.
std::vector<std::string> vulkanChipNames();

/// The chip `name`; nullopt with `why` set for an unknown name, or for
/// "device" on a machine without a Vulkan device.
std::optional<VulkanChip> vulkanChip(const std::string &name, std::string &why);

/// The name of the device `chip`'s kernels run on here ("" for a preset
/// of another GPU, or without a device): the tuning database keys
/// measurements by it.
std::string vulkanDeviceName(const VulkanChip &chip);

/// The #spirv.target_env attribute of `chip`, as text.
std::string spirvTargetEnv(const VulkanChip &chip);

} // namespace ign::vulkan

#endif // IGN_TARGETS_VULKAN_VULKANCHIPS_H
