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
#include <vector>

namespace ign::vulkan {

/// Launches one submission carries at most (each takes two timestamps).
constexpr uint32_t kMaxBatchLaunches = 64;

/// A launch recorded into the open batch and returned from before it ran
/// (ignrt_device_call::may_defer): its stats are filled when the batch is
/// submitted.
struct DeferredLaunch {
  std::string kernel;
  ignrt_device_stats *stats = nullptr;
  uint32_t query = 0;      // its first timestamp query
  bool *pending = nullptr; // its kernel's flag (CachedKernel::pending)
};

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
  VkQueryPool timestamps = VK_NULL_HANDLE; // two per launch of a batch
  /// Launches whose outputs stay on the device are recorded into one
  /// command buffer and submitted with the next launch that copies to the
  /// host (IGN_VULKAN_BATCH=0: every launch submitted and waited for).
  bool batching = true;
  bool batchOpen = false; // `commands` is recording a batch
  std::vector<DeferredLaunch> deferred;
  /// Set when a launch timed out or the device was lost (its command
  /// buffer may still be pending, so nothing may be reused), or a
  /// submission carrying deferred launches failed (other sessions' results
  /// would be missing).
  std::string broken;
};

/// The process-wide context, made on the first call. Null with \p why set
/// when there is no loader or no usable device; that failure is kept and
/// returned to every later call. Not thread-safe: the driver serializes
/// its calls.
VulkanContext *getVulkanContext(std::string &why);

/// The context if getVulkanContext made it, else null (nothing is made).
VulkanContext *existingVulkanContext();

/// Resets and begins the context's command buffer for one submission
/// (submitting an open batch first: settleBatch).
VkResult beginCommands(VulkanContext &ctx, std::string &why);

/// Records a memory barrier: \p srcAccess by \p srcStage before
/// \p dstAccess by \p dstStage.
void recordBarrier(VulkanContext &ctx, VkPipelineStageFlags srcStage,
                   VkAccessFlags srcAccess, VkPipelineStageFlags dstStage,
                   VkAccessFlags dstAccess);

/// Ends the command buffer, submits it and waits for its fence (60 s). A
/// timeout or a lost device marks the context broken.
VkResult submitAndWait(VulkanContext &ctx, std::string &why);

/// The time between timestamp queries \p query and \p query + 1 of the
/// last submission, in nanoseconds; false when unavailable.
bool deviceTime(VulkanContext &ctx, uint32_t query, double &ns);

/// After a submission that carried the open batch: fills the deferred
/// launches' stats from their timestamps and closes it. When it failed
/// (\p why) with launches deferred to it, the context is broken: their
/// outputs, which later launches (of any session) read, were never made.
void closeBatch(VulkanContext &ctx, VkResult r, const std::string &why);

/// Submits the open batch of deferred launches, if any, waits for it and
/// fills their stats. Whatever happens the batch is closed; a failure names
/// the launches it held.
VkResult submitBatch(VulkanContext &ctx, std::string &why);

/// Submits the open batch before something its launches may use changes
/// (a buffer freed, an upload through the command buffer) or after a call
/// failed (the batch may hold other sessions' launches). False when the
/// context is broken then: nothing the batch may use can be freed.
bool settleBatch(VulkanContext &ctx);

} // namespace ign::vulkan

#endif
