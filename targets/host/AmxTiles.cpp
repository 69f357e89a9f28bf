//===- AmxTiles.cpp - contraction blocks on AMX tiles ---------------------===//

#include "AmxTiles.h"
#include "GroupedDots.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/TilingInterface.h"

using namespace mlir;

namespace ign::host {

/// Reduction steps (tdpbf16ps of each tile pair) one iteration of a
/// block's loop unrolls at most: its C tiles are loaded before and stored
/// after them (MLIR 19's AMX tiles cannot cross a loop's iterations), 8
/// tile transfers of 1 KiB per 4 x 32 tile products.
constexpr int64_t kMaxUnrolledSteps = 32;

bool isAmxBlock(int64_t rows, int64_t cols) {
  auto fits = [](int64_t v) { return v == 16 || v == 32; };
  return fits(rows) && fits(cols);
}

bool buildAmxBlock(RewriterBase &rewriter, linalg::GenericOp tile, Value a,
                   Value bPairs) {
  auto aType = dyn_cast<RankedTensorType>(a.getType());
  auto bType = dyn_cast<RankedTensorType>(bPairs.getType());
  if (tile.getNumDpsInits() != 1 || tile->getNumResults() != 1)
    return false;
  Value init = tile.getDpsInitOperand(0)->get();
  auto outType = dyn_cast<RankedTensorType>(init.getType());
  if (!aType || !bType || !outType || aType.getRank() != 2 ||
      bType.getRank() != 2 || outType.getRank() < 2 ||
      !outType.hasStaticShape() || !aType.hasStaticShape() ||
      !bType.hasStaticShape() || !aType.getElementType().isBF16() ||
      !bType.getElementType().isBF16() || !outType.getElementType().isF32())
    return false;
  int64_t rank = outType.getRank();
  int64_t rows = aType.getDimSize(0), steps = aType.getDimSize(1);
  int64_t cols = bType.getDimSize(1) / 2;
  // A rest of rows or columns short of a tile: A or B padded to one, C a
  // scratch tile.
  int64_t outRows = outType.getDimSize(rank - 2);
  int64_t outCols = outType.getDimSize(rank - 1);
  bool scratch = (outRows < rows && rows == kAmxTileRows) ||
                 (outCols < cols && cols == kAmxTileRows);
  if (!isAmxBlock(rows, cols) ||
      ((outRows != rows || outCols != cols) && !scratch) || outRows > rows ||
      outCols > cols || steps % kAmxSteps != 0 ||
      bType.getDimSize(0) != steps / 2 || bType.getDimSize(1) % 2 != 0)
    return false;
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (outType.getDimSize(d) != 1)
      return false;

  Location loc = tile.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(tile);
  Type bf16 = rewriter.getBF16Type(), f32 = rewriter.getF32Type();
  // Pairs as their own dim, so that every loop indexes some dim alone (as
  // linalg requires): A [rows, K / 2, 2], B [K / 2, cols, 2].
  Value a3 = rewriter.create<tensor::ExpandShapeOp>(
      loc, RankedTensorType::get({rows, steps / 2, 2}, bf16), a,
      SmallVector<ReassociationIndices>{{0}, {1, 2}});
  Value b3 = rewriter.create<tensor::ExpandShapeOp>(
      loc, RankedTensorType::get({steps / 2, cols, 2}, bf16), bPairs,
      SmallVector<ReassociationIndices>{{0}, {1, 2}});
  SmallVector<OpFoldResult> zeros(rank, rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> ones(rank, rewriter.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes;
  for (int64_t s : outType.getShape())
    sizes.push_back(rewriter.getIndexAttr(s));
  auto blockType = RankedTensorType::get({rows, cols}, f32);
  auto outBlockType = RankedTensorType::get({outRows, outCols}, f32);
  Value block = rewriter.create<tensor::ExtractSliceOp>(loc, outBlockType, init,
                                                        zeros, sizes, ones);
  SmallVector<OpFoldResult> origin(2, rewriter.getIndexAttr(0)),
      units(2, rewriter.getIndexAttr(1)),
      outSizes{rewriter.getIndexAttr(outRows), rewriter.getIndexAttr(outCols)};
  if (scratch)
    block = rewriter.create<tensor::InsertSliceOp>(
        loc, block,
        rewriter.create<tensor::EmptyOp>(loc, blockType.getShape(), f32),
        origin, outSizes, units);
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps{AffineMap::get(4, 0, {d(0), d(2), d(3)}, ctx),
                              AffineMap::get(4, 0, {d(2), d(1), d(3)}, ctx),
                              AffineMap::get(4, 0, {d(0), d(1)}, ctx)};
  SmallVector<utils::IteratorType> iterators{
      utils::IteratorType::parallel, utils::IteratorType::parallel,
      utils::IteratorType::reduction, utils::IteratorType::reduction};
  auto marker = rewriter.create<linalg::GenericOp>(
      loc, blockType, ValueRange{a3, b3}, ValueRange{block}, maps, iterators,
      widenedMultiplyAdd);
  marker->setAttr(kAmxBlockAttr, rewriter.getUnitAttr());
  Value computed = marker.getResult(0);
  if (scratch)
    computed = rewriter.create<tensor::ExtractSliceOp>(
        loc, outBlockType, computed, origin, outSizes, units);
  Value result = rewriter.create<tensor::InsertSliceOp>(loc, computed, init,
                                                        zeros, sizes, ones);
  rewriter.replaceOp(tile, result);
  return true;
}

/// `v` [1, a, (1,) b] (a block's output) as [a, b].
static Value blockOfRows(RewriterBase &rewriter, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t s : type.getShape())
    sizes.push_back(rewriter.getIndexAttr(s));
  return rewriter.create<tensor::ExtractSliceOp>(
      loc,
      RankedTensorType::get({type.getDimSize(1), type.getDimSize(rank - 1)},
                            type.getElementType()),
      v, SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(0)), sizes,
      SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(1)));
}

