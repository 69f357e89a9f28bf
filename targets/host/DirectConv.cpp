//===- DirectConv.cpp - register tiles of direct convolutions -------------===//

#include "DirectConv.h"
#include "AmxTiles.h"
#include "FilledAccumulators.h"
#include "GroupedDots.h"
#include "PairCopies.h"
#include "PrepackedPanels.h"
#include "TileUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/bit.h"

using namespace mlir;

namespace ign::host {
namespace {

/// The filter loop f of a weight map: its last result is f (block 0) or
/// f % T after f / T first (block T), the rest loops or 0. Else nullopt.
std::optional<std::pair<unsigned, int64_t>> filterLoop(AffineMap weights) {
  ArrayRef<AffineExpr> results = weights.getResults();
  if (results.size() < 2)
    return std::nullopt;
  if (auto f = dyn_cast<AffineDimExpr>(results.back())) {
    if (weights.isProjectedPermutation(/*allowZeroInResults=*/true))
      return std::make_pair(f.getPosition(), int64_t(0));
    return std::nullopt;
  }
  auto mod = dyn_cast<AffineBinaryOpExpr>(results.back());
  auto div = dyn_cast<AffineBinaryOpExpr>(results.front());
  if (!mod || !div || mod.getKind() != AffineExprKind::Mod ||
      div.getKind() != AffineExprKind::FloorDiv || mod.getLHS() != div.getLHS())
    return std::nullopt;
  auto f = dyn_cast<AffineDimExpr>(mod.getLHS());
  auto t = dyn_cast<AffineConstantExpr>(mod.getRHS());
  if (!f || !t || div.getRHS() != mod.getRHS() || t.getValue() < 1)
    return std::nullopt;
  for (AffineExpr e : results.drop_front().drop_back()) {
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!(isa<AffineDimExpr>(e) || (c && c.getValue() == 0)) ||
        e.isFunctionOfDim(f.getPosition()))
      return std::nullopt;
  }
  return std::make_pair(f.getPosition(), t.getValue());
}

/// The tile's rows: the output's contiguous loop (a row of pixels) when it
/// is at least 4 long, else the longest other output loop that the input
/// reads (CREPE's convolutions over 1024 x 1 pixels run down the column).
unsigned pixelLoop(AffineMap out, AffineMap input, unsigned filters,
                   ArrayRef<int64_t> ranges) {
  unsigned last = cast<AffineDimExpr>(out.getResults().back()).getPosition();
  if (ranges[last] >= 4)
    return last;
  unsigned best = last;
  for (AffineExpr e : out.getResults()) {
    unsigned d = cast<AffineDimExpr>(e).getPosition();
    if (d != filters && input.isFunctionOfDim(d) && ranges[d] > ranges[best])
      best = d;
  }
  return best;
}

/// The product of the reduction loops that index the input together with
/// loop `pixels` (ow * s + kw: the kernel's columns).
int64_t windowColumns(AffineMap input, unsigned pixels,
                      ArrayRef<int64_t> ranges,
                      ArrayRef<utils::IteratorType> iterators) {
  int64_t columns = 1;
  for (AffineExpr e : input.getResults()) {
    if (!e.isFunctionOfDim(pixels))
      continue;
    for (unsigned d = 0; d < ranges.size(); ++d)
      if (d != pixels && iterators[d] == utils::IteratorType::reduction &&
          e.isFunctionOfDim(d))
        columns *= ranges[d];
  }
  return columns;
}

/// Whether `body` (of a generic with two inputs and one output) yields
/// out + in0 * in1: in floats, or in i32 of bytes each extended by its
/// signedness (a quantized convolution, IntegerMatmuls.cpp).
bool isMultiplyAccumulate(Block &body) {
  if (body.getNumArguments() != 3)
    return false;
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || yield->getNumOperands() != 1)
    return false;
  Operation *add = yield->getOperand(0).getDefiningOp();
  if (!add || !isa<arith::AddFOp, arith::AddIOp>(add))
    return false;
  Value acc = body.getArgument(2);
  Value product = add->getOperand(0) == acc   ? add->getOperand(1)
                  : add->getOperand(1) == acc ? add->getOperand(0)
                                              : Value();
  Operation *mul = product ? product.getDefiningOp() : nullptr;
  if (!mul || mul->getBlock() != &body)
    return false;
  bool floats = isa<arith::MulFOp>(mul) && isa<arith::AddFOp>(add);
  bool integers = isa<arith::MulIOp>(mul) && isa<arith::AddIOp>(add);
  if (!floats && !integers)
    return false;
  auto extended = [&](Value v) {
    if (isa<arith::MulIOp>(mul))
      if (auto ext = v.getDefiningOp();
          ext && isa<arith::ExtUIOp, arith::ExtSIOp>(ext) &&
          ext->getBlock() == &body)
        return ext->getOperand(0);
    return v;
  };
  Value a = extended(mul->getOperand(0)), b = extended(mul->getOperand(1));
  return (a == body.getArgument(0) && b == body.getArgument(1)) ||
         (a == body.getArgument(1) && b == body.getArgument(0));
}

/// Whether `body` (of a generic with two inputs and one output) is a
/// pooling window's reduction: yields max(out, in) or out + in of one input,
/// the other (the window's shape) unused. The max of integers too (a
/// quantized model's max pool of bytes: ResNet-50's 0.28 -> 0.14 ms with
/// register tiles, Zen 4).
bool isWindowReduction(Block &body) {
  if (body.getNumArguments() != 3)
    return false;
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  Operation *op = yield && yield->getNumOperands() == 1
                      ? yield->getOperand(0).getDefiningOp()
                      : nullptr;
  if (!op || op->getBlock() != &body ||
      !isa<arith::AddFOp, arith::MaximumFOp, arith::MaxNumFOp, arith::MaxUIOp,
           arith::MaxSIOp>(op))
    return false;
  Value acc = body.getArgument(2);
  for (unsigned i = 0; i < 2; ++i) {
    Value in = body.getArgument(i);
    if (body.getArgument(1 - i).use_empty() &&
        ((op->getOperand(0) == in && op->getOperand(1) == acc) ||
         (op->getOperand(1) == in && op->getOperand(0) == acc)))
      return true;
  }
  return false;
}

/// Rows of a register tile over a loop of `range`: a divisor of it from
/// `preferred` down to 4, else one up to `cap` (what the registers hold),
/// else `preferred`, the rest peeled. With `even`, a rest under half a tile
/// is evened out: the same number of tiles, of near-equal size (7 as 4 + 3,
/// not 5 + 2: AVX2's 3x3 convolution over 7 x 7 pixels 3.27 against 3.42 ms;
/// a strided 1x1 convolution over 7 pixels ran faster as 6 + 1 than 4 + 3).
int64_t tileRowsFor(int64_t range, int64_t preferred, int64_t cap,
                    bool even = false) {
  for (int64_t r = std::min(preferred, range); r >= 4; --r)
    if (range % r == 0)
      return r;
  for (int64_t r = preferred + 1; r <= std::min(cap, range); ++r)
    if (range % r == 0)
      return r;
  int64_t rows = std::min(preferred, range);
  if (!even || 2 * (range % rows) >= rows)
    return rows;
  int64_t tiles = llvm::divideCeil(range, rows);
  return llvm::divideCeil(range, tiles);
}

/// Splits `op` along loop `d` at the largest multiple of `tile`, or where
/// `restSize` iterations are left when given; returns the main part and
/// the rest, or nullopt when the loop divides (or the split failed).
std::optional<std::pair<linalg::GenericOp, linalg::GenericOp>>
peel(RewriterBase &rewriter, linalg::GenericOp op, unsigned d, int64_t tile,
     std::optional<int64_t> restSize = std::nullopt) {
  int64_t range = op.getStaticLoopRanges()[d];
  if (tile < 1 || range <= tile || range % tile == 0)
    return std::nullopt;
  int64_t left = restSize.value_or(range % tile);
  if (left <= 0 || left >= range || (range - left) % tile != 0)
    return std::nullopt;
  rewriter.setInsertionPoint(op);
  auto [main, rest] =
      linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()), d,
                      rewriter.getIndexAttr(range - left));
  auto mainOp = dyn_cast_or_null<linalg::GenericOp>(main.getOperation());
  auto restOp = dyn_cast_or_null<linalg::GenericOp>(rest.getOperation());
  if (!mainOp || !restOp)
    return std::nullopt;
  return std::make_pair(mainOp, restOp);
}

/// The widest stride of a row whose pixels are read as a whole row and
/// picked by a shuffle (readRowContiguously): s x V lanes per vector.
constexpr int64_t kMaxRowStride = 4;

/// Makes register tile `tile` read its input in place: each index of the
/// input that only one loop of the tile moves (a row of pixels, with its
/// stride) becomes that loop over a strided slice, the others (fixed in
/// the tile) constant. The tile's maps are then projected permutations,
/// which the vectorizer needs. Fails, changing nothing, when an index moves
/// with two loops of the tile.
LogicalResult readInputInPlace(RewriterBase &rewriter, linalg::GenericOp tile,
                               unsigned input) {
  SmallVector<int64_t> ranges = tile.getStaticLoopRanges();
  OpOperand &operand = tile->getOpOperand(input);
  auto slice = operand.get().getDefiningOp<tensor::ExtractSliceOp>();
  AffineMap map = tile.getMatchingIndexingMap(&operand);
  if (!slice || !slice.hasUnitStride() ||
      slice.getSourceType().getRank() != int64_t(map.getNumResults()) ||
      slice.getType().getRank() != int64_t(map.getNumResults()))
    return failure();
  MLIRContext *ctx = tile.getContext();
  unsigned dims = map.getNumDims();
  SmallVector<AffineExpr> results;
  SmallVector<OpFoldResult> sizes, strides;
  for (AffineExpr e : map.getResults()) {
    std::optional<unsigned> moving;
    int64_t stride = 1;
    for (unsigned d = 0; d < dims; ++d) {
      if (ranges[d] == 1 || !e.isFunctionOfDim(d))
        continue;
      if (moving)
        return failure();
      moving = d;
      stride = coefficientOf(e, d, dims);
    }
    if (moving && stride < 1)
      return failure();
    results.push_back(moving ? getAffineDimExpr(*moving, ctx)
                             : getAffineConstantExpr(0, ctx));
    sizes.push_back(rewriter.getIndexAttr(moving ? ranges[*moving] : 1));
    strides.push_back(rewriter.getIndexAttr(stride));
  }
  rewriter.setInsertionPoint(slice);
  auto inPlace = rewriter.create<tensor::ExtractSliceOp>(
      slice.getLoc(), slice.getSource(), slice.getMixedOffsets(), sizes,
      strides);
  SmallVector<AffineMap> maps = tile.getIndexingMapsArray();
  maps[input] = AffineMap::get(dims, 0, results, ctx);
  rewriter.modifyOpInPlace(tile, [&] {
    tile.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    operand.set(inPlace.getResult());
  });
  if (slice->use_empty())
    rewriter.eraseOp(slice);
  return success();
}

