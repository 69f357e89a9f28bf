//===- GpuInterpreter.h - mapped GPU kernels run on the CPU -----*- C++ -*-===//
//
// CI has no GPU, so a kernel whose arithmetic only a GPU runs (CUDA's
// tensor-core launches) would go unchecked. This interpreter runs a mapped
// kernel (GpuCompile.h's MappedKernel: constants, allocations and
// gpu.launch_func ops, and the outlined gpu.modules) on buffers in memory:
// each block's threads in lockstep, an op at a time over all of them
// (SIMT), subgroups of consecutive threads for gpu.subgroup_reduce, scf.if's
// branches under a mask, loops with bounds every active thread agrees on. It
// checks what a GPU would not: every load and store is inside its buffer; a
// barrier is reached by the whole block; and no thread reads or writes an
// element of workgroup memory another thread wrote since the last barrier (a
// missing barrier is an error, not lockstep luck). Ops it does not know are an
// error naming them; a backend adds its own warp-level ops (WarpOps). It checks
// the IR a backend lowers, not the backend's lowering.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_GPU_GPUINTERPRETER_H
#define IGN_TARGETS_GPU_GPUINTERPRETER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ign::gpu {

/// One element of a value: floats as double (rounded to their type),
/// integers (and index, i1) as int64.
union Elem {
  double f;
  int64_t i;
};

/// A value of one thread: its elements (one for a scalar), row-major.
using Elems = llvm::SmallVector<Elem, 4>;

/// What a backend's op handler sees of the block it runs in.
class SimtBlock {
public:
  virtual ~SimtBlock() = default;
  virtual int64_t threads() const = 0;
  virtual bool active(int64_t thread) const = 0;
  virtual const Elems &value(mlir::Value v, int64_t thread) = 0;
  virtual void set(mlir::Value v, int64_t thread, Elems elems) = 0;
  /// Element `indices` of `memref` as `thread` reads it; fails with `why`
  /// out of bounds or on a race.
  virtual mlir::FailureOr<Elem> load(mlir::Value memref,
                                     llvm::ArrayRef<int64_t> indices,
                                     int64_t thread, std::string &why) = 0;
};

/// A backend's ops (warp-level matrix ops): nullopt for an op it does not
/// know, else whether it ran.
using WarpOps = std::function<std::optional<mlir::LogicalResult>(
    mlir::Operation *, SimtBlock &, std::string &why)>;

/// Runs `kernel` on `buffers`, one per argument (inputs, then the
/// out-parameters), each the bytes of its memref (row-major, as the
/// runtime stores it), in subgroups of `subgroupSize` consecutive threads
/// (gpu.subgroup_size, gpu.subgroup_reduce, which every thread of a
/// subgroup or none must reach). Failure with `why` naming the
/// op and what went wrong.
mlir::LogicalResult
interpretMappedKernel(mlir::func::FuncOp kernel,
                      std::vector<std::vector<char>> &buffers, std::string &why,
                      const WarpOps &warpOps = {}, int64_t subgroupSize = 32);

} // namespace ign::gpu

#endif // IGN_TARGETS_GPU_GPUINTERPRETER_H