bool buildAmxConvBlock(RewriterBase &rewriter, linalg::GenericOp tile,
                       Value weights, Value input, int64_t stride) {
  auto wType = dyn_cast<RankedTensorType>(weights.getType());
  auto inType = dyn_cast<RankedTensorType>(input.getType());
  if (tile.getNumDpsInits() != 1 || tile->getNumResults() != 1 || stride < 1)
    return false;
  Value init = tile.getDpsInitOperand(0)->get();
  auto outType = dyn_cast<RankedTensorType>(init.getType());
  if (!wType || !inType || !outType || wType.getRank() != 5 ||
      inType.getRank() != 5 || outType.getRank() < 3 || outType.getRank() > 4 ||
      !wType.hasStaticShape() || !inType.hasStaticShape() ||
      !outType.hasStaticShape() || !wType.getElementType().isBF16() ||
      !inType.getElementType().isBF16() || !outType.getElementType().isF32())
    return false;
  int64_t rank = outType.getRank();
  int64_t kh = wType.getDimSize(0), kw = wType.getDimSize(1);
  int64_t filters = wType.getDimSize(2), pairs = wType.getDimSize(3);
  int64_t pixels = outType.getDimSize(rank - 1);
  if ((filters != 16 && filters != 32) || pixels < 1 || pixels > 32 ||
      (pixels > kAmxTileRows && pixels % 2 != 0) ||
      (2 * pairs) % kAmxSteps != 0 || wType.getDimSize(4) != 2 ||
      outType.getDimSize(0) != 1 || outType.getDimSize(1) != filters ||
      (rank == 4 && outType.getDimSize(2) != 1) ||
      inType.getDimSize(0) != pairs || inType.getDimSize(1) != kh ||
      inType.getDimSize(2) < std::min(stride, kw) ||
      inType.getDimSize(3) < pixels + (kw - 1) / stride ||
      inType.getDimSize(4) != 2)
    return false;

  Location loc = tile.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(tile);
  Value block = blockOfRows(rewriter, loc, init);
  // Loops (f, x, c, ky, kx, p).
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps{
      AffineMap::get(6, 0, {d(3), d(4), d(0), d(2), d(5)}, ctx),
      AffineMap::get(
          6, 0, {d(2), d(3), d(4) % stride, d(1) + d(4).floorDiv(stride), d(5)},
          ctx),
      AffineMap::get(6, 0, {d(0), d(1)}, ctx)};
  SmallVector<utils::IteratorType> iterators(6, utils::IteratorType::reduction);
  iterators[0] = iterators[1] = utils::IteratorType::parallel;
  auto marker = rewriter.create<linalg::GenericOp>(
      loc, block.getType(), ValueRange{weights, input}, ValueRange{block}, maps,
      iterators, widenedMultiplyAdd);
  marker->setAttr(kAmxConvAttr, rewriter.getI64IntegerAttr(stride));
  SmallVector<OpFoldResult> sizes;
  for (int64_t s : outType.getShape())
    sizes.push_back(rewriter.getIndexAttr(s));
  Value result = rewriter.create<tensor::InsertSliceOp>(
      loc, marker.getResult(0), init,
      SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(0)), sizes,
      SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(1)));
  rewriter.replaceOp(tile, result);
  return true;
}

