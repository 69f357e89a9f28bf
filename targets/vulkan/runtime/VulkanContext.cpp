//===- VulkanContext.cpp - the process-wide Vulkan device -----------------===//
//
// Instance creation, physical device selection (IGN_VULKAN_DEVICE, else
// the most capable kind), the features compiled kernels may need (enabled
// when present, so that a kernel using 8-bit storage or f64 runs), and the
// logical device with its compute queue.
//
//===----------------------------------------------------------------------===//

#include "VulkanContext.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

namespace ign::vulkan {

namespace {

constexpr uint32_t kNewestApi = VK_API_VERSION_1_3;
constexpr uint64_t kFenceTimeoutNs = 60ull * 1000 * 1000 * 1000;

std::string versionText(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." +
         std::to_string(VK_API_VERSION_MINOR(v));
}

std::string failed(const char *step, VkResult r) {
  return std::string(step) + " failed: " + resultName(r);
}

bool createInstance(VulkanContext &ctx, uint32_t &apiVersion,
                    std::string &why) {
  uint32_t loaderVersion = VK_API_VERSION_1_0;
  if (ctx.global->vkEnumerateInstanceVersion)
    ctx.global->vkEnumerateInstanceVersion(&loaderVersion);
  if (loaderVersion < VK_API_VERSION_1_1) {
    why = "the Vulkan loader supports only Vulkan " +
          versionText(loaderVersion) + "; the driver needs 1.1 or later";
    return false;
  }
  apiVersion = std::min(loaderVersion, kNewestApi);
  auto app = vkStruct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "ignrt";
  app.pEngineName = "ignc";
  app.apiVersion = apiVersion;
  auto info =
      vkStruct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  info.pApplicationInfo = &app;
  VkResult r = ctx.global->vkCreateInstance(&info, nullptr, &ctx.instance);
  if (r != VK_SUCCESS) {
    why = failed("vkCreateInstance", r);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
      why += " (no Vulkan driver is installed: install mesa-vulkan-drivers "
             "or your GPU's Vulkan driver)";
    return false;
  }
  return loadInstanceFunctions(*ctx.global, ctx.instance, ctx.vki, why);
}

/// A physical device and why it cannot be used ("" when it can).
struct Candidate {
  VkPhysicalDevice device = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props = {};
  uint32_t queueFamily = 0;
  VkQueueFamilyProperties queue = {};
  std::string unusable;
};

const char *typeName(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return "discrete GPU";
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return "integrated GPU";
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    return "virtual GPU";
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    return "CPU";
  default:
    return "other";
  }
}

int typeRank(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return 0;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return 1;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    return 2;
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    return 3;
  default:
    return 4;
  }
}

Candidate describe(const VulkanContext &ctx, VkPhysicalDevice device) {
  Candidate c;
  c.device = device;
  ctx.vki.vkGetPhysicalDeviceProperties(device, &c.props);
  uint32_t count = 0;
  ctx.vki.vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  ctx.vki.vkGetPhysicalDeviceQueueFamilyProperties(device, &count,
                                                   families.data());
  c.unusable = "it has no compute queue";
  for (uint32_t i = 0; i < count; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      c.queueFamily = i;
      c.queue = families[i];
      c.unusable.clear();
      break;
    }
  if (c.props.apiVersion < VK_API_VERSION_1_1)
    c.unusable = "it supports only Vulkan " + versionText(c.props.apiVersion);
  return c;
}

std::string listDevices(const std::vector<Candidate> &all) {
  std::string s;
  for (size_t i = 0; i < all.size(); ++i)
    s += (i ? ", " : "") + std::to_string(i) + ": '" + all[i].props.deviceName +
         "' (" + typeName(all[i].props.deviceType) +
         (all[i].unusable.empty() ? "" : "; " + all[i].unusable) + ")";
  return s;
}

