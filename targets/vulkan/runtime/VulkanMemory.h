//===- VulkanMemory.h - the driver's buffers and where they live -*- C++ -*-===//
//
// Every buffer a dispatch binds is device-local memory where the device has
// it. Where the host may also map that memory (lavapipe, integrated GPUs)
// the driver maps it and copies with memcpy, as before. Where it is a
// discrete GPU's own memory the host cannot map, weights and constants go
// up once through a temporary staging buffer, a call's inputs and outputs
// through a host-visible twin that the command buffer copies from before
// the dispatches and to after them, and intermediates and scratch never
// leave the device.
//
// IGN_VULKAN_MEMORY (read once, when the context is made) overrides it:
//   auto    the above (the default);
//   staged  device-local memory the host never maps, every copy staged,
//           even where mapping would do (tests run this path on lavapipe);
//   host    every buffer host-visible and mapped, as the driver did first
//           (to measure what device-local memory gains).
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_VULKAN_VULKANMEMORY_H
#define IGN_TARGETS_VULKAN_VULKANMEMORY_H

#include "VulkanLoader.h"

#include <optional>
#include <string>

namespace ign::vulkan {

struct VulkanContext;

enum class MemoryMode { Auto, Staged, Host };

/// IGN_VULKAN_MEMORY's mode; nullopt with \p why set for a value that is
/// none of auto, staged, host.
std::optional<MemoryMode> memoryModeFromEnvironment(std::string &why);

/// What a buffer is for, which decides where it lives.
enum class BufferUse {
  Device,   // scratch and intermediates: never read or written by the host
  Upload,   // weights and constants: written by the host once (upload)
  Transfer, // a call's inputs and outputs: copied in and out every call
};

/// A storage buffer and its memory. `mapped` is the host's view of it when
/// the host may map it; a Transfer buffer the host cannot map has a
/// host-visible `staging` twin of the same capacity instead.
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void *mapped = nullptr;
  uint64_t capacity = 0; // bytes; 0 before the first allocation
  VkBuffer staging = VK_NULL_HANDLE;
  VkDeviceMemory stagingMemory = VK_NULL_HANDLE;
  void *stagingMapped = nullptr;

  /// Where the host reads and writes the buffer's contents (a Transfer
  /// buffer's), null for the others the host cannot map.
  void *host() const { return mapped ? mapped : stagingMapped; }
  /// Whether copies between `staging` and `buffer` must be recorded.
  bool staged() const { return staging != VK_NULL_HANDLE; }
};

/// Allocates \p bytes for \p use. On failure returns the result with
/// \p why naming the step; \p b then holds what was made (freeBuffer).
VkResult allocateBuffer(VulkanContext &ctx, uint64_t bytes, BufferUse use,
                        Buffer &b, std::string &why);

/// Frees \p b (and its staging twin), after submitting the open batch of
/// deferred launches that may use it.
void freeBuffer(VulkanContext &ctx, Buffer &b);

/// Reallocates \p b when it holds fewer than \p bytes (its contents are
/// then lost); frees it on failure.
VkResult ensureBuffer(VulkanContext &ctx, uint64_t bytes, BufferUse use,
                      Buffer &b, std::string &why);

/// Writes \p bytes of \p data at the start of \p b: a memcpy where the
/// host maps it, else through a temporary staging buffer and a copy the
/// device runs before this returns. Uses the context's command buffer, so
/// not while a launch is being recorded.
VkResult upload(VulkanContext &ctx, Buffer &b, const void *data,
                uint64_t bytes, std::string &why);

/// Records a copy of \p bytes from \p b's staging twin to it (\p in) or
/// back (not \p in) into the context's command buffer.
void recordStagingCopy(VulkanContext &ctx, const Buffer &b, uint64_t bytes,
                       bool in);

/// Where buffers of each use live on this device, for VulkanDeviceInfo.
std::string describeMemory(const VulkanContext &ctx);

} // namespace ign::vulkan

#endif