namespace {

/// The elementwise consumer of loops `outer` that fuseEpilogue moves into
/// them, and its operand reading their result: the loops' only user, of
/// their result's shape, reading it and writing through identity maps,
/// calling no math function.
std::pair<linalg::GenericOp, OpOperand *> epilogueOf(scf::ForOp outer) {
  if (outer->getNumResults() != 1 || !outer->getResult(0).hasOneUse())
    return {};
  Value result = outer->getResult(0);
  auto consumer = dyn_cast<linalg::GenericOp>(*result.getUsers().begin());
  if (!consumer || consumer.getNumReductionLoops() != 0 ||
      consumer.getNumDpsInits() != 1 || consumer->getNumResults() != 1 ||
      consumer->getResult(0).getType() != result.getType() ||
      consumer->getBlock() != outer->getBlock() ||
      consumer.getDpsInitOperand(0)->get() == result ||
      !consumer.getMatchingIndexingMap(consumer.getDpsInitOperand(0))
           .isIdentity())
    return {};
  OpOperand *read = nullptr;
  for (OpOperand *in : consumer.getDpsInputOperands())
    if (in->get() == result) {
      if (read)
        return {};
      read = in;
    }
  if (!read || !consumer.getMatchingIndexingMap(read).isIdentity())
    return {};
  // A math function (GELU's erf, SiLU's exp) stays a pass of its own: its
  // polynomial ran slower per block (ConvNeXt's 96 -> 384 matmul with GELU
  // 1.33 -> 1.49 ms; ConvNeXt 40.6 -> 41.1 ms, YOLO-CSP-n 22.8 -> 23.1).
  if (llvm::any_of(consumer.getBody()->getOperations(), [](Operation &o) {
        return isa<math::MathDialect>(o.getDialect());
      }))
    return {};
  return {consumer, read};
}

/// Whether the rows of `output` along dim `rowDim` (a convolution's
/// filters, a matmul's rows; through its slices: the kernel's whole output)
/// lie a multiple of 4 KiB apart (planes of 32 x 32 pixels and more by
/// powers of two): a block's 16-32 rows then map to one L1 set.
bool rowsShareL1Set(Value output, unsigned rowDim) {
  while (auto slice = output.getDefiningOp<tensor::ExtractSliceOp>())
    output = slice.getSource();
  int64_t plane = 4;
  for (int64_t d : cast<RankedTensorType>(output.getType())
                       .getShape()
                       .drop_front(rowDim + 1))
    plane *= d;
  return plane % 4096 == 0;
}

} // namespace

