//===- FilledAccumulators.h - register tiles of filled outputs ---*- C++
//-*-===//
//
// A register tile whose output starts as a constant fill (a convolution's or
// a matmul's zeros) and sums its whole reduction in one pass starts its
// accumulators as that constant instead of reading the filled output:
// DirectConv.cpp and HostSchedule.cpp mark the tile loops, finishSchedule
// (initAccumulatorsFromFills) replaces the read once the accumulators are
// carried out of the reduction loops.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_FILLEDACCUMULATORS_H
#define IGN_TARGETS_HOST_FILLEDACCUMULATORS_H

#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"

namespace ign::host {

/// The attribute on a register tile's outermost reduction loop that holds
/// the constant its output was filled with.
inline constexpr llvm::StringLiteral kFilledAccumulators =
    "ign.filled_accumulators";

/// The constant `init` holds everywhere when it is a constant fill, or a
/// slice of one (also of a fill another part of a peeled op wrote elsewhere:
/// linalg::splitOp's second part reads the first part's insert); null
/// otherwise.
mlir::TypedAttr fillValueOf(mlir::Value init);

/// Marks the outermost reduction loop of `tiled` (the tile loops of an op
/// with `iterators`, one per loop, parallel ones first) with `value`,
/// the constant the op's output starts as (a constant fill; none when
/// null): each register tile's accumulators, once carried out of the
/// reduction loops, then start as that constant instead of a (transposed)
/// read of the filled output. Reduction loops of one step are skipped (the
/// cleanup folds them away, the mark with them: an RGB stem's single quad
/// of channels, where the read of the zeros was 20% of the 7 x 7 byte
/// convolution's time).
void markFilledAccumulators(mlir::TypedAttr value,
                            llvm::ArrayRef<mlir::utils::IteratorType> iterators,
                            const mlir::scf::SCFTilingResult &tiled);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_FILLEDACCUMULATORS_H
