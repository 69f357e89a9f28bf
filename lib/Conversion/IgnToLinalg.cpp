//===- IgnToLinalg.cpp - the reference lowering pass and shared helpers ---===//

#include "LoweringUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace ign {
#define GEN_PASS_DEF_CONVERTIGNTOLINALG
#include "ign/Conversion/Passes.h.inc"
} // namespace ign

namespace ign::lowering {

bool isFloat(Type t) { return isa<FloatType>(t); }

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

SmallVector<utils::IteratorType> iterators(int64_t parallel,
                                           int64_t reduction) {
  SmallVector<utils::IteratorType> its(parallel, utils::IteratorType::parallel);
  its.append(reduction, utils::IteratorType::reduction);
  return its;
}

Value scalar(OpBuilder &b, Location loc, Type type, double value) {
  if (auto ft = dyn_cast<FloatType>(type))
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(ft, value));
  auto it = cast<IntegerType>(type);
  return b.create<arith::ConstantOp>(
      loc, b.getIntegerAttr(
               it, APInt(64, int64_t(value), true).trunc(it.getWidth())));
}

Value lowest(OpBuilder &b, Location loc, Type type, bool isUnsigned) {
  if (auto ft = dyn_cast<FloatType>(type))
    return b.create<arith::ConstantOp>(
        loc, b.getFloatAttr(ft, APFloat::getInf(ft.getFloatSemantics(), true)));
  auto it = cast<IntegerType>(type);
  return b.create<arith::ConstantOp>(
      loc, b.getIntegerAttr(it, it.getWidth() == 1 || isUnsigned
                                    ? APInt(it.getWidth(), 0)
                                    : APInt::getSignedMinValue(it.getWidth())));
}

Value highest(OpBuilder &b, Location loc, Type type, bool isUnsigned) {
  if (auto ft = dyn_cast<FloatType>(type))
    return b.create<arith::ConstantOp>(
        loc,
        b.getFloatAttr(ft, APFloat::getInf(ft.getFloatSemantics(), false)));
  auto it = cast<IntegerType>(type);
  return b.create<arith::ConstantOp>(
      loc, b.getIntegerAttr(it, it.getWidth() == 1 || isUnsigned
                                    ? APInt::getAllOnes(it.getWidth())
                                    : APInt::getSignedMaxValue(it.getWidth())));
}

Value addV(OpBuilder &b, Location l, Value x, Value y) {
  return isFloat(x.getType()) ? Value(b.create<arith::AddFOp>(l, x, y))
                              : Value(b.create<arith::AddIOp>(l, x, y));
}

Value mulV(OpBuilder &b, Location l, Value x, Value y) {
  return isFloat(x.getType()) ? Value(b.create<arith::MulFOp>(l, x, y))
                              : Value(b.create<arith::MulIOp>(l, x, y));
}

Value safeIndex(OpBuilder &b, Location l, Value i, int64_t dim) {
  auto c = [&](int64_t v) { return b.create<arith::ConstantIndexOp>(l, v); };
  Value neg = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, i, c(0));
  Value wrapped = b.create<arith::SelectOp>(
      l, neg, b.create<arith::AddIOp>(l, i, c(dim)), i);
  return b.create<arith::MaxSIOp>(
      l, b.create<arith::MinSIOp>(l, wrapped, c(dim - 1)), c(0));
}

Value filled(OpBuilder &b, Location loc, RankedTensorType type, Value value) {
  Value empty =
      b.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType());
  return b.create<linalg::FillOp>(loc, value, empty).getResult(0);
}

AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> outShape) {
  SmallVector<AffineExpr> exprs;
  size_t offset = outShape.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    exprs.push_back(shape[i] == 1 && outShape[i + offset] != 1
                        ? getAffineConstantExpr(0, ctx)
                        : getAffineDimExpr(i + offset, ctx));
  return AffineMap::get(outShape.size(), 0, exprs, ctx);
}

Value elementwise(OpBuilder &b, Location loc, RankedTensorType outType,
                  ValueRange inputs, const BodyFn &body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(
        broadcastMap(ctx, tensorType(in).getShape(), outType.getShape()));
  maps.push_back(b.getMultiDimIdentityMap(outType.getRank()));
  Value init = b.create<tensor::EmptyOp>(loc, outType.getShape(),
                                         outType.getElementType());
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{outType}, inputs, ValueRange{init}, maps,
      iterators(outType.getRank()),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value r = body(nb, nl, args.drop_back());
        nb.create<linalg::YieldOp>(nl, r);
      });
  return generic.getResult(0);
}

Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  auto type = tensorType(v);
  if (type.getShape() == shape)
    return v;
  auto shapeType =
      RankedTensorType::get({int64_t(shape.size())}, b.getIntegerType(64));
  Value shapeValue = b.create<arith::ConstantOp>(
      loc, DenseIntElementsAttr::get(shapeType, shape));
  return b.create<tensor::ReshapeOp>(
      loc, RankedTensorType::get(shape, type.getElementType()), v, shapeValue);
}