bool fuseEpilogue(RewriterBase &rewriter, Operation *loops, unsigned rowDim) {
  auto outer = dyn_cast_or_null<scf::ForOp>(loops);
  if (!outer)
    return false;
  SmallVector<linalg::GenericOp> markers;
  outer->walk([&](linalg::GenericOp g) {
    if (g->hasAttr(kAmxBlockAttr) || g->hasAttr(kAmxConvAttr))
      markers.push_back(g);
  });
  if (markers.size() != 1)
    return false;
  linalg::GenericOp marker = markers.front();
  auto [consumer, read] = epilogueOf(outer);
  if (!consumer || !marker->hasAttr(kAmxZeroInitAttr) ||
      !marker->getResult(0).hasOneUse())
    return false;
  // The block's value and where the innermost loop stores it.
  auto inserted =
      dyn_cast<tensor::InsertSliceOp>(*marker->getResult(0).getUsers().begin());
  if (!inserted || !inserted.getResult().hasOneUse())
    return false;
  Value block = inserted.getResult();
  auto store = dyn_cast<tensor::InsertSliceOp>(*block.getUsers().begin());
  auto blockType = cast<RankedTensorType>(block.getType());
  auto tileType = cast<RankedTensorType>(marker->getResult(0).getType());
  // (A matmul's block is the tile; a convolution's has unit dims around.)
  std::optional<SmallVector<ReassociationIndices>> expansion =
      tileType == blockType
          ? std::nullopt
          : getReassociationIndicesForReshape(tileType, blockType);
  if (!store || store.getType() != outer->getResult(0).getType() ||
      blockType != store.getSourceType() ||
      (tileType != blockType && !expansion))
    return false;
  // The consumer's operands must be there before the loops: the loops move
  // down to it (nothing between reads their result).
  rewriter.moveOpBefore(outer, consumer);
  rewriter.setInsertionPoint(store);
  auto tiled = cast<TilingInterface>(consumer.getOperation())
                   .getTiledImplementation(rewriter, store.getMixedOffsets(),
                                           store.getMixedSizes());
  if (failed(tiled) || tiled->tiledOps.size() != 1)
    return false;
  auto epilogue = cast<linalg::GenericOp>(tiled->tiledOps.front());
  unsigned operand = read->getOperandNumber();
  SmallVector<Operation *> dead{
      epilogue->getOperand(operand).getDefiningOp(),
      epilogue.getDpsInitOperand(0)->get().getDefiningOp()};
  Value init = consumer.getDpsInitOperand(0)->get();
  Value tiles = block, into = block;
  if (rowsShareL1Set(init, rowDim)) {
    OpOperand &tileInit = *marker.getDpsInitOperand(0);
    dead.push_back(tileInit.get().getDefiningOp());
    rewriter.setInsertionPoint(marker);
    Value scratch = rewriter.create<tensor::EmptyOp>(
        marker.getLoc(), tileType.getShape(), tileType.getElementType());
    rewriter.modifyOpInPlace(marker, [&] { tileInit.set(scratch); });
    rewriter.setInsertionPoint(epilogue);
    tiles = marker->getResult(0);
    if (expansion)
      tiles = rewriter.create<tensor::ExpandShapeOp>(marker.getLoc(), blockType,
                                                     tiles, *expansion);
    into = inserted.getDest();
  }
  rewriter.modifyOpInPlace(epilogue, [&] {
    epilogue->setOperand(operand, tiles);
    epilogue.getDpsInitOperand(0)->set(into);
  });
  rewriter.modifyOpInPlace(
      store, [&] { store.getSourceMutable().assign(epilogue->getResult(0)); });
  if (inserted.getResult().use_empty())
    rewriter.eraseOp(inserted);
  for (Operation *op : dead)
    if (op && op->use_empty())
      rewriter.eraseOp(op);
  rewriter.modifyOpInPlace(outer,
                           [&] { outer.getInitArgsMutable()[0].assign(init); });
  rewriter.replaceOp(consumer, outer->getResults());
  return true;
}

