//===- LowerReductions.cpp - reductions, arg-reductions, softmax, cumsum --===//

#include "LoweringUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace ign::lowering {
namespace {

using CombineFn =
    std::function<Value(OpBuilder &, Location, Value element, Value acc)>;

/// Reduces `input` over sorted `axes` into a tensor without the reduced
/// dims: acc = combine(pre(x), acc), starting from `init`.
Value reduceOver(OpBuilder &b, Location loc, Value input,
                 ArrayRef<int64_t> axes, Value init, const CombineFn &combine) {
  auto type = tensorType(input);
  int64_t rank = type.getRank();
  SmallVector<int64_t> outShape;
  SmallVector<AffineExpr> outExprs;
  // Iteration space: kept dims first (parallel), then reduced dims.
  SmallVector<int64_t> order;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(axes, d))
      order.push_back(d);
  int64_t kept = order.size();
  for (int64_t d : axes)
    order.push_back(d);
  SmallVector<AffineExpr> inExprs(rank);
  for (auto [pos, d] : llvm::enumerate(order))
    inExprs[d] = b.getAffineDimExpr(pos);
  for (int64_t i = 0; i < kept; ++i) {
    outShape.push_back(type.getDimSize(order[i]));
    outExprs.push_back(b.getAffineDimExpr(i));
  }
  auto outType = RankedTensorType::get(outShape, init.getType());
  Value acc = filled(b, loc, outType, init);
  SmallVector<AffineMap> maps{
      AffineMap::get(rank, 0, inExprs, b.getContext()),
      AffineMap::get(rank, 0, outExprs, b.getContext())};
  return b
      .create<linalg::GenericOp>(
          loc, TypeRange{outType}, ValueRange{input}, ValueRange{acc}, maps,
          iterators(kept, rank - kept),
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            nb.create<linalg::YieldOp>(nl, combine(nb, nl, args[0], args[1]));
          })
      .getResult(0);
}

/// Shape of `shape` with `axes` kept as size-1 dims.
SmallVector<int64_t> keptShape(ArrayRef<int64_t> shape,
                               ArrayRef<int64_t> axes) {
  SmallVector<int64_t> out(shape);
  for (int64_t a : axes)
    out[a] = 1;
  return out;
}

Value maxV(OpBuilder &b, Location l, Value x, Value y, bool uns = false) {
  if (isFloat(x.getType()))
    return b.create<arith::MaximumFOp>(l, x, y);
  return uns ? Value(b.create<arith::MaxUIOp>(l, x, y))
             : Value(b.create<arith::MaxSIOp>(l, x, y));
}
Value minV(OpBuilder &b, Location l, Value x, Value y, bool uns = false) {
  if (isFloat(x.getType()))
    return b.create<arith::MinimumFOp>(l, x, y);
  return uns ? Value(b.create<arith::MinUIOp>(l, x, y))
             : Value(b.create<arith::MinSIOp>(l, x, y));
}

/// Elementwise map of one tensor.
Value mapTensor(OpBuilder &b, Location loc, Value v,
                std::function<Value(OpBuilder &, Location, Value)> f) {
  return elementwise(b, loc, tensorType(v), v,
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       return f(nb, nl, a[0]);
                     });
}

