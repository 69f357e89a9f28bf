//===- PairCopies.cpp - copies into pairs and groups of steps -------------===//

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

/// Index constants `at`.
SmallVector<Value> constantIndices(RewriterBase &rewriter, Location loc,
                                   ArrayRef<int64_t> at) {
  SmallVector<Value> values;
  for (int64_t v : at)
    values.push_back(rewriter.create<arith::ConstantIndexOp>(loc, v));
  return values;
}

/// The output `out` of a copy tile (rank n) with its last two dims merged,
/// and those dims (`merge`) to expand it back with.
std::pair<Value, SmallVector<ReassociationIndices>>
mergedLastDims(RewriterBase &rewriter, Location loc, Value out, unsigned n) {
  SmallVector<ReassociationIndices> merge;
  for (unsigned d = 0; d + 2 < n; ++d)
    merge.push_back({int64_t(d)});
  merge.push_back({int64_t(n - 2), int64_t(n - 1)});
  Value merged = rewriter.create<tensor::CollapseShapeOp>(loc, out, merge);
  return {merged, merge};
}

/// Where the steps of `step` columns over a row of `width` (at least
/// `step`) start; the last ends at the row's end (its columns written
/// twice, the same values).
SmallVector<int64_t> stepStarts(int64_t width, int64_t step) {
  SmallVector<int64_t> starts;
  for (int64_t x = 0; x + step <= width; x += step)
    starts.push_back(x);
  if (width % step != 0)
    starts.push_back(width - step);
  return starts;
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
  int64_t rank = sourceType.getRank(), s = r.stride;
  AffineMap read = tile.getMatchingIndexingMap(tile.getDpsInputOperand(0));
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(tile);
  auto [acc, merge] = mergedLastDims(rewriter, loc, out, n);
  auto indices = [&](ArrayRef<int64_t> at) {
    return constantIndices(rewriter, loc, at);
  };
  auto f32 = VectorType::get({s * kPairLanes}, rewriter.getF32Type());
  auto bf16 = VectorType::get({kPairLanes}, rewriter.getBF16Type());
  SmallVector<int64_t> interleave;
  for (int64_t i = 0; i < kPairLanes; ++i)
    interleave.append({i, kPairLanes + i});
  for (int64_t x0 : stepStarts(r.width, kPairLanes)) {
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

/// Bytes of output one step of a copy into groups writes: a 512-bit
/// register.
constexpr int64_t kGroupStepBytes = 64;

/// A copy into groups (vectorizeGroupCopy): `cols` columns (loop n - 2) of
/// `group` steps (loop n - 1) each, `step` columns per step.
struct GroupRows {
  int64_t cols, group, step;
};

std::optional<GroupRows> groupRows(linalg::GenericOp copy) {
  if (copy.getNumDpsInputs() != 1 || copy.getNumDpsInits() != 1 ||
      copy.getNumReductionLoops() != 0 || copy.getNumLoops() < 2)
    return std::nullopt;
  Block &body = copy.getRegion().front();
  if (body.getOperations().size() != 1 ||
      body.getTerminator()->getOperand(0) != body.getArgument(0))
    return std::nullopt;
  auto in =
      dyn_cast<RankedTensorType>(copy.getDpsInputOperand(0)->get().getType());
  auto out = dyn_cast<RankedTensorType>(copy.getResult(0).getType());
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
      in.getElementType() != out.getElementType() ||
      !out.getElementType().isIntOrFloat())
    return std::nullopt;
  unsigned n = copy.getNumLoops(),
           bits = out.getElementType().getIntOrFloatBitWidth();
  AffineMap read = copy.getMatchingIndexingMap(copy.getDpsInputOperand(0));
  // Each source row contiguous along the columns.
  if (!copy.getMatchingIndexingMap(copy.getDpsInitOperand(0)).isIdentity() ||
      !read.isPermutation() ||
      read.getResults().back() != getAffineDimExpr(n - 2, copy.getContext()) ||
      bits % 8 != 0)
    return std::nullopt;
  GroupRows r{out.getDimSize(n - 2), out.getDimSize(n - 1), 0};
  if (r.group != 2 && r.group != 4)
    return std::nullopt;
  r.step = std::min(r.cols, kGroupStepBytes / (r.group * (bits / 8)));
  if (r.step < 1)
    return std::nullopt;
  return r;
}

/// `pieces` (vectors of one type) joined end to end; their count a power
/// of 2.
Value joined(RewriterBase &rewriter, Location loc, SmallVector<Value> pieces) {
  while (pieces.size() > 1) {
    int64_t length =
        cast<VectorType>(pieces.front().getType()).getNumElements();
    SmallVector<int64_t> both =
        llvm::to_vector(llvm::seq<int64_t>(0, 2 * length));
    SmallVector<Value> next;
    for (size_t i = 0; i < pieces.size(); i += 2)
      next.push_back(rewriter.create<vector::ShuffleOp>(loc, pieces[i],
                                                        pieces[i + 1], both));
    pieces = std::move(next);
  }
  return pieces.front();
}

/// Replaces `tile` (one row of groups of a copy, every loop but the last
/// two a unit) by reads of its source rows' pieces, one shuffle per step
/// and writes.
void vectorizeGroups(RewriterBase &rewriter, linalg::GenericOp tile,
                     const GroupRows &r) {
  Location loc = tile.getLoc();
  Value source = tile.getDpsInputOperand(0)->get();
  auto sourceType = cast<RankedTensorType>(source.getType());
  unsigned n = tile.getNumLoops();
  AffineMap read = tile.getMatchingIndexingMap(tile.getDpsInputOperand(0));
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(tile);
  auto [acc, merge] =
      mergedLastDims(rewriter, loc, tile.getDpsInitOperand(0)->get(), n);
  auto piece = VectorType::get({r.step}, sourceType.getElementType());
  // Column c of row g: at g * step + c of the joined pieces.
  SmallVector<int64_t> order;
  for (int64_t c = 0; c < r.step; ++c)
    for (int64_t g = 0; g < r.group; ++g)
      order.push_back(g * r.step + c);
  for (int64_t x0 : stepStarts(r.cols, r.step)) {
    SmallVector<Value> pieces;
    for (int64_t g = 0; g < r.group; ++g) {
      SmallVector<int64_t> at(n, 0);
      at[n - 2] = x0;
      at[n - 1] = g;
      pieces.push_back(rewriter.create<vector::TransferReadOp>(
          loc, piece, source, constantIndices(rewriter, loc, read.compose(at)),
          AffineMap::getMinorIdentityMap(sourceType.getRank(), 1, ctx),
          ArrayRef<bool>{true}));
    }
    Value all = joined(rewriter, loc, pieces);
    Value groups = rewriter.create<vector::ShuffleOp>(loc, all, all, order);
    SmallVector<int64_t> at(n - 1, 0);
    at.back() = x0 * r.group;
    acc = rewriter
              .create<vector::TransferWriteOp>(
                  loc, groups, acc, constantIndices(rewriter, loc, at),
                  AffineMap::getMinorIdentityMap(n - 1, 1, ctx),
                  ArrayRef<bool>{true})
              .getResult();
  }
  Value result = rewriter.create<tensor::ExpandShapeOp>(
      loc, tile.getResult(0).getType(), acc, merge);
  rewriter.replaceOp(tile, result);
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

Value vectorizeGroupCopy(RewriterBase &rewriter, linalg::GenericOp copy) {
  std::optional<GroupRows> r = copy ? groupRows(copy) : std::nullopt;
  if (!r)
    return {};
  OpBuilder::InsertionGuard guard(rewriter);
  unsigned n = copy.getNumLoops();
  SmallVector<int64_t> tile(n, 1);
  tile[n - 2] = tile[n - 1] = 0;
  auto tiled = tileInPlace(rewriter, copy, tile, {});
  if (failed(tiled))
    return {};
  vectorizeGroups(rewriter, cast<linalg::GenericOp>(tiled->tiledOps.back()),
                  *r);
  return tiled->replacements.front();
}

} // namespace ign::host