bool zeroInitBlocks(RewriterBase &rewriter, Operation *outer) {
  auto loop = dyn_cast_or_null<scf::ForOp>(outer);
  if (!loop || loop.getInitArgs().size() != 1)
    return false;
  Value init = loop.getInitArgs().front();
  while (auto slice = init.getDefiningOp<tensor::ExtractSliceOp>())
    init = slice.getSource();
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill || !matchPattern(fill.getInputs().front(), m_AnyZeroFloat()))
    return false;
  // Every tensor op in the loops must be a marker (or a slice).
  SmallVector<linalg::GenericOp> markers;
  bool onlyMarkers = true;
  loop.walk([&](linalg::LinalgOp op) {
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (generic &&
        (generic->hasAttr(kAmxBlockAttr) || generic->hasAttr(kAmxConvAttr)))
      markers.push_back(generic);
    else if (op.hasPureTensorSemantics() && op.getNumDpsInits() > 0 &&
             !isa<linalg::FillOp>(op.getOperation()))
      onlyMarkers = false;
  });
  if (!onlyMarkers || markers.empty())
    return false;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(loop);
  Value start = loop.getInitArgs().front();
  auto type = cast<RankedTensorType>(start.getType());
  Value empty = rewriter.create<tensor::EmptyOp>(loop.getLoc(), type.getShape(),
                                                 type.getElementType());
  rewriter.modifyOpInPlace(loop,
                           [&] { loop.getInitArgsMutable()[0].assign(empty); });
  for (linalg::GenericOp marker : markers)
    marker->setAttr(kAmxZeroInitAttr, rewriter.getUnitAttr());
  return true;
}

namespace {

/// 2-D memref `view` (its rows contiguous) as the tile operations read
/// it: each row as long as the distance between rows. MLIR 19's AMX
/// lowering takes a tile's stride from the length of the memref's rows,
/// not from its layout (wrong for a block of a wider matrix).
Value rowsAsStrided(RewriterBase &rewriter, Location loc, Value view) {
  auto type = cast<MemRefType>(view.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(getStridesAndOffset(type, strides, offset)) ||
      type.getRank() != 2 || strides[1] != 1)
    return {};
  auto meta = rewriter.create<memref::ExtractStridedMetadataOp>(loc, view);
  auto staticOr = [&](int64_t v, Value dynamic) -> OpFoldResult {
    if (ShapedType::isDynamic(v))
      return dynamic;
    return rewriter.getIndexAttr(v);
  };
  OpFoldResult rowStride = staticOr(strides[0], meta.getStrides()[0]);
  auto resultType = MemRefType::get(
      {type.getDimSize(0), strides[0]}, type.getElementType(),
      StridedLayoutAttr::get(rewriter.getContext(), offset, {strides[0], 1}));
  return rewriter.create<memref::ReinterpretCastOp>(
      loc, resultType, meta.getBaseBuffer(), staticOr(offset, meta.getOffset()),
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(type.getDimSize(0)),
                             rowStride},
      ArrayRef<OpFoldResult>{rowStride, rewriter.getIndexAttr(1)});
}

/// `view` (a memref [x, y, 2]) with its last two dims merged: the 2-D
/// memref whose rows the tile loads read.
Value mergePairs(RewriterBase &rewriter, Location loc, Value view) {
  return rowsAsStrided(
      rewriter, loc,
      rewriter.create<memref::CollapseShapeOp>(
          loc, view, SmallVector<ReassociationIndices>{{0}, {1, 2}}));
}

/// The C tiles of a block: `rowTiles` of 16 rows by tiles of `width`
/// columns (`colTiles` of them), tile (i, j) at C[16 i, width j], in that
/// order.
struct CTiles {
  int64_t rowTiles, colTiles, width;

