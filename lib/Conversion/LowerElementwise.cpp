//===- LowerElementwise.cpp - unary, binary, select, cast -> linalg.generic
//===//
//
// Every elementwise ign op becomes one broadcasting linalg.generic whose body
// is the scalar formula below (ONNX's definition of the operator).
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace ign::lowering {
namespace {

Value cmpF(OpBuilder &b, Location l, arith::CmpFPredicate p, Value x, Value y) {
  return b.create<arith::CmpFOp>(l, p, x, y);
}
Value cmpI(OpBuilder &b, Location l, arith::CmpIPredicate p, Value x, Value y) {
  return b.create<arith::CmpIOp>(l, p, x, y);
}
Value sel(OpBuilder &b, Location l, Value c, Value x, Value y) {
  return b.create<arith::SelectOp>(l, c, x, y);
}
double f32(llvm::APFloat v) { return v.convertToDouble(); }

/// The scalar formulas of the elementwise ops (ONNX's definitions), built in
/// the operands' element type: float arithmetic for floats, signed or unsigned
/// integer arithmetic otherwise.
class ScalarBody {
public:
  ScalarBody(Operation *op, OpBuilder &b, Location l, ValueRange a)
      : op(op), b(b), l(l), a(a), t(a.size() ? a[0].getType() : Type()),
        fl(t && isFloat(t)), uns(!fl && isUnsignedOp(op)) {}

  /// The scalar value of one element of `op`, or null for an op that is not
  /// elementwise.
  Value build() {
    if (Value v = unaryMath())
      return v;
    if (Value v = activation())
      return v;
    if (Value v = testOrCast())
      return v;
    return binary();
  }

private:
  using P = arith::CmpIPredicate;

  Value unaryMath();
  Value activation();
  Value testOrCast();
  Value binary();

  // Signed or unsigned flavour of an integer predicate.
  P ip(P s, P u) const { return uns ? u : s; }
  Value c(double v) { return scalar(b, l, t, v); }
  Value add(Value x, Value y) {
    return fl ? Value(b.create<arith::AddFOp>(l, x, y))
              : Value(b.create<arith::AddIOp>(l, x, y));
  }
  Value sub(Value x, Value y) {
    return fl ? Value(b.create<arith::SubFOp>(l, x, y))
              : Value(b.create<arith::SubIOp>(l, x, y));
  }
  Value mul(Value x, Value y) {
    return fl ? Value(b.create<arith::MulFOp>(l, x, y))
              : Value(b.create<arith::MulIOp>(l, x, y));
  }
  Value div(Value x, Value y) {
    if (fl)
      return b.create<arith::DivFOp>(l, x, y);
    return uns ? Value(b.create<arith::DivUIOp>(l, x, y))
               : Value(b.create<arith::DivSIOp>(l, x, y));
  }
  Value maxV(Value x, Value y) {
    if (fl)
      return b.create<arith::MaximumFOp>(l, x, y);
    return uns ? Value(b.create<arith::MaxUIOp>(l, x, y))
               : Value(b.create<arith::MaxSIOp>(l, x, y));
  }
  Value minV(Value x, Value y) {
    if (fl)
      return b.create<arith::MinimumFOp>(l, x, y);
    return uns ? Value(b.create<arith::MinUIOp>(l, x, y))
               : Value(b.create<arith::MinSIOp>(l, x, y));
  }
  Value exp(Value x) { return b.create<math::ExpOp>(l, x); }
  Value lt0(Value x) {
    if (uns)
      return scalar(b, l, b.getI1Type(), 0);
    return fl ? cmpF(b, l, arith::CmpFPredicate::OLT, x, c(0))
              : cmpI(b, l, arith::CmpIPredicate::slt, x, c(0));
  }
  Value softplus(Value x) {
    // log(1 + exp(x)), computed as max(x, 0) + log1p(exp(-|x|)) to stay
    // finite for large |x|.
    Value absx = b.create<math::AbsFOp>(l, x);
    Value e = exp(b.create<arith::NegFOp>(l, absx));
    return add(maxV(x, c(0)), b.create<math::Log1pOp>(l, e));
  }
  Value clamp01(Value x) { return minV(maxV(x, c(0)), c(1)); }
  /// x clamped to [lo, hi] by compares and selects: a NaN stays NaN (it
  /// compares false), and on x86 each select is one vminps / vmaxps, where
  /// arith.minimumf's signed-zero and NaN rules take several instructions.
  Value clampBySelect(Value x, double lo, double hi) {
    Value low =
        sel(b, l, cmpF(b, l, arith::CmpFPredicate::OLT, x, c(lo)), c(lo), x);
    return sel(b, l, cmpF(b, l, arith::CmpFPredicate::OGT, low, c(hi)), c(hi),
               low);
  }
  /// c[0] * x^(n-1) + ... + c[n-1], by Horner's rule.
  Value polynomial(Value x, llvm::ArrayRef<double> coefficients) {
    Value p = c(coefficients.front());
    for (double k : coefficients.drop_front())
      p = add(mul(p, x), c(k));
    return p;
  }
  /// 1 / (1 + exp(-x)). In f32 as onnxruntime (MLAS) and Eigen compute it,
  /// with no exp: x clamped to [-18, 18], then x p(x^2) / q(x^2) + 0.5 with
  /// Eigen's minimax coefficients. Within 1.3e-7 of the exact value
  /// everywhere (relative error grows where sigmoid(x) < 1e-6, x < -14, as
  /// onnxruntime's does); the multiply-adds of p and q are independent, so
  /// it takes about half the time of exp's range reduction, polynomial and
  /// scaling (a SiLU over 1.2M elements on a Zen 1 core: 2.15 -> 1.42 ms;
  /// docs/host-schedule.md, "Math functions"). Other types keep the exact
  /// formula (the coefficients underflow in f16; f64 needs more terms).
  Value sigmoid(Value x) {
    if (!t.isF32())
      return div(c(1), add(c(1), exp(b.create<arith::NegFOp>(l, x))));
    Value v = clampBySelect(x, -18, 18);
    Value v2 = mul(v, v);
    Value p = mul(polynomial(v2, {4.37031012579801e-11, 1.15627324459942e-07,
                                  6.08574864600143e-05, 8.51377133304701e-03,
                                  2.48287947061529e-01}),
                  v);
    Value q = polynomial(v2, {6.10247389755681e-13, 5.76102136993427e-09,
                              6.29106785017040e-06, 1.70198817374094e-03,
                              1.16817656904453e-01, 9.93151921023180e-01});
    return clampBySelect(add(div(p, q), c(0.5)), 0, 1);
  }

  Operation *op;
  OpBuilder &b;
  Location l;
  ValueRange a;
  Type t;
  bool fl, uns;
};

/// Unary arithmetic and math functions.
Value ScalarBody::unaryMath() {
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](AbsOp) -> Value {
        if (uns)
          return a[0];
        return fl ? Value(b.create<math::AbsFOp>(l, a[0]))
                  : Value(b.create<math::AbsIOp>(l, a[0]));
      })
      .Case([&](NegOp) -> Value {
        return fl ? Value(b.create<arith::NegFOp>(l, a[0])) : sub(c(0), a[0]);
      })
      .Case([&](SignOp) -> Value {
        Value pos = fl ? cmpF(b, l, arith::CmpFPredicate::OGT, a[0], c(0))
                       : cmpI(b, l, ip(P::sgt, P::ugt), a[0], c(0));
        return sel(b, l, pos, c(1), sel(b, l, lt0(a[0]), c(-1), c(0)));
      })
      .Case([&](ReluOp) -> Value { return maxV(a[0], c(0)); })
      .Case([&](NotOp) -> Value {
        return b.create<arith::XOrIOp>(l, a[0], c(1));
      })
      .Case([&](ExpOp) { return exp(a[0]); })
      .Case([&](LogOp) -> Value { return b.create<math::LogOp>(l, a[0]); })
      .Case([&](SqrtOp) -> Value { return b.create<math::SqrtOp>(l, a[0]); })
      .Case([&](ReciprocalOp) { return div(c(1), a[0]); })
      .Case([&](FloorOp) -> Value { return b.create<math::FloorOp>(l, a[0]); })
      .Case([&](CeilOp) -> Value { return b.create<math::CeilOp>(l, a[0]); })
      .Case([&](RoundOp) -> Value {
        return b.create<math::RoundEvenOp>(l, a[0]);
      })
      .Case([&](SinOp) -> Value { return b.create<math::SinOp>(l, a[0]); })
      .Case([&](CosOp) -> Value { return b.create<math::CosOp>(l, a[0]); })
      .Case([&](TanOp) -> Value { return b.create<math::TanOp>(l, a[0]); })
      .Case([&](AsinOp) -> Value { return b.create<math::AsinOp>(l, a[0]); })
      .Case([&](AcosOp) -> Value { return b.create<math::AcosOp>(l, a[0]); })
      .Case([&](AtanOp) -> Value { return b.create<math::AtanOp>(l, a[0]); })
      .Case([&](SinhOp) -> Value { return b.create<math::SinhOp>(l, a[0]); })
      .Case([&](CoshOp) -> Value { return b.create<math::CoshOp>(l, a[0]); })
      .Case([&](AsinhOp) -> Value { return b.create<math::AsinhOp>(l, a[0]); })
      .Case([&](AcoshOp) -> Value { return b.create<math::AcoshOp>(l, a[0]); })
      .Case([&](AtanhOp) -> Value { return b.create<math::AtanhOp>(l, a[0]); })
      .Case([&](TanhOp) -> Value { return b.create<math::TanhOp>(l, a[0]); })
      .Case([&](ErfOp) -> Value { return b.create<math::ErfOp>(l, a[0]); })
      .Default([](Operation *) { return Value(); });
}

