//===- VulkanLoader.cpp - libvulkan opened at run time --------------------===//
//
// dlopen of the Vulkan loader and the function tables filled through
// vkGetInstanceProcAddr / vkGetDeviceProcAddr, so that a machine without
// Vulkan gets an error message from the driver instead of a link failure.
//
//===----------------------------------------------------------------------===//

#include "VulkanLoader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace ign::vulkan {

namespace {

struct Library {
  GlobalFunctions fns;
  std::string error; // empty when loaded
};

Library openLibrary() {
  Library lib;
  const char *override = std::getenv("IGN_VULKAN_LOADER");
  const char *path = override && *override ? override : "libvulkan.so.1";
  // The handle is never closed: drivers keep threads and atexit handlers
  // that must outlive every Vulkan object the process made.
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    lib.error = std::string("cannot load ") + path + " (" +
                (why ? why : "unknown error") +
                "): install libvulkan1 and a Vulkan driver such as "
                "mesa-vulkan-drivers";
    return lib;
  }
  auto getProc = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      dlsym(handle, "vkGetInstanceProcAddr"));
  if (!getProc) {
    lib.error = std::string(path) + " has no vkGetInstanceProcAddr: it is "
                                    "not a Vulkan loader";
    return lib;
  }
  lib.fns.vkGetInstanceProcAddr = getProc;
#define IGN_VK_LOAD_GLOBAL(name)                                               \
  lib.fns.name = reinterpret_cast<PFN_##name>(getProc(nullptr, #name));
  IGN_VK_GLOBAL_FUNCTIONS(IGN_VK_LOAD_GLOBAL)
#undef IGN_VK_LOAD_GLOBAL
  if (!lib.fns.vkCreateInstance)
    lib.error = std::string(path) + " does not provide vkCreateInstance";
  return lib;
}

} // namespace

const GlobalFunctions *loadVulkan(std::string &why) {
  static std::once_flag once;
  static Library lib;
  std::call_once(once, [] { lib = openLibrary(); });
  if (!lib.error.empty()) {
    why = lib.error;
    return nullptr;
  }
  return &lib.fns;
}

bool loadInstanceFunctions(const GlobalFunctions &global, VkInstance instance,
                           InstanceFunctions &fns, std::string &why) {
#define IGN_VK_LOAD_INSTANCE(name)                                             \
  fns.name = reinterpret_cast<PFN_##name>(                                     \
      global.vkGetInstanceProcAddr(instance, #name));                          \
  if (!fns.name) {                                                             \
    why = "the Vulkan loader does not provide " #name;                         \
    return false;                                                              \
  }
  IGN_VK_INSTANCE_FUNCTIONS(IGN_VK_LOAD_INSTANCE)
#undef IGN_VK_LOAD_INSTANCE
  return true;
}

bool loadDeviceFunctions(const InstanceFunctions &instanceFns, VkDevice device,
                         DeviceFunctions &fns, std::string &why) {
#define IGN_VK_LOAD_DEVICE(name)                                               \
  fns.name = reinterpret_cast<PFN_##name>(                                     \
      instanceFns.vkGetDeviceProcAddr(device, #name));                         \
  if (!fns.name) {                                                             \
    why = "the Vulkan device does not provide " #name;                         \
    return false;                                                              \
  }
  IGN_VK_DEVICE_FUNCTIONS(IGN_VK_LOAD_DEVICE)
#undef IGN_VK_LOAD_DEVICE
  return true;
}

std::string resultName(VkResult result) {
  switch (result) {
#define IGN_VK_RESULT(name)                                                    \
  case name:                                                                   \
    return #name;
    IGN_VK_RESULT(VK_SUCCESS)
    IGN_VK_RESULT(VK_NOT_READY)
    IGN_VK_RESULT(VK_TIMEOUT)
    IGN_VK_RESULT(VK_EVENT_SET)
    IGN_VK_RESULT(VK_EVENT_RESET)
    IGN_VK_RESULT(VK_INCOMPLETE)
    IGN_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    IGN_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    IGN_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    IGN_VK_RESULT(VK_ERROR_DEVICE_LOST)
    IGN_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    IGN_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    IGN_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    IGN_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    IGN_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    IGN_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    IGN_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    IGN_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    IGN_VK_RESULT(VK_ERROR_UNKNOWN)
    IGN_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    IGN_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    IGN_VK_RESULT(VK_ERROR_FRAGMENTATION)
    IGN_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    IGN_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
    IGN_VK_RESULT(VK_ERROR_INVALID_SHADER_NV)
#undef IGN_VK_RESULT
  default:
    return "VkResult " + std::to_string(int(result));
  }
}

} // namespace ign::vulkan