template <typename OpT> struct ReduceLowering : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = tensorType(x);
    Type et = type.getElementType();
    auto axes = toI64Vector(op.getAxes());
    int64_t count = 1;
    for (int64_t a : axes)
      count *= type.getDimSize(a);
    auto sum = [](OpBuilder &nb, Location nl, Value e, Value acc) {
      return addV(nb, nl, e, acc);
    };
    Operation *raw = op.getOperation();
    Value r;
    if (isa<ReduceSumOp, ReduceMeanOp>(raw)) {
      r = reduceOver(b, loc, x, axes, scalar(b, loc, et, 0), sum);
      if (isa<ReduceMeanOp>(raw))
        r = mapTensor(
            b, loc, r, [&](OpBuilder &nb, Location nl, Value v) -> Value {
              Value n = scalar(nb, nl, et, double(count));
              return isFloat(et) ? Value(nb.create<arith::DivFOp>(nl, v, n))
                                 : Value(nb.create<arith::DivSIOp>(nl, v, n));
            });
    } else if (isa<ReduceMaxOp>(raw)) {
      bool uns = isUnsignedOp(raw);
      r = reduceOver(b, loc, x, axes, lowest(b, loc, et, uns),
                     [uns](OpBuilder &nb, Location nl, Value e, Value acc) {
                       return maxV(nb, nl, e, acc, uns);
                     });
    } else if (isa<ReduceMinOp>(raw)) {
      bool uns = isUnsignedOp(raw);
      r = reduceOver(b, loc, x, axes, highest(b, loc, et, uns),
                     [uns](OpBuilder &nb, Location nl, Value e, Value acc) {
                       return minV(nb, nl, e, acc, uns);
                     });
    } else if (isa<ReduceProdOp>(raw)) {
      r = reduceOver(b, loc, x, axes, scalar(b, loc, et, 1),
                     [](OpBuilder &nb, Location nl, Value e, Value acc) {
                       return mulV(nb, nl, e, acc);
                     });
    } else if (isa<ReduceL1Op>(raw)) {
      r = reduceOver(b, loc, x, axes, scalar(b, loc, et, 0),
                     [](OpBuilder &nb, Location nl, Value e, Value acc) {
                       Value a = isFloat(e.getType())
                                     ? Value(nb.create<math::AbsFOp>(nl, e))
                                     : Value(nb.create<math::AbsIOp>(nl, e));
                       return addV(nb, nl, a, acc);
                     });
    } else if (isa<ReduceL2Op, ReduceSumSquareOp>(raw)) {
      r = reduceOver(b, loc, x, axes, scalar(b, loc, et, 0),
                     [](OpBuilder &nb, Location nl, Value e, Value acc) {
                       return addV(nb, nl, mulV(nb, nl, e, e), acc);
                     });
      if (isa<ReduceL2Op>(raw)) {
        if (!isFloat(et))
          return b.notifyMatchFailure(op, "integer ReduceL2");
        r = mapTensor(b, loc, r,
                      [](OpBuilder &nb, Location nl, Value v) -> Value {
                        return nb.create<math::SqrtOp>(nl, v);
                      });
      }
    } else if (isa<ReduceLogSumOp>(raw)) {
      r = reduceOver(b, loc, x, axes, scalar(b, loc, et, 0), sum);
      r = mapTensor(b, loc, r,
                    [](OpBuilder &nb, Location nl, Value v) -> Value {
                      return nb.create<math::LogOp>(nl, v);
                    });
    } else if (isa<ReduceLogSumExpOp>(raw)) {
      // max + log(sum(exp(x - max))), stable for large values.
      Value m = reduceOver(b, loc, x, axes, lowest(b, loc, et),
                           [](OpBuilder &nb, Location nl, Value e, Value acc) {
                             return maxV(nb, nl, e, acc);
                           });
      // An all -inf slice keeps max -inf; use 0 there so x - max stays -inf.
      Value safeMax = mapTensor(
          b, loc, m, [&](OpBuilder &nb, Location nl, Value v) -> Value {
            Value isInf = nb.create<arith::CmpFOp>(
                nl, arith::CmpFPredicate::OEQ, v, lowest(nb, nl, et));
            return nb.create<arith::SelectOp>(nl, isInf, scalar(nb, nl, et, 0),
                                              v);
          });
      Value mk = reshape(b, loc, safeMax, keptShape(type.getShape(), axes));
      Value shifted =
          elementwise(b, loc, type, ValueRange{x, mk},
                      [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                        Value d = nb.create<arith::SubFOp>(nl, a[0], a[1]);
                        return nb.create<math::ExpOp>(nl, d);
                      });
      Value s = reduceOver(b, loc, shifted, axes, scalar(b, loc, et, 0), sum);
      r = elementwise(b, loc, tensorType(s), ValueRange{s, safeMax},
                      [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                        Value lg = nb.create<math::LogOp>(nl, a[0]);
                        return nb.create<arith::AddFOp>(nl, lg, a[1]);
                      });
    } else {
      return failure();
    }
    auto outType = rtype(op);
    b.replaceOp(op, reshape(b, loc, r, outType.getShape()));
    return success();
  }
};