  VectorType type(MLIRContext *ctx) const {
    return VectorType::get({kAmxTileRows, width}, Float32Type::get(ctx));
  }
  SmallVector<Value> origin(RewriterBase &rewriter, Location loc, int64_t i,
                            int64_t j) const {
    return {rewriter.create<arith::ConstantIndexOp>(loc, i * kAmxTileRows),
            rewriter.create<arith::ConstantIndexOp>(loc, j * width)};
  }
  SmallVector<Value> load(RewriterBase &rewriter, Location loc, Value c) const {
    SmallVector<Value> tiles;
    for (int64_t i = 0; i < rowTiles; ++i)
      for (int64_t j = 0; j < colTiles; ++j)
        tiles.push_back(rewriter.create<amx::TileLoadOp>(
            loc, type(rewriter.getContext()), c, origin(rewriter, loc, i, j)));
    return tiles;
  }
  SmallVector<Value> zero(RewriterBase &rewriter, Location loc) const {
    SmallVector<Value> tiles;
    for (int64_t i = 0; i < rowTiles * colTiles; ++i)
      tiles.push_back(
          rewriter.create<amx::TileZeroOp>(loc, type(rewriter.getContext())));
    return tiles;
  }
  /// The C tiles a run starts from: zero tiles for the only run of a
  /// marker whose output starts at zero, else C's.
  SmallVector<Value> start(RewriterBase &rewriter, Location loc, Value c,
                           bool zero) const {
    return zero ? this->zero(rewriter, loc) : load(rewriter, loc, c);
  }
  void store(RewriterBase &rewriter, Location loc, Value c,
             ArrayRef<Value> tiles) const {
    for (int64_t i = 0; i < rowTiles; ++i)
      for (int64_t j = 0; j < colTiles; ++j)
        rewriter.create<amx::TileStoreOp>(loc, c, origin(rewriter, loc, i, j),
                                          tiles[i * colTiles + j]);
  }
};

/// Whether marker `op` (on buffers) may start its only run (of `runs`)
/// from zero tiles; when it starts from zero but cannot (several runs, or
/// it stays a loop nest: `lowered` false), its output is filled with zeros
/// first.
bool startsAtZero(RewriterBase &rewriter, linalg::GenericOp op, int64_t runs,
                  bool lowered = true) {
  if (!op->hasAttr(kAmxZeroInitAttr))
    return false;
  if (lowered && runs == 1)
    return true;
  Location loc = op.getLoc();
  Value zero =
      rewriter.create<arith::ConstantOp>(loc, rewriter.getF32FloatAttr(0.0f));
  rewriter.create<linalg::FillOp>(loc, ValueRange{zero},
                                  ValueRange{op.getDpsInitOperand(0)->get()});
  op->removeAttr(kAmxZeroInitAttr);
  return false;
}

/// Lowers one marker (on buffers): for each run of up to kMaxUnrolledSteps
/// reduction steps, the C tiles are loaded, each step loads the A and B
/// tiles and sums every pair's products onto its C tile, and the C tiles
/// are stored. A marker whose operands are not such views stays (a correct
/// loop nest).
void lowerBlock(RewriterBase &rewriter, linalg::GenericOp op) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value a = mergePairs(rewriter, loc, op.getDpsInputOperand(0)->get());
  Value b = mergePairs(rewriter, loc, op.getDpsInputOperand(1)->get());
  Value c = rowsAsStrided(rewriter, loc, op.getDpsInitOperand(0)->get());
  if (!a || !b || !c) {
    startsAtZero(rewriter, op, 0, /*lowered=*/false);
    return;
  }
  auto aType = cast<MemRefType>(op.getDpsInputOperand(0)->get().getType());
  auto cType = cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
  int64_t rowTiles = aType.getDimSize(0) / kAmxTileRows;
  int64_t colTiles = cType.getDimSize(1) / kAmxTileRows;
  int64_t steps = 2 * aType.getDimSize(1) / kAmxSteps;
  int64_t unroll = std::min(steps, kMaxUnrolledSteps);
  while (steps % unroll != 0)
    --unroll;
  bool zero = startsAtZero(rewriter, op, steps / unroll);
  MLIRContext *ctx = rewriter.getContext();
  auto aTile =
      VectorType::get({kAmxTileRows, kAmxSteps}, BFloat16Type::get(ctx));
  auto index = [&](int64_t v) -> Value {
    return rewriter.create<arith::ConstantIndexOp>(loc, v);
  };
  auto run =
      rewriter.create<scf::ForOp>(loc, index(0), index(steps), index(unroll));
  rewriter.setInsertionPointToStart(run.getBody());
  Value first = run.getInductionVar();
  CTiles tiles{rowTiles, colTiles, kAmxTileRows};
  VectorType cTile = tiles.type(ctx);
  SmallVector<Value> acc = tiles.start(rewriter, loc, c, zero);
  for (int64_t u = 0; u < unroll; ++u) {
    Value step = rewriter.create<arith::AddIOp>(loc, first, index(u));
    // A's columns and B's pair rows of this step.
    Value k = rewriter.create<arith::MulIOp>(loc, step, index(kAmxSteps));
    Value pairs =
        rewriter.create<arith::MulIOp>(loc, step, index(kAmxSteps / 2));
    SmallVector<Value> as, bs;
    for (int64_t i = 0; i < rowTiles; ++i)
      as.push_back(rewriter.create<amx::TileLoadOp>(
          loc, aTile, a, ValueRange{index(i * kAmxTileRows), k}));
    for (int64_t j = 0; j < colTiles; ++j)
      bs.push_back(rewriter.create<amx::TileLoadOp>(
          loc, aTile, b, ValueRange{pairs, index(j * kAmxSteps)}));
    for (int64_t i = 0; i < rowTiles; ++i)
      for (int64_t j = 0; j < colTiles; ++j) {
        Value &t = acc[i * colTiles + j];
        t = rewriter.create<amx::TileMulFOp>(loc, cTile, as[i], bs[j], t);
      }
  }
  tiles.store(rewriter, loc, c, acc);
  rewriter.eraseOp(op);
}

