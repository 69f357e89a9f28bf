//===- ImportQuantization.cpp - QuantizeLinear and DequantizeLinear -------===//
//
// The QDQ format (onnxruntime's quantizer and most int8 toolchains) wraps
// fp32 operators in QuantizeLinear/DequantizeLinear pairs, and stores
// weights as int8 with a DequantizeLinear each. Both import as their
// arithmetic, per tensor or per axis:
//   DequantizeLinear: y = (x - zero_point) * scale
//   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point)
// A DequantizeLinear of a constant (a weight) is folded here into an f32
// weight, so the operators between the pairs compute in fp32 on exactly the
// values the quantized model means; activations are quantized and
// dequantized at run time (the rounding onnxruntime's QDQ reference
// computes). Blocked quantization (block_size) and float8 are refused.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir;

namespace ign::import {
namespace {

/// Scale and zero point of input 0 along `axis` (nullopt: per tensor).
struct QuantParams {
  std::optional<int64_t> axis;
  RankedTensorType quantized; // the integer side's type
};

/// Checks the node's attributes, the integer type and the scale's shape
/// against `x`.
FailureOr<QuantParams> quantParams(NodeImporter &n, RankedTensorType x,
                                   Type integer) {
  auto axis = n.attrInt("axis", 1);
  auto block = n.attrInt("block_size", 0);
  auto scale = n.inputType(1);
  if (failed(axis) || failed(block) || failed(scale))
    return failure();
  if (*block != 0)
    return n.error() << "blocked quantization (block_size " << *block
                     << ") is not supported";
  if (!isa<IntegerType>(integer) || integer.getIntOrFloatBitWidth() > 32)
    return n.error() << "quantized type " << integer
                     << " is not supported (int8, uint8, int16, uint16, "
                        "int32)";
  if (!scale->getElementType().isF32())
    return n.error() << "scale of type " << scale->getElementType()
                     << " is not supported (f32)";
  if (n.hasInput(2)) {
    // ONNX: the zero point has the scale's shape (one was read per scale).
    auto zero = n.inputType(2);
    if (failed(zero))
      return failure();
    if (!zero->hasStaticShape() ||
        zero->getNumElements() != scale->getNumElements())
      return n.error() << "zero point " << *zero << " must have the scale's "
                       << scale->getNumElements() << " value(s)";
  }
  QuantParams p;
  p.quantized = RankedTensorType::get(x.getShape(), integer);
  if (scale->getRank() == 0 ||
      (scale->getRank() == 1 && scale->getDimSize(0) == 1))
    return p;
  if (scale->getRank() != 1)
    return n.error() << "scale of rank " << scale->getRank()
                     << " is not supported (a scalar or 1-D per axis)";
  auto a = normalizeAxis(n, *axis, x.getRank());
  if (failed(a))
    return failure();
  if (scale->getDimSize(0) != x.getDimSize(*a))
    return n.error() << "scale has " << scale->getDimSize(0)
                     << " values for axis " << *a << " of size "
                     << x.getDimSize(*a);
  p.axis = *a;
  return p;
}

/// Input `i` (scale or zero point) as a value that broadcasts against a
/// tensor of `rank` along `axis`: [C, 1, ..., 1].
FailureOr<Value> alongAxis(NodeImporter &n, size_t i,
                           std::optional<int64_t> axis, int64_t rank) {
  auto v = n.input(i);
  if (failed(v) || !axis)
    return v;
  SmallVector<int64_t> shape(rank - *axis, 1);
  shape[0] = cast<RankedTensorType>(v->getType()).getDimSize(0);
  return n.reshape(*v, shape);
}

/// OpT (ign.sub or ign.add) of `v` and the zero point (input 2, along the
/// axis, as f32); `v` itself when there is none.
template <typename OpT>
FailureOr<Value> withZeroPoint(NodeImporter &n, Value v,
                               std::optional<int64_t> axis, int64_t rank) {
  if (!n.hasInput(2))
    return v;
  auto z = alongAxis(n, 2, axis, rank);
  if (failed(z))
    return failure();
  Type f32 = n.builder().getF32Type();
  auto zf = n.createValue<CastOp>(*z, {n.named("to", TypeAttr::get(f32))});
  if (failed(zf))
    return failure();
  return n.createValue<OpT>({v, *zf});
}

/// The index into a per-axis parameter of element `e` of a tensor of
/// `shape`.
int64_t paramIndex(int64_t e, ArrayRef<int64_t> shape,
                   std::optional<int64_t> axis) {
  if (!axis)
    return 0;
  int64_t inner = 1;
  for (int64_t d = *axis + 1; d < int64_t(shape.size()); ++d)
    inner *= shape[d];
  return (e / inner) % shape[*axis];
}

/// Sets output 0 to the f32 values `out` of `shape`: an inline constant
/// when small, else a weight of its own.
LogicalResult setFloatOutput(NodeImporter &n, ArrayRef<int64_t> shape,
                             std::vector<float> out) {
  if (int64_t(out.size()) <= kHostFoldLimit) {
    HostTensor t;
    t.shape.assign(shape.begin(), shape.end());
    t.elementType = n.builder().getF32Type();
    t.floats.assign(out.begin(), out.end());
    return n.setOutput(0, std::move(t));
  }
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape)
    t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char *>(out.data()),
                             out.size() * sizeof(float)));
  return n.setOutputTensor(0, std::move(t));
}

