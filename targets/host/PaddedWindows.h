//===- PaddedWindows.h - padded windows read in place -----------*- C++ -*-===//
//
// A pool or a channel-wise convolution over a padded input (a workgroup's
// slab, tensor.pad of a slice) used to pad the whole slab first: a fill of
// the padded tile and a copy of the input into it, as many loads and
// stores as the windows' own arithmetic (a 3x3 stride-2 max pool over
// 64x112x112 ran 0.29-0.37 ms padded, 0.17-0.21 unpadded over the same
// pixels). Only the outputs near the edges read padding: the op is split
// along each padded dim into the outputs whose windows lie inside the
// input, which read it in place, and the borders, which pad only the strip
// they read.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_PADDEDWINDOWS_H
#define IGN_TARGETS_HOST_PADDEDWINDOWS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace ign::host {

/// Rewrites `slice` of a tensor.pad (static low and high padding, a
/// constant padding value; static offsets and sizes along the padded dims)
/// into the pad of a slice of the pad's source with only the padding that
/// falls inside the slice, or into the plain slice when none does.
/// `source` makes the source's piece from its slice (the workgroup's
/// fusion of its producers); by default the slice itself. Returns the
/// replacement, or a null value (changing nothing) when `slice` is not
/// such a slice or lies wholly in the padding.
mlir::Value padOfSlice(
    mlir::RewriterBase &rewriter, mlir::tensor::ExtractSliceOp slice,
    llvm::function_ref<mlir::Value(mlir::tensor::ExtractSliceOp)> source =
        nullptr);

/// Splits windowed op `op` whose operand `input` is a tensor.pad (static,
/// constant value) along each padded dim into the outputs whose windows lie
/// inside the pad's source and the borders before and after them. Along
/// loop `columns` (the lanes of the register tiles) the inside part starts
/// and ends at multiples of `columnTile` from the start, so that its tiles
/// stay whole vectors. The inside part reads the source in place; each
/// border part reads a pad of only the strip it needs. Returns the parts,
/// the inside first; just `op` when nothing was split: no padding read, a
/// window of more than 9 taps (the copy is a small part of its work), an
/// inside part of less than half the outputs (the borders' thin tiles cost
/// about what the copy did), or a strided window over a source of more than
/// `maxStridedBytes` (read in place, its rows streamed from memory at once:
/// 3x3 stride 2 over 32 x 400 x 304, one channel a workgroup, 2.2 -> 2.4 ms).
llvm::SmallVector<mlir::linalg::GenericOp>
splitPaddedBorders(mlir::RewriterBase &rewriter, mlir::linalg::GenericOp op,
                   unsigned input, unsigned columns, int64_t columnTile,
                   int64_t maxStridedBytes);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_PADDEDWINDOWS_H