/// The widest of `filters`, `filters` / 2, ... (at least 4) that divides
/// both the filter loop and its block of the weights; 1 when none does.
int64_t fittingFilters(const DirectConvLoops &c, int64_t filters) {
  for (; filters >= 4; filters /= 2)
    if (c.block % filters == 0 && c.ranges[c.filters] % filters == 0)
      return filters;
  return 1;
}

/// In register tile `tile` (its filters within one block), reads the
/// weights' block index f / T as 0 and f % T as f: a projected
/// permutation.
void readWeightsInPlace(RewriterBase &rewriter, linalg::GenericOp tile,
                        unsigned weights, unsigned filters) {
  OpOperand &operand = tile->getOpOperand(weights);
  AffineMap map = tile.getMatchingIndexingMap(&operand);
  MLIRContext *ctx = tile.getContext();
  SmallVector<AffineExpr> results;
  for (AffineExpr e : map.getResults()) {
    auto bin = dyn_cast<AffineBinaryOpExpr>(e);
    if (bin && bin.getKind() == AffineExprKind::FloorDiv)
      results.push_back(getAffineConstantExpr(0, ctx));
    else if (bin && bin.getKind() == AffineExprKind::Mod)
      results.push_back(getAffineDimExpr(filters, ctx));
    else
      results.push_back(e);
  }
  SmallVector<AffineMap> maps = tile.getIndexingMapsArray();
  maps[weights] = AffineMap::get(map.getNumDims(), 0, results, ctx);
  rewriter.modifyOpInPlace(tile, [&] {
    tile.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
  });
}

/// The tile loops of `op` for `tile`: parallel loops outside, reductions
/// inside.
SmallVector<int64_t> parallelFirst(linalg::GenericOp op) {
  auto loopTypes = op.getIteratorTypesArray();
  SmallVector<int64_t> loopOrder;
  for (int reductions = 0; reductions < 2; ++reductions)
    for (unsigned d = 0; d < loopTypes.size(); ++d)
      if ((loopTypes[d] == utils::IteratorType::parallel) == (reductions == 0))
        loopOrder.push_back(d);
  return loopOrder;
}

/// Whether reduction loop `d` of direct convolution `op` reads the input
/// along the row of pixels (the window's columns, kw of ow + kw).
bool isWindowColumn(linalg::GenericOp op, const DirectConvLoops &c,
                    unsigned d) {
  AffineMap input = op.getMatchingIndexingMap(&op->getOpOperand(c.input));
  return op.getIteratorTypesArray()[d] == utils::IteratorType::reduction &&
         llvm::any_of(input.getResults(), [&](AffineExpr e) {
           return e.isFunctionOfDim(c.pixels) && e.isFunctionOfDim(d);
         });
}

/// The tile loops of direct convolution `op`: parallel loops, then the
/// reductions other than the window's (the input channels), the window's
/// columns, and its other loops (rows) innermost. The columns' loop is kept
/// a loop (kKeepLoop): unrolled, the pixel one column's step broadcasts is
/// the one the next column's step broadcasts for the neighbouring pixel,
/// and LLVM loaded it once and grouped the FMAs by it, keeping every
/// column's weights live: on AVX2's 16 registers a 4 x 16 tile of a 3x3
/// window spilled 18 of them per input channel. Each column's step then
/// unrolls only the window's rows, which share no pixel.
SmallVector<int64_t> windowColumnsInside(linalg::GenericOp op,
                                         const DirectConvLoops &c) {
  AffineMap input = op.getMatchingIndexingMap(&op->getOpOperand(c.input));
  auto iterators = op.getIteratorTypesArray();
  // Window loops: reductions read together with an output loop.
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  auto isWindow = [&](int64_t d) {
    return iterators[d] == utils::IteratorType::reduction &&
           llvm::any_of(input.getResults(), [&](AffineExpr e) {
             return e.isFunctionOfDim(d) &&
                    llvm::any_of(out.getResults(), [&](AffineExpr o) {
                      return e.isFunctionOfDim(
                          cast<AffineDimExpr>(o).getPosition());
                    });
           });
  };
  SmallVector<int64_t> order = parallelFirst(op);
  auto rank = [&](int64_t d) {
    if (iterators[d] == utils::IteratorType::parallel)
      return 0;
    return isWindowColumn(op, c, d) ? 2 : isWindow(d) ? 3 : 1;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return rank(a) < rank(b); });
  return order;
}

/// Interchanges register tile `t` so that loop `lanes` is its last parallel
/// loop (the vectorizer's lanes), reductions after it, and vectorizes it.
/// With `lanesLast`, the reductions come before `rows` (when given) and
/// the lanes instead: a channel-wise convolution's reductions are unit
/// loops in its tile, and after the lanes they are trailing unit dims that
/// the vector lowering takes apart lane by lane. LLVM put most of it back
/// together, not after a strided row's shuffle: a 5x5 stride-2 depthwise
/// convolution over 28x28 pixels ran 0.75 ms, 0.13 with the lanes last.
LogicalResult vectorizeWithLanes(RewriterBase &rewriter, linalg::GenericOp t,
                                 unsigned lanes, int64_t vectorLanes = 0,
                                 bool lanesLast = false,
                                 std::optional<unsigned> rows = std::nullopt) {
  auto iterators = t.getIteratorTypesArray();
  auto reductions = [&](SmallVector<unsigned> &order) {
    for (unsigned d = 0; d < iterators.size(); ++d)
      if (iterators[d] != utils::IteratorType::parallel)
        order.push_back(d);
  };
  SmallVector<unsigned> order;
  for (unsigned d = 0; d < iterators.size(); ++d)
    if (iterators[d] == utils::IteratorType::parallel && d != lanes &&
        (!lanesLast || d != rows))
      order.push_back(d);
  if (lanesLast) {
    reductions(order);
    if (rows)
      order.push_back(*rows);
  }
  order.push_back(lanes);
  if (!lanesLast)
    reductions(order);
  // Lanes the loop does not fill (14 pixels of a row in vectors of 16) are
  // masked: one masked load or store instead of a load per power of two.
  SmallVector<int64_t> ranges = t.getStaticLoopRanges(), sizes;
  if (vectorLanes > ranges[lanes])
    for (unsigned d : order)
      sizes.push_back(d == lanes ? vectorLanes : ranges[d]);
  FailureOr<linalg::GenericOp> interchanged =
      linalg::interchangeGenericOp(rewriter, t, order);
  if (failed(interchanged))
    return failure();
  SmallVector<bool> scalable(sizes.size(), false);
  return linalg::vectorize(rewriter, interchanged->getOperation(), sizes,
                           scalable);
}

/// Whether a register tile of `pixels` x `filters` keeps the loop over the
/// window's columns rolled (windowColumnsInside): unrolled, LLVM keeps
/// every column's weights and the pixels the columns share live beside the
/// accumulators, and where those exceed the registers it spilled them (a
/// 4 x 16 tile of a 3x3 window on AVX2: 8 accumulators, 6 weights, 6
/// pixels). An 8 x 32 tile on AVX-512 (16 + 6 + 10 of 32) stays unrolled.
bool keepsColumnsRolled(const DirectConvLoops &c, int64_t filters,
                        int64_t pixels, const HostMachine &machine) {
  int64_t vectors = std::max<int64_t>(1, filters / machine.lanes());
  int64_t live = pixels * vectors + c.windowColumns * vectors + pixels +
                 c.windowColumns - 1;
  return c.windowColumns > 1 && live > machine.vectorRegisters;
}

/// Tiles `op` (a direct convolution whose loops divide by the tile) into
/// `filters` x `pixels` register tiles and vectorizes them.
std::vector<int64_t> tileAndVectorize(RewriterBase &rewriter,
                                      linalg::GenericOp op,
                                      const DirectConvLoops &c, int64_t filters,
                                      int64_t pixels,
                                      const HostMachine &machine) {
  if (filters < 4 || c.block % filters != 0)
    return {};
  std::vector<int64_t> tile(c.ranges.size(), 1);
  tile[c.filters] = filters;
  tile[c.pixels] = pixels;
  TypedAttr filled = fillValueOf(op.getDpsInits()[0]);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  bool rolled = keepsColumnsRolled(c, filters, pixels, machine);
  SmallVector<int64_t> order =
      rolled ? windowColumnsInside(op, c) : parallelFirst(op);
  SmallVector<bool> keep = llvm::map_to_vector(order, [&](int64_t d) {
    return rolled && c.ranges[d] > 1 && isWindowColumn(op, c, d);
  });
  auto tiled = tileInPlace(rewriter, op, tile, order);
  if (failed(tiled))
    return {};
  markFilledAccumulators(filled, iterators, *tiled);
  if (tiled->loops.size() == order.size())
    for (auto [loop, kept] : llvm::zip(tiled->loops, keep))
      if (kept)
        loop->setAttr(kKeepLoop, rewriter.getUnitAttr());
  auto t = dyn_cast<linalg::GenericOp>(tiled->tiledOps.back());
  if (!t || failed(readInputInPlace(rewriter, t, c.input)))
    return {};
  readWeightsInPlace(rewriter, t, c.weights, c.filters);
  if (failed(vectorizeWithLanes(rewriter, t, c.filters)))
    return {};
  return tile;
}

/// Lanes `pick` of each row of the concatenation of `chunks` (each N x C
/// lanes): N x pick.size().
Value pickLanes(RewriterBase &rewriter, Location loc, ArrayRef<Value> chunks,
                ArrayRef<int64_t> pick) {
  auto type = cast<VectorType>(chunks.front().getType());
  int64_t n = type.getDimSize(0), width = type.getDimSize(1);
  auto rowsType =
      VectorType::get({n, int64_t(pick.size())}, type.getElementType());
  Value rows = rewriter.create<arith::ConstantOp>(
      loc, rowsType, rewriter.getZeroAttr(rowsType));
  for (int64_t r = 0; r < n; ++r) {
    Value row = rewriter.create<vector::ExtractOp>(loc, chunks.front(), r);
    for (auto [i, chunk] : llvm::enumerate(chunks.drop_front())) {
      SmallVector<int64_t> all =
          llvm::to_vector(llvm::seq<int64_t>(0, (i + 2) * width));
      row = rewriter.create<vector::ShuffleOp>(
          loc, row, rewriter.create<vector::ExtractOp>(loc, chunk, r), all);
    }
    Value kept = rewriter.create<vector::ShuffleOp>(loc, row, row, pick);
    rows = rewriter.create<vector::InsertOp>(loc, kept, rows, r);
  }
  return rows;
}

/// The rows of `flat` (N x s*V lanes), every s-th lane of each kept: N x V.
Value everyNthLane(RewriterBase &rewriter, Location loc, Value flat,
                   int64_t s) {
  int64_t lanes = cast<VectorType>(flat.getType()).getDimSize(1) / s;
  SmallVector<int64_t> pick;
  for (int64_t l = 0; l < lanes; ++l)
    pick.push_back(l * s);
  return pickLanes(rewriter, loc, {flat}, pick);
}

