//===- RegisterTiles.h - a GPU thread's outputs in registers ----*- C++ -*-===//
//
// After a kernel's launches are lowered to loops, each thread reduces into
// memory: `C[i][j] += A[i][k] * B[k][j]` loads and stores C on every step
// of the reduction loop. Two rewrites keep a thread's outputs in registers:
//
// - Register tiles: a reduction loop the mapping script tiled out of a
//   thread's op (annotated `kRegisterTileLoop`, the outermost of the
//   thread's work) has the thread's element loops inside it; they are
//   unrolled in full, so that each step loads each input once for all the
//   thread's outputs (GpuMapping.cpp's script decides where).
// - Accumulators: in every loop of a launch, innermost first, the loads and
//   the store of one memory location whose address does not change in the
//   loop become a loop-carried value, loaded before the loop and stored
//   after it, where nothing else in the loop may touch that location.
//   Distinct buffers (kernel arguments, allocations, globals) are taken not
//   to overlap: a launch binds each argument as a buffer of its own.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_GPU_REGISTERTILES_H
#define IGN_TARGETS_GPU_REGISTERTILES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace ign::gpu {

/// The attribute the mapping script puts on a thread's reduction loops.
inline constexpr const char *kRegisterTileLoop = "ign.gpu_register_tile";

/// A launch carrying this attribute was built by a backend as it is meant
/// to run (GpuCompile.h, OwnLaunches): the rewrites leave it alone.
inline constexpr const char *kOwnLaunch = "ign.gpu_own_launch";

/// At most this many operations result from unrolling one register tile's
/// element loops (a larger body is left as loops).
inline constexpr int64_t kMaxUnrolledOps = 2048;

/// Unrolls the element loops of `launch`'s register tiles, then turns the
/// invariant loads and stores of every loop into loop-carried values.
void keepAccumulatorsInRegisters(mlir::gpu::LaunchOp launch);

/// The two rewrites on every gpu.launch, as a pass
/// (`ign-opt --ign-gpu-register-tiles`, for lit tests).
std::unique_ptr<mlir::Pass> createRegisterTilesPass();
void registerRegisterTilesPass();

} // namespace ign::gpu

#endif // IGN_TARGETS_GPU_REGISTERTILES_H
