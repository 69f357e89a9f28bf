//===- VulkanContext.h - the process-wide Vulkan device ---------*- C++ -*-===//
//
// One instance, physical device, logical device and compute queue for the
// whole process, with the few objects every launch reuses (command buffer,
// fence, timestamp queries). Made on first use and kept to the end of the
// process: tearing Vulkan down from static destructors races the drivers'
// own exit handlers.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_VULKAN_VULKANCONTEXT_H
#define IGN_TARGETS_VULKAN_VULKANCONTEXT_H

#include "VulkanDevice.h"
#include "VulkanLoader.h"
#include "VulkanMemory.h"

#include <string>

namespace ign::vulkan {

struct VulkanContext {
  const GlobalFunctions *global = nullptr;
  InstanceFunctions vki;
  DeviceFunctions vkd;
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  VkQueue queue = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory = {};
  MemoryMode memoryMode = MemoryMode::Auto; // IGN_VULKAN_MEMORY
  bool discrete = false;                    // a discrete GPU's own memory
  VulkanDeviceInfo info;
  uint32_t timestampValidBits = 0;
  float timestampPeriod = 0; // nanoseconds per tick
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkQueryPool timestamps = VK_NULL_HANDLE; // two queries, when supported
  /// Set when a launch timed out or the device was lost: its command
  /// buffer may still be pending, so nothing may be reused.
  std::string broken;
};

/// The process-wide context, made on the first call. Null with \p why set
/// when there is no loader or no usable device; that failure is kept and
/// returned to every later call. Not thread-safe: the driver serializes
/// its calls.
VulkanContext *getVulkanContext(std::string &why);

/// Resets and begins the context's command buffer for one submission.
VkResult beginCommands(VulkanContext &ctx, std::string &why);

/// Records a memory barrier: \p srcAccess by \p srcStage before
/// \p dstAccess by \p dstStage.
void recordBarrier(VulkanContext &ctx, VkPipelineStageFlags srcStage,
                   VkAccessFlags srcAccess, VkPipelineStageFlags dstStage,
                   VkAccessFlags dstAccess);

/// Ends the command buffer, submits it and waits for its fence (60 s). A
/// timeout or a lost device marks the context broken.
VkResult submitAndWait(VulkanContext &ctx, std::string &why);

} // namespace ign::vulkan

#endif
