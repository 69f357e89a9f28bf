//===- Bf16Contraction.cpp - register tiles of bfloat16 dot products ------===//

#include "Bf16Contraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace ign::host {
namespace {

/// acc[i] + b[2i] * a[2i] + b[2i+1] * a[2i+1] in f32: a vector.contract
/// over (lanes, pair) that any vector lowering computes exactly;
/// lowerBf16Dots makes it one vdpbf16ps. (Built as the intrinsic now, it
/// would stop bufferization: a call of unknown memory effects.)
Value pairDot(OpBuilder &b, Location loc, Value acc, Value x, Value y) {
  auto pairs = VectorType::get({kBf16DotLanes, 2}, b.getBF16Type());
  MLIRContext *ctx = b.getContext();
  AffineExpr i = getAffineDimExpr(0, ctx), p = getAffineDimExpr(1, ctx);
  auto both = AffineMap::get(2, 0, {i, p}, ctx);
  auto lanes = AffineMap::get(2, 0, {i}, ctx);
  return b.create<vector::ContractionOp>(
      loc, b.create<vector::ShapeCastOp>(loc, pairs, x),
      b.create<vector::ShapeCastOp>(loc, pairs, y), acc,
      b.getAffineMapArrayAttr({both, both, lanes}),
      b.getArrayAttr(
          {vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
           vector::IteratorTypeAttr::get(ctx,
                                         vector::IteratorType::reduction)}));
}

/// Whether `op` is a pairDot: its shapes, types, maps and kind.
bool isPairDot(vector::ContractionOp op) {
  auto lhs = dyn_cast<VectorType>(op.getLhsType());
  auto acc = dyn_cast<VectorType>(op.getAccType());
  if (!lhs || !acc || lhs != op.getRhsType() ||
      lhs.getShape() != ArrayRef<int64_t>{kBf16DotLanes, 2} ||
      !lhs.getElementType().isBF16() || acc.getRank() != 1 ||
      !acc.getElementType().isF32() ||
      op.getKind() != vector::CombiningKind::ADD)
    return false;
  MLIRContext *ctx = op.getContext();
  AffineExpr i = getAffineDimExpr(0, ctx), p = getAffineDimExpr(1, ctx);
  auto both = AffineMap::get(2, 0, {i, p}, ctx);
  auto lanes = AffineMap::get(2, 0, {i}, ctx);
  return op.getIndexingMapsArray() ==
         SmallVector<AffineMap>{both, both, lanes};
}

/// The declaration of vdpbf16ps's intrinsic in the kernel's module (LLVM
/// knows a function named llvm.* by its name). A call rather than an
/// llvm.call_intrinsic: buffer deallocation refuses ops of unknown memory
/// effects, and calls it understands.
LLVM::LLVMFuncOp dotIntrinsic(RewriterBase &rewriter, func::FuncOp kernel) {
  constexpr const char *kName = "llvm.x86.avx512bf16.dpbf16ps.512";
  auto module = kernel->getParentOfType<ModuleOp>();
  if (auto f = module.lookupSymbol<LLVM::LLVMFuncOp>(kName))
    return f;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  auto acc = VectorType::get({kBf16DotLanes}, rewriter.getF32Type());
  auto pairs = VectorType::get({2 * kBf16DotLanes}, rewriter.getBF16Type());
  auto type = LLVM::LLVMFunctionType::get(acc, {acc, pairs, pairs});
  return rewriter.create<LLVM::LLVMFuncOp>(kernel.getLoc(), kName, type);
}

} // namespace

void lowerBf16Dots(func::FuncOp kernel) {
  SmallVector<vector::ContractionOp> dots;
  kernel.walk([&](vector::ContractionOp op) {
    if (isPairDot(op))
      dots.push_back(op);
  });
  if (dots.empty())
    return;
  IRRewriter rewriter(kernel.getContext());
  LLVM::LLVMFuncOp intrinsic = dotIntrinsic(rewriter, kernel);
  for (vector::ContractionOp op : dots) {
    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    auto flat = VectorType::get({2 * kBf16DotLanes}, rewriter.getBF16Type());
    Value x = rewriter.create<vector::ShapeCastOp>(loc, flat, op.getLhs());
    Value y = rewriter.create<vector::ShapeCastOp>(loc, flat, op.getRhs());
    auto call = rewriter.create<LLVM::CallOp>(loc, intrinsic,
                                              ValueRange{op.getAcc(), x, y});
    rewriter.replaceOp(op, call.getResults());
  }
}

