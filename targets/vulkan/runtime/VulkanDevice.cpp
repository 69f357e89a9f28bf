//===- VulkanDevice.cpp - Vulkan compute as libignrt's vulkan driver ------===//
//
// One launch: check the descriptor (before any Vulkan object is made), find
// or build the kernel's pipelines, stage the arguments into its pooled
// buffers, record the dispatches with barriers between them, submit, wait
// on a fence with a timeout, and copy the outputs back. Calls are
// serialized on one mutex; they share one queue and command buffer.
//
//===----------------------------------------------------------------------===//

#include "VulkanDevice.h"
#include "VulkanContext.h"
#include "VulkanDescriptor.h"
#include "VulkanKernel.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

namespace ign::vulkan {

namespace {

constexpr uint64_t kFenceTimeoutNs = 60ull * 1000 * 1000 * 1000;
// Old kernels go when a long-lived process has loaded many bundles.
constexpr size_t kMaxCachedKernels = 1024;

std::mutex &driverMutex() {
  static std::mutex *m = new std::mutex; // outlives static destructors
  return *m;
}

class KernelCache {
public:
  CachedKernel *find(const std::string &key) {
    auto it = kernels.find(key);
    if (it == kernels.end())
      return nullptr;
    it->second->lastUse = ++clock;
    return it->second.get();
  }

  CachedKernel *insert(VulkanContext &ctx, const std::string &key,
                       std::unique_ptr<CachedKernel> kernel) {
    if (kernels.size() >= kMaxCachedKernels) {
      auto oldest = kernels.begin();
      for (auto it = kernels.begin(); it != kernels.end(); ++it)
        if (it->second->lastUse < oldest->second->lastUse)
          oldest = it;
      destroyKernel(ctx, *oldest->second);
      kernels.erase(oldest);
    }
    kernel->lastUse = ++clock;
    return (kernels[key] = std::move(kernel)).get();
  }

