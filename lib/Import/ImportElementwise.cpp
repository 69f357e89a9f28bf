//===- ImportElementwise.cpp - unary, binary, variadic and select nodes ---===//

#include "ImporterImpl.h"

#include <cmath>

using namespace mlir;

namespace ign::import {
namespace {

using FloatFn = std::function<double(double, double)>;
using IntFn = std::function<int64_t(int64_t, int64_t)>;

/// Elementwise host evaluation with numpy broadcasting.
std::optional<HostTensor> hostBroadcast(
    llvm::ArrayRef<const HostTensor *> ins, Type resultElement,
    const std::function<void(HostTensor &, int64_t, llvm::ArrayRef<int64_t>)>
        &apply) {
  llvm::SmallVector<int64_t> shape;
  for (const HostTensor *t : ins) {
    auto b = broadcastShapes(shape, t->shape);
    if (!b)
      return std::nullopt;
    shape = *b;
  }
  HostTensor out;
  out.shape = shape;
  out.elementType = resultElement;
  if (out.numElements() > kHostFoldLimit)
    return std::nullopt;
  out.allocate();
  auto outStrides = stridesOf(shape);
  llvm::SmallVector<llvm::SmallVector<int64_t>> inStrides;
  for (const HostTensor *t : ins) {
    // Strides of the input aligned to the output rank, 0 on broadcast dims.
    auto s = stridesOf(t->shape);
    llvm::SmallVector<int64_t> aligned(shape.size(), 0);
    size_t offset = shape.size() - t->shape.size();
    for (size_t d = 0; d < t->shape.size(); ++d)
      aligned[d + offset] = t->shape[d] == 1 ? 0 : s[d];
    inStrides.push_back(aligned);
  }
  llvm::SmallVector<int64_t> idx(ins.size());
  for (int64_t i = 0, n = out.numElements(); i < n; ++i) {
    int64_t rem = i;
    std::fill(idx.begin(), idx.end(), 0);
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t coord = rem / outStrides[d];
      rem %= outStrides[d];
      for (size_t k = 0; k < ins.size(); ++k)
        idx[k] += coord * inStrides[k][d];
    }
    apply(out, i, idx);
  }
  return out;
}

int64_t floorDivInt(int64_t a, int64_t b) { return b == 0 ? 0 : a / b; }
int64_t pyMod(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

struct BinarySpec {
  std::function<FailureOr<Value>(NodeImporter &, Value, Value)> build;
  FloatFn f;
  IntFn i;
  bool predicate = false;
};

template <typename OpT>
BinarySpec binary(FloatFn f, IntFn i, bool predicate = false) {
  return {[](NodeImporter &n, Value a, Value b) {
            return n.createValue<OpT>({a, b});
          },
          std::move(f), std::move(i), predicate};
}

/// Before opset 7, `broadcast=1` aligned the rhs at `axis` of the lhs
/// (suffix alignment without an axis); reshapes the rhs into numpy form.
FailureOr<Value> legacyBroadcastRhs(NodeImporter &n, Value lhs, Value rhs) {
  auto broadcast = n.attrInt("broadcast", 0);
  auto axis = n.attrInt("axis", -1);
  if (failed(broadcast) || failed(axis))
    return failure();
  auto lt = cast<RankedTensorType>(lhs.getType());
  auto rt = cast<RankedTensorType>(rhs.getType());
  if (!*broadcast || *axis < 0)
    return rhs;
  int64_t a = *axis, lr = lt.getRank(), rr = rt.getRank();
  if (a + rr > lr)
    return n.error() << "legacy broadcast axis " << a << " does not fit";
  llvm::SmallVector<int64_t> shape(a, 1);
  llvm::append_range(shape, rt.getShape());
  shape.append(lr - a - rr, 1);
  return n.reshape(rhs, shape);
}

/// `spec` applied on the host to two known tensors of one element type;
/// nullopt when it has no host form for that type or the result is large.
std::optional<HostTensor> foldBinary(const HostTensor &a, const HostTensor &b,
                                     const BinarySpec &spec, MLIRContext *ctx) {
  bool fl = a.isFloat();
  if (a.elementType != b.elementType || (fl ? !spec.f : !spec.i))
    return std::nullopt;
  Type element =
      spec.predicate ? Type(IntegerType::get(ctx, 1)) : a.elementType;
  return hostBroadcast(
      {&a, &b}, element,
      [&](HostTensor &out, int64_t i, llvm::ArrayRef<int64_t> idx) {
        if (fl) {
          double r = spec.f(a.floats[idx[0]], b.floats[idx[1]]);
          out.set(i, r, saturatingInt(r));
        } else {
          int64_t r = spec.i(a.ints[idx[0]], b.ints[idx[1]]);
          out.set(i, double(r), out.wrapInt(r));
        }
      });
}

/// Folds on the host when both inputs are known, else builds the op.
LogicalResult importBinary(NodeImporter &n, const BinarySpec &spec,
                           size_t lhsIdx = 0, size_t rhsIdx = 1) {
  const HostTensor *a = n.constInput(lhsIdx), *b = n.constInput(rhsIdx);
  bool legacy = n.opset() < 7 && n.hasAttr("broadcast");
  if (a && b && !legacy)
    if (auto folded = foldBinary(*a, *b, spec, n.ctx()))
      return n.setOutput(0, std::move(*folded));
  auto lhs = n.input(lhsIdx), rhs = n.input(rhsIdx);
  if (failed(lhs) || failed(rhs))
    return failure();
  if (legacy) {
    rhs = legacyBroadcastRhs(n, *lhs, *rhs);
    if (failed(rhs))
      return failure();
  }
  auto v = spec.build(n, *lhs, *rhs);
  if (failed(v))
    return failure();
  return n.setOutput(0, *v);
}

/// Sum/Max/Min/Mean over any number of inputs, as a chain of binary ops.
LogicalResult importVariadic(NodeImporter &n, const BinarySpec &spec,
                             bool mean) {
  if (n.numInputs() == 0)
    return n.error() << "needs at least one input";
  for (size_t i = 0; i < n.numInputs(); ++i)
    if (!n.hasInput(i))
      return n.error() << "input " << i
                       << " is empty (none of its inputs is optional)";
  if (n.allInputsConstant() && !mean) {
    std::optional<HostTensor> acc = *n.constInput(0);
    for (size_t i = 1; acc && i < n.numInputs(); ++i)
      acc = foldBinary(*acc, *n.constInput(i), spec, n.ctx());
    if (acc)
      return n.setOutput(0, std::move(*acc));
  }
  auto acc = n.input(0);
  if (failed(acc))
    return failure();
  Value result = *acc;
  for (size_t i = 1; i < n.numInputs(); ++i) {
    auto next = n.input(i);
    if (failed(next))
      return failure();
    auto v = spec.build(n, result, *next);
    if (failed(v))
      return failure();
    result = *v;
  }
  if (mean && n.numInputs() > 1) {
    auto type = cast<RankedTensorType>(result.getType());
    Value count = n.scalarConstant(type.getElementType(), n.numInputs());
    auto v = n.createValue<DivOp>({result, count});
    if (failed(v))
      return failure();
    result = *v;
  }
  return n.setOutput(0, result);
}

/// A unary op with no attributes, folded on the host when `f` is given.
template <typename OpT>
NodeHandler unary(std::function<double(double)> f = nullptr,
                  std::function<int64_t(int64_t)> g = nullptr) {
  return [f, g](NodeImporter &n) -> LogicalResult {
    if (const HostTensor *t = n.constInput(0);
        t && (t->isFloat() ? bool(f) : bool(g))) {
      HostTensor out = *t;
      for (int64_t i = 0; i < out.numElements(); ++i) {
        if (out.isFloat())
          out.floats[i] = f(t->floats[i]);
        else
          out.ints[i] = out.wrapInt(g(t->ints[i]));
      }
      return n.setOutput(0, std::move(out));
    }
    auto v = n.input(0);
    if (failed(v))
      return failure();
    auto r = n.createValue<OpT>(*v);
    if (failed(r))
      return failure();
    return n.setOutput(0, *r);
  };
}

/// A unary op whose float attributes are read with defaults.
template <typename OpT>
NodeHandler unaryWithFloats(std::vector<std::pair<const char *, float>> attrs) {
  return [attrs](NodeImporter &n) -> LogicalResult {
    llvm::SmallVector<NamedAttribute> named;
    for (auto [name, dflt] : attrs) {
      auto value = n.attrFloat(name, dflt);
      if (failed(value))
        return failure();
      named.push_back(n.namedF32(name, *value));
    }
    auto v = n.input(0);
    if (failed(v))
      return failure();
    auto r = n.createValue<OpT>(*v, named);
    if (failed(r))
      return failure();
    return n.setOutput(0, *r);
  };
}

LogicalResult castTo(NodeImporter &n, Type to) {
  if (!to)
    return n.error() << "cast to an unsupported element type";
  if (const HostTensor *t = n.constInput(0)) {
    HostTensor out;
    out.shape = t->shape;
    out.elementType = to;
    out.allocate();
    for (int64_t i = 0; i < t->numElements(); ++i) {
      double d = t->getDouble(i);
      if (out.isFloat())
        out.floats[i] = d;
      else if (to.isInteger(1))
        out.ints[i] = d != 0;
      else
        out.ints[i] = out.wrapInt(t->isFloat() ? saturatingInt(d) : t->ints[i]);
    }
    return n.setOutput(0, std::move(out));
  }
  auto v = n.input(0);
  if (failed(v))
    return failure();
  if (cast<RankedTensorType>(v->getType()).getElementType() == to)
    return n.setOutput(0, *v);
  auto r = n.createValue<CastOp>(*v, {n.named("to", TypeAttr::get(to))});
  if (failed(r))
    return failure();
  return n.setOutput(0, *r);
}

LogicalResult importIdentity(NodeImporter &n) {
  if (const HostTensor *t = n.constInput(0))
    return n.setOutput(0, *t);
  auto v = n.input(0);
  if (failed(v))
    return failure();
  return n.setOutput(0, *v);
}

LogicalResult importDropout(NodeImporter &n) {
  // Inference: the data passes through and the mask is all true. Training
  // mode (random dropout) is refused, as for BatchNormalization.
  bool training = false;
  if (n.opset() >= 12 && n.hasInput(2)) {
    auto mode = n.requireConstInput(2, "training_mode");
    if (failed(mode))
      return failure();
    training = (*mode)->numElements() > 0 && (*mode)->getInt(0) != 0;
  }
  if (training && n.hasInput(1)) {
    // A known ratio of 0 drops nothing: training mode is then the identity.
    const HostTensor *ratio = n.constInput(1);
    training = !ratio || ratio->numElements() != 1 || ratio->getDouble(0) != 0;
  }
  if (training)
    return n.error() << "training_mode=1 is not supported (inference only)";
  if (failed(importIdentity(n)))
    return failure();
  if (n.outputUsed(1)) {
    auto type = n.inputType(0);
    if (failed(type))
      return failure();
    auto mask = DenseElementsAttr::get(
        RankedTensorType::get(type->getShape(), n.builder().getI1Type()), true);
    auto c = n.createValue<ConstantOp>({}, {n.named("value", mask)});
    if (failed(c))
      return failure();
    return n.setOutput(1, *c);
  }
  return success();
}

LogicalResult importClip(NodeImporter &n) {
  auto x = n.input(0);
  if (failed(x))
    return failure();
  llvm::SmallVector<NamedAttribute> attrs;
  Value result = *x;
  if (n.opset() < 11) {
    if (n.hasAttr("min")) {
      auto v = n.attrFloat("min", 0);
      if (failed(v))
        return failure();
      attrs.push_back(n.named("min", n.builder().getF64FloatAttr(*v)));
    }
    if (n.hasAttr("max")) {
      auto v = n.attrFloat("max", 0);
      if (failed(v))
        return failure();
      attrs.push_back(n.named("max", n.builder().getF64FloatAttr(*v)));
    }
  } else {
    // Bounds are inputs: constant ones become attributes, run-time ones
    // become max/min ops.
    const char *names[] = {"min", "max"};
    for (size_t i = 1; i <= 2; ++i) {
      if (!n.hasInput(i))
        continue;
      if (const HostTensor *t = n.constInput(i)) {
        if (t->numElements() != 1)
          return n.error() << "Clip " << names[i - 1] << " must be a scalar";
        attrs.push_back(n.named(names[i - 1],
                                n.builder().getF64FloatAttr(t->getDouble(0))));
        continue;
      }
      auto bound = n.input(i);
      if (failed(bound))
        return failure();
      auto r = i == 1 ? n.createValue<MaxOp>({result, *bound})
                      : n.createValue<MinOp>({result, *bound});
      if (failed(r))
        return failure();
      result = *r;
    }
  }
  if (attrs.empty())
    return n.setOutput(0, result);
  auto r = n.createValue<ClipOp>(result, attrs);
  if (failed(r))
    return failure();
  return n.setOutput(0, *r);
}

LogicalResult importWhere(NodeImporter &n) {
  const HostTensor *c = n.constInput(0), *a = n.constInput(1),
                   *b = n.constInput(2);
  if (c && a && b && a->elementType == b->elementType) {
    auto folded = hostBroadcast(
        {c, a, b}, a->elementType,
        [&](HostTensor &out, int64_t i, llvm::ArrayRef<int64_t> idx) {
          const HostTensor *src = c->ints[idx[0]] ? a : b;
          int64_t k = c->ints[idx[0]] ? idx[1] : idx[2];
          out.set(i, src->isFloat() ? src->floats[k] : 0,
                  src->isFloat() ? 0 : src->ints[k]);
        });
    if (folded)
      return n.setOutput(0, std::move(*folded));
  }
  auto cond = n.input(0), lhs = n.input(1), rhs = n.input(2);
  if (failed(cond) || failed(lhs) || failed(rhs))
    return failure();
  auto r = n.createValue<SelectOp>({*cond, *lhs, *rhs});
  if (failed(r))
    return failure();
  return n.setOutput(0, *r);
}

/// Shrink: y = x + bias where x < -lambd, x - bias where x > lambd, else 0
/// (lambd and bias in the input's element type).
LogicalResult importShrink(NodeImporter &n) {
  auto type = n.inputType(0);
  auto lambd = n.attrFloat("lambd", 0.5f), bias = n.attrFloat("bias", 0.0f);
  auto x = n.input(0);
  if (failed(type) || failed(lambd) || failed(bias) || failed(x))
    return failure();
  Type element = type->getElementType();
  Value lo = n.scalarConstant(element, -*lambd),
        hi = n.scalarConstant(element, *lambd),
        b = n.scalarConstant(element, *bias),
        zero = n.scalarConstant(element, 0.0);
  auto below = n.createValue<LessOp>({*x, lo});
  auto above = n.createValue<GreaterOp>({*x, hi});
  auto plus = n.createValue<AddOp>({*x, b});
  auto minus = n.createValue<SubOp>({*x, b});
  if (failed(below) || failed(above) || failed(plus) || failed(minus))
    return failure();
  auto upper = n.createValue<SelectOp>({*above, *minus, zero});
  if (failed(upper))
    return failure();
  if (element.isUnsignedInteger()) // nothing is below -lambd
    return n.setOutput(0, *upper);
  return done(n, n.createValue<SelectOp>({*below, *plus, *upper}));
}

LogicalResult importPow(NodeImporter &n) {
  // ONNX lets the exponent's type differ from the base's: cast it.
  auto base = n.inputType(0), exponent = n.inputType(1);
  if (failed(base) || failed(exponent))
    return failure();
  BinarySpec spec =
      binary<PowOp>([](double a, double b) { return std::pow(a, b); },
                    [](int64_t a, int64_t b) {
                      return saturatingInt(std::pow(double(a), double(b)));
                    });
  if (base->getElementType() == exponent->getElementType())
    return importBinary(n, spec);
  auto lhs = n.input(0), rhs = n.input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  auto cast = n.createValue<CastOp>(
      *rhs, {n.named("to", TypeAttr::get(base->getElementType()))});
  if (failed(cast))
    return failure();
  auto r = n.createValue<PowOp>({*lhs, *cast});
  if (failed(r))
    return failure();
  return n.setOutput(0, *r);
}

LogicalResult importMod(NodeImporter &n) {
  auto fmod = n.attrInt("fmod", 0);
  if (failed(fmod))
    return failure();
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  if (!*fmod && isa<FloatType>(type->getElementType()))
    return n.error() << "Mod with fmod=0 is defined for integers only";
  BinarySpec spec{
      [fmod = *fmod](NodeImporter &n, Value a, Value b) {
        return n.createValue<ModOp>({a, b}, {n.namedBool("fmod", fmod != 0)});
      },
      [fmod = *fmod](double a, double b) {
        return fmod ? std::fmod(a, b) : a - b * std::floor(a / b);
      },
      [fmod = *fmod](int64_t a, int64_t b) {
        return b == 0 ? 0 : (fmod ? a % b : pyMod(a, b));
      }};
  return importBinary(n, spec);
}

LogicalResult importBitShift(NodeImporter &n) {
  auto direction = n.attrString("direction", "");
  auto type = n.inputType(0);
  if (failed(direction) || failed(type))
    return failure();
  if (*direction != "LEFT" && *direction != "RIGHT")
    return n.error() << "BitShift direction must be \"LEFT\" or \"RIGHT\", "
                        "got '"
                     << *direction << "'";
  Type element = type->getElementType();
  if (!element.isUnsignedInteger())
    return n.error() << "BitShift is defined for unsigned integers, got "
                     << element;
  bool left = *direction == "LEFT";
  uint64_t width = element.getIntOrFloatBitWidth();
  BinarySpec spec{
      [left](NodeImporter &n, Value a, Value b) {
        return n.createValue<BitShiftOp>({a, b}, {n.namedBool("left", left)});
      },
      nullptr,
      [left, width](int64_t a, int64_t b) -> int64_t {
        uint64_t x = uint64_t(a), by = uint64_t(b);
        if (by >= width)
          return 0;
        return int64_t(left ? x << by : x >> by);
      }};
  return importBinary(n, spec);
}

LogicalResult importIsInf(NodeImporter &n) {
  auto pos = n.attrInt("detect_positive", 1),
       neg = n.attrInt("detect_negative", 1);
  auto x = n.input(0);
  if (failed(pos) || failed(neg) || failed(x))
    return failure();
  auto r = n.createValue<IsInfOp>(*x, {n.namedBool("detect_positive", *pos),
                                       n.namedBool("detect_negative", *neg)});
  if (failed(r))
    return failure();
  return n.setOutput(0, *r);
}

LogicalResult importGelu(NodeImporter &n) {
  auto approx = n.attrString("approximate", "none");
  auto x = n.input(0);
  if (failed(approx) || failed(x))
    return failure();
  auto r = n.createValue<GeluOp>(*x, {n.namedStr("approximate", *approx)});
  if (failed(r))
    return failure();
  return n.setOutput(0, *r);
}

} // namespace

void registerElementwiseHandlers(HandlerMap &m) {
  auto sign = [](double x) { return double((x > 0) - (x < 0)); };
  m["Abs"] = unary<AbsOp>([](double x) { return std::fabs(x); },
                          [](int64_t x) { return x < 0 ? -x : x; });
  m["Neg"] =
      unary<NegOp>([](double x) { return -x; }, [](int64_t x) { return -x; });
  m["Sign"] =
      unary<SignOp>(sign, [](int64_t x) { return int64_t((x > 0) - (x < 0)); });
  m["Relu"] = unary<ReluOp>([](double x) { return x > 0 ? x : 0.0; },
                            [](int64_t x) { return x > 0 ? x : 0; });
  m["Not"] = unary<NotOp>(nullptr, [](int64_t x) { return int64_t(!x); });
  m["Exp"] = unary<ExpOp>();
  m["Log"] = unary<LogOp>();
  m["Sqrt"] = unary<SqrtOp>([](double x) { return std::sqrt(x); });
  m["Reciprocal"] = unary<ReciprocalOp>([](double x) { return 1.0 / x; });
  m["Floor"] = unary<FloorOp>([](double x) { return std::floor(x); });
  m["Ceil"] = unary<CeilOp>([](double x) { return std::ceil(x); });
  m["Round"] = unary<RoundOp>([](double x) { return std::nearbyint(x); });
  m["Sin"] = unary<SinOp>();
  m["Cos"] = unary<CosOp>();
  m["Tan"] = unary<TanOp>();
  m["Asin"] = unary<AsinOp>();
  m["Acos"] = unary<AcosOp>();
  m["Atan"] = unary<AtanOp>();
  m["Sinh"] = unary<SinhOp>();
  m["Cosh"] = unary<CoshOp>();
  m["Asinh"] = unary<AsinhOp>();
  m["Acosh"] = unary<AcoshOp>();
  m["Atanh"] = unary<AtanhOp>();
  m["Tanh"] = unary<TanhOp>();
  m["Sigmoid"] = unary<SigmoidOp>();
  m["Erf"] = unary<ErfOp>();
  m["Softsign"] = unary<SoftsignOp>();
  m["Softplus"] = unary<SoftplusOp>();
  m["Mish"] = unary<MishOp>();
  m["HardSwish"] = unary<HardSwishOp>();
  m["IsNaN"] = unary<IsNaNOp>();
  m["IsInf"] = importIsInf;
  m["Gelu"] = importGelu;
  m["HardSigmoid"] =
      unaryWithFloats<HardSigmoidOp>({{"alpha", 0.2f}, {"beta", 0.5f}});
  m["LeakyRelu"] = unaryWithFloats<LeakyReluOp>({{"alpha", 0.01f}});
  m["Elu"] = unaryWithFloats<EluOp>({{"alpha", 1.0f}});
  m["Selu"] = unaryWithFloats<SeluOp>({{"alpha", 1.67326319217681884765625f},
                                       {"gamma", 1.05070102214813232421875f}});
  m["Celu"] = unaryWithFloats<CeluOp>({{"alpha", 1.0f}});
  m["ThresholdedRelu"] = unaryWithFloats<ThresholdedReluOp>({{"alpha", 1.0f}});
  m["Clip"] = importClip;
  m["Identity"] = importIdentity;
  m["Dropout"] = importDropout;
  m["Cast"] = [](NodeImporter &n) -> LogicalResult {
    auto to = n.attrInt("to", 0);
    if (failed(to))
      return failure();
    return castTo(n, convertElementType(n.ctx(), int32_t(*to)));
  };
  m["CastLike"] = [](NodeImporter &n) -> LogicalResult {
    auto like = n.inputType(1);
    if (failed(like))
      return failure();
    return castTo(n, like->getElementType());
  };

  auto add = binary<AddOp>(std::plus<double>(), std::plus<int64_t>());
  auto sub = binary<SubOp>(std::minus<double>(), std::minus<int64_t>());
  auto mul =
      binary<MulOp>(std::multiplies<double>(), std::multiplies<int64_t>());
  auto div = binary<DivOp>(std::divides<double>(), floorDivInt);
  auto max = binary<MaxOp>(
      [](double a, double b) { return std::isnan(a) || a > b ? a : b; },
      [](int64_t a, int64_t b) { return std::max(a, b); });
  auto min = binary<MinOp>(
      [](double a, double b) { return std::isnan(a) || a < b ? a : b; },
      [](int64_t a, int64_t b) { return std::min(a, b); });
  m["Add"] = [add](NodeImporter &n) { return importBinary(n, add); };
  m["Sub"] = [sub](NodeImporter &n) { return importBinary(n, sub); };
  m["Mul"] = [mul](NodeImporter &n) { return importBinary(n, mul); };
  m["Div"] = [div](NodeImporter &n) { return importBinary(n, div); };
  m["Pow"] = importPow;
  m["Mod"] = importMod;
  m["And"] = [](NodeImporter &n) {
    return importBinary(n, binary<AndOp>(nullptr, [](int64_t a, int64_t b) {
                          return int64_t(a && b);
                        }));
  };
  m["Or"] = [](NodeImporter &n) {
    return importBinary(n, binary<OrOp>(nullptr, [](int64_t a, int64_t b) {
                          return int64_t(a || b);
                        }));
  };
  m["Xor"] = [](NodeImporter &n) {
    return importBinary(n, binary<XorOp>(nullptr, [](int64_t a, int64_t b) {
                          return int64_t(bool(a) != bool(b));
                        }));
  };
  m["PRelu"] = [](NodeImporter &n) -> LogicalResult {
    // A 1-D slope of C values is per channel (as PRelu-6 and exporters mean
    // it) when it does not broadcast against the trailing dim.
    auto x = n.inputType(0), slope = n.inputType(1);
    if (failed(x) || failed(slope))
      return failure();
    if (slope->getRank() == 1 && x->getRank() > 2 &&
        slope->getDimSize(0) == x->getDimSize(1) &&
        slope->getDimSize(0) != x->getShape().back() &&
        slope->getDimSize(0) != 1) {
      auto xv = n.input(0), sv = n.input(1);
      if (failed(xv) || failed(sv))
        return failure();
      llvm::SmallVector<int64_t> shape(x->getRank() - 1, 1);
      shape[0] = slope->getDimSize(0);
      auto r = n.reshape(*sv, shape);
      if (failed(r))
        return failure();
      auto v = n.createValue<PReluOp>({*xv, *r});
      if (failed(v))
        return failure();
      return n.setOutput(0, *v);
    }
    return importBinary(n, binary<PReluOp>(nullptr, nullptr));
  };
#define IGN_COMPARE(NAME, OP, EXPR)                                            \
  m[NAME] = [](NodeImporter &n) {                                              \
    return importBinary(                                                       \
        n, binary<OP>([](double a, double b) { return double(EXPR); },         \
                      [](int64_t a, int64_t b) { return int64_t(EXPR); },      \
                      /*predicate=*/true));                                    \
  };
  IGN_COMPARE("Equal", EqualOp, a == b)
  IGN_COMPARE("Less", LessOp, a < b)
  IGN_COMPARE("LessOrEqual", LessEqualOp, a <= b)
  IGN_COMPARE("Greater", GreaterOp, a > b)
  IGN_COMPARE("GreaterOrEqual", GreaterEqualOp, a >= b)
#undef IGN_COMPARE
  m["Where"] = importWhere;
  m["Shrink"] = importShrink;
  m["BitShift"] = importBitShift;
  m["Sum"] = [add](NodeImporter &n) { return importVariadic(n, add, false); };
  m["Mean"] = [add](NodeImporter &n) { return importVariadic(n, add, true); };
  m["Max"] = [max](NodeImporter &n) { return importVariadic(n, max, false); };
  m["Min"] = [min](NodeImporter &n) { return importVariadic(n, min, false); };
}

} // namespace ign::import
