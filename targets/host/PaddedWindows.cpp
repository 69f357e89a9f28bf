//===- PaddedWindows.cpp - windows over padded inputs, read in place ------===//

#include "PaddedWindows.h"
#include "TileUtils.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <algorithm>

using namespace mlir;

namespace ign::host {
namespace {

/// Windows of more taps than this keep the padded slab: the copy is then a
/// small part of their work, and the borders' thin tiles cost more than it
/// (depthwise 5x5 over 256 x 50 x 38, split: 0.53 -> 0.62 ms; over
/// 128 x 100 x 76 unchanged).
constexpr int64_t kMaxTaps = 9;

/// The inside part must hold at least this share of the outputs: the
/// borders' own pads, loops and thin tiles cost about what the copy of a
/// narrow slab did.
constexpr double kMinInsideShare = 0.5;

int64_t floorDivide(int64_t a, int64_t b) {
  return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

int64_t ceilDivide(int64_t a, int64_t b) { return -floorDivide(-a, b); }

/// The outputs [first, end) of loop `loop` whose windows lie inside the
/// source along one padded dim, which the loop walks `stride` pixels a step.
struct Inside {
  unsigned loop = 0;
  int64_t first = 0, end = 0;
  int64_t stride = 1;
};

/// Where `e` (the input's index along a dim padded by `low` before a source
/// of `size`) reads inside the source: `e` must be s * loop plus reduction
/// loops with non-negative coefficients plus a constant.
std::optional<Inside> insideRange(linalg::GenericOp op, AffineExpr e,
                                  int64_t low, int64_t size) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto iterators = op.getIteratorTypesArray();
  unsigned dims = ranges.size();
  SmallVector<AffineExpr> zero(dims, getAffineConstantExpr(0, e.getContext()));
  auto constant = dyn_cast<AffineConstantExpr>(
      simplifyAffineExpr(e.replaceDims(zero), dims, 0));
  if (!constant)
    return std::nullopt;
  std::optional<unsigned> loop;
  int64_t stride = 0, span = 0;
  for (unsigned d = 0; d < dims; ++d) {
    if (!e.isFunctionOfDim(d))
      continue;
    int64_t k = coefficientOf(e, d, dims);
    if (k < 0 || ShapedType::isDynamic(ranges[d]))
      return std::nullopt;
    if (iterators[d] == utils::IteratorType::reduction) {
      span += k * (ranges[d] - 1);
      continue;
    }
    if (loop || k < 1)
      return std::nullopt;
    loop = d;
    stride = k;
  }
  if (!loop)
    return std::nullopt;
  // stride * o + c - low >= 0 and stride * o + c + span - low < size.
  int64_t c = constant.getValue(), range = ranges[*loop];
  Inside inside;
  inside.loop = *loop;
  inside.stride = stride;
  inside.first = std::clamp<int64_t>(ceilDivide(low - c, stride), 0, range);
  inside.end = std::clamp<int64_t>(
      floorDivide(size - 1 + low - c - span, stride) + 1, inside.first, range);
  return inside;
}

/// Makes `part` (a piece of a split op) read its operand `input`, a slice
/// of a pad, as the pad of a slice of the source, or the slice alone.
void readPieceOfPad(RewriterBase &rewriter, linalg::GenericOp part,
                    unsigned input) {
  OpOperand &operand = part->getOpOperand(input);
  auto slice = operand.get().getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice)
    return;
  if (Value piece = padOfSlice(rewriter, slice))
    rewriter.modifyOpInPlace(part, [&] { operand.set(piece); });
}

} // namespace

