//===- VulkanDevice.cpp - Vulkan compute as libignrt's vulkan driver ------===//
//
// One launch: check the descriptor (before any Vulkan object is made), find
// or build the kernel's pipelines, copy the arguments into its pooled
// buffers (VulkanMemory.h: mapped, or staged by copies the command buffer
// records), record the dispatches with barriers between them, submit, wait
// on a fence with a timeout, and copy the outputs back. A launch whose
// outputs all stay on the device (ignrt_device_call::may_defer) is only
// recorded: the launches up to the next one that copies to the host go in
// one submission, each timed by its own timestamps. Calls are serialized
// on one mutex; they share one queue and command buffer.
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

/// Whether argument `i` is copied between the host and the device on
/// every call: not a weight (on the device already, bindBuffers copied it
/// once) nor an intermediate kept there (resident).
bool copiedEachCall(const ignrt_device_call &call,
                    const std::vector<bool> &bound, size_t i) {
  return bound[i] && call.args[i].bytes && !isWeight(call, i) &&
         gpu::rt::residency(call, i) == IGNRT_RESIDENT_HOST;
}

/// Outputs go in too: an element the kernel does not write then keeps the
/// caller's value (libignrt's poison) as it would with a host kernel,
/// instead of a stale one from the pooled buffer.
void copyIn(const ignrt_device_call &call, const std::vector<bool> &bound,
            CachedKernel &kernel) {
  for (size_t i = 0; i < call.num_args; ++i)
    if (copiedEachCall(call, bound, i))
      std::memcpy(kernel.args[i].host(), call.data[i], call.args[i].bytes);
}

void copyOut(const ignrt_device_call &call, const std::vector<bool> &bound,
             const CachedKernel &kernel) {
  for (size_t i = call.num_args - call.results; i < call.num_args; ++i)
    if (copiedEachCall(call, bound, i))
      std::memcpy(call.data[i], kernel.args[i].host(), call.args[i].bytes);
}

/// Records the copies between the staging twins of the arguments copied
/// each call and their device buffers: every one in (\p in), or the
/// outputs out. False when there is none to copy.
bool recordStaging(VulkanContext &ctx, const ignrt_device_call &call,
                   const std::vector<bool> &bound, const CachedKernel &kernel,
                   bool in) {
  bool any = false;
  for (size_t i = in ? 0 : call.num_args - call.results; i < call.num_args; ++i)
    if (copiedEachCall(call, bound, i) && kernel.args[i].staged()) {
      recordStagingCopy(ctx, kernel.args[i], call.args[i].bytes, in);
      any = true;
    }
  return any;
}

/// The call's commands, appended to the open batch or beginning one: its
/// inputs copied in where they are staged, its dispatches, each seeing the
/// previous ones' writes (also those of the batch's earlier launches),
/// between timestamp queries \p query and \p query + 1.
bool record(VulkanContext &ctx, const ignrt_device_call &call,
            const std::vector<bool> &bound, const KernelDescriptor &desc,
            const CachedKernel &kernel, uint32_t query, std::string &why) {
  const DeviceFunctions &vk = ctx.vkd;
  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const VkAccessFlags shader =
      VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  if (!ctx.batchOpen) {
    if (beginCommands(ctx, why) != VK_SUCCESS)
      return false;
    ctx.batchOpen = true;
  }
  // After what the launches before it (in the batch, or submitted before)
  // wrote, and after they read what it overwrites.
  const VkPipelineStageFlags work = compute | VK_PIPELINE_STAGE_TRANSFER_BIT;
  recordBarrier(ctx, work,
                VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, work,
                shader | VK_ACCESS_TRANSFER_READ_BIT |
                    VK_ACCESS_TRANSFER_WRITE_BIT);
  bool copiedIn = recordStaging(ctx, call, bound, kernel, /*in=*/true);
  if (copiedIn)
    recordBarrier(ctx, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT, compute, shader);
  if (ctx.info.timestamps) {
    vk.vkCmdResetQueryPool(ctx.commands, ctx.timestamps, query, 2);
    // Once the commands before it are done (the batch's earlier launches,
    // the copies in): the time is this launch's dispatches'.
    vk.vkCmdWriteTimestamp(ctx.commands,
                           copiedIn ? VK_PIPELINE_STAGE_TRANSFER_BIT
                                    : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                           ctx.timestamps, query);
  }
  for (size_t i = 0; i < desc.dispatches.size(); ++i) {
    const Dispatch &d = desc.dispatches[i];
    const Pipeline &p = kernel.pipelines[i];
    if (i)
      recordBarrier(ctx, compute, VK_ACCESS_SHADER_WRITE_BIT, compute, shader);
    vk.vkCmdBindPipeline(ctx.commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                         p.pipeline);
    vk.vkCmdBindDescriptorSets(ctx.commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                               p.layout, 0, 1, &p.set, 0, nullptr);
    vk.vkCmdDispatch(ctx.commands, d.groups[0], d.groups[1], d.groups[2]);
  }
  if (ctx.info.timestamps)
    vk.vkCmdWriteTimestamp(ctx.commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                           ctx.timestamps, query + 1);
  return true;
}

