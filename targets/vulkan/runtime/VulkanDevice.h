//===- VulkanDevice.h - Vulkan compute as libignrt's vulkan driver -*- C++ -*-//
//
// The runtime side of --target=vulkan: a libignrt device driver that runs a
// kernel's SPIR-V compute shaders on a Vulkan device. It links no Vulkan
// library (libvulkan.so.1 is opened at first use, see VulkanLoader.h), so a
// machine without Vulkan gets an error message, not a crash.
//
// Environment:
//   IGN_VULKAN_DEVICE  the device to use: its index among the enumerated
//                      ones, or a substring of its name (any case);
//                      otherwise discrete > integrated > virtual GPU > CPU.
//   IGN_VULKAN_LOADER  the loader library to open instead of libvulkan.so.1
//                      (tests set it to a missing file).
//   IGN_VULKAN_MEMORY  auto, staged or host: where buffers live
//                      (VulkanMemory.h).
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_VULKAN_VULKANDEVICE_H
#define IGN_TARGETS_VULKAN_VULKANDEVICE_H

#include "ign/Runtime/ignrt.h"

#include <cstdint>
#include <string>

namespace ign::vulkan {

/// The device the driver uses and what it supports. The feature flags are
/// the ones the driver enables when the device has them; on a Vulkan 1.1
/// device the 8-bit and f16/int8 ones read false (they are 1.2 features
/// there, behind extensions the driver does not enable).
struct VulkanDeviceInfo {
  std::string name;
  std::string type; // "discrete GPU", "integrated GPU", "virtual GPU", "CPU"
  uint32_t apiVersion = 0; // what the driver uses: min(device, instance)
  uint32_t subgroupSize = 0;
  bool subgroupArithmetic = false; // subgroup reductions in compute shaders
  uint32_t maxSharedMemoryBytes = 0;
  uint32_t maxInvocations = 0;
  uint32_t maxWorkgroupSize[3] = {0, 0, 0};
  uint32_t maxWorkgroupCount[3] = {0, 0, 0};
  bool timestamps = false; // on the compute queue
  bool shaderInt64 = false;
  bool shaderFloat64 = false;
  bool storageBuffer8BitAccess = false;
  bool shaderFloat16 = false;
  bool shaderInt8 = false;
  bool shaderInt16 = false;
  bool storageBuffer16BitAccess = false;
  bool uniformAndStorageBuffer8BitAccess = false;
  uint32_t maxStorageBufferRange = 0;
  uint32_t maxStorageBuffersPerStage = 0;
  /// Where a call's buffers live: "device-local, mapped", "device-local,
  /// staged", ... (VulkanMemory.h's describeMemory).
  std::string memory;
};

/// Registers the driver as libignrt's device "vulkan" (idempotent;
/// process-wide).
void registerVulkanDevice();

/// Fills \p info with the device the driver would use (creating the
/// process-wide Vulkan context if needed). False with \p why set when there
/// is no loader or no usable device.
bool probeVulkanDevice(VulkanDeviceInfo &info, std::string &why);

/// Runs one launch (the body of the registered ignrt_device_fn): 0 on
/// success, else 1 with \p error naming the kernel and what failed.
int runVulkanCall(const ignrt_device_call &call, ignrt_device_stats &stats,
                  std::string &error);

} // namespace ign::vulkan

#endif
