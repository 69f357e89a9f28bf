//===- VulkanKernel.h - one kernel's pipelines and buffers ------*- C++ -*-===//
//
// The Vulkan objects of one kernel (a descriptor and its SPIR-V): a compute
// pipeline and descriptor set per dispatch, built once, and storage buffers
// for its bound arguments and scratch (VulkanMemory.h), kept between calls
// and grown when a call needs more.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_VULKAN_VULKANKERNEL_H
#define IGN_TARGETS_VULKAN_VULKANKERNEL_H

#include "VulkanContext.h"
#include "VulkanDescriptor.h"

#include <string>
#include <vector>

namespace ign::vulkan {

struct Pipeline {
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
};

struct CachedKernel {
  std::vector<Pipeline> pipelines; // one per dispatch
  VkDescriptorPool descriptorPool = VK_NULL_HANDLE;
  std::vector<Buffer> args;      // by argument index
  std::vector<Buffer> scratch;   // by scratch index
  std::vector<Buffer> constants; // by constant index, filled once
  bool constantsLoaded = false;
  uint64_t lastUse = 0;
  /// A launch of it waits in the open batch: its descriptor sets and
  /// argument buffers must not change before the batch is submitted.
  bool pending = false;
};

/// Builds the pipelines and descriptor sets of \p kernel's dispatches.
/// On failure \p why names the step and \p out holds what was made (for
/// destroyKernel).
bool buildKernel(VulkanContext &ctx, const ignrt_device_call &call,
                 const KernelDescriptor &kernel, CachedKernel &out,
                 std::string &why);

/// Frees every object of \p kernel (after submitting the open batch of
/// deferred launches, which may use it).
void destroyKernel(VulkanContext &ctx, CachedKernel &kernel);

/// Frees \p kernel's buffers only (they are remade on its next call).
void releaseBuffers(VulkanContext &ctx, CachedKernel &kernel);

/// Gives every bound argument and scratch a buffer big enough for this
/// call, and each constant its buffer filled from the blob (once), and
/// points the descriptor sets at them. Weights and constants are uploaded
/// here, so this runs before the call's commands are recorded. Returns the
/// failing result (VK_SUCCESS when none) with \p why naming the step.
VkResult bindBuffers(VulkanContext &ctx, const ignrt_device_call &call,
                     const KernelDescriptor &kernel, CachedKernel &cached,
                     std::string &why);

/// Whether argument `i` of `call` is one of its bundle's weights, which
/// bindBuffers copies to the device once per bundle (not per call).
bool isWeight(const ignrt_device_call &call, size_t i);

/// At most this many bundles' weights stay on the device; the least
/// recently used bundle's go first.
constexpr size_t kMaxWeightBundles = 4;

/// Frees the device copies of weights of every bundle but `keepEpoch`'s,
/// and the pool of released intermediates (when memory runs out).
void releaseOtherWeights(VulkanContext &ctx, uint64_t keepEpoch);

/// After a call: the intermediates it read for the last time go back to
/// the pool (bindBuffers keeps the call's resident arguments on the device
/// between launches: ignrt_device_call::resident).
void releaseLastUses(const ignrt_device_call &call);

} // namespace ign::vulkan

#endif
