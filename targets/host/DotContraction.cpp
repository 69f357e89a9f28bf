//===- DotContraction.cpp - dot-product register tiles --------------------===//

#include "DotContraction.h"
#include "TileUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace ign::host {
namespace {

/// The loop that result `r` of `map` walks.
unsigned loopOf(AffineMap map, unsigned r) {
  return cast<AffineDimExpr>(map.getResult(r)).getPosition();
}

/// Whether `op`'s body is out + a * b in f32.
bool multipliesAndAdds(linalg::GenericOp op) {
  if (!linalg::isaContractionOpInterface(op))
    return false;
  return llvm::all_of(op->getOperandTypes(), [](Type t) {
    auto s = dyn_cast<RankedTensorType>(t);
    return s && s.getElementType().isF32();
  });
}

/// Indices into an operand of tile `op` (unit loops but `loops`) that put
/// `values[i]` at the dim walked by loop `loops[i]`.
SmallVector<Value> tileIndices(OpBuilder &b, Location loc, AffineMap map,
                               ArrayRef<unsigned> loops,
                               ArrayRef<Value> values) {
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  SmallVector<Value> indices(map.getNumResults(), zero);
  for (unsigned r = 0; r < map.getNumResults(); ++r)
    for (auto [loop, value] : llvm::zip(loops, values))
      if (loopOf(map, r) == loop)
        indices[r] = value;
  return indices;
}

/// A vector of `lanes` read along the last dim of `tensor` at `indices`.
Value readRow(OpBuilder &b, Location loc, Value tensor, ValueRange indices,
              int64_t lanes) {
  auto type = VectorType::get({lanes}, b.getF32Type());
  Value pad = b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0));
  return b.create<vector::TransferReadOp>(loc, type, tensor, indices, pad,
                                          ArrayRef<bool>{true});
}

/// The sums across lanes of `accs` (vectors of equal length, a power of
/// two), as one vector whose lane i is the sum of accs[i] (lanes past them
/// zero). Pairs of vectors are folded into one whose groups are each
/// input's groups halved (lower half + upper half), until each group is one
/// lane: about three shuffles and adds per accumulator, where a reduction
/// per accumulator and an insert of its scalar took about ten.
Value sumAcrossLanes(OpBuilder &b, Location loc, SmallVector<Value> accs) {
  int64_t lanes = cast<VectorType>(accs.front().getType()).getNumElements();
  int64_t width = lanes; // lanes of one accumulator's group
  auto halves = [&](Value x, Value y, int64_t w, bool upper) {
    // Both vectors' groups of w, the lower or upper half of each.
    SmallVector<int64_t> mask;
    int64_t n = cast<VectorType>(x.getType()).getNumElements();
    for (int64_t base : {int64_t(0), n})
      for (int64_t g = 0; g < n / w; ++g)
        for (int64_t l = 0; l < w / 2; ++l)
          mask.push_back(base + g * w + (upper ? w / 2 : 0) + l);
    return b.create<vector::ShuffleOp>(loc, x, y, mask);
  };
  Value zero = b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(cast<VectorType>(accs.front().getType()),
                                  b.getF32FloatAttr(0)));
  while (width > 1) {
    if (accs.size() == 1) {
      // One vector left: fold its groups in place (the result is half as
      // long).
      Value v = accs.front();
      SmallVector<int64_t> lo, hi;
      int64_t n = cast<VectorType>(v.getType()).getNumElements();
      for (int64_t g = 0; g < n / width; ++g)
        for (int64_t l = 0; l < width / 2; ++l) {
          lo.push_back(g * width + l);
          hi.push_back(g * width + width / 2 + l);
        }
      accs.front() = b.create<arith::AddFOp>(
          loc, b.create<vector::ShuffleOp>(loc, v, v, lo),
          b.create<vector::ShuffleOp>(loc, v, v, hi));
      width /= 2;
      continue;
    }
    if (accs.size() % 2)
      accs.push_back(zero);
    SmallVector<Value> next;
    for (size_t i = 0; i < accs.size(); i += 2)
      next.push_back(b.create<arith::AddFOp>(
          loc, halves(accs[i], accs[i + 1], width, false),
          halves(accs[i], accs[i + 1], width, true)));
    accs = std::move(next);
    width /= 2;
    zero = b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(cast<VectorType>(accs.front().getType()),
                                    b.getF32FloatAttr(0)));
  }
  return accs.front();
}

} // namespace

