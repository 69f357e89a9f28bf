//===- SpirvLowering.h - GPU kernels -> SPIR-V modules ----------*- C++ -*-===//
//
// The Vulkan backend's own step after the shared GPU mapping: each
// gpu.module of a kernel becomes a SPIR-V module (Vulkan flavour, the
// chip's capabilities), serialized; each gpu.launch_func becomes a dispatch
// of the kernel's device descriptor (entry point, workgroup counts and
// sizes, and what each binding holds: a kernel argument or a scratch
// buffer).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_VULKAN_SPIRVLOWERING_H
#define IGN_TARGETS_VULKAN_SPIRVLOWERING_H

#include "GpuLaunches.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <array>
#include <string>
#include <vector>

namespace ign::vulkan {

/// What one descriptor-set binding of a dispatch holds: a kernel argument,
/// a scratch buffer of the kernel, or one of its constants.
using gpu::Binding;

struct SpirvDispatch {
  std::string entry;
  std::vector<uint32_t> words; // the serialized SPIR-V module
  std::array<int64_t, 3> groups{1, 1, 1}, local{1, 1, 1};
  std::vector<Binding> bindings;
};

struct SpirvKernel {
  std::vector<int64_t> scratchBytes;
  std::vector<std::string> constants; // bytes as the kernel reads them
  std::vector<SpirvDispatch> dispatches;

  /// The manifest's "device" object (docs/bundle-format.md) and the blob
  /// its offsets index.
  std::string descriptorJson(std::string &blob) const;
};

/// Lowers the outlined launches of `kernel` (GpuMapping.h's result, in
/// `module`) to SPIR-V for the target environment `targetEnv`
/// (#spirv.target_env text). `kernel` and its gpu.modules are consumed.
/// Failure with `why` set.
mlir::FailureOr<SpirvKernel> lowerToSpirv(mlir::ModuleOp module,
                                          mlir::func::FuncOp kernel,
                                          llvm::StringRef targetEnv,
                                          std::string &why);

} // namespace ign::vulkan

#endif // IGN_TARGETS_VULKAN_SPIRVLOWERING_H
