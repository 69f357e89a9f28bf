//===- VulkanCompiler.cpp - one kernel -> SPIR-V dispatches ---------------===//
//
// A kernel's copy through the shared start (reference lowering,
// bufferization), the GPU layer's preparation, schedule and mapping, and
// the SPIR-V lowering; its descriptor, blob and schedule JSON
// (VulkanCompiler.h).
//
//===----------------------------------------------------------------------===//

#include "VulkanCompiler.h"

#include "GpuCompile.h"
#include "SpirvLowering.h"

#include "mlir/IR/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace ign::vulkan {

namespace {

bool storable(Type t, const VulkanChip &chip) {
  if (t.isF32() || (t.isF16() && chip.float16) || (t.isF64() && chip.float64))
    return true;
  auto i = dyn_cast<IntegerType>(t);
  return i && llvm::is_contained({1u, 8u, 16u, 32u, 64u}, i.getWidth());
}

std::string summaryOf(const SpirvKernel &k) {
  const SpirvDispatch &d = k.dispatches.front();
  return llvm::formatv("vulkan, {0} dispatch{1}, first {2}x{3}x{4} groups of "
                       "{5}x{6}x{7}",
                       k.dispatches.size(),
                       k.dispatches.size() == 1 ? "" : "es", d.groups[0],
                       d.groups[1], d.groups[2], d.local[0], d.local[1],
                       d.local[2])
      .str();
}

/// Whether every dispatch binds at most the chip's buffers per stage, each
/// within the bytes a binding may span (else the kernel runs on the host:
/// the driver would refuse it at run time).
bool withinBufferLimits(const std::vector<int64_t> &argBytes,
                        const SpirvKernel &spirv, const gpu::ChipLimits &limits,
                        std::string &why) {
  for (const SpirvDispatch &d : spirv.dispatches) {
    if (int64_t(d.bindings.size()) > limits.maxStorageBuffers) {
      why = "a dispatch binds " + std::to_string(d.bindings.size()) +
            " buffers, more than the chip's " +
            std::to_string(limits.maxStorageBuffers) + " per stage";
      return false;
    }
    for (const Binding &b : d.bindings) {
      int64_t bytes = b.kind == Binding::Scratch ? spirv.scratchBytes[b.index]
                      : b.kind == Binding::Const
                          ? int64_t(spirv.constants[b.index].size())
                      : size_t(b.index) < argBytes.size() ? argBytes[b.index]
                                                          : 0;
      if (bytes > limits.maxStorageBufferBytes) {
        why = "a buffer of " + std::to_string(bytes) +
              " bytes, more than the " +
              std::to_string(limits.maxStorageBufferBytes) +
              " one binding of the chip may span";
        return false;
      }
    }
  }
  return true;
}

/// The chip as the GPU layer sees it: its limits, and the public numbers
/// for the analytical model (a preset's; the probed device has none,
/// lavapipe nominal ones).
gpu::GpuChip gpuChip(const VulkanChip &chip) {
  gpu::GpuChip g;
  g.limits = chip.limits;
  g.numbers.computeUnits = chip.computeUnits;
  g.numbers.clockMHz = chip.clockMHz;
  g.numbers.peakGflops = chip.peakGflops;
  g.numbers.bandwidthGBs = chip.bandwidthGBs;
  g.stagedGemms = chip.stagedGemms;
  g.groupReductions = chip.groupReductions;
  g.subgroupReductions = chip.subgroupArithmetic;
  return g;
}

std::vector<gpu::LaunchShape> launchShapes(const SpirvKernel &spirv) {
  std::vector<gpu::LaunchShape> shapes;
  for (const SpirvDispatch &d : spirv.dispatches)
    shapes.push_back({d.groups, d.local});
  return shapes;
}

} // namespace

search::Schedule defaultVulkanKnobs(func::FuncOp kernel,
                                    const VulkanChip &chip) {
  return gpu::defaultKnobs(kernel, gpuChip(chip));
}

bool hasVulkanTypes(func::FuncOp kernel, const VulkanChip &chip,
                    std::string &why) {
  for (Type t : llvm::concat<const Type>(kernel.getArgumentTypes(),
                                         kernel.getResultTypes())) {
    auto shaped = dyn_cast<ShapedType>(t);
    Type element = shaped ? shaped.getElementType() : t;
    if (!storable(element, chip)) {
      llvm::raw_string_ostream os(why);
      os << "element type " << element << " (not computed on " << chip.name
         << ")";
      return false;
    }
  }
  return true;
}

FailureOr<CompiledKernel> compileVulkanKernel(func::FuncOp kernel,
                                              const search::Schedule *tuned,
                                              const VulkanChip &chip,
                                              std::string &why,
                                              std::string *replay) {
  FailureOr<gpu::MappedKernel> mapped =
      gpu::mapKernelCopy(kernel, tuned, gpuChip(chip), why, replay);
  if (failed(mapped))
    return failure();
  FailureOr<SpirvKernel> spirv =
      lowerToSpirv(*mapped->module, mapped->kernel, spirvTargetEnv(chip), why);
  if (failed(spirv))
    return failure();
  if (!withinBufferLimits(gpu::argumentBytes(mapped->argumentTypes), *spirv,
                          chip.limits, why))
    return failure();
  CompiledKernel out;
  out.deviceJson = spirv->descriptorJson(out.blob);
  // No dispatch stages data in shared memory yet.
  out.scheduleJson =
      gpu::scheduleJson(mapped->schedule, launchShapes(*spirv), mapped->notes,
                        /*sharedBytes=*/0, out.predictedMs);
  out.summary = summaryOf(*spirv);
  if (out.predictedMs) // a prediction, never a measurement
    out.summary += llvm::formatv(", predicted {0:f3} ms", *out.predictedMs);
  return out;
}

} // namespace ign::vulkan