/// Where a row of V pixels s apart (its s * (V - 1) + 1 elements, V <= that)
/// is read as whole vectors of V lanes that stay inside it: chunks at 0, V,
/// 2V, ..., the last one ending at the row's last pixel.
struct RowChunks {
  SmallVector<int64_t> offsets;
  /// Per pixel, its lane in the chunks' concatenation.
  SmallVector<int64_t> pick;
};

RowChunks rowChunks(int64_t lanes, int64_t s) {
  int64_t span = s * (lanes - 1) + 1;
  RowChunks chunks;
  for (int64_t o = 0; o + lanes < span; o += lanes)
    chunks.offsets.push_back(o);
  chunks.offsets.push_back(span - lanes);
  for (int64_t l = 0; l < lanes; ++l) {
    int64_t e = l * s, i = 0;
    while (i + 1 < int64_t(chunks.offsets.size()) && e >= chunks.offsets[i + 1])
      ++i;
    chunks.pick.push_back(i * lanes + e - chunks.offsets[i]);
  }
  return chunks;
}

/// `value` (the dims `read` reads, in order) as `read`'s result: broadcast
/// along its unit broadcast dims, then transposed into place (in a channel
/// convolution's tile, vectorized with the lanes last, no transpose), as
/// the vector dialect lowers a broadcasting read itself.
Value asReadResult(RewriterBase &rewriter, vector::TransferReadOp read,
                   Value value) {
  VectorType type = read.getVectorType();
  SmallVector<int64_t> leading, perm(type.getRank());
  ArrayRef<AffineExpr> results = read.getPermutationMap().getResults();
  for (int dims = 0, i = 0; dims < 2; ++dims)
    for (auto [pos, e] : llvm::enumerate(results))
      if (isa<AffineDimExpr>(e) == (dims == 1)) {
        leading.push_back(type.getDimSize(pos));
        perm[pos] = i++;
      }
  Location loc = read.getLoc();
  Value broadcast = rewriter.create<vector::BroadcastOp>(
      loc, VectorType::get(leading, type.getElementType()), value);
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return broadcast;
  return rewriter.create<vector::TransposeOp>(loc, broadcast, perm);
}

/// The pixels of `row` (a row's contiguous elements; the read's `dims` and
/// `shape`, its last dim V lanes) s apart, as N x V lanes. A row of V
/// pixels (every lane one) is read as whole vectors of V lanes inside it
/// (rowChunks) and its pixels picked by one shuffle: masked, the s x V
/// lanes past its last pixel were a vmaskmovps each, the hot spot of a
/// stride-2 depthwise convolution on a Zen 1 core (96 x 112 x 112, 3x3,
/// 1.51 -> 0.84 ms). A shorter row reads the s x V lanes with those past it
/// masked (padding, not memory).
Value readStridedRow(RewriterBase &rewriter, vector::TransferReadOp read,
                     tensor::ExtractSliceOp row, ArrayRef<AffineExpr> dims,
                     SmallVector<int64_t> shape, SmallVector<bool> inBounds,
                     int64_t pixels, int64_t s, int64_t n) {
  Location loc = read.getLoc();
  Type element = read.getVectorType().getElementType();
  int64_t rank = row.getType().getRank(), lanes = shape.back();
  Value zero = rewriter.create<arith::ConstantIndexOp>(loc, 0);
  AffineMap map = AffineMap::get(rank, 0, dims, read.getContext());
  auto readAt = [&](int64_t offset, ArrayRef<int64_t> readShape) {
    SmallVector<Value> indices(rank, zero);
    indices.back() = rewriter.create<arith::ConstantIndexOp>(loc, offset);
    Value v = rewriter.create<vector::TransferReadOp>(
        loc, VectorType::get(readShape, element), row.getResult(), indices, map,
        read.getPadding(), Value(), rewriter.getBoolArrayAttr(inBounds));
    return rewriter.create<vector::ShapeCastOp>(
        loc, VectorType::get({n, readShape.back()}, element), v);
  };
  if (pixels == lanes) {
    RowChunks chunks = rowChunks(lanes, s);
    inBounds.back() = true;
    SmallVector<Value> parts;
    for (int64_t offset : chunks.offsets)
      parts.push_back(readAt(offset, shape));
    return pickLanes(rewriter, loc, parts, chunks.pick);
  }
  shape.back() *= s;
  inBounds.back() = false;
  return everyNthLane(rewriter, loc, readAt(0, shape), s);
}

/// Rewrites `read`, of a slice whose row (its last dim) has stride s > 1,
/// to read the s x V contiguous lanes each row's pixels lie in (lanes past
/// the row's last pixel padding, not memory) and keep every s-th by a
/// shuffle: the vectorizer's read of a strided row gathered its V pixels
/// lane by lane (a stride-2 pooling or depthwise row). A masked read's mask
/// is dropped: the lanes it masks off lie past the row. Fails, changing
/// nothing, unless the read starts at the slice's origin and reads its dims
/// in order, broadcasting only unit dims, the row last.
LogicalResult readRowContiguously(RewriterBase &rewriter,
                                  vector::TransferReadOp read,
                                  tensor::ExtractSliceOp slice) {
  int64_t rank = slice.getType().getRank();
  ArrayRef<int64_t> strides = slice.getStaticStrides();
  ArrayRef<int64_t> sizes = slice.getStaticSizes();
  if (rank < 1 || slice.getSourceType().getRank() != rank ||
      ShapedType::isDynamic(strides.back()) || strides.back() < 2 ||
      strides.back() > kMaxRowStride || ShapedType::isDynamic(sizes.back()) ||
      llvm::any_of(read.getIndices(),
                   [](Value i) { return !isConstantIntValue(i, 0); }))
    return failure();
  int64_t s = strides.back();
  VectorType type = read.getVectorType();
  SmallVector<AffineExpr> dims;
  SmallVector<int64_t> shape;
  SmallVector<bool> inBounds;
  for (auto [pos, e] : llvm::enumerate(read.getPermutationMap().getResults())) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d && type.getDimSize(pos) != 1)
      return failure();
    if (!d)
      continue;
    if (!dims.empty() &&
        cast<AffineDimExpr>(dims.back()).getPosition() >= d.getPosition())
      return failure();
    dims.push_back(d);
    shape.push_back(type.getDimSize(pos));
    inBounds.push_back(read.isDimInBounds(pos));
  }
  if (dims.empty() ||
      cast<AffineDimExpr>(dims.back()).getPosition() != unsigned(rank - 1))
    return failure();
  Location loc = read.getLoc();
  Operation *replaced = read;
  if (auto mask = dyn_cast<vector::MaskOp>(read->getParentOp()))
    replaced = mask;
  rewriter.setInsertionPoint(replaced);
  // The row from its first pixel to its last, contiguous.
  SmallVector<OpFoldResult> rowSizes = slice.getMixedSizes();
  SmallVector<OpFoldResult> rowStrides = slice.getMixedStrides();
  rowSizes.back() = rewriter.getIndexAttr(s * (sizes.back() - 1) + 1);
  rowStrides.back() = rewriter.getIndexAttr(1);
  auto row = rewriter.create<tensor::ExtractSliceOp>(
      loc, slice.getSource(), slice.getMixedOffsets(), rowSizes, rowStrides);
  int64_t n = 1;
  for (int64_t size : ArrayRef(shape).drop_back())
    n *= size;
  Value kept = readStridedRow(rewriter, read, row, dims, shape, inBounds,
                              sizes.back(), s, n);
  if (shape.size() != 2)
    kept = rewriter.create<vector::ShapeCastOp>(
        loc, VectorType::get(shape, type.getElementType()), kept);
  rewriter.replaceOp(replaced, asReadResult(rewriter, read, kept));
  return success();
}

/// Drops the masks of the vectorized reductions in `scope` (a register
/// tile's loop). Only the lanes past a row are masked, and the tile's
/// masked write never stores them: masked, each step was a multiply, an add
/// and a blend per accumulator instead of one FMA.
void unmaskReductions(RewriterBase &rewriter, Operation *scope) {
  SmallVector<vector::MaskOp> masks;
  scope->walk([&](vector::MaskOp mask) {
    if (isa_and_nonnull<vector::MultiDimReductionOp>(mask.getMaskableOp()))
      masks.push_back(mask);
  });
  for (vector::MaskOp mask : masks) {
    rewriter.setInsertionPoint(mask);
    Operation *unmasked = rewriter.clone(*mask.getMaskableOp());
    rewriter.replaceOp(mask, unmasked->getResults());
  }
}

/// The reduction loop of channel-wise convolution `op` that moves along
/// the input's rows with the tile's rows (kh of in[s * oh + kh, ...]) one
/// row per step; nullopt otherwise (a dilated window's rows share no loads
/// between neighbouring rows of the tile). With stride 2 rows 2i + kh
/// still share: 17 input rows instead of 24 for 8 rows of a 3x3 window.
std::optional<unsigned> rowWindowLoop(linalg::GenericOp op,
                                      const ChannelConvLoops &c) {
  if (!c.rows)
    return std::nullopt;
  AffineMap input = op.getMatchingIndexingMap(&op->getOpOperand(c.input));
  unsigned dims = input.getNumDims();
  auto iterators = op.getIteratorTypesArray();
  std::optional<unsigned> window;
  for (AffineExpr e : input.getResults()) {
    if (!e.isFunctionOfDim(*c.rows))
      continue;
    for (unsigned d = 0; d < dims; ++d)
      if (iterators[d] == utils::IteratorType::reduction &&
          e.isFunctionOfDim(d)) {
        if (window || coefficientOf(e, d, dims) != 1)
          return std::nullopt;
        window = d;
      }
  }
  return window;
}

/// The tile loops of channel-wise convolution `op`: parallel loops, then
/// reductions, `last` (when given) innermost.
SmallVector<int64_t> tileLoopOrder(linalg::GenericOp op,
                                   std::optional<unsigned> last) {
  SmallVector<int64_t> order = parallelFirst(op);
  if (last) {
    llvm::erase(order, int64_t(*last));
    order.push_back(*last);
  }
  return order;
}