template <typename OpT> struct ArgReduceLowering : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = tensorType(x);
    Type et = type.getElementType();
    int64_t axis = op.getAxis(), rank = type.getRank();
    bool isMax = isa<ArgMaxOp>(op.getOperation());
    bool last = op.getSelectLastIndex();
    bool uns = isUnsignedOp(op.getOperation());
    SmallVector<int64_t> outShape;
    SmallVector<AffineExpr> outExprs, inExprs(rank);
    int64_t pos = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis)
        continue;
      inExprs[d] = b.getAffineDimExpr(pos);
      outExprs.push_back(b.getAffineDimExpr(pos++));
      outShape.push_back(type.getDimSize(d));
    }
    inExprs[axis] = b.getAffineDimExpr(rank - 1);
    auto valType = RankedTensorType::get(outShape, et);
    auto idxType = RankedTensorType::get(outShape, b.getI64Type());
    Value vals =
        filled(b, loc, valType,
               isMax ? lowest(b, loc, et, uns) : highest(b, loc, et, uns));
    Value idxs = filled(b, loc, idxType, scalar(b, loc, b.getI64Type(), 0));
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, b.getContext());
    auto generic = b.create<linalg::GenericOp>(
        loc, TypeRange{valType, idxType}, ValueRange{x}, ValueRange{vals, idxs},
        SmallVector<AffineMap>{AffineMap::get(rank, 0, inExprs, b.getContext()),
                               outMap, outMap},
        iterators(rank - 1, 1), [&](OpBuilder &nb, Location nl, ValueRange a) {
          Value i = nb.create<arith::IndexCastOp>(
              nl, nb.getI64Type(), nb.create<linalg::IndexOp>(nl, rank - 1));
          Value better;
          if (isFloat(et)) {
            auto pred = isMax ? (last ? arith::CmpFPredicate::OGE
                                      : arith::CmpFPredicate::OGT)
                              : (last ? arith::CmpFPredicate::OLE
                                      : arith::CmpFPredicate::OLT);
            better = nb.create<arith::CmpFOp>(nl, pred, a[0], a[1]);
          } else {
            using P = arith::CmpIPredicate;
            auto pred = isMax ? (last ? (uns ? P::uge : P::sge)
                                      : (uns ? P::ugt : P::sgt))
                              : (last ? (uns ? P::ule : P::sle)
                                      : (uns ? P::ult : P::slt));
            better = nb.create<arith::CmpIOp>(nl, pred, a[0], a[1]);
          }
          // The first element always wins (so all -inf / NaN rows give 0).
          Value first =
              nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::eq, i,
                                       scalar(nb, nl, nb.getI64Type(), 0));
          better = nb.create<arith::OrIOp>(nl, better, first);
          nb.create<linalg::YieldOp>(
              nl, ValueRange{nb.create<arith::SelectOp>(nl, better, a[0], a[1]),
                             nb.create<arith::SelectOp>(nl, better, i, a[2])});
        });
    auto outType = rtype(op);
    b.replaceOp(op, reshape(b, loc, generic.getResult(1), outType.getShape()));
    return success();
  }
};

