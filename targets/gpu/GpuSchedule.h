//===- GpuSchedule.h - the GPU schedule of a kernel, as data ----*- C++ -*-===//
//
// The shared GPU layer's schedule (../shared/DESIGN.md, "GPU targets"): the
// knobs a GPU target tunes for a kernel, the chip limits that prune them,
// and the per-op plan they give: which loops map to workgroups and threads,
// and the tile each workgroup and thread computes. The plan is materialized
// as a Transform-dialect script (GpuMapping.h), so that a schedule can be
// printed and replayed with `ign-opt --transform-interpreter`.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_GPU_GPUSCHEDULE_H
#define IGN_TARGETS_GPU_GPUSCHEDULE_H

#include "ign/Search/ScheduleSpace.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace ign::gpu {

/// Knob names (a bundle's schedule.knobs and the tuning database use them).
inline constexpr const char *kThreadsX = "gpu.threads_x";
inline constexpr const char *kThreadsY = "gpu.threads_y";
inline constexpr const char *kElemsX = "gpu.elems_x";
inline constexpr const char *kElemsY = "gpu.elems_y";
/// 1: the kernel's contractions take the staged GEMM launch
/// (StagedGemm.h), 0: the mapping script's register tiles. Only kernels
/// with such contractions have it.
inline constexpr const char *kStagedGemm = "gpu.staged_gemm";
/// 1: the kernel's long reductions take a workgroup per output
/// (GroupReduction.h), 0: a thread per output. Only kernels with such
/// reductions have it.
inline constexpr const char *kGroupReduce = "gpu.group_reduce";
/// 1: the kernel's chains of ops over the same rows with a reduction (a
/// softmax, a layer norm) take one launch with a workgroup per row
/// (RowLaunch.h), 0: a launch per op. Only kernels with such chains on a
/// chip whose subgroups reduce have it.
inline constexpr const char *kRowLaunch = "gpu.row_launch";

/// The most outputs one thread keeps in registers (a register tile).
inline constexpr int64_t kMaxRegisterOutputs = 64;

/// What a chip allows a kernel (Vulkan's limits, CUDA's, a preset's).
struct ChipLimits {
  int64_t subgroupSize = 32;
  int64_t maxInvocations = 1024; // threads of one workgroup
  std::array<int64_t, 3> maxWorkgroupSize = {1024, 1024, 64};
  std::array<int64_t, 3> maxWorkgroupCount = {65535, 65535, 65535};
  int64_t sharedMemoryBytes = 32768;
  /// Buffers one dispatch may bind (Vulkan's
  /// maxPerStageDescriptorStorageBuffers).
  int64_t maxStorageBuffers = 32;
  /// Bytes one bound buffer may span (Vulkan's maxStorageBufferRange; its
  /// guaranteed minimum, 128 MiB, unless the chip says more).
  int64_t maxStorageBufferBytes = int64_t(1) << 27;
  /// Iterations after which the driver stops a loop (0: none). Mesa's
  /// lavapipe ends every shader loop after 65535 (gallivm's guard against
  /// endless loops): a longer one silently computes a wrong result.
  int64_t maxLoopIterations = 0;
};

/// A kernel's knob values: threads of a workgroup along x (the innermost
/// parallel loop) and y (the next one), and the outputs each thread of an
/// op with a reduction loop computes along each (its register tile; other
/// ops take one element per thread).
struct GpuSchedule {
  int64_t threadsX = 64, threadsY = 1, elemsX = 1, elemsY = 1;
  /// Whether contractions take the staged GEMM launch (StagedGemm.h's
  /// kStagedGemm: 0 or 1); nothing for a kernel without such contractions.
  std::optional<int64_t> stagedGemm;
  /// The same for GroupReduction.h's kGroupReduce.
  std::optional<int64_t> groupReduce;
  /// The same for RowLaunch.h's kRowLaunch.
  std::optional<int64_t> rowLaunch;

  search::Schedule knobs() const;
};

/// The schedule a compile without tuning uses: a workgroup of at least a
/// few subgroups, one element per thread.
GpuSchedule defaultGpuSchedule(const ChipLimits &limits);

/// `tuned`'s knobs where it has them, else the default's.
GpuSchedule scheduleFromKnobs(const search::Schedule *tuned,
                              const ChipLimits &limits);

/// The knobs and their legal values; defaults = defaultGpuSchedule.
search::ScheduleSpace gpuScheduleSpace(const ChipLimits &limits);

/// How one linalg op of a kernel maps: per loop, the tile of a workgroup
/// (0: the loop runs whole inside each thread) and the threads of a
/// workgroup over it (0: not distributed), and which GPU dimension each
/// mapped loop takes.
struct OpMapping {
  std::vector<int64_t> workgroupTile, threads;
  std::vector<char> dims; // 'x', 'y', 'z' per mapped loop, in
                          // loop order
  std::array<int64_t, 3> blockSize{1, 1, 1}; // x, y, z
  std::array<int64_t, 3> gridSize{1, 1, 1};
  /// A register tile (RegisterTiles.h): per loop, 1 for a reduction loop
  /// tiled out of the thread's op (the thread loops over it outermost,
  /// its outputs in registers), 0 for the others; empty for none. Only
  /// where every thread's tile has the same static size.
  std::vector<int64_t> reductionTile;
  int64_t registerOutputs = 0; // a register tile's outputs per thread
};

/// The most iterations any of `op`'s own loops (its iteration space; not
/// loops inside its body, such as TopK's) runs within one GPU thread: every
/// loop's range where the op runs in one thread (`mapping` null), else the
/// loops not spread over threads and each thread's share of those that are.
int64_t longestThreadLoop(mlir::linalg::LinalgOp op, const OpMapping *mapping);

/// The loops a workgroup grid covers, innermost first: the last parallel
/// loop (x), and the parallel loops before it that are longer than one
/// (y, z).
llvm::SmallVector<unsigned, 3> mappedLoops(mlir::linalg::LinalgOp op,
                                           llvm::ArrayRef<int64_t> ranges);

/// Why `op` runs as one thread of one workgroup, or "" when a workgroup
/// grid can cover it: it needs a parallel loop, and every operand must
/// read every loop in increasing order (linalg's tiling needs that).
std::string whyOneThread(mlir::linalg::LinalgOp op);

/// The mapping of `op` under `schedule`, or why it has none (no mappable
/// loop, dynamic sizes, a grid over the chip's limits).
std::optional<OpMapping> mapOp(mlir::linalg::LinalgOp op,
                               const GpuSchedule &schedule,
                               const ChipLimits &limits, std::string &why);

} // namespace ign::gpu

#endif // IGN_TARGETS_GPU_GPUSCHEDULE_H