/// Tiles `op` (a channel-wise convolution whose loops divide by the tile)
/// into register tiles of `shape` and vectorizes them.
std::vector<int64_t> tileChannelConv(RewriterBase &rewriter,
                                     linalg::GenericOp op,
                                     const ChannelConvLoops &c,
                                     const ChannelConvTile &shape) {
  std::vector<int64_t> tile(c.ranges.size(), 1);
  tile[c.columns] = shape.columns;
  if (c.rows)
    tile[*c.rows] = shape.rows;
  if (c.filters)
    tile[*c.filters] = shape.filters;
  // The window's rows innermost and unrolled: the input vector one of its
  // steps loads for a row of the tile is the one the next step loads for
  // the row above, and LLVM loads it once (depthwise 3x3 over
  // 32 x 112 x 112 0.18 -> 0.14 ms, 5x5 over 256 x 50 x 38 0.54 -> 0.37).
  std::optional<unsigned> window = rowWindowLoop(op, c);
  auto tiled = tileInPlace(rewriter, op, tile, tileLoopOrder(op, window));
  if (failed(tiled))
    return {};
  if (window && tiled->loops.size() == tile.size())
    tiled->loops.back()->setAttr(kUnrollWindow, UnitAttr::get(op.getContext()));
  auto t = dyn_cast<linalg::GenericOp>(tiled->tiledOps.back());
  if (!t || failed(readInputInPlace(rewriter, t, c.input)))
    return {};
  auto slice = t->getOperand(c.input).getDefiningOp<tensor::ExtractSliceOp>();
  Operation *scope = t->getParentOp();
  if (failed(vectorizeWithLanes(rewriter, t, c.columns,
                                int64_t(llvm::PowerOf2Ceil(shape.columns)),
                                /*lanesLast=*/true, c.rows)))
    return {};
  unmaskReductions(rewriter, scope);
  // Pixels of a strided row (stride 2) are read as whole rows.
  if (slice)
    for (Operation *user : llvm::make_early_inc_range(slice->getUsers()))
      if (auto read = dyn_cast<vector::TransferReadOp>(user))
        (void)readRowContiguously(rewriter, read, slice);
  return tile;
}

/// The output loop of a channel-wise convolution that `weights` index and
/// `input` does not (its filters), other than its columns and rows.
std::optional<unsigned> filterLoopOf(linalg::GenericOp op,
                                     const ChannelConvLoops &c,
                                     AffineMap weights, AffineMap input) {
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  auto iterators = op.getIteratorTypesArray();
  std::optional<unsigned> filters;
  for (AffineExpr e : out.getResults()) {
    unsigned d = cast<AffineDimExpr>(e).getPosition();
    if (d != c.columns && d != c.rows && c.ranges[d] > 1 &&
        iterators[d] == utils::IteratorType::parallel &&
        weights.isFunctionOfDim(d) && !input.isFunctionOfDim(d))
      filters = d;
  }
  return filters;
}

} // namespace

std::optional<DirectConvLoops> analyzeDirectConv(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 1)
    return std::nullopt;
  if (!isMultiplyAccumulate(*op.getBlock()))
    return std::nullopt;
  DirectConvLoops c;
  c.ranges = op.getStaticLoopRanges();
  if (llvm::any_of(c.ranges, ShapedType::isDynamic))
    return std::nullopt;
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!out.isProjectedPermutation() || out.getNumResults() < 3)
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  for (int w = 0; w < 2; ++w) {
    AffineMap weights = op.getMatchingIndexingMap(op.getDpsInputOperand(w));
    AffineMap input = op.getMatchingIndexingMap(op.getDpsInputOperand(1 - w));
    std::optional<std::pair<unsigned, int64_t>> f = filterLoop(weights);
    // Plain input maps (a 1x1 convolution) are contractions unless the
    // weights are blocked.
    if (!f ||
        (!f->second &&
         input.isProjectedPermutation(/*allowZeroInResults=*/true)) ||
        f->first == c.pixels || !out.isFunctionOfDim(f->first) ||
        input.isFunctionOfDim(f->first) ||
        !llvm::all_of(input.getResults(), isLinear))
      continue;
    c.filters = f->first;
    c.pixels = pixelLoop(out, input, c.filters, c.ranges);
    c.block = f->second ? f->second : c.ranges[c.filters];
    c.input = op.getDpsInputOperand(1 - w)->getOperandNumber();
    c.weights = op.getDpsInputOperand(w)->getOperandNumber();
    c.windowColumns = windowColumns(input, c.pixels, c.ranges, iterators);
    for (AffineExpr e : input.getResults())
      if (e.isFunctionOfDim(c.pixels))
        c.rowStride = coefficientOf(e, c.pixels, input.getNumDims());
    if (iterators[c.filters] == utils::IteratorType::parallel &&
        iterators[c.pixels] == utils::IteratorType::parallel)
      return c;
  }
  return std::nullopt;
}

/// Pixels from which a row under a window is long (defaultDirectConvTile):
/// the tiles of 4 its rest takes are a small part of it.
constexpr int64_t kLongRow = 64;

/// Accumulators a direct convolution's register tile may keep: 5/8 of the
/// registers. AVX-512: 13 rows of 2 vectors (26 of 32 registers) spilled
/// them, a 3x3 convolution over 13x13 pixels ran 1.0 ms; 8 rows and the 5
/// left over ran 0.35. Under a window whose unrolled columns would not fit
/// beside them, the columns stay a loop (keepsColumnsRolled): AVX2 had kept
/// 8 registers for them, 4 rows of 2 vectors, and ResNet-50's 3x3
/// convolution over 14 x 14 pixels ran 3.13 ms in tiles of 4 + 4 + 4 + 2
/// (2.94 rolled); rolled, 5 + 5 + 4 ran 2.50 (one thread, Zen 3).
static int64_t directConvAccumulators(const HostMachine &machine) {
  return std::max<int64_t>(1, machine.vectorRegisters * 5 / 8);
}

std::pair<int64_t, int64_t> defaultDirectConvTile(const DirectConvLoops &c,
                                                  const HostMachine &machine) {
  int64_t p = c.ranges[c.pixels];
  // Two vectors, or what of them divides the block of filters.
  int64_t filters = fittingFilters(c, machine.tileColumns());
  int64_t vectors = std::max<int64_t>(1, filters / machine.lanes());
  int64_t cap = std::max<int64_t>(1, directConvAccumulators(machine) / vectors);
  // The rows that keep as many accumulators as the matmul's tile of two
  // vectors: a tile of one vector (24 filters, in blocks of 8 on AVX2)
  // takes twice its rows (4 pixels of 8 filters were 4 accumulators, a
  // chain of dependent FMAs: ddddocr_det's 3x3 convolution of 12 channels
  // over 208 x 208 pixels ran at 44 GFLOP/s). Under a window, no more
  // rows than the registers keep; a 1x1 convolution may take them all.
  int64_t wide = machine.tileRows() * 2 / vectors;
  int64_t rows = c.windowColumns > 1 ? std::min(wide, cap) : wide;
  // 56 pixels are 7 tiles of 8, 28 of 7, 27 three of 9, 13 one of 8 and
  // one of 5.
  int64_t pixels = tileRowsFor(p, rows, cap, c.windowColumns > 1);
  // A long row under a window takes the rows the registers keep even where
  // only a smaller tile divides it, the rest in tiles of 4 (tilesOfFour):
  // AVX2's 3x3 convolutions over rows of 128 and 256 pixels ran 4-9%
  // faster in tiles of 5 pixels (10 accumulators) than of 4 at one thread
  // (UNet at two threads: no gain).
  if (c.windowColumns > 1 && vectors >= 2 && pixels < rows && p >= kLongRow)
    pixels = rows;
  // A strided row of as many pixels as the tile's lanes of filters (8 x 8
  // on AVX2) became scalar multiplies: stride-2 3x3 convolutions of 3 and
  // 16 channels to 24 filters ran 4.5-4.9x slower in tiles of 8 pixels
  // than of 7 or 9. One more (the rest peeled) ran as fast as 7 where 7
  // divides the row, and 0.72-0.96x of 4 over rows of 32 and 64 pixels.
  if (c.rowStride > 1 && pixels == filters && pixels > 4)
    pixels = pixels + 1 <= cap ? pixels + 1 : pixels - 1;
  return {filters, pixels};
}

/// Input channels of a chunk (chunkChannels): a power of two, at most 64 (a
/// 3x3 window's weights for 16 filters, 37 KB, and 64 channels of the input
/// stay in L2 while every filter block reads them), at least 16.
constexpr int64_t kMaxChannelChunk = 64;
constexpr int64_t kMinChannelChunk = 16;

/// Chunks of a small input (a few rows of pixels per channel) whose
/// channels for all of a workgroup's pixels fit in L1 (defaultChannelChunk):
/// every filter block's pass then reads them there. At least 128 channels:
/// each tile reads and writes its accumulators transposed once per chunk,
/// and Inception-v1's 832-channel 1x1 convolutions over 7 x 7 pixels (1-6
/// filter blocks per workgroup) ran 11-20% slower in chunks of 64. One
/// thread, Zen 3 (32 KB L1): 1x1 convolutions over 7 x 7 pixels with a
/// residual and ReLU, 512 -> 2048 1.47 -> 1.24 ms in chunks of 128 (none
/// before; 1.34 in 64), 2048 -> 512 1.31 -> 1.22 (64 before; 1.49 in 256).
constexpr int64_t kMaxL1ChannelChunk = 256;
constexpr int64_t kMinL1ChannelChunk = 128;

/// The input channels' loop of direct convolution `op`: the reduction
/// that the weights index and the input reads alone (not a window loop).
static std::optional<unsigned> channelLoop(linalg::GenericOp op,
                                           const DirectConvLoops &c) {
  AffineMap input = op.getMatchingIndexingMap(&op->getOpOperand(c.input));
  auto iterators = op.getIteratorTypesArray();
  for (AffineExpr e : input.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (dim && iterators[dim.getPosition()] == utils::IteratorType::reduction)
      return dim.getPosition();
  }
  return std::nullopt;
}

/// With 16 lanes: the chunk of `channels` input channels (a power of two
/// dividing them, at least kMinChannelChunk) whose weights for a block of
/// filters (`channelBytes` per channel) fit in half of L2, when all of them
/// do not; else 0. Each tile of pixels then reads a chunk's weights from
/// L2, not again from memory: CREPE's 1024 -> 128 convolution of 64 taps
/// (8.4 MB of weights per block of 32 filters, read for each of 16 tiles of
/// pixels) ran at 66 GFLOP/s.
int64_t streamedWeightChunk(int64_t channelBytes, int64_t channels,
                            const HostMachine &machine) {
  int64_t budget = machine.l2Bytes / 2;
  if (channels * channelBytes <= budget)
    return 0;
  for (int64_t chunk = int64_t(llvm::bit_floor(uint64_t(channels)));
       chunk >= kMinChannelChunk; chunk /= 2)
    if (chunk < channels && channels % chunk == 0 &&
        chunk * channelBytes <= budget)
      return chunk;
  return 0;
}

namespace {
bool takesBf16Pairs(linalg::GenericOp op, const DirectConvLoops &c,
                    int64_t filters, const HostMachine &machine);
} // namespace