std::string lower(std::string s) {
  for (char &c : s)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The device IGN_VULKAN_DEVICE names (an index or a name substring).
const Candidate *chooseNamed(const std::vector<Candidate> &all,
                             const std::string &want, std::string &why) {
  bool isIndex = !want.empty() && want.size() < 9 &&
                 std::all_of(want.begin(), want.end(),
                             [](char c) { return c >= '0' && c <= '9'; });
  const Candidate *chosen = nullptr;
  if (isIndex && size_t(std::stoul(want)) < all.size())
    chosen = &all[std::stoul(want)];
  for (size_t i = 0; !isIndex && !chosen && i < all.size(); ++i)
    if (lower(all[i].props.deviceName).find(lower(want)) != std::string::npos)
      chosen = &all[i];
  if (!chosen)
    why = "IGN_VULKAN_DEVICE=" + want + " names none of the Vulkan devices (" +
          listDevices(all) + ")";
  else if (!chosen->unusable.empty())
    why = "IGN_VULKAN_DEVICE=" + want + " names '" + chosen->props.deviceName +
          "', but " + chosen->unusable;
  return why.empty() ? chosen : nullptr;
}

bool choosePhysical(VulkanContext &ctx, Candidate &out, std::string &why) {
  uint32_t count = 0;
  VkResult r =
      ctx.vki.vkEnumeratePhysicalDevices(ctx.instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  if (r == VK_SUCCESS || r == VK_INCOMPLETE)
    r = ctx.vki.vkEnumeratePhysicalDevices(ctx.instance, &count,
                                           devices.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    why = failed("vkEnumeratePhysicalDevices", r);
    return false;
  }
  std::vector<Candidate> all;
  for (uint32_t i = 0; i < count; ++i)
    all.push_back(describe(ctx, devices[i]));
  if (all.empty()) {
    why = "no Vulkan device: the loader found no driver (install "
          "mesa-vulkan-drivers or your GPU's Vulkan driver)";
    return false;
  }
  const char *want = std::getenv("IGN_VULKAN_DEVICE");
  const Candidate *chosen = nullptr;
  if (want && *want)
    chosen = chooseNamed(all, want, why);
  else
    for (const Candidate &c : all)
      if (c.unusable.empty() &&
          (!chosen ||
           typeRank(c.props.deviceType) < typeRank(chosen->props.deviceType)))
        chosen = &c;
  if (!chosen && why.empty())
    why = "no Vulkan device with a compute queue and Vulkan 1.1 (" +
          listDevices(all) + ")";
  if (chosen)
    out = *chosen;
  return chosen != nullptr;
}

/// The feature structures of one device, chained for vkGet/vkCreate.
struct Features {
  VkPhysicalDeviceFeatures2 core = vkStruct<VkPhysicalDeviceFeatures2>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  VkPhysicalDeviceVulkan11Features v11 =
      vkStruct<VkPhysicalDeviceVulkan11Features>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  VkPhysicalDeviceVulkan12Features v12 =
      vkStruct<VkPhysicalDeviceVulkan12Features>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  VkPhysicalDevice16BitStorageFeatures storage16 =
      vkStruct<VkPhysicalDevice16BitStorageFeatures>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);

  // Vulkan 1.1 has no Vulkan11Features; its 16-bit storage struct is core.
  explicit Features(uint32_t api) {
    if (api >= VK_API_VERSION_1_2) {
      core.pNext = &v11;
      v11.pNext = &v12;
    } else {
      core.pNext = &storage16;
    }
  }
  Features(const Features &) = delete;
};

/// \p want keeps only the features of \p have the driver enables.
void keepWanted(const Features &have, Features &want) {
  const VkPhysicalDeviceFeatures &h = have.core.features;
  VkPhysicalDeviceFeatures &w = want.core.features;
  w.shaderInt64 = h.shaderInt64;
  w.shaderFloat64 = h.shaderFloat64;
  w.shaderInt16 = h.shaderInt16;
  want.v11.storageBuffer16BitAccess = have.v11.storageBuffer16BitAccess;
  want.storage16.storageBuffer16BitAccess =
      have.storage16.storageBuffer16BitAccess;
  want.v12.storageBuffer8BitAccess = have.v12.storageBuffer8BitAccess;
  want.v12.uniformAndStorageBuffer8BitAccess =
      have.v12.uniformAndStorageBuffer8BitAccess;
  want.v12.shaderInt8 = have.v12.shaderInt8;
  want.v12.shaderFloat16 = have.v12.shaderFloat16;
}

void fillInfo(VulkanContext &ctx, const Candidate &c, uint32_t api,
              const Features &f) {
  auto subgroup = vkStruct<VkPhysicalDeviceSubgroupProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  auto props = vkStruct<VkPhysicalDeviceProperties2>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  props.pNext = &subgroup;
  ctx.vki.vkGetPhysicalDeviceProperties2(c.device, &props);
  const VkPhysicalDeviceLimits &l = props.properties.limits;
  VulkanDeviceInfo &info = ctx.info;
  info.name = props.properties.deviceName;
  info.type = typeName(props.properties.deviceType);
  info.apiVersion = api;
  info.subgroupSize = subgroup.subgroupSize;
  info.subgroupArithmetic =
      (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
      (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
  info.maxSharedMemoryBytes = l.maxComputeSharedMemorySize;
  info.maxInvocations = l.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    info.maxWorkgroupSize[i] = l.maxComputeWorkGroupSize[i];
    info.maxWorkgroupCount[i] = l.maxComputeWorkGroupCount[i];
  }
  info.maxStorageBufferRange = l.maxStorageBufferRange;
  info.maxStorageBuffersPerStage = l.maxPerStageDescriptorStorageBuffers;
  ctx.timestampValidBits = c.queue.timestampValidBits;
  ctx.timestampPeriod = l.timestampPeriod;
  info.timestamps = c.queue.timestampValidBits > 0 && l.timestampPeriod > 0;
  const VkPhysicalDeviceFeatures &core = f.core.features;
  info.shaderInt64 = core.shaderInt64;
  info.shaderFloat64 = core.shaderFloat64;
  info.shaderInt16 = core.shaderInt16;
  info.storageBuffer16BitAccess =
      f.v11.storageBuffer16BitAccess || f.storage16.storageBuffer16BitAccess;
  info.storageBuffer8BitAccess = f.v12.storageBuffer8BitAccess;
  info.uniformAndStorageBuffer8BitAccess =
      f.v12.uniformAndStorageBuffer8BitAccess;
  info.shaderInt8 = f.v12.shaderInt8;
  info.shaderFloat16 = f.v12.shaderFloat16;
}

bool createDevice(VulkanContext &ctx, const Candidate &c, uint32_t api,
                  std::string &why) {
  Features have(api), want(api);
  ctx.vki.vkGetPhysicalDeviceFeatures2(c.device, &have.core);
  keepWanted(have, want);
  fillInfo(ctx, c, api, have);
  float priority = 1.0f;
  auto queue = vkStruct<VkDeviceQueueCreateInfo>(
      VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  queue.queueFamilyIndex = c.queueFamily;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  auto info =
      vkStruct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  info.pNext = &want.core;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  VkResult r = ctx.vki.vkCreateDevice(c.device, &info, nullptr, &ctx.device);
  if (r != VK_SUCCESS) {
    why = failed("vkCreateDevice", r) + " on '" + ctx.info.name + "'";
    return false;
  }
  if (!loadDeviceFunctions(ctx.vki, ctx.device, ctx.vkd, why))
    return false;
  ctx.physical = c.device;
  ctx.queueFamily = c.queueFamily;
  ctx.vkd.vkGetDeviceQueue(ctx.device, c.queueFamily, 0, &ctx.queue);
  ctx.vki.vkGetPhysicalDeviceMemoryProperties(c.device, &ctx.memory);
  ctx.discrete = c.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  ctx.info.memory = describeMemory(ctx);
  return true;
}

bool createLaunchObjects(VulkanContext &ctx, std::string &why) {
  const DeviceFunctions &vk = ctx.vkd;
  auto pool = vkStruct<VkCommandPoolCreateInfo>(
      VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = ctx.queueFamily;
  VkResult r =
      vk.vkCreateCommandPool(ctx.device, &pool, nullptr, &ctx.commandPool);
  if (r != VK_SUCCESS)
    return why = failed("vkCreateCommandPool", r), false;
  auto alloc = vkStruct<VkCommandBufferAllocateInfo>(
      VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  alloc.commandPool = ctx.commandPool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  r = vk.vkAllocateCommandBuffers(ctx.device, &alloc, &ctx.commands);
  if (r != VK_SUCCESS)
    return why = failed("vkAllocateCommandBuffers", r), false;
  auto fence = vkStruct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  r = vk.vkCreateFence(ctx.device, &fence, nullptr, &ctx.fence);
  if (r != VK_SUCCESS)
    return why = failed("vkCreateFence", r), false;
  if (!ctx.info.timestamps)
    return true;
  auto queries =
      vkStruct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
  queries.queryType = VK_QUERY_TYPE_TIMESTAMP;
  queries.queryCount = 2 * kMaxBatchLaunches;
  r = vk.vkCreateQueryPool(ctx.device, &queries, nullptr, &ctx.timestamps);
  if (r != VK_SUCCESS) // time the launch on the host instead
    ctx.info.timestamps = false;
  return true;
}

std::unique_ptr<VulkanContext> createContext(std::string &why) {
  auto ctx = std::make_unique<VulkanContext>();
  std::optional<MemoryMode> mode = memoryModeFromEnvironment(why);
  if (!mode)
    return nullptr;
  ctx->memoryMode = *mode;
  const char *batch = std::getenv("IGN_VULKAN_BATCH");
  ctx->batching = !batch || std::string(batch) != "0";
  ctx->global = loadVulkan(why);
  uint32_t api = 0;
  Candidate chosen;
  if (!ctx->global || !createInstance(*ctx, api, why) ||
      !choosePhysical(*ctx, chosen, why))
    return nullptr;
  api = std::min(api, chosen.props.apiVersion);
  if (!createDevice(*ctx, chosen, api, why) || !createLaunchObjects(*ctx, why))
    return nullptr;
  return ctx;
}

} // namespace

namespace {
VulkanContext *madeContext = nullptr; // getVulkanContext's, once made
} // namespace

VulkanContext *existingVulkanContext() { return madeContext; }

VulkanContext *getVulkanContext(std::string &why) {
  // Leaked on purpose (see the header); a failed attempt leaks its
  // partial objects too, once per process.
  static bool tried = false;
  VulkanContext *&context = madeContext;
  static std::string failure;
  if (!tried) {
    tried = true;
    context = createContext(failure).release();
    if (!context && failure.empty())
      failure = "cannot create the Vulkan context";
  }
  if (!context)
    why = failure;
  return context;
}

VkResult beginCommands(VulkanContext &ctx, std::string &why) {
  if (!settleBatch(ctx)) // the batch may still be pending
    return why = ctx.broken, VK_ERROR_DEVICE_LOST;
  ctx.vkd.vkResetCommandBuffer(ctx.commands, 0);
  auto begin = vkStruct<VkCommandBufferBeginInfo>(
      VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VkResult r = ctx.vkd.vkBeginCommandBuffer(ctx.commands, &begin);
  if (r != VK_SUCCESS)
    why = failed("vkBeginCommandBuffer", r);
  return r;
}

void recordBarrier(VulkanContext &ctx, VkPipelineStageFlags srcStage,
                   VkAccessFlags srcAccess, VkPipelineStageFlags dstStage,
                   VkAccessFlags dstAccess) {
  auto b = vkStruct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  b.srcAccessMask = srcAccess;
  b.dstAccessMask = dstAccess;
  ctx.vkd.vkCmdPipelineBarrier(ctx.commands, srcStage, dstStage, 0, 1, &b, 0,
                               nullptr, 0, nullptr);
}

VkResult submitAndWait(VulkanContext &ctx, std::string &why) {
  const DeviceFunctions &vk = ctx.vkd;
  VkResult r = vk.vkEndCommandBuffer(ctx.commands);
  if (r != VK_SUCCESS)
    return why = failed("vkEndCommandBuffer", r), r;
  vk.vkResetFences(ctx.device, 1, &ctx.fence);
  auto submit = vkStruct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &ctx.commands;
  r = vk.vkQueueSubmit(ctx.queue, 1, &submit, ctx.fence);
  if (r == VK_SUCCESS)
    r = vk.vkWaitForFences(ctx.device, 1, &ctx.fence, VK_TRUE, kFenceTimeoutNs);
  if (r == VK_TIMEOUT)
    ctx.broken = "an earlier launch timed out and may still be running: the "
                 "Vulkan device is unusable in this process";
  else if (r == VK_ERROR_DEVICE_LOST)
    ctx.broken = "the Vulkan device was lost";
  if (r == VK_TIMEOUT)
    why = "timed out: the device did not finish in 60 s";
  else if (r != VK_SUCCESS)
    why = "running the dispatches failed: " + resultName(r);
  return r;
}

bool deviceTime(VulkanContext &ctx, uint32_t query, double &ns) {
  uint64_t ticks[2] = {0, 0};
  VkResult r = ctx.vkd.vkGetQueryPoolResults(
      ctx.device, ctx.timestamps, query, 2, sizeof ticks, ticks,
      sizeof ticks[0], VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (r != VK_SUCCESS)
    return false;
  uint64_t mask = ctx.timestampValidBits >= 64
                      ? ~0ull
                      : (1ull << ctx.timestampValidBits) - 1;
  ns = double((ticks[1] - ticks[0]) & mask) * ctx.timestampPeriod;
  return true;
}

void closeBatch(VulkanContext &ctx, VkResult r, const std::string &why) {
  std::string names;
  for (DeferredLaunch &d : ctx.deferred) {
    double ns = 0;
    if (r == VK_SUCCESS && deviceTime(ctx, d.query, ns))
      d.stats->device_ns = ns;
    *d.pending = false;
    names += (names.empty() ? "" : ", ") + d.kernel;
  }
  if (r != VK_SUCCESS && !names.empty() && ctx.broken.empty())
    ctx.broken = "the launches deferred to one submission (" + names +
                 ") did not run (" + why +
                 "): the Vulkan device is unusable in this process";
  ctx.deferred.clear();
  ctx.batchOpen = false;
}

VkResult submitBatch(VulkanContext &ctx, std::string &why) {
  if (!ctx.batchOpen)
    return VK_SUCCESS;
  // Its launches' outputs stay on the device: nothing to copy back.
  VkResult r = submitAndWait(ctx, why);
  closeBatch(ctx, r, why);
  if (r != VK_SUCCESS)
    why = ctx.broken;
  return r;
}

bool settleBatch(VulkanContext &ctx) {
  std::string why;
  submitBatch(ctx, why);
  return ctx.broken.empty();
}

} // namespace ign::vulkan
