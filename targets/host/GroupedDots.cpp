//===- GroupedDots.cpp - register tiles of grouped dot products -----------===//

#include "GroupedDots.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace ign::host {

int64_t groupSteps(DotKind kind) { return kind == DotKind::Int8Quads ? 4 : 2; }

Type groupElement(MLIRContext *ctx, DotKind kind) {
  switch (kind) {
  case DotKind::Bf16Pairs:
    return BFloat16Type::get(ctx);
  case DotKind::Int8Quads:
    return IntegerType::get(ctx, 8);
  case DotKind::Int16Pairs:
    return IntegerType::get(ctx, 16);
  }
  return {};
}

Type accumulatorElement(MLIRContext *ctx, DotKind kind) {
  return kind == DotKind::Bf16Pairs ? Type(Float32Type::get(ctx))
                                    : Type(IntegerType::get(ctx, 32));
}

namespace {

/// The maps of a grouped dot: (lanes, step) for both operands, lanes for
/// the accumulator.
SmallVector<AffineMap> groupDotMaps(MLIRContext *ctx) {
  AffineExpr i = getAffineDimExpr(0, ctx), p = getAffineDimExpr(1, ctx);
  auto both = AffineMap::get(2, 0, {i, p}, ctx);
  auto lanes = AffineMap::get(2, 0, {i}, ctx);
  return {both, both, lanes};
}

/// acc[i] + sum over p of x[G i + p] * y[G i + p]: a vector.contract over
/// (lanes, step) that any vector lowering computes exactly (integers
/// extended to i32 first: bytes as `xUnsigned` says which operand's are
/// unsigned, words signed); lowerGroupedDots makes it one vdpbf16ps or
/// vpdpbusd, or a vpmaddwd and a vpaddd. (Built as the intrinsic now, it
/// would stop bufferization: a call of unknown memory effects.)
Value groupDot(OpBuilder &b, Location loc, DotKind kind, int64_t lanes,
               Value acc, Value x, Value y, bool xUnsigned) {
  MLIRContext *ctx = b.getContext();
  int64_t steps = groupSteps(kind);
  auto groups = VectorType::get({lanes, steps}, groupElement(ctx, kind));
  Value gx = b.create<vector::ShapeCastOp>(loc, groups, x);
  Value gy = b.create<vector::ShapeCastOp>(loc, groups, y);
  if (kind == DotKind::Int16Pairs)
    xUnsigned = false;
  if (kind != DotKind::Bf16Pairs) {
    auto wide = VectorType::get({lanes, steps}, b.getI32Type());
    auto extend = [&](Value v, bool isUnsigned) -> Value {
      if (isUnsigned)
        return b.create<arith::ExtUIOp>(loc, wide, v);
      return b.create<arith::ExtSIOp>(loc, wide, v);
    };
    gx = extend(gx, xUnsigned);
    gy = extend(gy, kind == DotKind::Int8Quads && !xUnsigned);
  }
  return b.create<vector::ContractionOp>(
      loc, gx, gy, acc, b.getAffineMapArrayAttr(groupDotMaps(ctx)),
      b.getArrayAttr(
          {vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
           vector::IteratorTypeAttr::get(ctx,
                                         vector::IteratorType::reduction)}));
}

/// The integer vector (`groups`) an integer dot's operand extends, and
/// whether it extends it unsigned; null otherwise.
std::pair<Value, bool> extendedGroups(Value v, VectorType groups) {
  if (auto e = v.getDefiningOp<arith::ExtUIOp>();
      e && e.getIn().getType() == groups)
    return {e.getIn(), true};
  if (auto e = v.getDefiningOp<arith::ExtSIOp>();
      e && e.getIn().getType() == groups)
    return {e.getIn(), false};
  return {Value(), false};
}

/// The byte vector (16 x 4 i8) an int8 quad dot's operand extends, and
/// whether it extends it unsigned; null otherwise.
std::pair<Value, bool> extendedBytes(Value v) {
  return extendedGroups(
      v, VectorType::get({kDotLanes, 4}, IntegerType::get(v.getContext(), 8)));
}

/// Whether `op` is a word pair dot of `lanes` lanes: both operands words
/// extended signed.
bool isWordPairDot(vector::ContractionOp op, int64_t lanes) {
  auto words =
      VectorType::get({lanes, 2}, IntegerType::get(op.getContext(), 16));
  auto [x, xu] = extendedGroups(op.getLhs(), words);
  auto [y, yu] = extendedGroups(op.getRhs(), words);
  return x && y && !xu && !yu;
}

/// Which grouped dot `op` is (a groupDot: shapes, types, maps, kind, and
/// for bytes one unsigned and one signed operand, for words two signed),
/// if any.
std::optional<DotKind> groupDotKind(vector::ContractionOp op) {
  auto lhs = dyn_cast<VectorType>(op.getLhsType());
  auto acc = dyn_cast<VectorType>(op.getAccType());
  if (!lhs || !acc || lhs != op.getRhsType() || acc.getRank() != 1 ||
      op.getKind() != vector::CombiningKind::ADD ||
      op.getIndexingMapsArray() != groupDotMaps(op.getContext()))
    return std::nullopt;
  if (lhs.getShape() == ArrayRef<int64_t>{kDotLanes, 2} &&
      lhs.getElementType().isBF16() && acc.getElementType().isF32())
    return DotKind::Bf16Pairs;
  if (lhs.getShape() == ArrayRef<int64_t>{kDotLanes, 4} &&
      lhs.getElementType().isInteger(32) &&
      acc.getElementType().isInteger(32)) {
    auto [x, xu] = extendedBytes(op.getLhs());
    auto [y, yu] = extendedBytes(op.getRhs());
    if (x && y && xu != yu)
      return DotKind::Int8Quads;
  }
  if (lhs.getRank() == 2 && lhs.getDimSize(1) == 2 &&
      (lhs.getDimSize(0) == 8 || lhs.getDimSize(0) == 16) &&
      lhs.getElementType().isInteger(32) &&
      acc.getElementType().isInteger(32) &&
      isWordPairDot(op, lhs.getDimSize(0)))
    return DotKind::Int16Pairs;
  return std::nullopt;
}

/// The declaration of `kind`'s intrinsic of `lanes` lanes in the kernel's
/// module (LLVM knows a function named llvm.* by its name): vdpbf16ps
/// (acc, 32 bf16, 32 bf16), vpdpbusd (acc, 16 x 4 unsigned bytes, 16 x 4
/// signed bytes, each as i32 lanes) or vpmaddwd (2 x lanes words, 2 x
/// lanes words; no accumulator). A call rather than an
/// llvm.call_intrinsic: buffer deallocation refuses ops of unknown memory
/// effects, and calls it understands.
LLVM::LLVMFuncOp dotIntrinsic(RewriterBase &rewriter, func::FuncOp kernel,
                              DotKind kind, int64_t lanes) {
  const char *name = "llvm.x86.avx512.vpdpbusd.512";
  if (kind == DotKind::Bf16Pairs)
    name = "llvm.x86.avx512bf16.dpbf16ps.512";
  else if (kind == DotKind::Int16Pairs)
    name =
        lanes == 8 ? "llvm.x86.avx2.pmadd.wd" : "llvm.x86.avx512.pmaddw.d.512";
  auto module = kernel->getParentOfType<ModuleOp>();
  if (auto f = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return f;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  MLIRContext *ctx = rewriter.getContext();
  auto acc = VectorType::get({lanes}, accumulatorElement(ctx, kind));
  LLVM::LLVMFunctionType type;
  if (kind == DotKind::Int16Pairs) {
    auto words = VectorType::get({2 * lanes}, rewriter.getI16Type());
    type = LLVM::LLVMFunctionType::get(acc, {words, words});
  } else {
    auto operand = kind == DotKind::Bf16Pairs
                       ? VectorType::get({2 * lanes}, rewriter.getBF16Type())
                       : acc;
    type = LLVM::LLVMFunctionType::get(acc, {acc, operand, operand});
  }
  return rewriter.create<LLVM::LLVMFuncOp>(kernel.getLoc(), name, type);
}

/// The operands of `op`'s intrinsic (after its accumulator, if it takes
/// one), in order.
SmallVector<Value, 2> intrinsicOperands(RewriterBase &rewriter,
                                        vector::ContractionOp op,
                                        DotKind kind) {
  Location loc = op.getLoc();
  if (kind == DotKind::Int16Pairs) {
    auto lanes = cast<VectorType>(op.getLhsType()).getDimSize(0);
    auto groups = VectorType::get({lanes, 2}, rewriter.getI16Type());
    auto flat = VectorType::get({2 * lanes}, rewriter.getI16Type());
    auto words = [&](Value v) -> Value {
      return rewriter.create<vector::ShapeCastOp>(
          loc, flat, extendedGroups(v, groups).first);
    };
    return {words(op.getLhs()), words(op.getRhs())};
  }
  if (kind == DotKind::Bf16Pairs) {
    auto flat = VectorType::get({2 * kDotLanes}, rewriter.getBF16Type());
    return {rewriter.create<vector::ShapeCastOp>(loc, flat, op.getLhs()),
            rewriter.create<vector::ShapeCastOp>(loc, flat, op.getRhs())};
  }
  auto [x, xUnsigned] = extendedBytes(op.getLhs());
  auto [y, yUnsigned] = extendedBytes(op.getRhs());
  if (!xUnsigned)
    std::swap(x, y);
  auto flat = VectorType::get({4 * kDotLanes}, rewriter.getI8Type());
  auto lanes = VectorType::get({kDotLanes}, rewriter.getI32Type());
  auto asLanes = [&](Value v) -> Value {
    return rewriter.create<vector::BitCastOp>(
        loc, lanes, rewriter.create<vector::ShapeCastOp>(loc, flat, v));
  };
  return {asLanes(x), asLanes(y)};
}

} // namespace

Value roundedCopy(RewriterBase &rewriter, Location loc, Value value,
                  ArrayRef<int64_t> shape, AffineMap read) {
  return copyThrough(rewriter, loc, value, shape, read, rewriter.getBF16Type())
      .getResult(0);
}

linalg::GenericOp copyThrough(RewriterBase &rewriter, Location loc, Value value,
                              ArrayRef<int64_t> shape, AffineMap read,
                              Type element) {
  Value empty = rewriter.create<tensor::EmptyOp>(loc, shape, element);
  unsigned rank = shape.size();
  SmallVector<AffineMap> maps{
      read, AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext())};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return rewriter.create<linalg::GenericOp>(
      loc, empty.getType(), ValueRange{value}, ValueRange{empty}, maps,
      iterators, [&](OpBuilder &b, Location l, ValueRange args) {
        Value v = args[0];
        if (v.getType() != element)
          v = b.create<arith::TruncFOp>(l, element, v);
        b.create<linalg::YieldOp>(l, v);
      });
}