int64_t defaultChannelChunk(linalg::GenericOp op, const DirectConvLoops &c,
                            int64_t filters, const HostMachine &machine) {
  // With 16 lanes (AVX-512) a chunk costs more than it saves: each tile
  // reads and writes its accumulators transposed once per chunk (2 x 16
  // lanes by 7 or 8 pixels: about 400 shuffles), and a block of 32 filters'
  // weights for 64 channels of a 3x3 window (74 KB) do not stay in L1
  // anyway. One thread, Zen 4 (1 MB L2), whole reduction against the
  // chunks below: UNet's and ResNet-50's 3x3 convolutions 0.86-0.98 of
  // their time in chunks of 64 (chunks of 32 were slower still), ResNet-50's
  // pointwise ones over 7 x 7 pixels 0.79-0.84 of theirs in chunks of 128.
  // Except where a filter block's weights exceed half of L2
  // (streamedWeightChunk).
  std::optional<unsigned> loop = channelLoop(op, c);
  auto input = dyn_cast<ShapedType>(op->getOperand(c.input).getType());
  if (!loop || !input || !input.hasStaticShape())
    return 0;
  int64_t element = input.getElementTypeBitWidth() / 8;
  int64_t steps = 1;
  for (auto [range, kind] : llvm::zip(c.ranges, op.getIteratorTypesArray()))
    if (kind == utils::IteratorType::reduction)
      steps *= range;
  int64_t range = c.ranges[*loop];
  if (range < 1)
    return 0;
  // Weights read as bfloat16 pairs take half the bytes: 512 -> 512 3x3
  // convolutions' blocks (295 KB) stay whole in a 1 MB L2.
  if (machine.lanes() >= 16) {
    int64_t weightElement =
        takesBf16Pairs(op, c, fittingFilters(c, filters), machine) ? 2
                                                                   : element;
    return streamedWeightChunk(filters * steps / range * weightElement, range,
                               machine);
  }
  int64_t channelBytes = input.getNumElements() / range * element;
  for (int64_t chunk = kMaxL1ChannelChunk;
       range * channelBytes > machine.l1Bytes && chunk >= kMinL1ChannelChunk;
       chunk /= 2)
    if (chunk < range && range % chunk == 0 &&
        chunk * channelBytes <= machine.l1Bytes)
      return chunk;
  int64_t bytes = (input.getNumElements() + steps * filters) * element;
  if (2 * bytes <= machine.l2Bytes)
    return 0;
  for (int64_t chunk = kMaxChannelChunk; chunk >= kMinChannelChunk; chunk /= 2)
    if (c.ranges[*loop] % chunk == 0)
      return chunk < c.ranges[*loop] ? chunk : 0;
  return 0;
}

/// `op` with its input channels in chunks of `channels` (dividing them),
/// the chunks' loop outside the register tiles: the op left to tile, and
/// the chunk applied (0: none).
static std::pair<linalg::GenericOp, int64_t>
chunkChannels(RewriterBase &rewriter, linalg::GenericOp op,
              const DirectConvLoops &c, int64_t channels) {
  std::optional<unsigned> loop = channelLoop(op, c);
  if (!loop || channels <= 0 || channels >= c.ranges[*loop] ||
      c.ranges[*loop] % channels)
    return {op, 0};
  // Null only when tiling failed, changing nothing.
  auto inner = dyn_cast_or_null<linalg::GenericOp>(
      chunkLoop(rewriter, op, c.ranges.size(), *loop, channels));
  if (!inner)
    return {op, 0};
  return {inner, channels};
}

std::vector<int64_t> channelChunkChoices(linalg::GenericOp op,
                                         const DirectConvLoops &c) {
  std::vector<int64_t> chunks{0};
  if (std::optional<unsigned> loop = channelLoop(op, c))
    for (int64_t chunk : {16, 32, 64, 128, 256})
      if (chunk < c.ranges[*loop] && c.ranges[*loop] % chunk == 0)
        chunks.push_back(chunk);
  return chunks;
}

namespace {

/// The rest of a row of `range` pixels in tiles of `pixels` by `vectors`
/// vectors of filters that tiles of 4 take instead of a tile of 1-3 pixels
/// (a chain of dependent FMAs): the rest with up to three tiles of the main
/// part, a multiple of 4 (256 in tiles of 5: 48 of 5 and 4 of 4, not 51
/// and one of 1). Only tiles of two vectors or more: 4 pixels of one are
/// 4 accumulators, no faster per pixel than the one pixel they replace.
/// Nullopt when the rest is a tile of 4 or more, or no such rest is left.
std::optional<int64_t> tilesOfFour(int64_t range, int64_t pixels,
                                   int64_t vectors) {
  int64_t rest = range % pixels;
  if (vectors < 2 || pixels <= 4 || rest == 0 || rest >= 4)
    return std::nullopt;
  for (int64_t taken = 1; taken <= 3; ++taken) {
    int64_t left = rest + taken * pixels;
    if (left < range && left % 4 == 0)
      return left;
  }
  return std::nullopt;
}

/// vectorizeDirectConv's tiles, the rest of the pixels peeled.
std::vector<int64_t> vectorizeTiles(RewriterBase &rewriter,
                                    linalg::GenericOp op, int64_t filters,
                                    int64_t pixels,
                                    const HostMachine &machine) {
  std::optional<DirectConvLoops> c = analyzeDirectConv(op);
  if (!c)
    return {};
  // Filters within one block of the weights, dividing the loop.
  filters = fittingFilters(*c, filters);
  // Pixels likewise: the rest is one tile of what is left, or tiles of 4
  // where it would be fewer.
  int64_t range = c->ranges[c->pixels];
  std::optional<int64_t> four = tilesOfFour(
      range, pixels, filters / std::max<int64_t>(1, machine.lanes()));
  if (auto parts = peel(rewriter, op, c->pixels, pixels, four)) {
    int64_t rest = four ? 4 : range % pixels;
    vectorizeTiles(rewriter, parts->second, filters, rest, machine);
    return vectorizeTiles(rewriter, parts->first, filters, pixels, machine);
  }
  if (c->ranges[c->filters] % filters || c->ranges[c->pixels] % pixels)
    return {};
  return tileAndVectorize(rewriter, op, *c, filters, pixels, machine);
}

/// The position of loop `d` among `map`'s results when one of them is that
/// loop alone (and no other reads it).
std::optional<unsigned> plainResult(AffineMap map, unsigned d) {
  std::optional<unsigned> at;
  for (auto [pos, e] : llvm::enumerate(map.getResults())) {
    if (!e.isFunctionOfDim(d))
      continue;
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (at || !dim)
      return std::nullopt;
    at = pos;
  }
  return at;
}

/// Whether direct convolution `op` (its loops `c`, tiles of `filters`)
/// computes in bfloat16 pairs of input channels (--precision=bf16): f32
/// operands of static shapes, an even number of input channels read as
/// plain dims of both operands, and tiles of whole 16-lane vectors. An odd
/// number completed by a zero channel (an RGB stem as 2 pairs) ran
/// YOLO-CSP-n's stem 4.26 -> 3.61 ms but took PP-OCRv4's detector from
/// 0.20 to 0.50 relative L2 against fp32 (its image input in bfloat16):
/// not kept (benchmarks/results/2026-12-06-session39.md).
bool takesBf16Pairs(linalg::GenericOp op, const DirectConvLoops &c,
                    int64_t filters, const HostMachine &machine) {
  if (!machine.bf16Pairs() || machine.lanes() != kDotLanes ||
      filters % kDotLanes != 0 || c.block % filters != 0 ||
      op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return false;
  std::optional<unsigned> channels = channelLoop(op, c);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (!channels || ranges[*channels] % 2 != 0 ||
      ranges[c.filters] % filters != 0)
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type || !type.hasStaticShape() || !type.getElementType().isF32())
      return false;
  }
  for (unsigned operand : {c.input, c.weights})
    if (!plainResult(op.getMatchingIndexingMap(&op->getOpOperand(operand)),
                     *channels))
      return false;
  return true;
}

/// Whether direct convolution `op` (its loops `c`, tiles of `filters`)
/// computes in quads of bytes (VNNI's vpdpbusd): a quantized convolution
/// (IntegerMatmuls.cpp) of unsigned input bytes by signed weight bytes
/// into i32, static shapes, input channels in whole quads read as plain
/// dims of both operands, and tiles of whole 16-lane vectors.
bool takesByteQuads(linalg::GenericOp op, const DirectConvLoops &c,
                    int64_t filters, const HostMachine &machine) {
  if (!machine.hasVnniDot || machine.lanes() != kDotLanes ||
      filters % kDotLanes != 0 || c.block % filters != 0 ||
      op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return false;
  std::optional<unsigned> channels = channelLoop(op, c);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (!channels || ranges[*channels] % 4 != 0 ||
      ranges[c.filters] % filters != 0)
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    unsigned bits = operand.getOperandNumber() < 2 ? 8 : 32;
    if (!type || !type.hasStaticShape() ||
        !type.getElementType().isSignlessInteger(bits))
      return false;
  }
  auto extendedBy = [&](unsigned operand, bool isUnsigned) {
    BlockArgument arg = op.getBlock()->getArgument(operand);
    if (!arg.hasOneUse())
      return false;
    Operation *user = *arg.getUsers().begin();
    return isUnsigned ? isa<arith::ExtUIOp>(user) : isa<arith::ExtSIOp>(user);
  };
  if (!extendedBy(c.input, true) || !extendedBy(c.weights, false))
    return false;
  for (unsigned operand : {c.input, c.weights})
    if (!plainResult(op.getMatchingIndexingMap(&op->getOpOperand(operand)),
                     *channels))
      return false;
  return true;
}

/// A copy of tensor `value` whose dim `dim` (a multiple of `group`) is in
/// groups: [..., D / G, ..., G], element [..., i, ..., p] = value[..., G i
/// + p, ...]; f32 rounded to bfloat16 in pairs, bytes as they are in quads.
Value channelGroupsOf(RewriterBase &rewriter, Location loc, Value value,
                      unsigned dim, int64_t group) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= group;
  shape.push_back(group);
  unsigned rank = shape.size();
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<AffineExpr> source;
  for (unsigned d = 0; d + 1 < rank; ++d)
    source.push_back(d == dim ? group * getAffineDimExpr(d, ctx) +
                                    getAffineDimExpr(rank - 1, ctx)
                              : getAffineDimExpr(d, ctx));
  AffineMap read = AffineMap::get(rank, 0, source, ctx);
  if (group == 2)
    return roundedCopy(rewriter, loc, value, shape, read);
  // Bytes: the copy reads `value` with `dim` split in (D / G, G), a
  // permutation of its loops, which vectorizeGroupCopy takes when the rows
  // are the innermost dim.
  SmallVector<int64_t> split;
  SmallVector<ReassociationIndices> dims;
  SmallVector<AffineExpr> permuted;
  for (unsigned d = 0; d + 1 < rank; ++d) {
    int64_t at = int64_t(split.size());
    if (d == dim) {
      split.append({shape[d], group});
      dims.push_back({at, at + 1});
      permuted.append(
          {getAffineDimExpr(d, ctx), getAffineDimExpr(rank - 1, ctx)});
    } else {
      split.push_back(shape[d]);
      dims.push_back({at});
      permuted.push_back(getAffineDimExpr(d, ctx));
    }
  }
  Value expanded = rewriter.create<tensor::ExpandShapeOp>(
      loc, RankedTensorType::get(split, type.getElementType()), value, dims);
  linalg::GenericOp copy = copyThrough(rewriter, loc, expanded, shape,
                                       AffineMap::get(rank, 0, permuted, ctx),
                                       type.getElementType());
  if (Value groups = vectorizeGroupCopy(rewriter, copy))
    return groups;
  return copy.getResult(0);
}