Value castScalar(OpBuilder &b, Location loc, Value v, Type to,
                 bool fromUnsigned, bool toUnsigned) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (to.isInteger(1)) {
    if (isFloat(from))
      return b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNE, v,
                                     scalar(b, loc, from, 0));
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, v,
                                   scalar(b, loc, from, 0));
  }
  bool fromBool = from.isInteger(1) || fromUnsigned;
  if (isFloat(from) && isFloat(to))
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? Value(b.create<arith::ExtFOp>(loc, to, v))
               : Value(b.create<arith::TruncFOp>(loc, to, v));
  if (isFloat(from))
    return toUnsigned ? Value(b.create<arith::FPToUIOp>(loc, to, v))
                      : Value(b.create<arith::FPToSIOp>(loc, to, v));
  if (isFloat(to))
    return fromBool ? Value(b.create<arith::UIToFPOp>(loc, to, v))
                    : Value(b.create<arith::SIToFPOp>(loc, to, v));
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fw < tw)
    return fromBool ? Value(b.create<arith::ExtUIOp>(loc, to, v))
                    : Value(b.create<arith::ExtSIOp>(loc, to, v));
  return b.create<arith::TruncIOp>(loc, to, v);
}

Value padConstant(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> low,
                  ArrayRef<int64_t> high, Value value) {
  if (llvm::all_of(low, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(high, [](int64_t p) { return p == 0; }))
    return v;
  auto type = tensorType(v);
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d)
    shape.push_back(type.getDimSize(d) + low[d] + high[d]);
  SmallVector<OpFoldResult> lo, hi;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    lo.push_back(b.getIndexAttr(low[d]));
    hi.push_back(b.getIndexAttr(high[d]));
  }
  return b.create<tensor::PadOp>(
      loc, RankedTensorType::get(shape, type.getElementType()), v, lo, hi,
      value);
}

namespace {

Type signless(Type t) {
  if (auto st = dyn_cast<ShapedType>(t))
    return st.clone(signless(st.getElementType()));
  if (auto it = dyn_cast<IntegerType>(t); it && it.isUnsigned())
    return IntegerType::get(t.getContext(), it.getWidth());
  return t;
}

bool isUnsignedTensor(Type t) {
  auto st = dyn_cast<ShapedType>(t);
  return st && st.getElementType().isUnsignedInteger();
}

/// arith works on signless integers: unsigned tensors become signless, and
/// each ign op that saw an unsigned value is marked "ign.unsigned" (a Cast
/// producing one "ign.unsigned_result") so its lowering picks unsigned
/// arithmetic (divui, ult, maxui, uitofp, ...).
void makeSignless(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  module.walk([&](Operation *op) {
    if (!isa<IgnDialect>(op->getDialect()))
      return;
    if (llvm::any_of(op->getOperandTypes(), isUnsignedTensor) ||
        (!isa<CastOp>(op) &&
         llvm::any_of(op->getResultTypes(), isUnsignedTensor)))
      op->setAttr(kUnsignedAttr, UnitAttr::get(ctx));
    if (isa<MatMulOp, ConvOp>(op))
      op->setAttr(kUnsignedOperandsAttr,
                  DenseBoolArrayAttr::get(
                      ctx, {isUnsignedTensor(op->getOperand(0).getType()),
                            isUnsignedTensor(op->getOperand(1).getType())}));
    if (auto cast = dyn_cast<CastOp>(op);
        cast && cast.getTo().isUnsignedInteger()) {
      op->setAttr(kUnsignedResultAttr, UnitAttr::get(ctx));
      cast.setToAttr(TypeAttr::get(signless(cast.getTo())));
    }
  });
  module.walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setType(signless(arg.getType()));
    for (OpResult r : op->getResults())
      r.setType(signless(r.getType()));
    if (auto c = dyn_cast<ConstantOp>(op)) {
      Type t = signless(c.getType());
      if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue()))
        c.setValueAttr(dense.bitcast(cast<ShapedType>(t).getElementType()));
      else if (auto res = dyn_cast<DenseResourceElementsAttr>(c.getValue()))
        c.setValueAttr(DenseResourceElementsAttr::get(cast<ShapedType>(t),
                                                      res.getRawHandle()));
    }
    if (auto func = dyn_cast<func::FuncOp>(op)) {
      SmallVector<Type> ins, outs;
      for (Type t : func.getArgumentTypes())
        ins.push_back(signless(t));
      for (Type t : func.getResultTypes())
        outs.push_back(signless(t));
      func.setType(FunctionType::get(ctx, ins, outs));
    }
  });
}

struct ConvertIgnToLinalgPass
    : ign::impl::ConvertIgnToLinalgBase<ConvertIgnToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    makeSignless(module);
    RewritePatternSet patterns(&getContext());
    populateIgnToLinalgPatterns(patterns, recurrentParts);
    ConversionTarget target(getContext());
    target.addIllegalDialect<IgnDialect>();
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           func::FuncDialect, scf::SCFDialect>();
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

} // namespace ign::lowering

void ign::populateIgnToLinalgPatterns(RewritePatternSet &patterns,
                                      int64_t recurrentParts) {
  lowering::populateElementwisePatterns(patterns);
  lowering::populateContractionPatterns(patterns);
  lowering::populateReductionPatterns(patterns);
  lowering::populateDataMovementPatterns(patterns);
  lowering::populateResizePatterns(patterns);
  lowering::populateRecurrentPatterns(patterns, recurrentParts);
  lowering::populateIndexingPatterns(patterns);
}
