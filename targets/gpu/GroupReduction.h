//===- GroupReduction.h - a workgroup per reduced output --------*- C++ -*-===//
//
// The mapping script gives each output of a reduction (a softmax's row
// maximum, a layer norm's mean) one thread that loops over the whole
// reduction: BERT's 128 rows of 768 are 128 threads, a sliver of a GPU. The
// GPU layer's group reduction (every backend's) gives each output a
// workgroup instead: its threads combine strided elements of the reduced
// loops into partials, then halve them in workgroup memory between
// barriers (a tree of log2(threads) steps), and thread 0 combines the
// result into the output (or into a fill right before, which it takes
// over). It takes ops whose body is `out = combine(out, x)` with combine
// one associative op (add, mul, max, min of floats; add, mul, max, min,
// and, or, xor of integers) and x computed from the inputs (GemmSide's
// analysis, StagedGemm.h), with at least kMinGroupLength reduced elements
// per output. The kGroupReduce knob (GpuSchedule.h) chooses it.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_GPU_GROUPREDUCTION_H
#define IGN_TARGETS_GPU_GROUPREDUCTION_H

#include "GpuMapping.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace ign::gpu {

struct GpuChip;

/// The fewest reduced elements per output that take a group reduction
/// (shorter ones keep a thread each).
inline constexpr int64_t kMinGroupLength = 128;
/// A group's most threads (fewer for shorter reductions: about four
/// elements a thread, at least a subgroup).
inline constexpr int64_t kMaxGroupThreads = 256;

/// The threads of the group reducing `length` elements on a chip of
/// `limits`: a power of two, about length / 4, between the subgroup size
/// and min(kMaxGroupThreads, the chip's threads a workgroup).
int64_t groupThreads(int64_t length, const ChipLimits &limits);

/// The group reductions of `kernel` (bufferized) that take one on `chip`,
/// each replacing its op (and a fill of its output right before) by a
/// launch, with its note (the model's time where the chip has numbers).
OwnLaunches emitGroupReductions(mlir::func::FuncOp kernel, const GpuChip &chip);

/// Whether some op of `kernel` (bufferized) would take a group reduction:
/// then its knobs have kGroupReduce.
bool hasGroupReductions(mlir::func::FuncOp kernel, const GpuChip &chip);

} // namespace ign::gpu

#endif // IGN_TARGETS_GPU_GROUPREDUCTION_H