std::optional<DotLoops> analyzeDotContraction(linalg::GenericOp op,
                                              const HostMachine &machine) {
  if (!multipliesAndAdds(op) || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1)
    return std::nullopt;
  DotLoops d;
  d.ranges = op.getStaticLoopRanges();
  if (llvm::any_of(d.ranges, ShapedType::isDynamic))
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  d.k = unsigned(llvm::find(iterators, utils::IteratorType::reduction) -
                 iterators.begin());
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  AffineMap lhs = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap rhs = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  if (out.getNumResults() == 0 || lhs.getNumResults() == 0 ||
      rhs.getNumResults() == 0 || loopOf(lhs, lhs.getNumResults() - 1) != d.k ||
      loopOf(rhs, rhs.getNumResults() - 1) != d.k)
    return std::nullopt;
  d.n = loopOf(out, out.getNumResults() - 1);
  // B is the input indexed by n; A must not be.
  d.b = rhs.isFunctionOfDim(d.n) ? 1 : 0;
  d.a = 1 - d.b;
  AffineMap a = d.a == 0 ? lhs : rhs, b = d.b == 0 ? lhs : rhs;
  if (a.isFunctionOfDim(d.n) || !b.isFunctionOfDim(d.n))
    return std::nullopt;
  // Rows of A: output loops that B does not index (at most one, not unit).
  for (unsigned r = 0; r + 1 < out.getNumResults(); ++r) {
    unsigned l = loopOf(out, r);
    if (b.isFunctionOfDim(l) || d.ranges[l] == 1)
      continue;
    if (d.m)
      return std::nullopt;
    d.m = l;
  }
  int64_t rows = d.m ? d.ranges[*d.m] : 1, lanes = machine.lanes();
  if (lanes < 4 || d.ranges[d.k] % lanes != 0 || rows > kMaxDotRows ||
      (rows > kFewDotRows && d.ranges[d.k] < kMinDotSteps * lanes))
    return std::nullopt;
  return d;
}

int64_t dotTileRows(const DotLoops &d, const HostMachine &machine) {
  int64_t rows = d.m ? d.ranges[*d.m] : 1;
  for (int64_t r = machine.vectorRegisters >= 32 ? 4 : 2; r > 1; --r)
    if (rows % r == 0)
      return r;
  return 1;
}

int64_t defaultDotColumns(const DotLoops &d, const HostMachine &machine) {
  int64_t accumulators = machine.vectorRegisters >= 32 ? 12 : 8;
  return std::max<int64_t>(1, accumulators / dotTileRows(d, machine));
}