void widenedMultiplyAdd(OpBuilder &b, Location loc, ValueRange args) {
  Type f32 = b.getF32Type();
  Value x = b.create<arith::ExtFOp>(loc, f32, args[0]);
  Value y = b.create<arith::ExtFOp>(loc, f32, args[1]);
  Value product = b.create<arith::MulFOp>(loc, x, y);
  b.create<linalg::YieldOp>(
      loc, b.create<arith::AddFOp>(loc, args[2], product).getResult());
}

void lowerGroupedDots(func::FuncOp kernel) {
  SmallVector<std::pair<vector::ContractionOp, DotKind>> dots;
  kernel.walk([&](vector::ContractionOp op) {
    if (std::optional<DotKind> kind = groupDotKind(op))
      dots.push_back({op, *kind});
  });
  if (dots.empty())
    return;
  IRRewriter rewriter(kernel.getContext());
  for (auto [op, kind] : dots) {
    int64_t lanes = cast<VectorType>(op.getAccType()).getDimSize(0);
    LLVM::LLVMFuncOp intrinsic = dotIntrinsic(rewriter, kernel, kind, lanes);
    rewriter.setInsertionPoint(op);
    SmallVector<Value, 2> xy = intrinsicOperands(rewriter, op, kind);
    if (kind == DotKind::Int16Pairs) {
      // vpmaddwd's sums of pairs, then vpaddd onto the accumulator.
      auto call = rewriter.create<LLVM::CallOp>(op.getLoc(), intrinsic,
                                                ValueRange{xy[0], xy[1]});
      rewriter.replaceOpWithNewOp<arith::AddIOp>(op, op.getAcc(),
                                                 call.getResult());
      continue;
    }
    auto call = rewriter.create<LLVM::CallOp>(
        op.getLoc(), intrinsic, ValueRange{op.getAcc(), xy[0], xy[1]});
    rewriter.replaceOp(op, call.getResults());
  }
}

