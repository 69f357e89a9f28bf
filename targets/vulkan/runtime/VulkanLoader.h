//===- VulkanLoader.h - libvulkan opened at run time ------------*- C++ -*-===//
//
// The Vulkan driver must link and run on machines without a Vulkan loader,
// so nothing links libvulkan: it is dlopen'ed at first use and every entry
// point comes through vkGetInstanceProcAddr / vkGetDeviceProcAddr into the
// tables below. IGN_VULKAN_LOADER, when set, names the library to open
// instead of libvulkan.so.1 (tests point it at a missing file).
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_VULKAN_VULKANLOADER_H
#define IGN_TARGETS_VULKAN_VULKANLOADER_H

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <string>

namespace ign::vulkan {

// Entry points that need no instance.
#define IGN_VK_GLOBAL_FUNCTIONS(X)                                             \
  X(vkCreateInstance)                                                          \
  X(vkEnumerateInstanceVersion)

#define IGN_VK_INSTANCE_FUNCTIONS(X)                                           \
  X(vkDestroyInstance)                                                         \
  X(vkEnumeratePhysicalDevices)                                                \
  X(vkGetPhysicalDeviceProperties)                                             \
  X(vkGetPhysicalDeviceProperties2)                                            \
  X(vkGetPhysicalDeviceFeatures2)                                              \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                  \
  X(vkGetPhysicalDeviceMemoryProperties)                                       \
  X(vkCreateDevice)                                                            \
  X(vkGetDeviceProcAddr)

#define IGN_VK_DEVICE_FUNCTIONS(X)                                             \
  X(vkDestroyDevice)                                                           \
  X(vkGetDeviceQueue)                                                          \
  X(vkCreateCommandPool)                                                       \
  X(vkDestroyCommandPool)                                                      \
  X(vkAllocateCommandBuffers)                                                  \
  X(vkResetCommandBuffer)                                                      \
  X(vkBeginCommandBuffer)                                                      \
  X(vkEndCommandBuffer)                                                        \
  X(vkCmdBindPipeline)                                                         \
  X(vkCmdBindDescriptorSets)                                                   \
  X(vkCmdDispatch)                                                             \
  X(vkCmdCopyBuffer)                                                           \
  X(vkCmdPipelineBarrier)                                                      \
  X(vkCmdResetQueryPool)                                                       \
  X(vkCmdWriteTimestamp)                                                       \
  X(vkCreateQueryPool)                                                         \
  X(vkDestroyQueryPool)                                                        \
  X(vkGetQueryPoolResults)                                                     \
  X(vkCreateBuffer)                                                            \
  X(vkDestroyBuffer)                                                           \
  X(vkGetBufferMemoryRequirements)                                             \
  X(vkAllocateMemory)                                                          \
  X(vkFreeMemory)                                                              \
  X(vkBindBufferMemory)                                                        \
  X(vkMapMemory)                                                               \
  X(vkCreateShaderModule)                                                      \
  X(vkDestroyShaderModule)                                                     \
  X(vkCreateDescriptorSetLayout)                                               \
  X(vkDestroyDescriptorSetLayout)                                              \
  X(vkCreatePipelineLayout)                                                    \
  X(vkDestroyPipelineLayout)                                                   \
  X(vkCreateComputePipelines)                                                  \
  X(vkDestroyPipeline)                                                         \
  X(vkCreateDescriptorPool)                                                    \
  X(vkDestroyDescriptorPool)                                                   \
  X(vkAllocateDescriptorSets)                                                  \
  X(vkUpdateDescriptorSets)                                                    \
  X(vkCreateFence)                                                             \
  X(vkDestroyFence)                                                            \
  X(vkResetFences)                                                             \
  X(vkWaitForFences)                                                           \
  X(vkQueueSubmit)

#define IGN_VK_DECLARE(name) PFN_##name name = nullptr;

/// The opened library's entry points. vkEnumerateInstanceVersion is null
/// with a Vulkan 1.0 loader.
struct GlobalFunctions {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  IGN_VK_GLOBAL_FUNCTIONS(IGN_VK_DECLARE)
};

struct InstanceFunctions {
  IGN_VK_INSTANCE_FUNCTIONS(IGN_VK_DECLARE)
};

struct DeviceFunctions {
  IGN_VK_DEVICE_FUNCTIONS(IGN_VK_DECLARE)
};

/// Opens the Vulkan loader (once per process; later calls return the same
/// table or the same failure). Null with \p why set when it cannot be
/// opened or lacks vkGetInstanceProcAddr.
const GlobalFunctions *loadVulkan(std::string &why);

/// Fills \p fns for \p instance; false with \p why naming a missing entry.
bool loadInstanceFunctions(const GlobalFunctions &global, VkInstance instance,
                           InstanceFunctions &fns, std::string &why);

bool loadDeviceFunctions(const InstanceFunctions &instanceFns, VkDevice device,
                         DeviceFunctions &fns, std::string &why);

/// A zeroed Vulkan structure of type \p type.
template <typename T> T vkStruct(VkStructureType type) {
  T s = {};
  s.sType = type;
  return s;
}

/// "VK_ERROR_OUT_OF_DEVICE_MEMORY", ... ("VkResult N" when unknown).
std::string resultName(VkResult result);

} // namespace ign::vulkan

#endif