/// The 2-D view [rows, x * 2] of `view` with the dims `at` gives an index
/// fixed there, the other three [rows, x, 2] whole.
Value rowsAt(RewriterBase &rewriter, Location loc, Value view,
             ArrayRef<std::optional<int64_t>> at) {
  auto type = cast<MemRefType>(view.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets, sizes,
      strides(rank, rewriter.getIndexAttr(1));
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    std::optional<int64_t> fixed = at[d];
    offsets.push_back(rewriter.getIndexAttr(fixed.value_or(0)));
    sizes.push_back(rewriter.getIndexAttr(fixed ? 1 : type.getDimSize(d)));
    if (!fixed)
      shape.push_back(type.getDimSize(d));
  }
  auto reducedType =
      cast<MemRefType>(memref::SubViewOp::inferRankReducedResultType(
          shape, type, offsets, sizes, strides));
  Value sub = rewriter.create<memref::SubViewOp>(loc, reducedType, view,
                                                 offsets, sizes, strides);
  return mergePairs(rewriter, loc, sub);
}

/// The C tiles of a convolution block of `pixels`: one, or two equal ones
/// past 16 (every tile of a kernel has one shape: DirectConv.cpp's
/// amxBlockPixels).
SmallVector<int64_t> pixelTileWidths(int64_t pixels) {
  if (pixels > kAmxTileRows)
    return {pixels / 2, pixels / 2};
  return {pixels};
}

