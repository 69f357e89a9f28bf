//===- VulkanDescriptor.cpp - a Vulkan kernel's launch descriptor ---------===//
//
// Everything a descriptor or its SPIR-V could get wrong is caught here, as a
// message, because Vulkan itself does not check: a missing entry point, a
// binding the layout lacks or an unsupported capability is undefined
// behaviour (often a crash) inside the driver, not an error code.
//
//===----------------------------------------------------------------------===//

#include "VulkanDescriptor.h"
#include "VulkanDevice.h"
#include "VulkanLoader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

namespace ign::vulkan {

using namespace gpu::rt;

namespace {

//===----------------------------------------------------------------------===//
// SPIR-V scanning
//===----------------------------------------------------------------------===//

enum : uint32_t {
  SpvMagic = 0x07230203,
  OpEntryPoint = 15,
  OpExecutionMode = 16,
  OpCapability = 17,
  OpVariable = 59,
  OpDecorate = 71,
  ModelGLCompute = 5,
  ModeLocalSize = 17,
  DecorationBinding = 33,
  DecorationDescriptorSet = 34,
  StoragePushConstant = 9,
};

struct EntryPoint {
  uint32_t model = 0, id = 0;
  std::string name;
};

/// What one pass over the module collects.
struct ModuleFacts {
  std::vector<EntryPoint> entries;
  std::map<uint32_t, std::vector<uint32_t>> localSize; // by entry id
  std::map<uint32_t, uint32_t> binding, set;           // by variable id
  bool pushConstants = false;
};

/// The literal string of words [begin, end).
std::string literalString(const uint32_t *begin, const uint32_t *end) {
  std::string s;
  for (const uint32_t *w = begin; w < end; ++w)
    for (int b = 0; b < 4; ++b) {
      char c = char((*w >> (8 * b)) & 0xff);
      if (!c)
        return s;
      s += c;
    }
  return s;
}

void recordInstruction(const uint32_t *w, uint32_t count, ModuleFacts &facts,
                       SpirvSummary &out) {
  uint32_t op = w[0] & 0xffff;
  if (op == OpCapability && count >= 2)
    out.capabilities.push_back(w[1]);
  else if (op == OpEntryPoint && count >= 4)
    facts.entries.push_back({w[1], w[2], literalString(w + 3, w + count)});
  else if (op == OpExecutionMode && count >= 6 && w[2] == ModeLocalSize)
    facts.localSize[w[1]] = {w[3], w[4], w[5]};
  else if (op == OpDecorate && count >= 4 && w[2] == DecorationBinding)
    facts.binding[w[1]] = w[3];
  else if (op == OpDecorate && count >= 4 && w[2] == DecorationDescriptorSet)
    facts.set[w[1]] = w[3];
  else if (op == OpVariable && count >= 4 && w[3] == StoragePushConstant)
    facts.pushConstants = true;
}

bool collectFacts(const std::vector<uint32_t> &words, ModuleFacts &facts,
                  SpirvSummary &out, std::string &error) {
  if (words.size() < 5 || words[0] != SpvMagic) {
    error = "the blob slice is not a SPIR-V module (no magic number)";
    return false;
  }
  out.version = words[1];
  for (size_t i = 5; i < words.size();) {
    uint32_t count = words[i] >> 16;
    if (count == 0 || count > words.size() - i) {
      error = "malformed SPIR-V: the instruction at word " + std::to_string(i) +
              " overruns the module";
      return false;
    }
    recordInstruction(&words[i], count, facts, out);
    i += count;
  }
  return true;
}

/// Bindings are checked only in single-entry modules: there every
/// decorated variable belongs to the entry point, while with several a
/// variable may be another entry point's.
bool checkResources(const ModuleFacts &facts, size_t numBindings,
                    std::string &error) {
  if (facts.entries.size() != 1)
    return true;
  if (facts.pushConstants) {
    error = "the module uses push constants, which the driver never sets";
    return false;
  }
  for (auto [id, binding] : facts.binding) {
    auto set = facts.set.find(id);
    if (set != facts.set.end() && set->second != 0) {
      error = "the module uses descriptor set " + std::to_string(set->second) +
              "; only set 0 is bound";
      return false;
    }
    if (binding >= numBindings) {
      error = "the module uses binding " + std::to_string(binding) +
              " but the descriptor lists " + std::to_string(numBindings) +
              " bindings";
      return false;
    }
  }
  return true;
}

/// Summarizes \p words (one module) into \p out; checks the entry point,
/// bindings and push constants.
bool scanSpirv(const std::vector<uint32_t> &words, const Dispatch &dispatch,
               SpirvSummary &out, std::string &error) {
  ModuleFacts facts;
  if (!collectFacts(words, facts, out, error))
    return false;
  const EntryPoint *entry = nullptr;
  std::string names;
  for (const EntryPoint &e : facts.entries) {
    names += (names.empty() ? "'" : ", '") + e.name + "'";
    if (e.name == dispatch.entry && e.model == ModelGLCompute)
      entry = &e;
  }
  if (!entry) {
    error = "the module has no GLCompute entry point named '" + dispatch.entry +
            "' (it has " + (names.empty() ? std::string("none") : names) + ")";
    return false;
  }
  auto local = facts.localSize.find(entry->id);
  if (local != facts.localSize.end()) {
    out.localSizeKnown = true;
    for (int i = 0; i < 3; ++i)
      out.localSize[i] = local->second[i];
  }
  return checkResources(facts, dispatch.bindings.size(), error);
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

bool parseSlice(const json &d, const ignrt_device_call &call, Dispatch &out,
                std::string &error) {
  const json *entry = member(d, "entry");
  if (!entry || !entry->is_string() || entry->get<std::string>().empty()) {
    error = "\"entry\" is missing or not a name";
    return false;
  }
  out.entry = entry->get<std::string>();
  uint64_t offset = 0, bytes = 0, max = std::numeric_limits<size_t>::max();
  if (!readCount(member(d, "offset"), max, offset) ||
      !readCount(member(d, "bytes"), max, bytes)) {
    error = "\"offset\" or \"bytes\" is missing or not a non-negative integer";
    return false;
  }
  if (offset > call.blob_bytes || bytes > call.blob_bytes - offset) {
    error = "the SPIR-V at offset " + std::to_string(offset) + " (" +
            std::to_string(bytes) + " bytes) is beyond the blob (" +
            std::to_string(call.blob_bytes) + " bytes)";
    return false;
  }
  if (bytes == 0 || bytes % 4) {
    error = "\"bytes\" (" + std::to_string(bytes) +
            ") is not a positive multiple of 4 (SPIR-V is 32-bit words)";
    return false;
  }
  out.offset = size_t(offset);
  out.bytes = size_t(bytes);
  return true;
}

bool parseDispatch(const json &d, const ignrt_device_call &call,
                   const KernelDescriptor &kernel, Dispatch &out,
                   std::string &error) {
  if (!d.is_object()) {
    error = "is not an object";
    return false;
  }
  if (!parseSlice(d, call, out, error))
    return false;
  if (!readTriple(member(d, "groups"), out.groups)) {
    error = "\"groups\" is missing or not three integers >= 1";
    return false;
  }
  if (const json *local = member(d, "local")) {
    out.localGiven = true;
    if (!readTriple(local, out.local)) {
      error = "\"local\" is not three integers >= 1";
      return false;
    }
  }
  const json *bindings = member(d, "bindings");
  if (!bindings || !bindings->is_array()) {
    error = "\"bindings\" is missing or not a list";
    return false;
  }
  for (size_t k = 0; k < bindings->size(); ++k) {
    Binding b;
    if (!parseBinding((*bindings)[k], call, kernel.scratch.size(),
                      kernel.constants.size(), b, error)) {
      error = "binding " + std::to_string(k) + " " + error;
      return false;
    }
    out.bindings.push_back(b);
  }
  std::vector<uint32_t> words(out.bytes / 4);
  std::memcpy(words.data(), static_cast<const char *>(call.blob) + out.offset,
              out.bytes);
  return scanSpirv(words, out, out.spirv, error);
}

bool parseJson(const ignrt_device_call &call, KernelDescriptor &out,
               std::string &error) {
  json o;
  if (!parseObject(call, "spirv", o, error))
    return false;
  if (!parseScratch(o, out.scratch, error) ||
      !parseConstants(o, call, out.constants, error))
    return false;
  const json *dispatches = member(o, "dispatches");
  if (!dispatches || !dispatches->is_array() || dispatches->empty()) {
    error = "the descriptor has no \"dispatches\" list";
    return false;
  }
  for (size_t i = 0; i < dispatches->size(); ++i) {
    Dispatch d;
    if (!parseDispatch((*dispatches)[i], call, out, d, error)) {
      error = "dispatch " + std::to_string(i) + ": " + error;
      return false;
    }
    out.dispatches.push_back(std::move(d));
  }
  return true;
}

} // namespace

bool parseDescriptor(const ignrt_device_call &call, KernelDescriptor &out,
                     std::string &error) {
  out = KernelDescriptor();
  return parseChecked(call, error, [&](std::string &error) {
    return parseJson(call, out, error);
  });
}

//===----------------------------------------------------------------------===//
// Device limits
//===----------------------------------------------------------------------===//

namespace {

/// The newest SPIR-V a Vulkan version must accept.
uint32_t maxSpirvVersion(uint32_t api) {
  if (api >= VK_MAKE_API_VERSION(0, 1, 3, 0))
    return 0x00010600;
  if (api >= VK_MAKE_API_VERSION(0, 1, 2, 0))
    return 0x00010500;
  if (api >= VK_MAKE_API_VERSION(0, 1, 1, 0))
    return 0x00010300;
  return 0x00010000;
}

bool checkWorkgroup(const uint32_t local[3], const VulkanDeviceInfo &device,
                    std::string &error) {
  uint64_t invocations = uint64_t(local[0]) * local[1] * local[2];
  bool fits = invocations <= device.maxInvocations;
  for (int i = 0; i < 3; ++i)
    fits = fits && local[i] <= device.maxWorkgroupSize[i];
  if (!fits)
    error = "workgroup size " + tripleText(local) +
            " is over the device's limits (size " +
            tripleText(device.maxWorkgroupSize) + ", " +
            std::to_string(device.maxInvocations) + " invocations)";
  return fits;
}

struct CapabilityFeature {
  uint32_t capability;
  const char *capabilityName, *feature;
  bool VulkanDeviceInfo::*has;
};

const CapabilityFeature capabilityFeatures[] = {
    {9, "Float16", "shaderFloat16", &VulkanDeviceInfo::shaderFloat16},
    {10, "Float64", "shaderFloat64", &VulkanDeviceInfo::shaderFloat64},
    {11, "Int64", "shaderInt64", &VulkanDeviceInfo::shaderInt64},
    {22, "Int16", "shaderInt16", &VulkanDeviceInfo::shaderInt16},
    {39, "Int8", "shaderInt8", &VulkanDeviceInfo::shaderInt8},
    // Group and row launches reduce with OpGroupNonUniform* ... Reduce.
    {63, "GroupNonUniformArithmetic", "subgroup arithmetic in compute shaders",
     &VulkanDeviceInfo::subgroupArithmetic},
    {4433, "StorageBuffer16BitAccess", "storageBuffer16BitAccess",
     &VulkanDeviceInfo::storageBuffer16BitAccess},
    {4448, "StorageBuffer8BitAccess", "storageBuffer8BitAccess",
     &VulkanDeviceInfo::storageBuffer8BitAccess},
    {4449, "UniformAndStorageBuffer8BitAccess",
     "uniformAndStorageBuffer8BitAccess",
     &VulkanDeviceInfo::uniformAndStorageBuffer8BitAccess},
};

bool checkModule(const SpirvSummary &spirv, const VulkanDeviceInfo &device,
                 std::string &error) {
  if (spirv.version > maxSpirvVersion(device.apiVersion)) {
    error = "the module is SPIR-V " + std::to_string(spirv.version >> 16) +
            "." + std::to_string((spirv.version >> 8) & 0xff) +
            ", newer than the device's Vulkan " +
            std::to_string(VK_API_VERSION_MAJOR(device.apiVersion)) + "." +
            std::to_string(VK_API_VERSION_MINOR(device.apiVersion)) +
            " accepts";
    return false;
  }
  for (uint32_t cap : spirv.capabilities)
    for (const CapabilityFeature &cf : capabilityFeatures)
      if (cap == cf.capability && !(device.*cf.has)) {
        error = std::string("the module needs capability ") +
                cf.capabilityName + " but the device lacks " + cf.feature;
        return false;
      }
  return true;
}

bool checkDispatch(const Dispatch &d, const VulkanDeviceInfo &device,
                   std::string &error) {
  for (int i = 0; i < 3; ++i)
    if (d.groups[i] > device.maxWorkgroupCount[i]) {
      error = "groups " + tripleText(d.groups) +
              " is over the device's maximum workgroup count " +
              tripleText(device.maxWorkgroupCount);
      return false;
    }
  if (d.localGiven && !checkWorkgroup(d.local, device, error))
    return false;
  if (d.spirv.localSizeKnown &&
      !checkWorkgroup(d.spirv.localSize, device, error))
    return false;
  if (d.localGiven && d.spirv.localSizeKnown &&
      !std::equal(d.local, d.local + 3, d.spirv.localSize)) {
    error = "\"local\" " + tripleText(d.local) +
            " differs from the module's LocalSize " +
            tripleText(d.spirv.localSize);
    return false;
  }
  if (d.bindings.size() > device.maxStorageBuffersPerStage) {
    error = std::to_string(d.bindings.size()) +
            " bindings are more than the device's " +
            std::to_string(device.maxStorageBuffersPerStage) +
            " storage buffers per stage";
    return false;
  }
  return checkModule(d.spirv, device, error);
}

} // namespace

bool checkDeviceLimits(const ignrt_device_call &call,
                       const KernelDescriptor &kernel,
                       const VulkanDeviceInfo &device, std::string &error) {
  for (size_t i = 0; i < kernel.dispatches.size(); ++i) {
    const Dispatch &d = kernel.dispatches[i];
    if (!checkDispatch(d, device, error)) {
      error = "dispatch " + std::to_string(i) + ": " + error;
      return false;
    }
    for (const Binding &b : d.bindings) {
      static const char *kWhat[] = {"argument ", "scratch ", "constant "};
      uint64_t bytes = kernel.boundBytes(call, b);
      if (bufferBytes(bytes) > device.maxStorageBufferRange) {
        error = std::string(kWhat[b.kind]) + std::to_string(b.index) + " (" +
                std::to_string(bytes) +
                " bytes) is larger than the device's storage buffer range (" +
                std::to_string(device.maxStorageBufferRange) + " bytes)";
        return false;
      }
    }
  }
  return true;
}

} // namespace ign::vulkan