/// softmax / log_softmax / hardmax along one axis.
template <typename OpT> struct SoftmaxLowering : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = tensorType(x);
    Type et = type.getElementType();
    SmallVector<int64_t> axes{int64_t(op.getAxis())};
    auto kept = keptShape(type.getShape(), axes);
    Value m = reduceOver(b, loc, x, axes, lowest(b, loc, et),
                         [](OpBuilder &nb, Location nl, Value e, Value acc) {
                           return maxV(nb, nl, e, acc);
                         });
    Value mk = reshape(b, loc, m, kept);
    Operation *raw = op.getOperation();
    Value shifted =
        elementwise(b, loc, type, ValueRange{x, mk},
                    [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                      return nb.create<arith::SubFOp>(nl, a[0], a[1]);
                    });
    Value e = mapTensor(b, loc, shifted,
                        [](OpBuilder &nb, Location nl, Value v) -> Value {
                          return nb.create<math::ExpOp>(nl, v);
                        });
    Value s = reduceOver(b, loc, e, axes, scalar(b, loc, et, 0),
                         [](OpBuilder &nb, Location nl, Value v, Value acc) {
                           return addV(nb, nl, v, acc);
                         });
    Value sk = reshape(b, loc, s, kept);
    Value r;
    if (isa<LogSoftmaxOp>(raw))
      r = elementwise(b, loc, type, ValueRange{shifted, sk},
                      [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                        Value lg = nb.create<math::LogOp>(nl, a[1]);
                        return nb.create<arith::SubFOp>(nl, a[0], lg);
                      });
    else
      r = elementwise(b, loc, type, ValueRange{e, sk},
                      [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                        return nb.create<arith::DivFOp>(nl, a[0], a[1]);
                      });
    b.replaceOp(op, r);
    return success();
  }
};

/// hardmax: 1 where the index along the axis is the first arg-max, else 0.
/// Emits ign.arg_max, which the conversion then lowers too.
struct HardmaxLowering : OpRewritePattern<HardmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(HardmaxOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    int64_t axis = op.getAxis();
    SmallVector<int64_t> kept(type.getShape());
    kept[axis] = 1;
    Value am =
        b.create<ArgMaxOp>(loc, RankedTensorType::get(kept, b.getI64Type()),
                           op.getInput(), axis, true, false);
    Type et = type.getElementType();
    Value r = elementwise(
        b, loc, type, ValueRange{am},
        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value i = nb.create<arith::IndexCastOp>(
              nl, nb.getI64Type(), nb.create<linalg::IndexOp>(nl, axis));
          Value eq =
              nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::eq, i, a[0]);
          return nb.create<arith::SelectOp>(nl, eq, scalar(nb, nl, et, 1),
                                            scalar(nb, nl, et, 0));
        });
    b.replaceOp(op, r);
    return success();
  }
};

/// Along an axis longer than this, cumsum runs as one pass with a running
/// sum (linear) instead of a masked sum per element (vectorizable, but
/// quadratic in the axis).
constexpr int64_t kCumSumMaskedLimit = 16;

/// cumsum as a loop nest with the axis innermost, carrying the running sum
/// (reset where each line along the axis starts).
Value cumSumByScan(PatternRewriter &b, CumSumOp op) {
  Location loc = op.getLoc();
  auto type = tensorType(op.getInput());
  int64_t rank = type.getRank(), axis = op.getAxis(), n = type.getDimSize(axis);
  Type et = type.getElementType();
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t d = 0; d <= rank; ++d) // the other dims, then the axis
    if (d != axis) {
      int64_t dim = type.getDimSize(d == rank ? axis : d);
      lbs.push_back(b.create<arith::ConstantIndexOp>(loc, 0));
      ubs.push_back(b.create<arith::ConstantIndexOp>(loc, dim));
      steps.push_back(b.create<arith::ConstantIndexOp>(loc, 1));
    }
  Value zero = scalar(b, loc, et, 0);
  auto nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps,
      ValueRange{b.create<tensor::EmptyOp>(loc, type.getShape(), et), zero},
      [&](OpBuilder &nb, Location nl, ValueRange iv,
          ValueRange acc) -> scf::ValueVector {
        Value t = iv.back();
        SmallVector<Value> at(iv.drop_back());
        Value i = op.getReverse()
                      ? nb.create<arith::SubIOp>(
                            nl, nb.create<arith::ConstantIndexOp>(nl, n - 1), t)
                      : t;
        at.insert(at.begin() + axis, i);
        Value first =
            nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::eq, t,
                                     nb.create<arith::ConstantIndexOp>(nl, 0));
        Value running = nb.create<arith::SelectOp>(nl, first, zero, acc[1]);
        Value x = nb.create<tensor::ExtractOp>(nl, op.getInput(), at);
        Value next = addV(nb, nl, running, x);
        Value out = nb.create<tensor::InsertOp>(
            nl, op.getExclusive() ? running : next, acc[0], at);
        return {out, next};
      });
  return nest.results.front();
}

