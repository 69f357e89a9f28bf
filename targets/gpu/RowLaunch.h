//===- RowLaunch.h - a row's chain of ops as one launch ---------*- C++ -*-===//
//
// A softmax is four launches of the mapping script (the rows' maxima, the
// exponentials, their sums, the quotients) and a layer norm six: each a
// dispatch and a pass over the rows in device memory. The row launch runs
// such a chain as one launch with a workgroup per row. A chain is a run of
// consecutive ops of a bufferized kernel over the same rows (loops P...,
// R: the rows P, the row's elements R last), each
//   - a reduction of the row into one value per row (analyzeReduction's,
//     the reduced loop R, a combiner with a subgroup op: subgroupKind; not
//     a contraction whose rows share operands, as a GEMM's do),
//   - elementwise over the rows' elements (loops P..., R), or
//   - elementwise over the rows (loops P...: a mean from a sum),
// reading the chain's earlier results only at its own element (a row
// element, which the same thread wrote; a row's value, kept in
// registers) and other buffers at any indexing map; at least one
// reduction and two ops. The workgroup's threads take the row's elements
// strided (groupThreads), and keeps its elements of each op's result in
// registers (at most kMaxRowRegisters a thread); a reduction's partials
// combine by subgroup reductions (subgroupTotal) and every thread gets the
// row's value. A result something after the chain reads is written where
// its op wrote it (a row's value by thread 0); the others stay in
// registers. The kRowLaunch knob
// (GpuSchedule.h) chooses it; chips whose subgroups reduce only
// (GpuChip::subgroupReductions).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_GPU_ROWLAUNCH_H
#define IGN_TARGETS_GPU_ROWLAUNCH_H

#include "GpuMapping.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace ign::gpu {

struct GpuChip;

/// The shortest row a chain takes a row launch for.
inline constexpr int64_t kMinRowLength = 32;
/// The most row elements a thread keeps in registers across the chain's
/// ops (a layer norm over 768 with 128 threads: 6); longer rows go through
/// device memory between ops (each thread rereads what it wrote).
inline constexpr int64_t kMaxRowRegisters = 8;

/// The chains of `kernel` (bufferized) as row launches on `chip`, each
/// replacing its ops (and its reductions' fills), with their notes.
OwnLaunches emitRowLaunches(mlir::func::FuncOp kernel, const GpuChip &chip);

/// Whether `kernel` (bufferized) has a chain that takes a row launch on
/// `chip`: then its knobs have kRowLaunch.
bool hasRowLaunches(mlir::func::FuncOp kernel, const GpuChip &chip);

} // namespace ign::gpu

#endif // IGN_TARGETS_GPU_ROWLAUNCH_H