/// `op` (takesBf16Pairs, or takesByteQuads with `group` 4) reading its
/// input and weights in groups of input channels: its channel loop runs
/// over the groups and a last reduction loop over each group's members,
/// products summed in f32 (bfloat16 pairs) or i32 (byte quads, the body as
/// it was).
linalg::GenericOp groupChannels(RewriterBase &rewriter, linalg::GenericOp op,
                                const DirectConvLoops &c, int64_t group = 2) {
  unsigned channels = *channelLoop(op, c);
  unsigned loops = op.getNumLoops();
  MLIRContext *ctx = rewriter.getContext();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(in);
    unsigned dim = *plainResult(map, channels);
    // A constant weight's groups are computed at compile time.
    Value pairs;
    if (in->getOperandNumber() == c.weights)
      pairs = prepackedChannelPairs(rewriter, in->get(), dim, group);
    inputs.push_back(
        pairs ? pairs : channelGroupsOf(rewriter, loc, in->get(), dim, group));
    SmallVector<AffineExpr> results(map.getResults());
    results.push_back(getAffineDimExpr(loops, ctx));
    maps.push_back(AffineMap::get(loops + 1, 0, results, ctx));
  }
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  maps.push_back(AffineMap::get(loops + 1, 0, out.getResults(), ctx));
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  iterators.push_back(utils::IteratorType::reduction);
  auto sameBody = [&](OpBuilder &b, Location l, ValueRange args) {
    IRMapping map;
    map.map(op.getBlock()->getArguments(), args);
    for (Operation &inner : op.getBlock()->without_terminator())
      b.clone(inner, map);
    b.create<linalg::YieldOp>(
        l, map.lookup(op.getBlock()->getTerminator()->getOperand(0)));
  };
  auto paired =
      group == 2
          ? rewriter.create<linalg::GenericOp>(loc, op.getResultTypes(), inputs,
                                               op.getDpsInits(), maps,
                                               iterators, widenedMultiplyAdd)
          : rewriter.create<linalg::GenericOp>(loc, op.getResultTypes(), inputs,
                                               op.getDpsInits(), maps,
                                               iterators, sameBody);
  rewriter.replaceOp(op, paired.getResults());
  return paired;
}

/// The weights of register tile `tile` (groups of `group`, read in place:
/// its filters and their group last, unit elsewhere) as one vector's worth
/// of groups, filters x group long, filter f's group at group f.
Value weightGroups(RewriterBase &rewriter, linalg::GenericOp tile,
                   unsigned weights, int64_t filters, int64_t group) {
  Value w = tile->getOperand(weights);
  auto type = cast<RankedTensorType>(w.getType());
  int64_t rank = type.getRank();
  Location loc = tile.getLoc();
  rewriter.setInsertionPoint(tile);
  SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes(rank, rewriter.getIndexAttr(1));
  SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
  sizes[rank - 2] = rewriter.getIndexAttr(filters);
  sizes[rank - 1] = rewriter.getIndexAttr(group);
  auto pairsType =
      RankedTensorType::get({filters, group}, type.getElementType());
  Value pairs = rewriter.create<tensor::ExtractSliceOp>(
      loc, pairsType, w, offsets, sizes, strides);
  return rewriter.create<tensor::CollapseShapeOp>(
      loc, pairs, SmallVector<ReassociationIndices>{{0, 1}});
}

/// Register tiles of `filters` x `pixels` of `op` (groupChannels' result,
/// its loops `c`) computed with grouped dot products of `kind` (vdpbf16ps
/// or vpdpbusd, GroupedDots.h), the rest of the pixels peeled as
/// vectorizeTiles does. Returns the tile applied over the convolution's
/// own loops ({} when a tile stayed a linalg op: it then runs as LLVM's
/// loops, in the same arithmetic).
std::vector<int64_t> emitGroupedTiles(RewriterBase &rewriter,
                                      linalg::GenericOp op,
                                      const DirectConvLoops &c, int64_t filters,
                                      int64_t pixels,
                                      DotKind kind = DotKind::Bf16Pairs) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t range = ranges[c.pixels];
  std::optional<int64_t> four = tilesOfFour(range, pixels, filters / kDotLanes);
  if (auto parts = peel(rewriter, op, c.pixels, pixels, four)) {
    int64_t rest = four ? 4 : range % pixels;
    emitGroupedTiles(rewriter, parts->second, c, filters, rest, kind);
    return emitGroupedTiles(rewriter, parts->first, c, filters, pixels, kind);
  }
  if (ranges[c.filters] % filters || ranges[c.pixels] % pixels)
    return {};
  unsigned pair = ranges.size() - 1;
  int64_t group = groupSteps(kind);
  std::vector<int64_t> tile(ranges.size(), 1);
  tile[c.filters] = filters;
  tile[c.pixels] = pixels;
  tile[pair] = group;
  TypedAttr filled = fillValueOf(op.getDpsInits()[0]);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  auto tiled = tileInPlace(rewriter, op, tile, parallelFirst(op));
  if (failed(tiled))
    return {};
  markFilledAccumulators(filled, iterators, *tiled);
  auto t = dyn_cast<linalg::GenericOp>(tiled->tiledOps.back());
  if (!t || failed(readInputInPlace(rewriter, t, c.input)))
    return {};
  readWeightsInPlace(rewriter, t, c.weights, c.filters);
  auto wType = dyn_cast<RankedTensorType>(t->getOperand(c.weights).getType());
  int64_t rank = wType ? wType.getRank() : 0;
  if (rank < 2 || !wType.hasStaticShape() ||
      wType.getDimSize(rank - 2) < filters ||
      wType.getDimSize(rank - 1) != group)
    return {};
  Value b = weightGroups(rewriter, t, c.weights, filters, group);
  Value a = t->getOperand(c.input);
  AffineMap aMap = t.getMatchingIndexingMap(&t->getOpOperand(c.input));
  // The input's bytes are the unsigned ones (takesByteQuads).
  emitDotTile(rewriter, t, kind, a, aMap, b, c.pixels, c.filters, pixels,
              filters, kDotLanes, /*aUnsigned=*/kind == DotKind::Int8Quads);
  tile.pop_back();
  return tile;
}

/// The loops of a direct convolution that AMX blocks take: out[b, f, oy,
/// ox] += in[b, c, oy * sy + ky, ox * sx + kx] * w[f / T, c, ky, kx, f %
/// T] over an input padded before (dilation 1), or a 1-D one (or a
/// pointwise one over flattened pixels), out[b, f, x] += in[b, c, x * sx +
/// kx] * w[f / T, c, kx, f % T] (no row loop). kx only with a window's
/// columns (a 2-D window of kh x 1 has none).
struct AmxConvLoops {
  unsigned batch = 0, filters = 0, pixels = 0, channels = 0;
  std::optional<unsigned> row, windowRow, windowCol;
  int64_t rowStride = 1, colStride = 1;
  int64_t windowRows = 1, windowCols = 1; // kh, kw
};

/// `e` as p * stride + r (loops p parallel, r a reduction, or no r when
/// `reduction` is false): {p, r, stride}.
std::optional<std::tuple<unsigned, std::optional<unsigned>, int64_t>>
stridedSum(AffineExpr e, ArrayRef<utils::IteratorType> iterators,
           bool reduction) {
  std::optional<unsigned> r;
  if (auto add = dyn_cast<AffineBinaryOpExpr>(e);
      reduction && add && add.getKind() == AffineExprKind::Add) {
    AffineExpr lhs = add.getLHS(), rhs = add.getRHS();
    if (!isa<AffineDimExpr>(rhs))
      std::swap(lhs, rhs);
    auto dim = dyn_cast<AffineDimExpr>(rhs);
    if (!dim || iterators[dim.getPosition()] != utils::IteratorType::reduction)
      return std::nullopt;
    r = dim.getPosition();
    e = lhs;
  } else if (reduction) {
    return std::nullopt;
  }
  int64_t stride = 1;
  if (auto mul = dyn_cast<AffineBinaryOpExpr>(e);
      mul && mul.getKind() == AffineExprKind::Mul) {
    auto c = dyn_cast<AffineConstantExpr>(mul.getRHS());
    if (!c || c.getValue() < 1)
      return std::nullopt;
    stride = c.getValue();
    e = mul.getLHS();
  }
  auto dim = dyn_cast<AffineDimExpr>(e);
  if (!dim || iterators[dim.getPosition()] != utils::IteratorType::parallel)
    return std::nullopt;
  return std::make_tuple(dim.getPosition(), r, stride);
}

std::optional<AmxConvLoops> amxConvLoops(linalg::GenericOp op,
                                         const DirectConvLoops &c) {
  AffineMap in = op.getMatchingIndexingMap(&op->getOpOperand(c.input));
  AffineMap w = op.getMatchingIndexingMap(&op->getOpOperand(c.weights));
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  auto iterators = op.getIteratorTypesArray();
  unsigned rank = in.getNumResults();
  bool flat = rank == 3;
  if ((rank != 3 && rank != 4) || out.getNumResults() != rank)
    return std::nullopt;
  auto dim = [](AffineExpr e) -> std::optional<unsigned> {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      return d.getPosition();
    return std::nullopt;
  };
  auto batch = dim(out.getResult(0)), channels = dim(in.getResult(1));
  // A flattened (or 1-D) convolution with or without a window; a 2-D one
  // with or without a window's columns (kh x 1: an RGB stem with its
  // columns folded into channels: PadChannels.cpp's foldColumns).
  auto cols = stridedSum(in.getResult(rank - 1), iterators, true);
  if (!cols)
    cols = stridedSum(in.getResult(rank - 1), iterators, false);
  if (op.getNumLoops() != (flat ? 4 : 6) + unsigned(cols && std::get<1>(*cols)))
    return std::nullopt;
  if (!batch || !channels || !cols || dim(in.getResult(0)) != batch ||
      dim(out.getResult(1)) != c.filters ||
      dim(out.getResult(rank - 1)) != c.pixels ||
      std::get<0>(*cols) != c.pixels ||
      iterators[*channels] != utils::IteratorType::reduction)
    return std::nullopt;
  AmxConvLoops l;
  l.batch = *batch;
  l.filters = c.filters;
  l.pixels = c.pixels;
  l.channels = *channels;
  l.windowCol = std::get<1>(*cols);
  l.colStride = std::get<2>(*cols);
  MLIRContext *ctx = op.getContext();
  auto d = [&](unsigned p) { return getAffineDimExpr(p, ctx); };
  AffineExpr zero = getAffineConstantExpr(0, ctx);
  SmallVector<AffineExpr> blocked{d(l.filters).floorDiv(c.block),
                                  d(l.channels)};
  if (flat) {
    blocked.push_back(l.windowCol ? d(*l.windowCol) : zero);
    if (l.windowCol)
      l.windowCols = c.ranges[*l.windowCol];
  } else {
    auto rows = stridedSum(in.getResult(2), iterators, true);
    if (!rows || dim(out.getResult(2)) != std::get<0>(*rows))
      return std::nullopt;
    l.row = std::get<0>(*rows);
    l.windowRow = std::get<1>(*rows);
    l.rowStride = std::get<2>(*rows);
    l.windowRows = c.ranges[*l.windowRow];
    l.windowCols = l.windowCol ? c.ranges[*l.windowCol] : 1;
    blocked.append({d(*l.windowRow), l.windowCol ? d(*l.windowCol) : zero});
  }
  blocked.push_back(d(l.filters) % c.block);
  if (w != AffineMap::get(op.getNumLoops(), 0, blocked, ctx))
    return std::nullopt;
  return l;
}

