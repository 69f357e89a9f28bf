//===- VulkanCompiler.h - one kernel -> SPIR-V dispatches -------*- C++ -*-===//
//
// The Vulkan target's compile of one kernel: the reference lowering and
// bufferization every target shares, the GPU layer's schedule and mapping
// (targets/gpu), then SPIR-V. A kernel it cannot map is declined (the host
// runs it) with the reason.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_VULKAN_VULKANCOMPILER_H
#define IGN_TARGETS_VULKAN_VULKANCOMPILER_H

#include "VulkanChips.h"

#include "GpuTarget.h"

#include "ign/Search/ScheduleSpace.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>

namespace ign::vulkan {

/// The descriptor, the SPIR-V modules its blob holds, the schedule and a
/// line for -v; and the analytical model's time of all its dispatches,
/// where the chip has numbers (the presets).
struct CompiledKernel : gpu::DeviceKernel {
  std::optional<double> predictedMs;
};

/// Whether every tensor of `kernel` has an element type `chip` computes
/// with and stores as the runtime does: f32, f16 and f64 where the chip has
/// them, and integers of 1 (as bytes), 8, 16, 32 or 64 bits (no bf16).
bool hasVulkanTypes(mlir::func::FuncOp kernel, const VulkanChip &chip,
                    std::string &why);

/// The knobs an untuned compile of `kernel` uses on `chip`: the analytical
/// model's pick where the chip has numbers (gpu::modelDefaultSchedule),
/// else the fixed default.
search::Schedule defaultVulkanKnobs(mlir::func::FuncOp kernel,
                                    const VulkanChip &chip);

/// Compiles a copy of `kernel` (ign dialect; left unchanged) for `chip`
/// with `tuned`'s knobs, or the default schedule's without. With `replay`,
/// appends the bufferized kernel and its mapping script (--emit=gpu).
mlir::FailureOr<CompiledKernel>
compileVulkanKernel(mlir::func::FuncOp kernel, const search::Schedule *tuned,
                    const VulkanChip &chip, std::string &why,
                    std::string *replay = nullptr);

} // namespace ign::vulkan

#endif // IGN_TARGETS_VULKAN_VULKANCOMPILER_H