/// cumsum as out[i] = sum over j of x[j] masked by (j <= i), along the axis
/// (exclusive: j < i; reverse: j >= i): short axes; cumSumByScan otherwise.
struct CumSumLowering : OpRewritePattern<CumSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CumSumOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    int64_t rank = type.getRank(), axis = op.getAxis();
    Type et = type.getElementType();
    bool exclusive = op.getExclusive(), reverse = op.getReverse();
    if (type.getDimSize(axis) > kCumSumMaskedLimit &&
        type.getNumElements() > 0) {
      b.replaceOp(op, cumSumByScan(b, op));
      return success();
    }
    SmallVector<AffineExpr> inExprs, outExprs;
    for (int64_t d = 0; d < rank; ++d) {
      outExprs.push_back(b.getAffineDimExpr(d));
      inExprs.push_back(b.getAffineDimExpr(d == axis ? rank : d));
    }
    Value acc = filled(b, loc, type, scalar(b, loc, et, 0));
    auto generic = b.create<linalg::GenericOp>(
        loc, TypeRange{type}, ValueRange{op.getInput()}, ValueRange{acc},
        SmallVector<AffineMap>{
            AffineMap::get(rank + 1, 0, inExprs, b.getContext()),
            AffineMap::get(rank + 1, 0, outExprs, b.getContext())},
        iterators(rank, 1), [&](OpBuilder &nb, Location nl, ValueRange a) {
          Value i = nb.create<linalg::IndexOp>(nl, axis);
          Value j = nb.create<linalg::IndexOp>(nl, rank);
          auto pred = reverse ? (exclusive ? arith::CmpIPredicate::ugt
                                           : arith::CmpIPredicate::uge)
                              : (exclusive ? arith::CmpIPredicate::ult
                                           : arith::CmpIPredicate::ule);
          Value in = nb.create<arith::CmpIOp>(nl, pred, j, i);
          Value sum = addV(nb, nl, a[0], a[1]);
          nb.create<linalg::YieldOp>(
              nl, Value(nb.create<arith::SelectOp>(nl, in, sum, a[1])));
        });
    b.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateReductionPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ReduceLowering<ReduceSumOp>, ReduceLowering<ReduceMeanOp>,
               ReduceLowering<ReduceMaxOp>, ReduceLowering<ReduceMinOp>,
               ReduceLowering<ReduceProdOp>, ReduceLowering<ReduceL1Op>,
               ReduceLowering<ReduceL2Op>, ReduceLowering<ReduceLogSumOp>,
               ReduceLowering<ReduceLogSumExpOp>,
               ReduceLowering<ReduceSumSquareOp>>(ctx);
  patterns.add<ArgReduceLowering<ArgMaxOp>, ArgReduceLowering<ArgMinOp>>(ctx);
  patterns.add<SoftmaxLowering<SoftmaxOp>, SoftmaxLowering<LogSoftmaxOp>,
               HardmaxLowering, CumSumLowering>(ctx);
}

} // namespace ign::lowering
