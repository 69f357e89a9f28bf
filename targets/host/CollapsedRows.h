//===- CollapsedRows.h - one row loop for matmuls over N-d rows -*- C++ -*-===//
//
// A matmul whose rows span several dims of its output (Swin's and
// ConvNeXt's linear layers over [1, 14, 14, C] pixels, windows of [4, 49]
// tokens) had its register tiles along the innermost of them only, and its
// workgroups split by each: 14 rows are two tiles of 6 and one of 2, a
// workgroup of 7 x 7 pixels tiles of 6 and 1, whose few accumulators wait
// on each other's FMAs. One loop over the rows' product (196) tiles as a
// matrix of 196 rows does.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_COLLAPSEDROWS_H
#define IGN_TARGETS_HOST_COLLAPSEDROWS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace ign::host {

/// Collapses the row loops of every op of `kernel` into one loop when the
/// kernel holds a contraction whose output dims before its columns are all
/// row loops (dims the operand read along the columns does not index) or
/// unit, at least two of them longer than one, and every op of the kernel
/// (contractions, elementwise epilogues, transposes, fills) reads and
/// writes those rows as consecutive dims in order, wherever they lie in
/// its tensors: each op computes the same elements over the collapsed
/// shape, its operands collapse_shape views, the kernel's results
/// expand_shape views. Kernels holding anything else stay as they are.
/// Returns whether it collapsed.
bool collapseRowLoops(mlir::RewriterBase &rewriter, mlir::func::FuncOp kernel);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_COLLAPSEDROWS_H
