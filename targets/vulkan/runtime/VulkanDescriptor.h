//===- VulkanDescriptor.h - a Vulkan kernel's descriptor --------*- C++ -*-===//
//
// The contract with the compiler side: the manifest's "device" object of a
// Vulkan kernel (format, scratch sizes, dispatches with their SPIR-V slices,
// group counts and bindings), parsed and checked against the call and the
// SPIR-V it names before any Vulkan object is made.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_VULKAN_VULKANDESCRIPTOR_H
#define IGN_TARGETS_VULKAN_VULKANDESCRIPTOR_H

#include "DeviceDescriptor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ign::vulkan {

struct VulkanDeviceInfo;

/// What descriptor set 0, binding k of a dispatch holds (a kernel
/// argument, a scratch buffer or one of the kernel's constants), and a
/// constant buffer's bytes: a slice of the blob.
using gpu::rt::Binding;
using ConstantSlice = gpu::rt::BlobSlice;

/// What the driver needs to know about one dispatch's SPIR-V module.
struct SpirvSummary {
  uint32_t version = 0; // 0x00010300 for SPIR-V 1.3
  std::vector<uint32_t> capabilities;
  bool localSizeKnown = false; // a literal LocalSize execution mode
  uint32_t localSize[3] = {1, 1, 1};
};

struct Dispatch {
  std::string entry;
  size_t offset = 0, bytes = 0;
  uint32_t groups[3] = {1, 1, 1};
  bool localGiven = false;
  uint32_t local[3] = {1, 1, 1};
  std::vector<Binding> bindings;
  SpirvSummary spirv;
};

struct KernelDescriptor {
  std::vector<uint64_t> scratch; // byte sizes
  std::vector<ConstantSlice> constants;

  /// The bytes binding \p b covers in a call.
  uint64_t boundBytes(const ignrt_device_call &call, const Binding &b) const {
    return b.kind == Binding::Arg       ? uint64_t(call.args[b.index].bytes)
           : b.kind == Binding::Scratch ? scratch[b.index]
                                        : uint64_t(constants[b.index].bytes);
  }
  std::vector<Dispatch> dispatches;
};

/// Parses the call's descriptor and checks it against the call (blob
/// bounds, argument, scratch and constant indices) and each dispatch's SPIR-V
/// (magic, a GLCompute entry point named `entry`, bindings within set 0 and the
/// listed ones, no push constants). "scratch" and "constants" ({"offset",
/// "bytes"} slices of the blob) may be left out (none) and so
/// may a dispatch's "local" (then only the module's LocalSize is checked).
/// False with \p error saying what is wrong; never throws.
bool parseDescriptor(const ignrt_device_call &call, KernelDescriptor &out,
                     std::string &error);

/// Checks the parsed descriptor against what \p device supports: group
/// counts, workgroup sizes, buffer sizes and counts, SPIR-V version and
/// capabilities.
bool checkDeviceLimits(const ignrt_device_call &call,
                       const KernelDescriptor &kernel,
                       const VulkanDeviceInfo &device, std::string &error);

/// The byte size of the buffer that backs argument/scratch bytes \p bytes:
/// a multiple of 4, at least 4.
inline uint64_t bufferBytes(uint64_t bytes) {
  return bytes < 4 ? 4 : (bytes + 3) / 4 * 4;
}

} // namespace ign::vulkan

#endif