/// Lowers one convolution marker (on buffers): for each run of chunks of 32
/// input channels (as many as keep a run's steps, chunks x window, within
/// kMaxUnrolledSteps), the C tiles are loaded, each (chunk, ky, kx) loads
/// the filters' A tiles from the weights at (ky, kx) and the pixels' B
/// tiles from the input's pairs at row ky, from column kx on, and sums
/// every pair's products onto its C tile, and the C tiles are stored.
void lowerConvBlock(RewriterBase &rewriter, linalg::GenericOp op) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value w = op.getDpsInputOperand(0)->get();
  Value in = op.getDpsInputOperand(1)->get();
  Value c = rowsAsStrided(rewriter, loc, op.getDpsInitOperand(0)->get());
  auto wType = cast<MemRefType>(w.getType());
  int64_t kh = wType.getDimSize(0), kw = wType.getDimSize(1);
  int64_t rowTiles = wType.getDimSize(2) / kAmxTileRows;
  int64_t chunks = 2 * wType.getDimSize(3) / kAmxSteps;
  SmallVector<int64_t> widths = pixelTileWidths(
      cast<MemRefType>(op.getDpsInitOperand(0)->get().getType()).getDimSize(1));
  int64_t stride = op->getAttrOfType<IntegerAttr>(kAmxConvAttr).getInt();
  // The weights' rows at each (ky, kx), the input's at each (ky, kx).
  SmallVector<Value> aViews, bViews;
  std::optional<int64_t> whole;
  for (int64_t ky = 0; ky < kh; ++ky)
    for (int64_t kx = 0; kx < kw; ++kx) {
      aViews.push_back(rowsAt(rewriter, loc, w, {ky, kx, whole, whole, whole}));
      bViews.push_back(
          rowsAt(rewriter, loc, in, {whole, ky, kx % stride, whole, whole}));
    }
  if (!c || llvm::any_of(aViews, [](Value v) { return !v; }) ||
      llvm::any_of(bViews, [](Value v) { return !v; })) {
    startsAtZero(rewriter, op, 0, /*lowered=*/false);
    return;
  }
  int64_t unroll = std::max<int64_t>(1, kMaxUnrolledSteps / (kh * kw));
  unroll = std::min(unroll, chunks);
  while (chunks % unroll != 0)
    --unroll;
  bool zero = startsAtZero(rewriter, op, chunks / unroll);
  MLIRContext *ctx = rewriter.getContext();
  Type bf16 = BFloat16Type::get(ctx);
  auto aTile = VectorType::get({kAmxTileRows, kAmxSteps}, bf16);
  auto index = [&](int64_t v) -> Value {
    return rewriter.create<arith::ConstantIndexOp>(loc, v);
  };
  auto run =
      rewriter.create<scf::ForOp>(loc, index(0), index(chunks), index(unroll));
  rewriter.setInsertionPointToStart(run.getBody());
  Value first = run.getInductionVar();
  CTiles tiles{rowTiles, int64_t(widths.size()), widths[0]};
  VectorType cTile = tiles.type(ctx);
  SmallVector<Value> acc = tiles.start(rewriter, loc, c, zero);
  for (int64_t u = 0; u < unroll; ++u) {
    Value chunk = rewriter.create<arith::AddIOp>(loc, first, index(u));
    Value channel =
        rewriter.create<arith::MulIOp>(loc, chunk, index(kAmxSteps));
    Value pair =
        rewriter.create<arith::MulIOp>(loc, chunk, index(kAmxSteps / 2));
    for (int64_t ky = 0; ky < kh; ++ky)
      for (int64_t kx = 0; kx < kw; ++kx) {
        SmallVector<Value> as, bs;
        for (int64_t i = 0; i < rowTiles; ++i)
          as.push_back(rewriter.create<amx::TileLoadOp>(
              loc, aTile, aViews[ky * kw + kx],
              ValueRange{index(i * kAmxTileRows), channel}));
        for (auto [j, width] : llvm::enumerate(widths))
          bs.push_back(rewriter.create<amx::TileLoadOp>(
              loc, VectorType::get({kAmxTileRows, 2 * width}, bf16),
              bViews[ky * kw + kx],
              ValueRange{pair,
                         index(2 * (int64_t(j) * widths[0] + kx / stride))}));
        for (int64_t i = 0; i < rowTiles; ++i)
          for (int64_t j = 0; j < int64_t(widths.size()); ++j) {
            Value &t = acc[i * widths.size() + j];
            t = rewriter.create<amx::TileMulFOp>(loc, cTile, as[i], bs[j], t);
          }
      }
  }
  tiles.store(rewriter, loc, c, acc);
  rewriter.eraseOp(op);
}

} // namespace

void lowerAmxBlocks(func::FuncOp kernel) {
  SmallVector<linalg::GenericOp> blocks;
  kernel.walk([&](linalg::GenericOp op) {
    if ((op->hasAttr(kAmxBlockAttr) || op->hasAttr(kAmxConvAttr)) &&
        op.hasPureBufferSemantics())
      blocks.push_back(op);
  });
  IRRewriter rewriter(kernel.getContext());
  for (linalg::GenericOp op : blocks) {
    if (op->hasAttr(kAmxConvAttr))
      lowerConvBlock(rewriter, op);
    else
      lowerBlock(rewriter, op);
  }
}

} // namespace ign::host