  void releaseOtherBuffers(VulkanContext &ctx, const CachedKernel *keep) {
    for (auto &entry : kernels)
      if (entry.second.get() != keep)
        releaseBuffers(ctx, *entry.second);
  }

private:
  std::map<std::string, std::unique_ptr<CachedKernel>> kernels;
  uint64_t clock = 0;
};

KernelCache &kernelCache() {
  static KernelCache *cache = new KernelCache; // lives as long as the context
  return *cache;
}

CachedKernel *getKernel(VulkanContext &ctx, const ignrt_device_call &call,
                        const KernelDescriptor &desc, std::string &why) {
  std::string key = gpu::rt::kernelCacheKey(call);
  if (CachedKernel *kernel = kernelCache().find(key))
    return kernel;
  auto kernel = std::make_unique<CachedKernel>();
  if (!buildKernel(ctx, call, desc, *kernel, why)) {
    destroyKernel(ctx, *kernel);
    return nullptr;
  }
  return kernelCache().insert(ctx, key, std::move(kernel));
}

bool bindWithRetry(VulkanContext &ctx, const ignrt_device_call &call,
                   const KernelDescriptor &desc, CachedKernel &kernel,
                   std::string &why) {
  VkResult r = bindBuffers(ctx, call, desc, kernel, why);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
    // Other kernels' pooled buffers, and other bundles' weights, may be
    // what fills the memory.
    kernelCache().releaseOtherBuffers(ctx, &kernel);
    releaseOtherWeights(ctx, call.weights_epoch);
    why.clear();
    r = bindBuffers(ctx, call, desc, kernel, why);
  }
  return r == VK_SUCCESS;
}

std::vector<bool> boundArguments(const ignrt_device_call &call,
                                 const KernelDescriptor &desc) {
  std::vector<bool> bound(call.num_args, false);
  for (const Dispatch &d : desc.dispatches)
    for (const Binding &b : d.bindings)
      if (b.kind == Binding::Arg)
        bound[b.index] = true;
  return bound;
}

/// Outputs go in too: an element the kernel does not write then keeps the
/// caller's value (libignrt's poison) as it would with a host kernel,
/// instead of a stale one from the pooled buffer.
void copyIn(const ignrt_device_call &call, const std::vector<bool> &bound,
            CachedKernel &kernel) {
  // Weights are on the device already (bindBuffers copied them once), and
  // so are the intermediates kept there (resident).
  for (size_t i = 0; i < call.num_args; ++i)
    if (bound[i] && call.args[i].bytes && !isWeight(call, i) &&
        gpu::rt::residency(call, i) == IGNRT_RESIDENT_HOST)
      std::memcpy(kernel.args[i].mapped, call.data[i], call.args[i].bytes);
}

void copyOut(const ignrt_device_call &call, const std::vector<bool> &bound,
             const CachedKernel &kernel) {
  for (size_t i = call.num_args - call.results; i < call.num_args; ++i)
    if (bound[i] && call.args[i].bytes &&
        gpu::rt::residency(call, i) == IGNRT_RESIDENT_HOST)
      std::memcpy(call.data[i], kernel.args[i].mapped, call.args[i].bytes);
}

void barrier(VulkanContext &ctx, VkPipelineStageFlags dstStage,
             VkAccessFlags dstAccess) {
  auto b = vkStruct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  b.dstAccessMask = dstAccess;
  ctx.vkd.vkCmdPipelineBarrier(ctx.commands,
                               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, dstStage,
                               0, 1, &b, 0, nullptr, 0, nullptr);
}

bool record(VulkanContext &ctx, const KernelDescriptor &desc,
            const CachedKernel &kernel, std::string &why) {
  const DeviceFunctions &vk = ctx.vkd;
  vk.vkResetCommandBuffer(ctx.commands, 0);
  auto begin = vkStruct<VkCommandBufferBeginInfo>(
      VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VkResult r = vk.vkBeginCommandBuffer(ctx.commands, &begin);
  if (r != VK_SUCCESS)
    return why = "vkBeginCommandBuffer failed: " + resultName(r), false;
  if (ctx.info.timestamps) {
    vk.vkCmdResetQueryPool(ctx.commands, ctx.timestamps, 0, 2);
    vk.vkCmdWriteTimestamp(ctx.commands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                           ctx.timestamps, 0);
  }
  for (size_t i = 0; i < desc.dispatches.size(); ++i) {
    const Dispatch &d = desc.dispatches[i];
    const Pipeline &p = kernel.pipelines[i];
    if (i) // each dispatch sees the previous ones' writes
      barrier(ctx, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    vk.vkCmdBindPipeline(ctx.commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                         p.pipeline);
    vk.vkCmdBindDescriptorSets(ctx.commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                               p.layout, 0, 1, &p.set, 0, nullptr);
    vk.vkCmdDispatch(ctx.commands, d.groups[0], d.groups[1], d.groups[2]);
  }
  // The fence alone does not make shader writes visible to the host.
  barrier(ctx, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  if (ctx.info.timestamps)
    vk.vkCmdWriteTimestamp(ctx.commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                           ctx.timestamps, 1);
  r = vk.vkEndCommandBuffer(ctx.commands);
  if (r != VK_SUCCESS)
    return why = "vkEndCommandBuffer failed: " + resultName(r), false;
  return true;
}

/// The dispatches' time from the timestamps; false when unavailable.
bool deviceTime(VulkanContext &ctx, double &ns) {
  uint64_t ticks[2] = {0, 0};
  VkResult r = ctx.vkd.vkGetQueryPoolResults(
      ctx.device, ctx.timestamps, 0, 2, sizeof ticks, ticks, sizeof ticks[0],
      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (r != VK_SUCCESS)
    return false;
  uint64_t mask = ctx.timestampValidBits >= 64
                      ? ~0ull
                      : (1ull << ctx.timestampValidBits) - 1;
  ns = double((ticks[1] - ticks[0]) & mask) * ctx.timestampPeriod;
  return true;
}

bool submitAndWait(VulkanContext &ctx, ignrt_device_stats &stats,
                   std::string &why) {
  const DeviceFunctions &vk = ctx.vkd;
  vk.vkResetFences(ctx.device, 1, &ctx.fence);
  auto submit = vkStruct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &ctx.commands;
  auto start = std::chrono::steady_clock::now();
  VkResult r = vk.vkQueueSubmit(ctx.queue, 1, &submit, ctx.fence);
  if (r == VK_SUCCESS)
    r = vk.vkWaitForFences(ctx.device, 1, &ctx.fence, VK_TRUE, kFenceTimeoutNs);
  auto end = std::chrono::steady_clock::now();
  if (r == VK_TIMEOUT)
    ctx.broken = "an earlier launch timed out and may still be running: the "
                 "Vulkan device is unusable in this process";
  else if (r == VK_ERROR_DEVICE_LOST)
    ctx.broken = "the Vulkan device was lost";
  if (r == VK_TIMEOUT)
    return why = "timed out: the dispatches did not finish in 60 s", false;
  if (r != VK_SUCCESS)
    return why = "running the dispatches failed: " + resultName(r), false;
  stats.device_ns = std::chrono::duration<double, std::nano>(end - start)
                        .count(); // submit to fence, unless timestamps say
  double ns = 0;
  if (ctx.info.timestamps && deviceTime(ctx, ns))
    stats.device_ns = ns;
  return true;
}

bool runLocked(const ignrt_device_call &call, ignrt_device_stats &stats,
               std::string &why) {
  KernelDescriptor desc;
  if (!parseDescriptor(call, desc, why))
    return false;
  VulkanContext *ctx = getVulkanContext(why);
  if (!ctx)
    return false;
  if (!ctx->broken.empty())
    return why = ctx->broken, false;
  if (!checkDeviceLimits(call, desc, ctx->info, why))
    return false;
  CachedKernel *kernel = getKernel(*ctx, call, desc, why);
  if (!kernel || !bindWithRetry(*ctx, call, desc, *kernel, why))
    return false;
  std::vector<bool> bound = boundArguments(call, desc);
  copyIn(call, bound, *kernel);
  if (!record(*ctx, desc, *kernel, why) || !submitAndWait(*ctx, stats, why))
    return false;
  copyOut(call, bound, *kernel);
  releaseLastUses(call);
  return true;
}

int vulkanDriver(void *, const ignrt_device_call *call,
                 ignrt_device_stats *stats, char *error, size_t errorSize) {
  std::string message;
  return gpu::rt::reportResult(runVulkanCall(*call, *stats, message), message,
                               error, errorSize);
}

} // namespace

void registerVulkanDevice() {
  ignrt_register_device("vulkan", vulkanDriver, nullptr);
}

bool probeVulkanDevice(VulkanDeviceInfo &info, std::string &why) {
  std::lock_guard<std::mutex> lock(driverMutex());
  VulkanContext *ctx = getVulkanContext(why);
  if (ctx)
    info = ctx->info;
  return ctx != nullptr;
}

int runVulkanCall(const ignrt_device_call &call, ignrt_device_stats &stats,
                  std::string &error) {
  stats = ignrt_device_stats{0, 0.0, 0.0};
  return gpu::rt::runGuarded(
      "vulkan", driverMutex(), call, error,
      [&](std::string &why) { return runLocked(call, stats, why); });
}

} // namespace ign::vulkan