Value padOfSlice(RewriterBase &rewriter, tensor::ExtractSliceOp slice,
                 function_ref<Value(tensor::ExtractSliceOp)> source) {
  auto pad = slice.getSource().getDefiningOp<tensor::PadOp>();
  if (!pad)
    return {};
  auto low = getConstantIntValues(pad.getMixedLowPad());
  auto high = getConstantIntValues(pad.getMixedHighPad());
  auto sourceType = dyn_cast<RankedTensorType>(pad.getSourceType());
  if (!low || !high || !sourceType || !sourceType.hasStaticShape() ||
      sourceType.getRank() != slice.getResultType().getRank() ||
      !slice.hasUnitStride() || !pad.getConstantPaddingValue())
    return {};
  SmallVector<OpFoldResult> offsets, sizes, lo, hi;
  bool padded = false;
  for (int64_t d = 0; d < sourceType.getRank(); ++d) {
    OpFoldResult offset = slice.getMixedOffsets()[d];
    OpFoldResult size = slice.getMixedSizes()[d];
    if (!(*low)[d] && !(*high)[d]) {
      offsets.push_back(offset);
      sizes.push_back(size);
      lo.push_back(rewriter.getIndexAttr(0));
      hi.push_back(rewriter.getIndexAttr(0));
      continue;
    }
    std::optional<int64_t> o = getConstantIntValue(offset);
    std::optional<int64_t> n = getConstantIntValue(size);
    if (!o || !n)
      return {};
    // [o, o + n) of the padded dim reads [begin, end) of the source.
    int64_t l = (*low)[d], s = sourceType.getDimSize(d);
    int64_t begin = std::clamp<int64_t>(*o - l, 0, s);
    int64_t end = std::clamp<int64_t>(*o + *n - l, 0, s);
    if (end <= begin)
      return {};
    int64_t before = std::max<int64_t>(l - *o, 0);
    int64_t after = *n - (end - begin) - before;
    padded |= before || after;
    offsets.push_back(rewriter.getIndexAttr(begin));
    sizes.push_back(rewriter.getIndexAttr(end - begin));
    lo.push_back(rewriter.getIndexAttr(before));
    hi.push_back(rewriter.getIndexAttr(after));
  }
  rewriter.setInsertionPoint(slice);
  SmallVector<OpFoldResult> strides(sourceType.getRank(),
                                    rewriter.getIndexAttr(1));
  auto part = rewriter.create<tensor::ExtractSliceOp>(
      slice.getLoc(), pad.getSource(), offsets, sizes, strides);
  Value piece = source ? source(part) : part.getResult();
  rewriter.setInsertionPoint(slice);
  Value replacement;
  if (padded)
    replacement = rewriter.create<tensor::PadOp>(
        slice.getLoc(), slice.getResultType(), piece, lo, hi,
        pad.getConstantPaddingValue(), pad.getNofold());
  else if (piece.getType() != slice.getResultType())
    replacement = rewriter.create<tensor::CastOp>(slice.getLoc(),
                                                  slice.getResultType(), piece);
  else
    replacement = piece;
  rewriter.replaceOp(slice, replacement);
  return replacement;
}

