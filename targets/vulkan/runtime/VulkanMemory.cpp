//===- VulkanMemory.cpp - the driver's buffers and where they live --------===//
//
// A memory type is chosen per buffer from the ones its requirements allow,
// ranked by what the buffer is for (VulkanMemory.h): the host's side of a
// copy needs host-visible, coherent memory (cached first: outputs are read
// back with memcpy); the device's side wants device-local memory, on a
// discrete GPU the kind the host cannot map (its own memory, not the small
// window of it the host may map), elsewhere the kind it can (one memory:
// mapping saves the copies).
//
//===----------------------------------------------------------------------===//

#include "VulkanMemory.h"
#include "VulkanContext.h"

#include <cstdlib>
#include <cstring>

namespace ign::vulkan {

namespace {

std::string failed(const char *step, VkResult r) {
  return std::string(step) + " failed: " + resultName(r);
}

bool mappable(VkMemoryPropertyFlags f) {
  const VkMemoryPropertyFlags need = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  return (f & need) == need;
}

/// The rank of a type for the host's side of a copy (-1: unusable).
int hostRank(VkMemoryPropertyFlags f) {
  if (!mappable(f))
    return -1;
  return f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT ? 2 : 1;
}

/// The rank of a type for the device's side (-1: unusable).
int deviceRank(VkMemoryPropertyFlags f, MemoryMode mode, bool discrete) {
  bool local = f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  bool visible = f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  if (mode == MemoryMode::Staged)
    return local ? (visible ? 2 : 3) : 1;
  if (discrete) // its own memory first, then what the host can map
    return local && !visible ? 4 : local && mappable(f) ? 3 : hostRank(f);
  if (local && mappable(f))
    return 3 + (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT ? 1 : 0);
  return mappable(f) ? 2 : local ? 1 : -1;
}

struct Choice {
  uint32_t type = 0;
  bool map = false;
};

/// The best type among \p bits for the host's side (\p host) or the
/// device's; nullopt when none is usable.
std::optional<Choice> chooseType(const VulkanContext &ctx, uint32_t bits,
                                 bool host) {
  std::optional<Choice> best;
  int bestRank = -1;
  for (uint32_t i = 0; i < ctx.memory.memoryTypeCount; ++i) {
    if (!(bits & (1u << i)))
      continue;
    VkMemoryPropertyFlags f = ctx.memory.memoryTypes[i].propertyFlags;
    int rank = host ? hostRank(f)
                    : deviceRank(f, ctx.memoryMode, ctx.discrete);
    if (rank > bestRank) {
      bestRank = rank;
      bool map = host || (ctx.memoryMode != MemoryMode::Staged && mappable(f));
      best = Choice{i, map};
    }
  }
  return best;
}

/// One VkBuffer and its memory, mapped when the chosen type allows
/// (always for the \p host side).
VkResult makeBuffer(VulkanContext &ctx, uint64_t bytes, bool host,
                    VkBuffer &buffer, VkDeviceMemory &memory, void *&mapped,
                    std::string &why) {
  const DeviceFunctions &vk = ctx.vkd;
  auto info =
      vkStruct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  info.size = bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
               VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = vk.vkCreateBuffer(ctx.device, &info, nullptr, &buffer);
  if (r != VK_SUCCESS)
    return why = failed("vkCreateBuffer", r), r;
  VkMemoryRequirements req;
  vk.vkGetBufferMemoryRequirements(ctx.device, buffer, &req);
  std::optional<Choice> choice = chooseType(ctx, req.memoryTypeBits, host);
  if (!choice) {
    why = host ? "the device has no host-visible, host-coherent memory for "
                 "storage buffers"
               : "the device has no memory type for storage buffers";
    return VK_ERROR_FEATURE_NOT_PRESENT;
  }
  auto alloc =
      vkStruct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = choice->type;
  r = vk.vkAllocateMemory(ctx.device, &alloc, nullptr, &memory);
  if (r != VK_SUCCESS)
    return why = failed("vkAllocateMemory", r) + " (" + std::to_string(bytes) +
                 " bytes)",
           r;
  r = vk.vkBindBufferMemory(ctx.device, buffer, memory, 0);
  if (r != VK_SUCCESS)
    return why = failed("vkBindBufferMemory", r), r;
  if (choice->map) {
    r = vk.vkMapMemory(ctx.device, memory, 0, VK_WHOLE_SIZE, 0, &mapped);
    if (r != VK_SUCCESS)
      return why = failed("vkMapMemory", r), r;
  }
  return VK_SUCCESS;
}

/// Records a copy of \p bytes between two buffers.
void recordCopy(VulkanContext &ctx, VkBuffer from, VkBuffer to,
                uint64_t bytes) {
  VkBufferCopy region = {0, 0, bytes};
  ctx.vkd.vkCmdCopyBuffer(ctx.commands, from, to, 1, &region);
}

} // namespace

std::optional<MemoryMode> memoryModeFromEnvironment(std::string &why) {
  const char *v = std::getenv("IGN_VULKAN_MEMORY");
  if (!v || !*v || !std::strcmp(v, "auto"))
    return MemoryMode::Auto;
  if (!std::strcmp(v, "staged"))
    return MemoryMode::Staged;
  if (!std::strcmp(v, "host"))
    return MemoryMode::Host;
  why = "IGN_VULKAN_MEMORY=" + std::string(v) +
        " is none of auto, staged, host";
  return std::nullopt;
}

VkResult allocateBuffer(VulkanContext &ctx, uint64_t bytes, BufferUse use,
                        Buffer &b, std::string &why) {
  bool hostOnly = ctx.memoryMode == MemoryMode::Host;
  VkResult r =
      makeBuffer(ctx, bytes, hostOnly, b.buffer, b.memory, b.mapped, why);
  if (r == VK_SUCCESS && use == BufferUse::Transfer && !b.mapped)
    r = makeBuffer(ctx, bytes, /*host=*/true, b.staging, b.stagingMemory,
                   b.stagingMapped, why);
  if (r == VK_SUCCESS)
    b.capacity = bytes;
  return r;
}

void freeBuffer(VulkanContext &ctx, Buffer &b) {
  // A deferred launch may use it; after a timeout the device may still
  // (leaked, as the launch path leaves its buffers then).
  if ((b.buffer || b.staging) && !settleBatch(ctx)) {
    b = Buffer();
    return;
  }
  // Freeing the memory unmaps it; null handles are ignored.
  ctx.vkd.vkDestroyBuffer(ctx.device, b.buffer, nullptr);
  ctx.vkd.vkFreeMemory(ctx.device, b.memory, nullptr);
  ctx.vkd.vkDestroyBuffer(ctx.device, b.staging, nullptr);
  ctx.vkd.vkFreeMemory(ctx.device, b.stagingMemory, nullptr);
  b = Buffer();
}

VkResult ensureBuffer(VulkanContext &ctx, uint64_t bytes, BufferUse use,
                      Buffer &b, std::string &why) {
  if (b.capacity >= bytes)
    return VK_SUCCESS;
  freeBuffer(ctx, b);
  VkResult r = allocateBuffer(ctx, bytes, use, b, why);
  if (r != VK_SUCCESS)
    freeBuffer(ctx, b);
  return r;
}

VkResult upload(VulkanContext &ctx, Buffer &b, const void *data,
                uint64_t bytes, std::string &why) {
  if (!bytes)
    return VK_SUCCESS;
  if (b.mapped) {
    std::memcpy(b.mapped, data, bytes);
    return VK_SUCCESS;
  }
  Buffer temporary;
  VkResult r = makeBuffer(ctx, bytes, /*host=*/true, temporary.buffer,
                          temporary.memory, temporary.mapped, why);
  if (r == VK_SUCCESS) {
    std::memcpy(temporary.mapped, data, bytes);
    r = beginCommands(ctx, why);
  }
  if (r == VK_SUCCESS) {
    recordCopy(ctx, temporary.buffer, b.buffer, bytes);
    // Later submissions' dispatches read what the copy wrote.
    recordBarrier(ctx, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT,
                  VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                  VK_ACCESS_SHADER_READ_BIT);
    r = submitAndWait(ctx, why);
  }
  // After a timeout the copy may still read it: leaked, as the launch
  // path leaves its buffers (the context is unusable from then on).
  if (r != VK_TIMEOUT)
    freeBuffer(ctx, temporary);
  if (r != VK_SUCCESS)
    why = "uploading " + std::to_string(bytes) + " bytes: " + why;
  return r;
}

void recordStagingCopy(VulkanContext &ctx, const Buffer &b, uint64_t bytes,
                       bool in) {
  if (in)
    recordCopy(ctx, b.staging, b.buffer, bytes);
  else
    recordCopy(ctx, b.buffer, b.staging, bytes);
}

std::string describeMemory(const VulkanContext &ctx) {
  if (ctx.memoryMode == MemoryMode::Host)
    return "host-visible, mapped (IGN_VULKAN_MEMORY=host)";
  uint32_t all = ctx.memory.memoryTypeCount >= 32
                     ? ~0u
                     : (1u << ctx.memory.memoryTypeCount) - 1;
  std::optional<Choice> c = chooseType(ctx, all, /*host=*/false);
  if (!c)
    return "none";
  bool local = ctx.memory.memoryTypes[c->type].propertyFlags &
               VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  std::string where = local ? "device-local" : "host-visible";
  if (c->map)
    return where + ", mapped";
  return where + ", staged" +
         (ctx.memoryMode == MemoryMode::Staged ? " (IGN_VULKAN_MEMORY=staged)"
                                               : "");
}

} // namespace ign::vulkan