/// The end of a submission: the call's outputs copied out where they are
/// staged, made visible to the host.
void recordCopiesOut(VulkanContext &ctx, const ignrt_device_call &call,
                     const std::vector<bool> &bound,
                     const CachedKernel &kernel) {
  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  recordBarrier(ctx, compute, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
  recordStaging(ctx, call, bound, kernel, /*in=*/false);
  // The fence alone does not make the device's writes visible to the host.
  recordBarrier(ctx, compute | VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
}

/// Submits the batch ending with the call and times the call: by its
/// timestamps where the queue has them, else from submit to fence on the
/// host. The launches deferred before it get their times (closeBatch).
bool runAndTime(VulkanContext &ctx, ignrt_device_stats &stats, uint32_t query,
                std::string &why) {
  auto start = std::chrono::steady_clock::now();
  VkResult r = submitAndWait(ctx, why);
  if (r != VK_SUCCESS && !ctx.deferred.empty())
    why += " (with " + std::to_string(ctx.deferred.size()) +
           " launches deferred to the same submission)";
  auto end = std::chrono::steady_clock::now();
  stats.device_ns =
      std::chrono::duration<double, std::nano>(end - start).count();
  double ns = 0;
  if (r == VK_SUCCESS && ctx.info.timestamps && deviceTime(ctx, query, ns))
    stats.device_ns = ns;
  closeBatch(ctx, r, why);
  return r == VK_SUCCESS;
}

/// Whether the call may wait in the open batch: the runtime allows it (its
/// outputs stay on the device: may_defer), batching is on, each launch is
/// timed by its own timestamps and the batch has room (for a launch after
/// it too).
bool defers(const VulkanContext &ctx, const ignrt_device_call &call,
            const std::vector<bool> &bound) {
  if (!call.may_defer || !call.deferred || !ctx.batching ||
      !ctx.info.timestamps || ctx.deferred.size() + 2 > kMaxBatchLaunches)
    return false;
  for (size_t i = call.num_args - call.results; i < call.num_args; ++i)
    if (copiedEachCall(call, bound, i))
      return false;
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
  // Its descriptor sets and buffers change below: a launch of it waiting
  // in the batch runs first.
  if (kernel && kernel->pending && submitBatch(*ctx, why) != VK_SUCCESS)
    return false;
  if (!kernel || !bindWithRetry(*ctx, call, desc, *kernel, why))
    return false;
  if (!ctx->broken.empty()) // a batch submitted while binding failed
    return why = ctx->broken, false;
  std::vector<bool> bound = boundArguments(call, desc);
  copyIn(call, bound, *kernel);
  uint32_t query = 2 * uint32_t(ctx->deferred.size());
  if (!record(*ctx, call, bound, desc, *kernel, query, why))
    return false;
  if (defers(*ctx, call, bound)) {
    ctx->deferred.push_back({call.kernel, &stats, query, &kernel->pending});
    kernel->pending = true;
    *call.deferred = 1;
  } else {
    recordCopiesOut(*ctx, call, bound, *kernel);
    if (!runAndTime(*ctx, stats, query, why))
      return false;
    copyOut(call, bound, *kernel);
  }
  releaseLastUses(call);
  return true;
}

/// Runs the open batch, if any: for the runtime's finishing call, and
/// after a failed call (runDeferring). A process whose context was never
/// made has none (and a failed call does not make it).
bool settleLocked(std::string &why) {
  VulkanContext *ctx = existingVulkanContext();
  return !ctx || submitBatch(*ctx, why) == VK_SUCCESS;
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
  return gpu::rt::runDeferring(
      "vulkan", driverMutex(), call, error,
      [&](std::string &why) { return runLocked(call, stats, why); },
      settleLocked);
}

} // namespace ign::vulkan