namespace {

/// The cuts of `op` (reading `pad` through `map`): per padded dim, the
/// outputs that read inside the source, along `columns` from and to
/// multiples of `columnTile`. Empty when no output reads padding; nullopt
/// when some padded dim has no inside or is not a window.
std::optional<SmallVector<Inside>> findCuts(linalg::GenericOp op,
                                            tensor::PadOp pad, AffineMap map,
                                            unsigned columns,
                                            int64_t columnTile) {
  auto low = getConstantIntValues(pad.getMixedLowPad());
  auto high = getConstantIntValues(pad.getMixedHighPad());
  auto sourceType = cast<RankedTensorType>(pad.getSourceType());
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<Inside> cuts;
  for (int64_t d = 0; d < sourceType.getRank(); ++d) {
    if (!(*low)[d] && !(*high)[d])
      continue;
    std::optional<Inside> inside =
        insideRange(op, map.getResult(d), (*low)[d], sourceType.getDimSize(d));
    if (!inside)
      return std::nullopt;
    int64_t range = ranges[inside->loop];
    if (inside->loop == columns && columnTile > 1) {
      // Whole tiles from the start; the rest of the row stays inside when
      // it reads no padding (the register tiles peel it).
      if (inside->first)
        inside->first = std::min<int64_t>(
            range, llvm::alignTo(inside->first, uint64_t(columnTile)));
      if (inside->end < range && inside->end > inside->first)
        inside->end = inside->first +
                      (inside->end - inside->first) / columnTile * columnTile;
    }
    if (inside->end <= inside->first ||
        llvm::any_of(cuts,
                     [&](const Inside &c) { return c.loop == inside->loop; }))
      return std::nullopt;
    if (inside->first > 0 || inside->end < range)
      cuts.push_back(*inside);
  }
  return cuts;
}

/// Whether splitting `op` at `cuts` (over a source of `sourceType`) pays.
bool splitPays(linalg::GenericOp op, ArrayRef<Inside> cuts,
               RankedTensorType sourceType, int64_t maxStridedBytes) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t taps = 1;
  double share = 1;
  for (auto [range, iterator] : llvm::zip(ranges, op.getIteratorTypesArray()))
    if (iterator == utils::IteratorType::reduction)
      taps *= range;
  for (const Inside &cut : cuts)
    share *= double(cut.end - cut.first) / double(ranges[cut.loop]);
  if (taps > kMaxTaps || share < kMinInsideShare)
    return false;
  // A strided window read in place from a slab that outgrows the cache
  // streams many rows at once; the copy streamed one.
  bool strided =
      llvm::any_of(cuts, [](const Inside &c) { return c.stride > 1; });
  int64_t bytes = sourceType.getNumElements() *
                  int64_t(sourceType.getElementTypeBitWidth() / 8);
  return !strided || bytes <= maxStridedBytes;
}

} // namespace

SmallVector<linalg::GenericOp>
splitPaddedBorders(RewriterBase &rewriter, linalg::GenericOp op, unsigned input,
                   unsigned columns, int64_t columnTile,
                   int64_t maxStridedBytes) {
  auto pad = op->getOperand(input).getDefiningOp<tensor::PadOp>();
  if (!pad || !pad.getConstantPaddingValue() ||
      !getConstantIntValues(pad.getMixedLowPad()) ||
      !getConstantIntValues(pad.getMixedHighPad()))
    return {op};
  auto sourceType = dyn_cast<RankedTensorType>(pad.getSourceType());
  AffineMap map = op.getMatchingIndexingMap(&op->getOpOperand(input));
  if (!sourceType || !sourceType.hasStaticShape() ||
      int64_t(map.getNumResults()) != sourceType.getRank())
    return {op};
  // Padding that no output reads stays (its offsets would shift the maps).
  std::optional<SmallVector<Inside>> cuts =
      findCuts(op, pad, map, columns, columnTile);
  if (!cuts || cuts->empty() ||
      !splitPays(op, *cuts, sourceType, maxStridedBytes))
    return {op};
  // The inside of each cut in turn; the borders keep their padding.
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  linalg::GenericOp inside = op;
  SmallVector<linalg::GenericOp> borders;
  // Cuts the inside at `point` of `loop`: the inside is the part before
  // it when `before`, the border the other. False when the split failed.
  auto cutAt = [&](unsigned loop, int64_t point, bool before) {
    Value read = inside->getOperand(input);
    auto parts = splitAt(rewriter, inside, loop, point);
    if (!parts)
      return false;
    inside = before ? parts->first : parts->second;
    borders.push_back(before ? parts->second : parts->first);
    readPieceOfPad(rewriter, parts->first, input);
    readPieceOfPad(rewriter, parts->second, input);
    // The pad the split part read (the original, or an earlier cut's).
    if (auto dead = read.getDefiningOp<tensor::PadOp>();
        dead && dead->use_empty())
      rewriter.eraseOp(dead);
    return true;
  };
  for (const Inside &cut : *cuts)
    if ((cut.end < ranges[cut.loop] && !cutAt(cut.loop, cut.end, true)) ||
        (cut.first > 0 && !cutAt(cut.loop, cut.first, false)))
      break;
  SmallVector<linalg::GenericOp> parts{inside};
  parts.append(borders.begin(), borders.end());
  return parts;
}

} // namespace ign::host