void emitDotTile(RewriterBase &rewriter, linalg::GenericOp tile, DotKind kind,
                 Value aGroups, AffineMap aMap, Value bGroups, unsigned rowLoop,
                 unsigned colLoop, int64_t rows, int64_t cols, int64_t lanes,
                 bool aUnsigned) {
  Location loc = tile.getLoc();
  rewriter.setInsertionPoint(tile);
  MLIRContext *ctx = rewriter.getContext();
  int64_t steps = groupSteps(kind);
  Type accElement = accumulatorElement(ctx, kind);
  Type element = groupElement(ctx, kind);
  auto accType = VectorType::get({lanes}, accElement);
  auto groupsType = VectorType::get({steps * lanes}, element);
  auto index = [&](int64_t v) -> Value {
    return rewriter.create<arith::ConstantIndexOp>(loc, v);
  };
  Value accPad =
      rewriter.create<arith::ConstantOp>(loc, rewriter.getZeroAttr(accElement));
  Value pad =
      rewriter.create<arith::ConstantOp>(loc, rewriter.getZeroAttr(element));
  // The columns' groups, a vector of `lanes` columns at a time.
  SmallVector<Value> bs;
  for (int64_t v = 0; v < cols / lanes; ++v)
    bs.push_back(rewriter.create<vector::TransferReadOp>(
        loc, groupsType, bGroups, ValueRange{index(steps * lanes * v)}, pad,
        ArrayRef<bool>{true}));
  // The output tile as one (rows x cols) vector, read once and written
  // once: the schedule's finish carries it through the reduction loop
  // (separate reads and writes of its rows would each clash with the
  // others).
  Value out = tile.getDpsInitOperand(0)->get();
  AffineMap outMap = tile.getMatchingIndexingMap(tile.getDpsInitOperand(0));
  SmallVector<AffineExpr> tileDims;
  for (unsigned l : {rowLoop, colLoop})
    for (auto [pos, e] : llvm::enumerate(outMap.getResults()))
      if (cast<AffineDimExpr>(e).getPosition() == l)
        tileDims.push_back(getAffineDimExpr(unsigned(pos), ctx));
  auto tileMap = AffineMap::get(outMap.getNumResults(), 0, tileDims, ctx);
  SmallVector<Value> origin(outMap.getNumResults(), index(0));
  auto tileType = VectorType::get({rows, cols}, accElement);
  // A tile of fewer columns than its vectors (zero-padded panels) reads
  // and writes its own under a mask.
  int64_t have =
      cast<RankedTensorType>(out.getType())
          .getDimSize(cast<AffineDimExpr>(tileDims[1]).getPosition());
  Value mask;
  if (!ShapedType::isDynamic(have) && have < cols)
    mask = rewriter.create<vector::ConstantMaskOp>(
        loc, VectorType::get({rows, cols}, rewriter.getI1Type()),
        rewriter.getI64ArrayAttr({rows, have}));
  auto masked = [&](Operation *op) {
    return mask ? vector::maskOperation(rewriter, op, mask) : op;
  };
  Value acc =
      masked(rewriter.create<vector::TransferReadOp>(
                 loc, tileType, out, origin, AffineMapAttr::get(tileMap),
                 accPad,
                 /*mask=*/Value(), rewriter.getBoolArrayAttr({true, true})))
          ->getResult(0);
  Value result = acc;
  auto i32 = rewriter.getI32Type();
  for (int64_t r = 0; r < rows; ++r) {
    // Row r's group as one 32-bit lane, broadcast to all `lanes`.
    SmallVector<Value> aAt{index(steps * r)};
    if (aMap) {
      aAt.clear();
      for (AffineExpr e : aMap.getResults()) {
        auto dim = dyn_cast<AffineDimExpr>(e);
        aAt.push_back(index(dim && dim.getPosition() == rowLoop ? r : 0));
      }
    }
    Value group = rewriter.create<vector::TransferReadOp>(
        loc, VectorType::get({steps}, element), aGroups, aAt, pad,
        ArrayRef<bool>{true});
    Value bits = rewriter.create<vector::BitCastOp>(
        loc, VectorType::get({1}, i32), group);
    Value spread = rewriter.create<vector::BroadcastOp>(
        loc, VectorType::get({lanes}, i32), bits);
    Value a = rewriter.create<vector::BitCastOp>(loc, groupsType, spread);
    for (int64_t v = 0; v < cols / lanes; ++v) {
      SmallVector<int64_t> at{r, v * lanes};
      Value piece = rewriter.create<vector::ExtractStridedSliceOp>(
          loc, acc, at, ArrayRef<int64_t>{1, lanes}, ArrayRef<int64_t>{1, 1});
      Value sum = groupDot(
          rewriter, loc, kind, lanes,
          rewriter.create<vector::ShapeCastOp>(loc, accType, piece), bs[v], a,
          /*xUnsigned=*/!aUnsigned);
      result = rewriter.create<vector::InsertStridedSliceOp>(
          loc,
          rewriter.create<vector::ShapeCastOp>(
              loc, VectorType::get({1, lanes}, accElement), sum),
          result, at, ArrayRef<int64_t>{1, 1});
    }
  }
  out = masked(rewriter.create<vector::TransferWriteOp>(
                   loc, result, out, origin, AffineMapAttr::get(tileMap),
                   /*mask=*/Value(), rewriter.getBoolArrayAttr({true, true})))
            ->getResult(0);
  rewriter.replaceOp(tile, out);
}

} // namespace ign::host
