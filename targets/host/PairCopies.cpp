//===- PairCopies.cpp - f32 rows rounded into bfloat16 pairs --------------===//

#include "PairCopies.h"
#include "TileUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace ign::host {

namespace {

/// Pixels of a row that one step rounds and interleaves: a 512-bit vector
/// of f32 per row of the pair, one of pairs written.
constexpr int64_t kPairLanes = 16;

/// The loops of a copy into pairs (vectorizePairCopy).
struct PairRows {
  unsigned pair, x;
  std::optional<unsigned> phase;
  int64_t stride, width;
};

/// Whether `copy`'s body is the input rounded to bfloat16.
bool roundsInput(linalg::GenericOp copy) {
  Block &body = copy.getRegion().front();
  auto trunc =
      body.getTerminator()->getOperand(0).getDefiningOp<arith::TruncFOp>();
  return body.getOperations().size() == 2 && trunc &&
         trunc.getIn() == body.getArgument(0);
}

std::optional<PairRows> pairRows(linalg::GenericOp copy) {
  if (copy.getNumDpsInputs() != 1 || copy.getNumDpsInits() != 1 ||
      copy.getNumReductionLoops() != 0 || copy.getNumLoops() < 2 ||
      !roundsInput(copy))
    return std::nullopt;
  auto in =
      dyn_cast<RankedTensorType>(copy.getDpsInputOperand(0)->get().getType());
  auto out = dyn_cast<RankedTensorType>(copy.getResult(0).getType());
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
      !in.getElementType().isF32() || !out.getElementType().isBF16() ||
      out.getShape().back() != 2)
    return std::nullopt;
  unsigned n = copy.getNumLoops();
  AffineMap read = copy.getMatchingIndexingMap(copy.getDpsInputOperand(0));
  if (!copy.getMatchingIndexingMap(copy.getDpsInitOperand(0)).isIdentity() ||
      read.getNumResults() == 0 || read.getNumSymbols() != 0 ||
      !llvm::all_of(read.getResults(), isLinear))
    return std::nullopt;
  PairRows r{n - 1, n - 2, std::nullopt, 0, out.getDimSize(n - 2)};
  ArrayRef<AffineExpr> results = read.getResults();
  AffineExpr row = results.back();
  r.stride = coefficientOf(row, r.x, n);
  if (r.stride < 1 || r.stride > 4 || r.width < kPairLanes ||
      coefficientOf(row, r.pair, n) != 0)
    return std::nullopt;
  if (r.stride > 1) {
    // The phase loop before x: its s phases make whole rows of the source.
    if (n < 3 || coefficientOf(row, n - 3, n) != 1 ||
        out.getDimSize(n - 3) != r.stride)
      return std::nullopt;
    r.phase = n - 3;
  }
  int64_t pairResults = 0;
  for (AffineExpr e : results.drop_back()) {
    if (coefficientOf(e, r.x, n) != 0 ||
        (r.phase && coefficientOf(e, *r.phase, n) != 0))
      return std::nullopt;
    int64_t p = coefficientOf(e, r.pair, n);
    if (p != 0 && p != 1)
      return std::nullopt;
    pairResults += p;
  }
  if (pairResults != 1)
    return std::nullopt;
  return r;
}

/// Lanes q, q + s, ... of `v` (kPairLanes of them).
Value everyNth(RewriterBase &rewriter, Location loc, Value v, int64_t s,
               int64_t q) {
  if (s == 1)
    return v;
  SmallVector<int64_t> mask;
  for (int64_t i = 0; i < kPairLanes; ++i)
    mask.push_back(q + s * i);
  return rewriter.create<vector::ShuffleOp>(loc, v, v, mask);
}