/// Activation functions and Clip.
Value ScalarBody::activation() {
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](SigmoidOp) { return sigmoid(a[0]); })
      .Case([&](SoftsignOp) {
        return div(a[0], add(c(1), b.create<math::AbsFOp>(l, a[0])));
      })
      .Case([&](SoftplusOp) { return softplus(a[0]); })
      .Case([&](MishOp) {
        return mul(a[0], b.create<math::TanhOp>(l, softplus(a[0])));
      })
      .Case([&](HardSwishOp) {
        return mul(a[0], clamp01(add(mul(a[0], c(1.0 / 6)), c(0.5))));
      })
      .Case([&](GeluOp g) -> Value {
        Value x = a[0];
        if (g.getApproximate() == "tanh") {
          Value x3 = mul(mul(x, x), x);
          Value inner =
              mul(c(std::sqrt(2.0 / M_PI)), add(x, mul(c(0.044715), x3)));
          return mul(mul(c(0.5), x),
                     add(c(1), b.create<math::TanhOp>(l, inner)));
        }
        Value e = b.create<math::ErfOp>(l, mul(x, c(M_SQRT1_2)));
        return mul(mul(c(0.5), x), add(c(1), e));
      })
      .Case([&](HardSigmoidOp h) {
        return clamp01(
            add(mul(a[0], c(f32(h.getAlpha()))), c(f32(h.getBeta()))));
      })
      .Case([&](LeakyReluOp r) {
        return sel(b, l, lt0(a[0]), mul(a[0], c(f32(r.getAlpha()))), a[0]);
      })
      .Case([&](EluOp r) {
        Value neg = mul(c(f32(r.getAlpha())), sub(exp(a[0]), c(1)));
        return sel(b, l, lt0(a[0]), neg, a[0]);
      })
      .Case([&](SeluOp r) {
        Value neg = mul(c(f32(r.getAlpha())), sub(exp(a[0]), c(1)));
        Value le0 = cmpF(b, l, arith::CmpFPredicate::OLE, a[0], c(0));
        return mul(c(f32(r.getGamma())), sel(b, l, le0, neg, a[0]));
      })
      .Case([&](CeluOp r) {
        double alpha = f32(r.getAlpha());
        Value neg = mul(c(alpha), sub(exp(div(a[0], c(alpha))), c(1)));
        return add(maxV(a[0], c(0)), minV(neg, c(0)));
      })
      .Case([&](ThresholdedReluOp r) {
        Value gt =
            cmpF(b, l, arith::CmpFPredicate::OGT, a[0], c(f32(r.getAlpha())));
        return sel(b, l, gt, a[0], c(0));
      })
      .Case([&](ClipOp clip) {
        Value x = a[0];
        if (auto lo = clip.getMinAttr())
          x = maxV(x, c(lo.getValueAsDouble()));
        if (auto hi = clip.getMaxAttr())
          x = minV(x, c(hi.getValueAsDouble()));
        return x;
      })
      .Default([](Operation *) { return Value(); });
}