void emitBf16DotTile(RewriterBase &rewriter, linalg::GenericOp tile,
                     Value aPairs, AffineMap aMap, Value bPairs,
                     unsigned rowLoop, unsigned colLoop, int64_t rows,
                     int64_t cols) {
  Location loc = tile.getLoc();
  rewriter.setInsertionPoint(tile);
  Type f32 = rewriter.getF32Type(), bf16 = rewriter.getBF16Type();
  auto accType = VectorType::get({kBf16DotLanes}, f32);
  auto pairsType = VectorType::get({2 * kBf16DotLanes}, bf16);
  auto index = [&](int64_t v) -> Value {
    return rewriter.create<arith::ConstantIndexOp>(loc, v);
  };
  Value f32Pad =
      rewriter.create<arith::ConstantOp>(loc, rewriter.getF32FloatAttr(0));
  Value bf16Pad =
      rewriter.create<arith::ConstantOp>(loc, rewriter.getFloatAttr(bf16, 0));
  // The columns' pairs, a vector of 16 columns (32 bfloat16) at a time.
  SmallVector<Value> bs;
  for (int64_t v = 0; v < cols / kBf16DotLanes; ++v)
    bs.push_back(rewriter.create<vector::TransferReadOp>(
        loc, pairsType, bPairs, ValueRange{index(2 * kBf16DotLanes * v)},
        bf16Pad, ArrayRef<bool>{true}));
  // The output tile as one (rows x cols) vector, read once and written
  // once: the schedule's finish carries it through the reduction loop
  // (separate reads and writes of its rows would each clash with the
  // others).
  Value out = tile.getDpsInitOperand(0)->get();
  AffineMap outMap = tile.getMatchingIndexingMap(tile.getDpsInitOperand(0));
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<AffineExpr> tileDims;
  for (unsigned l : {rowLoop, colLoop})
    for (auto [pos, e] : llvm::enumerate(outMap.getResults()))
      if (cast<AffineDimExpr>(e).getPosition() == l)
        tileDims.push_back(getAffineDimExpr(unsigned(pos), ctx));
  auto tileMap = AffineMap::get(outMap.getNumResults(), 0, tileDims, ctx);
  SmallVector<Value> origin(outMap.getNumResults(), index(0));
  auto tileType = VectorType::get({rows, cols}, f32);
  Value acc = rewriter.create<vector::TransferReadOp>(
      loc, tileType, out, origin, AffineMapAttr::get(tileMap), f32Pad,
      /*mask=*/Value(), rewriter.getBoolArrayAttr({true, true}));
  Value result = acc;
  for (int64_t r = 0; r < rows; ++r) {
    // Row r's pair as one 32-bit lane, broadcast to all 16.
    SmallVector<Value> aAt{index(2 * r)};
    if (aMap) {
      aAt.clear();
      for (AffineExpr e : aMap.getResults())
        aAt.push_back(
            index(cast<AffineDimExpr>(e).getPosition() == rowLoop ? r : 0));
    }
    Value pair = rewriter.create<vector::TransferReadOp>(
        loc, VectorType::get({2}, bf16), aPairs, aAt, bf16Pad,
        ArrayRef<bool>{true});
    auto i32x1 = VectorType::get({1}, rewriter.getI32Type());
    Value bits = rewriter.create<vector::BitCastOp>(loc, i32x1, pair);
    Value spread = rewriter.create<vector::BroadcastOp>(
        loc, VectorType::get({kBf16DotLanes}, rewriter.getI32Type()), bits);
    Value a = rewriter.create<vector::BitCastOp>(loc, pairsType, spread);
    for (int64_t v = 0; v < cols / kBf16DotLanes; ++v) {
      SmallVector<int64_t> at{r, v * kBf16DotLanes};
      Value piece = rewriter.create<vector::ExtractStridedSliceOp>(
          loc, acc, at, ArrayRef<int64_t>{1, kBf16DotLanes},
          ArrayRef<int64_t>{1, 1});
      Value sum = pairDot(
          rewriter, loc,
          rewriter.create<vector::ShapeCastOp>(loc, accType, piece), bs[v], a);
      result = rewriter.create<vector::InsertStridedSliceOp>(
          loc,
          rewriter.create<vector::ShapeCastOp>(
              loc, VectorType::get({1, kBf16DotLanes}, f32), sum),
          result, at, ArrayRef<int64_t>{1, 1});
    }
  }
  out = rewriter
            .create<vector::TransferWriteOp>(
                loc, result, out, origin, AffineMapAttr::get(tileMap),
                /*mask=*/Value(), rewriter.getBoolArrayAttr({true, true}))
            .getResult();
  rewriter.replaceOp(tile, out);
}

} // namespace ign::host