/// Pixels of one AMX block of a row: two tiles of 16 at most.
constexpr int64_t kAmxBlockPixels = 32;
/// Tiles of fewer pixels than this waste too much of each tile product.
constexpr int64_t kMinAmxTilePixels = 4;

/// The pixels of an AMX block over a row of `range`: a divisor of it (every
/// block of a kernel has tiles of one shape: LLVM configures a tile
/// register's shape once per function, and blocks of two shapes ran out of
/// tile registers or, spilled, computed wrong sums), in one tile up to 16
/// or two equal ones up to kAmxBlockPixels, the widest tiles first, then
/// the most pixels: 56 as 28 (tiles of 14), 80 as 16, 7 as 7.
int64_t amxBlockPixels(int64_t range) {
  int64_t best = 0, bestWidth = 0;
  for (int64_t p = 1; p <= std::min(range, kAmxBlockPixels); ++p) {
    if (range % p != 0 || (p > kAmxTileRows && p % 2 != 0))
      continue;
    int64_t width = p > kAmxTileRows ? p / 2 : p;
    if (width >= bestWidth) {
      best = p;
      bestWidth = width;
    }
  }
  return bestWidth >= kMinAmxTilePixels ? best : 0;
}

/// A bfloat16 copy of f32 input `value` ([N, C, H, W], or [N, C, W]) in
/// channel pairs and phases of the row's stride `s`: [N, C / 2, H, s, W /
/// s, 2] (H 1 for a flattened input), element [n, c, y, q, x, p] =
/// value[n, 2 c + p, y, s x + q]. A row of pixels a tile reads is then
/// contiguous whatever the stride.
Value amxInputPairs(RewriterBase &rewriter, Location loc, Value value,
                    int64_t s) {
  auto type = cast<RankedTensorType>(value.getType());
  ArrayRef<int64_t> v = type.getShape();
  bool flat = v.size() == 3;
  int64_t height = flat ? 1 : v[2], width = v.back();
  MLIRContext *ctx = rewriter.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> read{d(0), 2 * d(1) + d(5)};
  if (!flat)
    read.push_back(d(2));
  read.push_back(s * d(4) + d(3));
  Value copy = roundedCopy(rewriter, loc, value,
                           {v[0], v[1] / 2, height, s, width / s, 2},
                           AffineMap::get(6, 0, read, ctx));
  if (Value rows =
          vectorizePairCopy(rewriter, copy.getDefiningOp<linalg::GenericOp>()))
    return rows;
  return copy;
}

/// Whether input `value`'s rows are a multiple of the stride `s`, or it is
/// a slice whose source has the pixels up to the next multiple (a stride-2
/// window over 28 pixels reads 57 of a padded row of 58).
bool widensRows(Value value, int64_t s) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t width = type.getShape().back();
  if (width % s == 0)
    return true;
  auto slice = value.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || !slice.hasUnitStride())
    return false;
  std::optional<int64_t> offset =
      getConstantIntValue(slice.getMixedOffsets().back());
  return offset && *offset + int64_t(llvm::alignTo(width, s)) <=
                       slice.getSourceType().getShape().back();
}

/// Input `value` with rows of a multiple of the stride `s` (widensRows):
/// itself, or its slice widened (the pixels added are never read); null
/// when it cannot be.
Value widenedRows(RewriterBase &rewriter, Value value, int64_t s) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rank = type.getRank(), width = type.getShape().back();
  if (!widensRows(value, s))
    return {};
  if (width % s == 0)
    return value;
  auto slice = value.getDefiningOp<tensor::ExtractSliceOp>();
  int64_t wide = llvm::alignTo(width, s);
  SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
  sizes.back() = rewriter.getIndexAttr(wide);
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = wide;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(slice);
  return rewriter.create<tensor::ExtractSliceOp>(
      slice.getLoc(), RankedTensorType::get(shape, type.getElementType()),
      slice.getSource(), slice.getMixedOffsets(), sizes,
      SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(1)));
}

/// The channel pairs of the chunks an AMX convolution's workgroup sums
/// over one at a time (of `pairs`; its blocks of `filters`): as many as
/// keep a block's weights of a chunk, kh x kw x filters x 2 pairs x 2
/// bytes, within 3/4 of L1 while its row loop sweeps the output rows (a
/// divisor of `pairs` in whole tile steps; all of them when they fit). A 3x3
/// convolution of 256 channels over 14 x 14 streamed its 147 KiB of weights
/// from L2 for every row: 0.356 -> 0.341 ms in chunks (128 channels 0.186
/// -> 0.165), still short of 64 channels' 1050 GFLOP/s until the weights'
/// rows were padded (amxWeightRowPad).
int64_t amxChannelPairs(const AmxConvLoops &l, int64_t pairs, int64_t filters,
                        const HostMachine &machine) {
  int64_t perPair = l.windowRows * l.windowCols * filters * 2 * 2;
  int64_t step = kAmxSteps / 2;
  int64_t fit = std::max<int64_t>(step, machine.l1Bytes * 3 / 4 / perPair);
  for (int64_t chunk = fit / step * step; chunk > step; chunk -= step)
    if (pairs % chunk == 0)
      return chunk;
  return std::min(pairs, step);
}

/// Zero channels after each filter's row of an AMX convolution's weights
/// ([kh, kw, F, C]): 32 where the blocks read C in chunks (amxChannelPairs)
/// and a row is a multiple of 128 bytes, else 0. A chunk's 128 bytes of
/// each row then lie 2 C bytes apart and map to chunk / C of L1's sets (a
/// quarter for 256 channels), so its weights, sized to fit L1, did not:
/// 3x3 convolutions of 128, 256 and 384 channels over 14 x 14 ran at
/// 670-740 GFLOP/s, those of 160, 192 and 320 at 970-1030
/// (benchmarks/results/2026-12-07-session43.md). With rows of 2 C + 64
/// bytes, an odd count of cache lines, the chunk's rows cover every set.
int64_t amxWeightRowPad(const AmxConvLoops &l, int64_t channels,
                        int64_t filters, const HostMachine &machine) {
  if (channels % 64 != 0 ||
      amxChannelPairs(l, channels / 2, filters, machine) >= channels / 2)
    return 0;
  return 32;
}

/// `op` (amxConvLoops `l`) reading amxInputPairs of its input and the
/// weights as [kh, kw, F, C / 2, 2] in bfloat16 (permuted at compile
/// time, rows padded as amxWeightRowPad says for blocks of `filters`), a
/// last loop over each pair; null, changing nothing, when the weights are
/// no constant or the row's stride does not divide the input.
linalg::GenericOp amxConvOperands(RewriterBase &rewriter, linalg::GenericOp op,
                                  const DirectConvLoops &c,
                                  const AmxConvLoops &l, int64_t filters,
                                  const HostMachine &machine) {
  Value input = widenedRows(rewriter, op->getOperand(c.input), l.colStride);
  if (!input)
    return {};
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  // [F / T, C, (kh, kw | 1), T] -> [(kh, kw | 1), F / T, T, C]
  SmallVector<int64_t> order{2, 3, 0, 4, 1};
  if (!l.row)
    order = {2, 0, 3, 1};
  int64_t pad = amxWeightRowPad(l, c.ranges[l.channels], filters, machine);
  Value weights =
      prepackedPermutation(rewriter, op->getOperand(c.weights), order, pad);
  if (!weights)
    return {};
  // -> [kh, kw, F, C / 2, 2]
  auto wType = cast<RankedTensorType>(weights.getType());
  ArrayRef<int64_t> ws = wType.getShape();
  int64_t f = ws[ws.size() - 3] * ws[ws.size() - 2], channels = ws.back();
  Type bf16 = rewriter.getBF16Type();
  Value merged = rewriter.create<tensor::CollapseShapeOp>(
      loc,
      RankedTensorType::get({l.row ? ws[0] * ws[1] : ws[0], f, channels}, bf16),
      weights,
      l.row ? SmallVector<ReassociationIndices>{{0, 1}, {2, 3}, {4}}
            : SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}});
  Value w5 = rewriter.create<tensor::ExpandShapeOp>(
      loc,
      RankedTensorType::get({l.windowRows, l.windowCols, f, channels / 2, 2},
                            bf16),
      merged, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3, 4}});
  Value pairs = amxInputPairs(rewriter, loc, input, l.colStride);
  MLIRContext *ctx = rewriter.getContext();
  unsigned loops = op.getNumLoops();
  auto d = [&](unsigned p) { return getAffineDimExpr(p, ctx); };
  AffineExpr zero = getAffineConstantExpr(0, ctx), p = d(loops);
  AffineMap in = op.getMatchingIndexingMap(&op->getOpOperand(c.input));
  AffineExpr x = d(l.pixels), phase = zero;
  if (l.windowCol) {
    x = x + d(*l.windowCol).floorDiv(l.colStride);
    phase = d(*l.windowCol) % l.colStride;
  }
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  SmallVector<AffineMap> maps{
      AffineMap::get(loops + 1, 0,
                     {d(l.batch), d(l.channels), l.row ? in.getResult(2) : zero,
                      phase, x, p},
                     ctx),
      AffineMap::get(loops + 1, 0,
                     {l.windowRow ? d(*l.windowRow) : zero,
                      l.windowCol ? d(*l.windowCol) : zero, d(l.filters),
                      d(l.channels), p},
                     ctx),
      AffineMap::get(loops + 1, 0, out.getResults(), ctx)};
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  iterators.push_back(utils::IteratorType::reduction);
  auto paired = rewriter.create<linalg::GenericOp>(
      loc, op.getResultTypes(), ValueRange{pairs, w5}, op.getDpsInits(), maps,
      iterators, widenedMultiplyAdd);
  rewriter.replaceOp(op, paired.getResults());
  return paired;
}