int64_t vectorizeDotContraction(RewriterBase &rewriter, linalg::GenericOp op,
                                const DotLoops &d, int64_t maxCols,
                                const HostMachine &machine) {
  if (maxCols < 1)
    return 0;
  int64_t cols = std::min(maxCols, d.ranges[d.n]);
  while (d.ranges[d.n] % cols != 0)
    --cols;
  int64_t rows = dotTileRows(d, machine);
  std::vector<int64_t> tile(d.ranges.size(), 1);
  tile[d.n] = cols;
  tile[d.k] = 0;
  if (d.m)
    tile[*d.m] = rows;
  // Tiles of B outside tiles of A: a tile of B's rows stays in L1 while
  // every row of A passes it.
  SmallVector<int64_t> order;
  for (unsigned l = 0; l < d.ranges.size(); ++l)
    if (!d.m || l != *d.m)
      order.push_back(l);
  if (d.m)
    order.insert(llvm::find(order, int64_t(d.n)) + 1, *d.m);
  auto tiled = tileInPlace(rewriter, op, tile, order);
  if (failed(tiled))
    return 0;
  auto t = cast<linalg::GenericOp>(tiled->tiledOps.back());
  Location loc = t.getLoc();
  OpBuilder b(t);
  int64_t lanes = machine.lanes();
  auto vecType = VectorType::get({lanes}, b.getF32Type());
  Value zeroVec = b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(vecType, b.getF32FloatAttr(0)));
  SmallVector<Value> inits(rows * cols, zeroVec);
  Value lb = b.create<arith::ConstantIndexOp>(loc, 0);
  Value ub = b.create<arith::ConstantIndexOp>(loc, d.ranges[d.k]);
  Value step = b.create<arith::ConstantIndexOp>(loc, lanes);
  Value aIn = t.getDpsInputOperand(d.a)->get();
  Value bIn = t.getDpsInputOperand(d.b)->get();
  AffineMap aMap = t.getMatchingIndexingMap(t.getDpsInputOperand(d.a));
  AffineMap bMap = t.getMatchingIndexingMap(t.getDpsInputOperand(d.b));
  auto index = [&](OpBuilder &nb, int64_t v) -> Value {
    return nb.create<arith::ConstantIndexOp>(loc, v);
  };
  auto loop = b.create<scf::ForOp>(
      loc, lb, ub, step, inits,
      [&](OpBuilder &nb, Location, Value k0, ValueRange accs) {
        SmallVector<Value> as, next;
        for (int64_t i = 0; i < rows; ++i) {
          SmallVector<unsigned> loops{d.k};
          SmallVector<Value> values{k0};
          if (d.m) {
            loops.push_back(*d.m);
            values.push_back(index(nb, i));
          }
          as.push_back(readRow(
              nb, loc, aIn, tileIndices(nb, loc, aMap, loops, values), lanes));
        }
        next.assign(accs.begin(), accs.end());
        for (int64_t j = 0; j < cols; ++j) {
          Value bj = readRow(
              nb, loc, bIn,
              tileIndices(nb, loc, bMap, {d.k, d.n}, {k0, index(nb, j)}),
              lanes);
          for (int64_t i = 0; i < rows; ++i)
            next[i * cols + j] =
                nb.create<vector::FMAOp>(loc, as[i], bj, next[i * cols + j]);
        }
        nb.create<scf::YieldOp>(loc, next);
      });
  // Each accumulator summed across its lanes, added to the output tile's
  // row of `cols`, contiguous along n.
  Value out = t.getDpsInitOperand(0)->get();
  AffineMap outMap = t.getMatchingIndexingMap(t.getDpsInitOperand(0));
  auto rowType = VectorType::get({cols}, b.getF32Type());
  Value pad = b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0));
  Value all = sumAcrossLanes(b, loc, SmallVector<Value>(loop.getResults()));
  for (int64_t i = 0; i < rows; ++i) {
    Value sums = b.create<vector::ExtractStridedSliceOp>(
        loc, all, ArrayRef<int64_t>{i * cols}, ArrayRef<int64_t>{cols},
        ArrayRef<int64_t>{1});
    SmallVector<unsigned> loops;
    SmallVector<Value> values;
    if (d.m) {
      loops.push_back(*d.m);
      values.push_back(index(b, i));
    }
    SmallVector<Value> at = tileIndices(b, loc, outMap, loops, values);
    Value old = b.create<vector::TransferReadOp>(loc, rowType, out, at, pad,
                                                 ArrayRef<bool>{true});
    Value sum = b.create<arith::AddFOp>(loc, old, sums);
    out = b.create<vector::TransferWriteOp>(loc, sum, out, at,
                                            ArrayRef<bool>{true})
              .getResult();
  }
  rewriter.replaceOp(t, out);
  return cols;
}

} // namespace ign::host