/// Replaces `tile` (one output row of a copy with loops `r`, every other
/// loop a unit) by reads of its source's rows, shuffles and writes.
Value vectorizeRow(RewriterBase &rewriter, linalg::GenericOp tile,
                   const PairRows &r) {
  Location loc = tile.getLoc();
  Value source = tile.getDpsInputOperand(0)->get();
  auto sourceType = cast<RankedTensorType>(source.getType());
  unsigned n = tile.getNumLoops();
  // The output row with its pairs merged: each step writes one vector
  // (written as [16, 2], the pairs were stored one at a time).
  Value out = tile.getDpsInitOperand(0)->get();
  SmallVector<ReassociationIndices> merge;
  for (unsigned d = 0; d + 2 < n; ++d)
    merge.push_back({int64_t(d)});
  merge.push_back({int64_t(n - 2), int64_t(n - 1)});
  int64_t rank = sourceType.getRank(), s = r.stride;
  AffineMap read = tile.getMatchingIndexingMap(tile.getDpsInputOperand(0));
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(tile);
  Value acc = rewriter.create<tensor::CollapseShapeOp>(loc, out, merge);
  auto indices = [&](ArrayRef<int64_t> at) {
    SmallVector<Value> values;
    for (int64_t v : at)
      values.push_back(rewriter.create<arith::ConstantIndexOp>(loc, v));
    return values;
  };
  auto f32 = VectorType::get({s * kPairLanes}, rewriter.getF32Type());
  auto bf16 = VectorType::get({kPairLanes}, rewriter.getBF16Type());
  SmallVector<int64_t> interleave;
  for (int64_t i = 0; i < kPairLanes; ++i)
    interleave.append({i, kPairLanes + i});
  // Chunks of kPairLanes pixels; the last ends at the row's end (its
  // pixels written twice, the same values).
  SmallVector<int64_t> starts;
  for (int64_t x = 0; x + kPairLanes <= r.width; x += kPairLanes)
    starts.push_back(x);
  if (r.width % kPairLanes != 0)
    starts.push_back(r.width - kPairLanes);
  for (int64_t x0 : starts) {
    Value rows[2];
    for (int64_t p = 0; p < 2; ++p) {
      SmallVector<int64_t> at(n, 0);
      at[r.x] = x0;
      at[r.pair] = p;
      SmallVector<int64_t> from = read.compose(at);
      bool inBounds =
          from.back() + s * kPairLanes <= sourceType.getShape().back();
      rows[p] = rewriter.create<vector::TransferReadOp>(
          loc, f32, source, indices(from),
          AffineMap::getMinorIdentityMap(rank, 1, ctx),
          ArrayRef<bool>{inBounds});
    }
    for (int64_t q = 0; q < s; ++q) {
      Value rounded[2];
      for (int64_t p = 0; p < 2; ++p)
        rounded[p] = rewriter.create<arith::TruncFOp>(
            loc, bf16, everyNth(rewriter, loc, rows[p], s, q));
      Value both = rewriter.create<vector::ShuffleOp>(loc, rounded[0],
                                                      rounded[1], interleave);
      SmallVector<int64_t> at(n - 1, 0);
      at[r.x] = 2 * x0;
      if (r.phase)
        at[*r.phase] = q;
      acc = rewriter
                .create<vector::TransferWriteOp>(
                    loc, both, acc, indices(at),
                    AffineMap::getMinorIdentityMap(n - 1, 1, ctx),
                    ArrayRef<bool>{true})
                .getResult();
    }
  }
  Value result =
      rewriter.create<tensor::ExpandShapeOp>(loc, out.getType(), acc, merge);
  rewriter.replaceOp(tile, result);
  return result;
}

} // namespace

Value vectorizePairCopy(RewriterBase &rewriter, linalg::GenericOp copy) {
  std::optional<PairRows> r = copy ? pairRows(copy) : std::nullopt;
  if (!r)
    return {};
  OpBuilder::InsertionGuard guard(rewriter);
  SmallVector<int64_t> tile(copy.getNumLoops(), 1);
  tile[r->x] = tile[r->pair] = 0;
  if (r->phase)
    tile[*r->phase] = 0;
  auto tiled = tileInPlace(rewriter, copy, tile, {});
  if (failed(tiled))
    return {};
  auto row = cast<linalg::GenericOp>(tiled->tiledOps.back());
  auto sourceType =
      dyn_cast<RankedTensorType>(row.getDpsInputOperand(0)->get().getType());
  // (Unit tiles of static loops: the slices are static.)
  if (sourceType && sourceType.hasStaticShape() &&
      cast<RankedTensorType>(row.getResult(0).getType()).hasStaticShape())
    vectorizeRow(rewriter, row, *r);
  return tiled->replacements.front();
}

Value vectorizeRoundedCopy(RewriterBase &rewriter, linalg::GenericOp copy) {
  if (!copy || copy.getNumDpsInputs() != 1 || copy.getNumDpsInits() != 1 ||
      copy.getNumReductionLoops() != 0 || !roundsInput(copy) ||
      !llvm::all_of(copy.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return {};
  auto in =
      dyn_cast<RankedTensorType>(copy.getDpsInputOperand(0)->get().getType());
  auto out = dyn_cast<RankedTensorType>(copy.getResult(0).getType());
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
      !in.getElementType().isF32() || !out.getElementType().isBF16() ||
      out.getShape().back() % kPairLanes != 0)
    return {};
  OpBuilder::InsertionGuard guard(rewriter);
  SmallVector<int64_t> tile(copy.getNumLoops(), 1);
  tile.back() = kPairLanes;
  auto tiled = tileInPlace(rewriter, copy, tile, {});
  if (failed(tiled))
    return {};
  (void)linalg::vectorize(rewriter, tiled->tiledOps.back());
  return tiled->replacements.front();
}

} // namespace ign::host
