//===- VulkanKernel.cpp - one kernel's pipelines and buffers --------------===//
//
// Pipelines are compiled once per kernel because that is the expensive
// step (the driver compiles the SPIR-V to machine code); buffers are kept
// with the kernel so that a session running the same bundle repeatedly
// allocates nothing after its first run.
//
//===----------------------------------------------------------------------===//

#include "VulkanKernel.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

namespace ign::vulkan {

namespace {

std::string failed(const char *step, VkResult r) {
  return std::string(step) + " failed: " + resultName(r);
}

bool createSetLayout(VulkanContext &ctx, const Dispatch &d, Pipeline &p,
                     std::string &why) {
  std::vector<VkDescriptorSetLayoutBinding> bindings(d.bindings.size());
  for (size_t k = 0; k < bindings.size(); ++k) {
    bindings[k].binding = uint32_t(k);
    bindings[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[k].descriptorCount = 1;
    bindings[k].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  auto info = vkStruct<VkDescriptorSetLayoutCreateInfo>(
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  info.bindingCount = uint32_t(bindings.size());
  info.pBindings = bindings.data();
  VkResult r = ctx.vkd.vkCreateDescriptorSetLayout(ctx.device, &info, nullptr,
                                                   &p.setLayout);
  if (r != VK_SUCCESS) {
    why = failed("vkCreateDescriptorSetLayout", r);
    return false;
  }
  auto layout = vkStruct<VkPipelineLayoutCreateInfo>(
      VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &p.setLayout;
  r = ctx.vkd.vkCreatePipelineLayout(ctx.device, &layout, nullptr, &p.layout);
  if (r != VK_SUCCESS)
    why = failed("vkCreatePipelineLayout", r);
  return r == VK_SUCCESS;
}

bool createPipeline(VulkanContext &ctx, const ignrt_device_call &call,
                    const Dispatch &d, Pipeline &p, std::string &why) {
  if (!createSetLayout(ctx, d, p, why))
    return false;
  // pCode must be 4-byte aligned; the blob slice need not be.
  std::vector<uint32_t> words(d.bytes / 4);
  std::memcpy(words.data(), static_cast<const char *>(call.blob) + d.offset,
              d.bytes);
  auto module = vkStruct<VkShaderModuleCreateInfo>(
      VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  module.codeSize = d.bytes;
  module.pCode = words.data();
  VkResult r =
      ctx.vkd.vkCreateShaderModule(ctx.device, &module, nullptr, &p.module);
  if (r != VK_SUCCESS) {
    why = failed("vkCreateShaderModule", r);
    return false;
  }
  auto info = vkStruct<VkComputePipelineCreateInfo>(
      VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  info.stage = vkStruct<VkPipelineShaderStageCreateInfo>(
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = p.module;
  info.stage.pName = d.entry.c_str();
  info.layout = p.layout;
  r = ctx.vkd.vkCreateComputePipelines(ctx.device, VK_NULL_HANDLE, 1, &info,
                                       nullptr, &p.pipeline);
  if (r != VK_SUCCESS)
    why =
        failed("vkCreateComputePipelines", r) + " for entry '" + d.entry + "'";
  return r == VK_SUCCESS;
}

bool allocateSets(VulkanContext &ctx, const KernelDescriptor &kernel,
                  CachedKernel &out, std::string &why) {
  uint32_t descriptors = 0;
  for (const Dispatch &d : kernel.dispatches)
    descriptors += uint32_t(d.bindings.size());
  // A pool size of 0 descriptors is invalid, even for binding-less sets.
  VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                               descriptors ? descriptors : 1};
  auto pool = vkStruct<VkDescriptorPoolCreateInfo>(
      VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
  pool.maxSets = uint32_t(kernel.dispatches.size());
  pool.poolSizeCount = 1;
  pool.pPoolSizes = &size;
  VkResult r = ctx.vkd.vkCreateDescriptorPool(ctx.device, &pool, nullptr,
                                              &out.descriptorPool);
  if (r != VK_SUCCESS) {
    why = failed("vkCreateDescriptorPool", r);
    return false;
  }
  for (Pipeline &p : out.pipelines) {
    auto alloc = vkStruct<VkDescriptorSetAllocateInfo>(
        VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    alloc.descriptorPool = out.descriptorPool;
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &p.setLayout;
    r = ctx.vkd.vkAllocateDescriptorSets(ctx.device, &alloc, &p.set);
    if (r != VK_SUCCESS) {
      why = failed("vkAllocateDescriptorSets", r);
      return false;
    }
  }
  return true;
}

/// The device copies of bundle weights, each made once: keyed by the
/// bundle's epoch, the weight's host address and the bound bytes.
class WeightCache {
public:
  VkResult get(VulkanContext &ctx, const ignrt_device_call &call, size_t arg,
               uint64_t bytes, Buffer *&out, std::string &why) {
    touch(ctx, call.weights_epoch);
    Key key{call.weights_epoch, call.data[arg], bytes};
    auto it = buffers_.find(key);
    if (it == buffers_.end()) {
      Buffer b;
      VkResult r = allocateBuffer(ctx, bytes, BufferUse::Upload, b, why);
      if (r == VK_SUCCESS)
        r = upload(ctx, b, call.data[arg], call.args[arg].bytes, why);
      if (r != VK_SUCCESS) {
        freeBuffer(ctx, b);
        return r;
      }
      it = buffers_.emplace(key, b).first;
    }
    out = &it->second;
    return VK_SUCCESS;
  }

  void releaseOthers(VulkanContext &ctx, uint64_t keepEpoch) {
    for (uint64_t e : std::vector<uint64_t>(epochs_))
      if (e != keepEpoch)
        release(ctx, e);
  }

private:
  using Key = std::tuple<uint64_t, const void *, uint64_t>;

  /// Marks `epoch` most recently used; frees the least recently used
  /// bundle's copies beyond kMaxWeightBundles.
  void touch(VulkanContext &ctx, uint64_t epoch) {
    eraseValue(epochs_, epoch);
    epochs_.push_back(epoch);
    if (epochs_.size() > kMaxWeightBundles)
      release(ctx, epochs_.front());
  }

  void release(VulkanContext &ctx, uint64_t epoch) {
    for (auto it = buffers_.begin(); it != buffers_.end();)
      if (std::get<0>(it->first) == epoch) {
        freeBuffer(ctx, it->second);
        it = buffers_.erase(it);
      } else {
        ++it;
      }
    eraseValue(epochs_, epoch);
  }

  template <typename T> static void eraseValue(std::vector<T> &v, T x) {
    v.erase(std::remove(v.begin(), v.end(), x), v.end());
  }

  std::map<Key, Buffer> buffers_;
  std::vector<uint64_t> epochs_; // least recently used first
};

WeightCache &weightCache() {
  static WeightCache *cache = new WeightCache; // lives as long as the context
  return *cache;
}

/// Intermediates kept on the device between launches (the call's
/// `resident` flags).
gpu::rt::ResidentBuffers<Buffer> &residentCache() {
  static auto *cache = new gpu::rt::ResidentBuffers<Buffer>; // as the context
  return *cache;
}

/// Argument `arg`'s kept copy (ResidentBuffers::get), as bindBuffers takes
/// its buffers.
VkResult residentBuffer(VulkanContext &ctx, const ignrt_device_call &call,
                        size_t arg, uint64_t bytes, Buffer *&out,
                        std::string &why) {
  VkResult result = VK_ERROR_INITIALIZATION_FAILED; // a missing input's
  out = residentCache().get(
      call, arg, bytes,
      [&](uint64_t size, Buffer &b) {
        result = allocateBuffer(ctx, size, BufferUse::Device, b, why);
        if (result != VK_SUCCESS)
          freeBuffer(ctx, b);
        return result == VK_SUCCESS;
      },
      why);
  return out ? VK_SUCCESS : result;
}

} // namespace

bool isWeight(const ignrt_device_call &call, size_t i) {
  return call.weights && call.weights_epoch && call.weights[i];
}

void releaseOtherWeights(VulkanContext &ctx, uint64_t keepEpoch) {
  weightCache().releaseOthers(ctx, keepEpoch);
  residentCache().freePool([&](Buffer &b) { freeBuffer(ctx, b); });
}

void releaseLastUses(const ignrt_device_call &call) {
  residentCache().releaseLastUses(call);
}

bool buildKernel(VulkanContext &ctx, const ignrt_device_call &call,
                 const KernelDescriptor &kernel, CachedKernel &out,
                 std::string &why) {
  out.pipelines.resize(kernel.dispatches.size());
  for (size_t i = 0; i < kernel.dispatches.size(); ++i)
    if (!createPipeline(ctx, call, kernel.dispatches[i], out.pipelines[i],
                        why)) {
      why = "dispatch " + std::to_string(i) + ": " + why;
      return false;
    }
  out.args.resize(call.num_args);
  out.scratch.resize(kernel.scratch.size());
  out.constants.resize(kernel.constants.size());
  return allocateSets(ctx, kernel, out, why);
}

void releaseBuffers(VulkanContext &ctx, CachedKernel &kernel) {
  for (Buffer &b : kernel.args)
    freeBuffer(ctx, b);
  for (Buffer &b : kernel.scratch)
    freeBuffer(ctx, b);
  for (Buffer &b : kernel.constants)
    freeBuffer(ctx, b);
  kernel.constantsLoaded = false;
}

void destroyKernel(VulkanContext &ctx, CachedKernel &kernel) {
  if (!settleBatch(ctx)) { // the device may still use it: leaked
    kernel = CachedKernel();
    return;
  }
  const DeviceFunctions &vk = ctx.vkd;
  releaseBuffers(ctx, kernel);
  // Destroying the pool frees its sets; null handles are ignored.
  vk.vkDestroyDescriptorPool(ctx.device, kernel.descriptorPool, nullptr);
  for (Pipeline &p : kernel.pipelines) {
    vk.vkDestroyPipeline(ctx.device, p.pipeline, nullptr);
    vk.vkDestroyShaderModule(ctx.device, p.module, nullptr);
    vk.vkDestroyPipelineLayout(ctx.device, p.layout, nullptr);
    vk.vkDestroyDescriptorSetLayout(ctx.device, p.setLayout, nullptr);
  }
  kernel = CachedKernel();
}

VkResult bindBuffers(VulkanContext &ctx, const ignrt_device_call &call,
                     const KernelDescriptor &kernel, CachedKernel &cached,
                     std::string &why) {
  // Another call may reach this cached kernel with more arguments.
  if (cached.args.size() < call.num_args)
    cached.args.resize(call.num_args);
  size_t total = 0;
  for (const Dispatch &d : kernel.dispatches)
    total += d.bindings.size();
  // The writes point into `infos`: it must not reallocate.
  std::vector<VkDescriptorBufferInfo> infos;
  infos.reserve(total);
  std::vector<VkWriteDescriptorSet> writes;
  for (size_t i = 0; i < kernel.dispatches.size(); ++i)
    for (size_t k = 0; k < kernel.dispatches[i].bindings.size(); ++k) {
      const Binding &b = kernel.dispatches[i].bindings[k];
      uint64_t bytes = bufferBytes(kernel.boundBytes(call, b));
      Buffer *buffer = b.kind == Binding::Arg ? &cached.args[b.index]
                       : b.kind == Binding::Scratch
                           ? &cached.scratch[b.index]
                           : &cached.constants[b.index];
      bool arg = b.kind == Binding::Arg;
      BufferUse use = arg                          ? BufferUse::Transfer
                      : b.kind == Binding::Scratch ? BufferUse::Device
                                                   : BufferUse::Upload;
      VkResult r =
          arg && isWeight(call, b.index)
              ? weightCache().get(ctx, call, b.index, bytes, buffer, why)
          : arg && gpu::rt::residency(call, b.index) != IGNRT_RESIDENT_HOST
              ? residentBuffer(ctx, call, b.index, bytes, buffer, why)
              : ensureBuffer(ctx, bytes, use, *buffer, why);
      if (r != VK_SUCCESS)
        return r;
      // The exact range, so that OpArrayLength sees the tensor's length.
      infos.push_back({buffer->buffer, 0, bytes});
      auto w = vkStruct<VkWriteDescriptorSet>(
          VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
      w.dstSet = cached.pipelines[i].set;
      w.dstBinding = uint32_t(k);
      w.descriptorCount = 1;
      w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w.pBufferInfo = &infos.back();
      writes.push_back(w);
    }
  ctx.vkd.vkUpdateDescriptorSets(ctx.device, uint32_t(writes.size()),
                                 writes.data(), 0, nullptr);
  if (!cached.constantsLoaded) {
    for (size_t c = 0; c < kernel.constants.size(); ++c) {
      if (!cached.constants[c].buffer) // bound by no dispatch
        continue;
      VkResult r = upload(ctx, cached.constants[c],
                          static_cast<const char *>(call.blob) +
                              kernel.constants[c].offset,
                          kernel.constants[c].bytes, why);
      if (r != VK_SUCCESS)
        return why = "constant " + std::to_string(c) + ": " + why, r;
    }
    cached.constantsLoaded = true;
  }
  return VK_SUCCESS;
}

} // namespace ign::vulkan
