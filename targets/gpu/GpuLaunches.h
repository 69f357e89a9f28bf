//===- GpuLaunches.h - a mapped kernel's launches, as data ------*- C++ -*-===//
//
// After the mapping (GpuCompile.h) a kernel is constants, allocations and
// gpu.launch_func ops. Every backend's device descriptor lists the same
// things: per launch its outlined module and entry, its grid and block, and
// what each argument is bound to (a kernel argument, a scratch buffer the
// runtime allocates, or a constant whose bytes travel in the bundle).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_GPU_GPULAUNCHES_H
#define IGN_TARGETS_GPU_GPULAUNCHES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <array>
#include <string>
#include <vector>

namespace ign::gpu {

/// What one argument of a launch is: a kernel argument, a scratch buffer
/// of the kernel, or one of its constants.
struct Binding {
  enum Kind { Arg, Scratch, Const } kind = Arg;
  int64_t index = 0;
};

struct Launch {
  std::string module, entry; // the outlined gpu.module and gpu.func
  std::array<int64_t, 3> groups{1, 1, 1}, local{1, 1, 1};
  std::vector<Binding> bindings;
};

struct KernelLaunches {
  std::vector<int64_t> scratchBytes;
  std::vector<std::string> constants; // bytes as the kernel reads them
  std::vector<Launch> launches;
};

/// Bytes of a buffer of static `type` as the device kernels store it
/// (booleans as bytes).
int64_t storageBytes(mlir::MemRefType type);

/// Bytes of each argument type as the kernels store it (0 for a type that
/// is not a static buffer).
std::vector<int64_t> argumentBytes(llvm::ArrayRef<mlir::Type> types);

/// One Launch per gpu.launch_func of `kernel` (mapped), in order; its
/// allocations become scratch buffers, its globals constants. Failure with
/// `why` for a launch of dynamic size, or an argument that is none of them.
mlir::FailureOr<KernelLaunches> collectLaunches(mlir::func::FuncOp kernel,
                                                std::string &why);

} // namespace ign::gpu

#endif // IGN_TARGETS_GPU_GPULAUNCHES_H