/// Tiles `op` (amxConvOperands' result) into blocks of `filters` x
/// amxBlockPixels pixels of one output row and replaces each by its marker
/// (AmxTiles.h).
/// Returns the block applied over the convolution's loops.
std::vector<int64_t> emitAmxConvBlocks(RewriterBase &rewriter,
                                       linalg::GenericOp op,
                                       const AmxConvLoops &l, int64_t filters,
                                       const HostMachine &machine) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t pixels = amxBlockPixels(ranges[l.pixels]);
  int64_t chunk = amxChannelPairs(l, ranges[l.channels], filters, machine);
  if (chunk < ranges[l.channels]) {
    auto inner = dyn_cast_or_null<linalg::GenericOp>(
        chunkLoop(rewriter, op, ranges.size(), l.channels, chunk));
    if (!inner)
      return {};
    op = inner;
  }
  std::vector<int64_t> tile(ranges.size(), 0);
  tile[l.batch] = 1;
  if (l.row)
    tile[*l.row] = 1;
  tile[l.filters] = filters;
  tile[l.pixels] = pixels;
  auto tiled = tileInPlace(rewriter, op, tile, parallelFirst(op));
  if (failed(tiled))
    return {};
  auto block = cast<linalg::GenericOp>(tiled->tiledOps.back());
  auto slice = block.getDpsInputOperand(0)
                   ->get()
                   .getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice)
    return {};
  // The block's slab of the pairs [1, C / 2, kh, s, X, 2] with every phase
  // (tiling sizes the phase, kx mod s, from its ends only: 1 of 2 for kw 3).
  Location loc = block.getLoc();
  rewriter.setInsertionPoint(block);
  SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
  SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
  Value pairs = slice.getSource();
  // Within a chunk of the channels, the slice is of the chunk's slice
  // (whose phases are sized likewise): the slab is taken of the pairs.
  if (auto chunk = pairs.getDefiningOp<tensor::ExtractSliceOp>();
      chunk && chunk.hasUnitStride() &&
      chunk.getSourceType().getRank() == chunk.getType().getRank()) {
    for (auto [offset, outer] : llvm::zip(offsets, chunk.getMixedOffsets()))
      offset = addOffsets(rewriter, loc, outer, offset);
    pairs = chunk.getSource();
  }
  auto pairsType = cast<RankedTensorType>(pairs.getType());
  offsets[3] = rewriter.getIndexAttr(0);
  sizes[3] = rewriter.getIndexAttr(pairsType.getDimSize(3));
  SmallVector<int64_t> shape;
  for (OpFoldResult size : ArrayRef(sizes).drop_front())
    shape.push_back(*getConstantIntValue(size));
  Value slab = rewriter.create<tensor::ExtractSliceOp>(
      loc, RankedTensorType::get(shape, pairsType.getElementType()), pairs,
      offsets, sizes, SmallVector<OpFoldResult>(6, rewriter.getIndexAttr(1)));
  // (The block stays a correct loop nest should the shapes not match.)
  if (buildAmxConvBlock(rewriter, block, block.getDpsInputOperand(1)->get(),
                        slab, l.colStride) &&
      !tiled->loops.empty()) {
    if (zeroInitBlocks(rewriter, tiled->loops.front()))
      fuseEpilogue(rewriter, tiled->loops.front(), /*rowDim=*/1);
  }
  tile.pop_back();
  return tile;
}

} // namespace

bool takesAmxConv(linalg::GenericOp op, const HostMachine &machine) {
  std::optional<DirectConvLoops> c = analyzeDirectConv(op);
  if (!machine.amx() || !c || op.getNumDpsInputs() != 2)
    return false;
  std::optional<AmxConvLoops> l = amxConvLoops(op, *c);
  if (!l || c->block % kAmxTileRows != 0 ||
      c->ranges[l->filters] % kAmxTileRows != 0 ||
      c->ranges[l->channels] % kAmxSteps != 0 ||
      !amxBlockPixels(c->ranges[l->pixels]))
    return false;
  if (!widensRows(op->getOperand(c->input), l->colStride))
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type || !type.hasStaticShape() || !type.getElementType().isF32())
      return false;
  }
  return true;
}

std::vector<int64_t> vectorizeDirectConv(RewriterBase &rewriter,
                                         linalg::GenericOp op, int64_t filters,
                                         int64_t pixels,
                                         const HostMachine &machine,
                                         int64_t &channels, bool amx) {
  std::optional<DirectConvLoops> c = analyzeDirectConv(op);
  if (!c)
    return {};
  std::tie(op, channels) = chunkChannels(rewriter, op, *c, channels);
  if (!op)
    return {};
  if (amx && takesAmxConv(op, machine)) {
    AmxConvLoops l = *amxConvLoops(op, *c);
    int64_t blockFilters = c->ranges[l.filters] % 32 == 0 ? 32 : kAmxTileRows;
    if (linalg::GenericOp paired =
            amxConvOperands(rewriter, op, *c, l, blockFilters, machine))
      return emitAmxConvBlocks(rewriter, paired, l, blockFilters, machine);
  }
  if (takesBf16Pairs(op, *c, fittingFilters(*c, filters), machine))
    return emitGroupedTiles(rewriter, groupChannels(rewriter, op, *c), *c,
                            fittingFilters(*c, filters), pixels);
  if (takesByteQuads(op, *c, fittingFilters(*c, filters), machine))
    return emitGroupedTiles(rewriter, groupChannels(rewriter, op, *c, 4), *c,
                            fittingFilters(*c, filters), pixels,
                            DotKind::Int8Quads);
  return vectorizeTiles(rewriter, op, filters, pixels, machine);
}

std::optional<ChannelConvLoops> analyzeChannelConv(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 1 ||
      !(isMultiplyAccumulate(*op.getBlock()) ||
        isWindowReduction(*op.getBlock())) ||
      analyzeDirectConv(op))
    return std::nullopt;
  ChannelConvLoops c;
  c.ranges = op.getStaticLoopRanges();
  if (llvm::any_of(c.ranges, ShapedType::isDynamic))
    return std::nullopt;
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!out.isProjectedPermutation() || out.getNumResults() < 2)
    return std::nullopt;
  c.columns = cast<AffineDimExpr>(out.getResults().back()).getPosition();
  auto iterators = op.getIteratorTypesArray();
  for (int w = 0; w < 2; ++w) {
    AffineMap weights = op.getMatchingIndexingMap(op.getDpsInputOperand(w));
    AffineMap input = op.getMatchingIndexingMap(op.getDpsInputOperand(1 - w));
    if (!weights.isProjectedPermutation(/*allowZeroInResults=*/true) ||
        weights.isFunctionOfDim(c.columns) ||
        input.isProjectedPermutation(/*allowZeroInResults=*/true) ||
        !input.isFunctionOfDim(c.columns) ||
        !llvm::all_of(input.getResults(), isLinear))
      continue;
    // Pixels of a row at most kMaxRowStride apart: a strided row is read
    // whole and its pixels picked by a shuffle (readRowContiguously).
    if (llvm::any_of(input.getResults(), [&](AffineExpr e) {
          if (!e.isFunctionOfDim(c.columns))
            return false;
          int64_t s = coefficientOf(e, c.columns, input.getNumDims());
          return s < 1 || s > kMaxRowStride;
        }))
      continue;
    c.input = op.getDpsInputOperand(1 - w)->getOperandNumber();
    c.weights = op.getDpsInputOperand(w)->getOperandNumber();
    AffineExpr before = out.getResults()[out.getNumResults() - 2];
    unsigned r = cast<AffineDimExpr>(before).getPosition();
    if (c.ranges[r] > 1 && input.isFunctionOfDim(r) &&
        !weights.isFunctionOfDim(r))
      c.rows = r;
    c.filters = filterLoopOf(op, c, weights, input);
    if (iterators[c.columns] == utils::IteratorType::parallel)
      return c;
  }
  return std::nullopt;
}

ChannelConvTile defaultChannelConvTile(const ChannelConvLoops &c,
                                       const HostMachine &machine) {
  ChannelConvTile tile;
  // A row of up to one vector, else vectors with the rest peeled.
  tile.columns = std::min(c.ranges[c.columns], machine.lanes());
  int64_t rows = c.rows ? c.ranges[*c.rows] : 1;
  // Rows x filters accumulators, beside an input vector and the filters'
  // broadcasts: with filters at most 5/8 of the registers, as direct
  // convolutions keep (LLVM keeps the unrolled steps' values live).
  int64_t cap = std::min<int64_t>(machine.vectorRegisters - 2, 8);
  int64_t accumulators = machine.vectorRegisters * 5 / 8;
  // Filters: each input vector a step loads serves all of them (one
  // broadcast weight each). Four that divide them where at least 4 rows
  // of them fit (AVX-512), else two.
  if (c.filters)
    for (int64_t f : {4, 2})
      if (c.ranges[*c.filters] % f == 0 && accumulators / f >= 4) {
        tile.filters = f;
        cap = std::min(cap, accumulators / f);
        break;
      }
  tile.rows = tileRowsFor(rows, cap, cap);
  return tile;
}

std::vector<int64_t> vectorizeChannelConv(RewriterBase &rewriter,
                                          linalg::GenericOp op,
                                          ChannelConvTile tile) {
  std::optional<ChannelConvLoops> c = analyzeChannelConv(op);
  if (!c)
    return {};
  // At most each loop (a border of a padded input is a few pixels).
  auto fit = [&](std::optional<unsigned> loop, int64_t size) {
    return loop ? std::clamp<int64_t>(size, 1, c->ranges[*loop]) : 1;
  };
  tile.columns = fit(c->columns, tile.columns);
  tile.rows = fit(c->rows, tile.rows);
  tile.filters = fit(c->filters, tile.filters);
  if (tile.columns < 2)
    return {};
  // Columns, then rows, then filters that do not divide their loop: the
  // rest is one tile of what is left.
  auto peelLoop = [&](std::optional<unsigned> loop,
                      int64_t ChannelConvTile::*size) {
    std::optional<std::pair<linalg::GenericOp, linalg::GenericOp>> parts;
    if (loop)
      parts = peel(rewriter, op, *loop, tile.*size);
    if (!parts)
      return std::optional<std::vector<int64_t>>();
    ChannelConvTile rest = tile;
    rest.*size = c->ranges[*loop] % (tile.*size);
    vectorizeChannelConv(rewriter, parts->second, rest);
    return std::optional(vectorizeChannelConv(rewriter, parts->first, tile));
  };
  if (auto done = peelLoop(c->columns, &ChannelConvTile::columns))
    return *done;
  if (auto done = peelLoop(c->rows, &ChannelConvTile::rows))
    return *done;
  if (auto done = peelLoop(c->filters, &ChannelConvTile::filters))
    return *done;
  if (c->ranges[c->columns] % tile.columns ||
      (c->rows && c->ranges[*c->rows] % tile.rows) ||
      (c->filters && c->ranges[*c->filters] % tile.filters))
    return {};
  return tileChannelConv(rewriter, op, *c, tile);
}

} // namespace ign::host