/// NaN and infinity tests, casts.
Value ScalarBody::testOrCast() {
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](IsNaNOp) {
        return cmpF(b, l, arith::CmpFPredicate::UNO, a[0], a[0]);
      })
      .Case([&](IsInfOp i) -> Value {
        Value pos =
            cmpF(b, l, arith::CmpFPredicate::OEQ, a[0], highest(b, l, t));
        Value neg =
            cmpF(b, l, arith::CmpFPredicate::OEQ, a[0], lowest(b, l, t));
        Value no = scalar(b, l, b.getI1Type(), 0);
        Value r = i.getDetectPositive() ? pos : no;
        return b.create<arith::OrIOp>(l, r, i.getDetectNegative() ? neg : no);
      })
      .Case([&](CastOp cast) {
        return castScalar(b, l, a[0], cast.getTo(), uns,
                          op->hasAttr(kUnsignedResultAttr));
      })
      .Default([](Operation *) { return Value(); });
}

/// Binary arithmetic, logic, comparisons and Select.
Value ScalarBody::binary() {
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](AddOp) { return add(a[0], a[1]); })
      .Case([&](SubOp) { return sub(a[0], a[1]); })
      .Case([&](MulOp) { return mul(a[0], a[1]); })
      .Case([&](DivOp) { return div(a[0], a[1]); })
      .Case([&](PowOp) -> Value {
        if (fl)
          return b.create<math::PowFOp>(l, a[0], a[1]);
        return b.create<math::IPowIOp>(l, a[0], a[1]);
      })
      .Case([&](ModOp m) -> Value {
        if (fl)
          return b.create<arith::RemFOp>(l, a[0], a[1]);
        if (uns)
          return b.create<arith::RemUIOp>(l, a[0], a[1]);
        Value r = b.create<arith::RemSIOp>(l, a[0], a[1]);
        if (m.getFmod())
          return r;
        // Python-style: the result takes the divisor's sign.
        Value nonzero = cmpI(b, l, arith::CmpIPredicate::ne, r, c(0));
        Value signDiffers = b.create<arith::XOrIOp>(l, lt0(r), lt0(a[1]));
        Value fix = b.create<arith::AndIOp>(l, nonzero, signDiffers);
        return sel(b, l, fix, add(r, a[1]), r);
      })
      .Case([&](MaxOp) { return maxV(a[0], a[1]); })
      .Case([&](MinOp) { return minV(a[0], a[1]); })
      .Case([&](AndOp) -> Value {
        return b.create<arith::AndIOp>(l, a[0], a[1]);
      })
      .Case(
          [&](OrOp) -> Value { return b.create<arith::OrIOp>(l, a[0], a[1]); })
      .Case([&](XorOp) -> Value {
        return b.create<arith::XOrIOp>(l, a[0], a[1]);
      })
      .Case([&](BitShiftOp s) -> Value {
        Value shifted = s.getLeft()
                            ? Value(b.create<arith::ShLIOp>(l, a[0], a[1]))
                            : Value(b.create<arith::ShRUIOp>(l, a[0], a[1]));
        // arith's shifts by the width or more are poison; ONNX's give 0.
        Value tooFar = cmpI(b, l, P::uge, a[1], c(t.getIntOrFloatBitWidth()));
        return sel(b, l, tooFar, c(0), shifted);
      })
      .Case(
          [&](PReluOp) { return sel(b, l, lt0(a[0]), mul(a[0], a[1]), a[0]); })
      .Case([&](EqualOp) {
        return fl ? cmpF(b, l, arith::CmpFPredicate::OEQ, a[0], a[1])
                  : cmpI(b, l, arith::CmpIPredicate::eq, a[0], a[1]);
      })
      .Case([&](LessOp) {
        return fl ? cmpF(b, l, arith::CmpFPredicate::OLT, a[0], a[1])
                  : cmpI(b, l, ip(P::slt, P::ult), a[0], a[1]);
      })
      .Case([&](LessEqualOp) {
        return fl ? cmpF(b, l, arith::CmpFPredicate::OLE, a[0], a[1])
                  : cmpI(b, l, ip(P::sle, P::ule), a[0], a[1]);
      })
      .Case([&](GreaterOp) {
        return fl ? cmpF(b, l, arith::CmpFPredicate::OGT, a[0], a[1])
                  : cmpI(b, l, ip(P::sgt, P::ugt), a[0], a[1]);
      })
      .Case([&](GreaterEqualOp) {
        return fl ? cmpF(b, l, arith::CmpFPredicate::OGE, a[0], a[1])
                  : cmpI(b, l, ip(P::sge, P::uge), a[0], a[1]);
      })
      .Case([&](SelectOp) { return sel(b, l, a[0], a[1], a[2]); })
      .Default([](Operation *) { return Value(); });
}