/// The kDequantizedAttr of a folded DequantizeLinear of `x`: its integer
/// type, scales, zero points (0 when absent) and axis.
DictionaryAttr quantization(NodeImporter &n, RankedTensorType x,
                            const QuantParams &p, const HostTensor &scale,
                            const HostTensor *zero) {
  Builder b(n.ctx());
  int64_t count = scale.numElements();
  SmallVector<float> scales;
  SmallVector<int64_t> zeros;
  for (int64_t c = 0; c < count; ++c) {
    scales.push_back(float(scale.getDouble(c)));
    zeros.push_back(zero ? int64_t(zero->getDouble(c)) : 0);
  }
  SmallVector<NamedAttribute> fields{
      b.getNamedAttr("type", TypeAttr::get(x.getElementType())),
      b.getNamedAttr(
          "scale",
          DenseElementsAttr::get(RankedTensorType::get({count}, b.getF32Type()),
                                 ArrayRef<float>(scales))),
      b.getNamedAttr(
          "zero_point",
          DenseElementsAttr::get(RankedTensorType::get({count}, b.getI64Type()),
                                 ArrayRef<int64_t>(zeros)))};
  if (p.axis)
    fields.push_back(b.getNamedAttr("axis", b.getI64IntegerAttr(*p.axis)));
  return b.getDictionaryAttr(fields);
}

LogicalResult importDequantizeLinear(NodeImporter &n) {
  auto x = n.inputType(0);
  if (failed(x))
    return failure();
  auto p = quantParams(n, *x, x->getElementType());
  if (failed(p))
    return failure();
  bool hasZero = n.hasInput(2);
  // A weight: fold (its int8 values are read whatever their size).
  const HostTensor *q = n.constInput(0, std::numeric_limits<int64_t>::max());
  const HostTensor *scale = n.constInput(1, kHostFoldLimit, true);
  const HostTensor *zero = hasZero ? n.constInput(2, kHostFoldLimit) : nullptr;
  if (q && scale && (!hasZero || zero)) {
    std::vector<float> out(q->numElements());
    for (int64_t e = 0; e < q->numElements(); ++e) {
      int64_t c = paramIndex(e, q->shape, p->axis);
      double zp = zero ? zero->getDouble(c) : 0;
      out[e] = float((q->getDouble(e) - zp) * scale->getDouble(c));
    }
    if (x->getElementType().getIntOrFloatBitWidth() == 8)
      n.markDequantized(0, quantization(n, *x, *p, *scale, zero));
    return setFloatOutput(n, q->shape, std::move(out));
  }
  auto in = n.input(0);
  auto s = alongAxis(n, 1, p->axis, x->getRank());
  if (failed(in) || failed(s))
    return failure();
  Type f32 = n.builder().getF32Type();
  auto v = n.createValue<CastOp>(*in, {n.named("to", TypeAttr::get(f32))});
  if (failed(v))
    return failure();
  v = withZeroPoint<SubOp>(n, *v, p->axis, x->getRank());
  if (failed(v))
    return failure();
  return done(n, n.createValue<MulOp>({*v, *s}));
}

LogicalResult importQuantizeLinear(NodeImporter &n) {
  auto x = n.inputType(0);
  if (failed(x))
    return failure();
  Type integer = IntegerType::get(n.ctx(), 8, IntegerType::Unsigned);
  if (n.hasInput(2)) {
    auto z = n.inputType(2);
    if (failed(z))
      return failure();
    integer = z->getElementType();
  } else if (n.hasAttr("output_dtype")) {
    auto dtype = n.attrInt("output_dtype", 0);
    if (failed(dtype))
      return failure();
    integer = convertElementType(n.ctx(), int32_t(*dtype));
    if (!integer)
      return n.error() << "output_dtype " << *dtype << " is not supported";
  }
  if (!x->getElementType().isF32())
    return n.error() << "QuantizeLinear of " << x->getElementType()
                     << " is not supported (f32)";
  auto p = quantParams(n, *x, integer);
  if (failed(p))
    return failure();
  auto in = n.input(0);
  auto s = alongAxis(n, 1, p->axis, x->getRank());
  if (failed(in) || failed(s))
    return failure();
  auto v = n.createValue<DivOp>({*in, *s});
  if (failed(v))
    return failure();
  v = n.createValue<RoundOp>(*v);
  if (failed(v))
    return failure();
  v = withZeroPoint<AddOp>(n, *v, p->axis, x->getRank());
  if (failed(v))
    return failure();
  return done(n, saturateToInteger(n, *v, integer));
}

} // namespace

FailureOr<Value> saturateToInteger(NodeImporter &n, Value v, Type integer) {
  unsigned width = integer.getIntOrFloatBitWidth();
  bool isUnsigned = integer.isUnsignedInteger();
  double lo = isUnsigned ? 0 : -std::ldexp(1.0, width - 1);
  double hi =
      isUnsigned ? std::ldexp(1.0, width) - 1 : std::ldexp(1.0, width - 1) - 1;
  auto b = n.builder();
  auto clipped =
      n.createValue<ClipOp>(v, {n.named("min", b.getF64FloatAttr(lo)),
                                n.named("max", b.getF64FloatAttr(hi))});
  if (failed(clipped))
    return failure();
  return n.createValue<CastOp>(*clipped,
                               {n.named("to", TypeAttr::get(integer))});
}

void registerQuantizationHandlers(HandlerMap &m) {
  m["DequantizeLinear"] = importDequantizeLinear;
  m["QuantizeLinear"] = importQuantizeLinear;
}

} // namespace ign::import