/// The scalar value of one element of `op` from its operands' elements.
Value scalarBody(Operation *op, OpBuilder &b, Location l, ValueRange a) {
  return ScalarBody(op, b, l, a).build();
}

template <typename OpT> struct ElementwiseLowering : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    auto outType = cast<RankedTensorType>(op->getResult(0).getType());
    Operation *raw = op.getOperation();
    Value result =
        elementwise(rewriter, op.getLoc(), outType, raw->getOperands(),
                    [&](OpBuilder &b, Location l, ValueRange args) {
                      return scalarBody(raw, b, l, args);
                    });
    rewriter.replaceOp(op, result);
    return success();
  }
};

template <typename... OpTs> void addElementwise(RewritePatternSet &patterns) {
  (patterns.add<ElementwiseLowering<OpTs>>(patterns.getContext()), ...);
}

} // namespace

void populateElementwisePatterns(RewritePatternSet &patterns) {
  addElementwise<AbsOp, NegOp, SignOp, ReluOp, NotOp, ExpOp, LogOp, SqrtOp,
                 ReciprocalOp, FloorOp, CeilOp, RoundOp, SinOp, CosOp, TanOp,
                 AsinOp, AcosOp, AtanOp, SinhOp, CoshOp, AsinhOp, AcoshOp,
                 AtanhOp, TanhOp, ErfOp, SigmoidOp, SoftsignOp, SoftplusOp,
                 MishOp, HardSwishOp, GeluOp, HardSigmoidOp, LeakyReluOp, EluOp,
                 SeluOp, CeluOp, ThresholdedReluOp, ClipOp, IsNaNOp, IsInfOp,
                 CastOp>(patterns);
  addElementwise<AddOp, SubOp, MulOp, DivOp, PowOp, ModOp, MaxOp, MinOp, AndOp,
                 OrOp, XorOp, BitShiftOp, PReluOp, EqualOp, LessOp, LessEqualOp,
                 GreaterOp, GreaterEqualOp, SelectOp>(patterns);
}

} // namespace ign::lowering
