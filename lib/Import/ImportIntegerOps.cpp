//===- ImportIntegerOps.cpp - MatMulInteger, ConvInteger, QLinear* --------===//
//
// The operator ("QOperator") form of quantized models: integer matmuls and
// convolutions with zero points, accumulating in int32, and their QLinear
// variants, which requantize the sum into the output's scale and zero point.
// They import as their arithmetic, as ONNX's reference computes it:
//   MatMulInteger / ConvInteger: (a - a_zero) . (b - b_zero) in int32
//   QLinearMatMul / QLinearConv: saturate(round_half_even(
//       acc * (a_scale * b_scale / y_scale) + y_zero))
// Zero points and scales are per tensor, per row of A (a 1-D [M]), per
// column of B (a 1-D [N]) or per output channel of a convolution (a 1-D
// [M]).
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

using namespace mlir;

namespace ign::import {
namespace {

/// What a 1-D parameter runs along: A's rows, B's columns, a weight's
/// filters (its leading dim) or an activation's channels (dim 1).
enum class Along { Rows, Columns, Filters, Channels };

/// Input `i` (a scale or zero point) shaped to broadcast against the tensor
/// of `rank` it belongs to: a scalar as is, a 1-D per-row parameter [M, 1],
/// per-column [N], per-filter [M, 1, ..., 1] (rank dims), per-channel
/// [C, 1, ..., 1] (rank - 1 dims).
FailureOr<Value> broadcastParam(NodeImporter &n, size_t i, Along along,
                                int64_t rank) {
  auto v = n.input(i);
  auto type = n.inputType(i);
  if (failed(v) || failed(type))
    return failure();
  if (type->getRank() > 1)
    return n.error() << "input " << i << " of " << n.node().op_type()
                     << " has shape " << *type
                     << "; a scalar or a 1-D tensor is supported";
  if (type->getRank() == 0 || type->getNumElements() == 1 ||
      along == Along::Columns)
    return v;
  int64_t dims = along == Along::Rows      ? 2
                 : along == Along::Filters ? rank
                                           : rank - 1;
  SmallVector<int64_t> shape(dims, 1);
  shape[0] = type->getDimSize(0);
  return n.reshape(*v, shape);
}

FailureOr<Value> castTo(NodeImporter &n, Value v, Type to) {
  if (cast<RankedTensorType>(v.getType()).getElementType() == to)
    return v;
  return n.createValue<CastOp>(v, {n.named("to", TypeAttr::get(to))});
}

/// `q` as int32 less its zero point (input `zeroIndex`, when present).
FailureOr<Value> centered(NodeImporter &n, size_t qIndex, size_t zeroIndex,
                          Along along) {
  auto q = n.input(qIndex);
  auto type = n.inputType(qIndex);
  if (failed(q) || failed(type))
    return failure();
  if (!isa<IntegerType>(type->getElementType()) ||
      type->getElementType().getIntOrFloatBitWidth() != 8)
    return n.error() << n.node().op_type() << " input " << qIndex << " is "
                     << type->getElementType() << "; int8 or uint8 expected";
  Type i32 = n.builder().getI32Type();
  auto v = castTo(n, *q, i32);
  if (failed(v) || !n.hasInput(zeroIndex))
    return v;
  auto zero = broadcastParam(n, zeroIndex, along, type->getRank());
  if (failed(zero))
    return failure();
  auto z = castTo(n, *zero, i32);
  if (failed(z))
    return failure();
  return n.createValue<SubOp>({*v, *z});
}

/// saturate(round_half_even(acc * aScale * bScale / yScale + yZero)) in the
/// output's integer type (that of yZero, else `fallback`'s).
FailureOr<Value> requantize(NodeImporter &n, Value acc, size_t aScale,
                            size_t bScale, Along bAlong, size_t yScale,
                            size_t yZero, Type fallback) {
  int64_t rank = cast<RankedTensorType>(acc.getType()).getRank();
  Type f32 = n.builder().getF32Type();
  auto sy = n.input(yScale);
  auto sa = broadcastParam(n, aScale, Along::Rows, rank);
  auto sb = broadcastParam(n, bScale, bAlong, rank);
  auto accF = castTo(n, acc, f32);
  if (failed(sa) || failed(sb) || failed(sy) || failed(accF))
    return failure();
  auto scale = n.createValue<MulOp>({*sa, *sb});
  if (failed(scale))
    return failure();
  scale = n.createValue<DivOp>({*scale, *sy});
  if (failed(scale))
    return failure();
  auto v = n.createValue<MulOp>({*accF, *scale});
  if (failed(v))
    return failure();
  Type out = fallback;
  if (n.hasInput(yZero)) {
    auto zeroType = n.inputType(yZero);
    auto zero = n.input(yZero);
    if (failed(zeroType) || failed(zero))
      return failure();
    out = zeroType->getElementType();
    auto z = castTo(n, *zero, f32);
    if (failed(z))
      return failure();
    v = n.createValue<AddOp>({*v, *z});
    if (failed(v))
      return failure();
  }
  v = n.createValue<RoundOp>(*v);
  if (failed(v))
    return failure();
  return saturateToInteger(n, *v, out);
}

LogicalResult importMatMulInteger(NodeImporter &n) {
  auto a = centered(n, 0, 2, Along::Rows);
  auto b = centered(n, 1, 3, Along::Columns);
  if (failed(a) || failed(b))
    return failure();
  return done(n, n.createValue<MatMulOp>({*a, *b}));
}

LogicalResult importConvInteger(NodeImporter &n) {
  if (n.hasInput(2)) {
    auto zero = n.inputType(2);
    if (failed(zero))
      return failure();
    if (zero->getNumElements() != 1)
      return n.error() << "ConvInteger's x_zero_point must be a scalar, got "
                       << *zero;
  }
  auto x = centered(n, 0, 2, Along::Rows);
  auto w = centered(n, 1, 3, Along::Filters);
  if (failed(x) || failed(w))
    return failure();
  return done(n, buildConv(n, *x, *w, std::nullopt));
}

// QLinearMatMul(a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero)
LogicalResult importQLinearMatMul(NodeImporter &n) {
  auto a = centered(n, 0, 2, Along::Rows);
  auto b = centered(n, 3, 5, Along::Columns);
  auto aType = n.inputType(0);
  if (failed(a) || failed(b) || failed(aType))
    return failure();
  auto acc = n.createValue<MatMulOp>({*a, *b});
  if (failed(acc))
    return failure();
  return done(n, requantize(n, *acc, 1, 4, Along::Columns, 6, 7,
                            aType->getElementType()));
}

// QLinearConv(x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, B)
LogicalResult importQLinearConv(NodeImporter &n) {
  auto x = centered(n, 0, 2, Along::Rows);
  auto w = centered(n, 3, 5, Along::Filters);
  auto xType = n.inputType(0);
  if (failed(x) || failed(w) || failed(xType))
    return failure();
  std::optional<Value> bias;
  if (n.hasInput(8)) {
    auto bv = n.input(8);
    if (failed(bv))
      return failure();
    auto b32 = castTo(n, *bv, n.builder().getI32Type());
    if (failed(b32))
      return failure();
    bias = *b32;
  }
  auto acc = buildConv(n, *x, *w, bias);
  if (failed(acc))
    return failure();
  return done(n, requantize(n, *acc, 1, 4, Along::Channels, 6, 7,
                            xType->getElementType()));
}

} // namespace

void registerIntegerOpHandlers(HandlerMap &m) {
  m["MatMulInteger"] = importMatMulInteger;
  m["ConvInteger"] = importConvInteger;
  m["QLinearMatMul"] = importQLinearMatMul;
  m["QLinearConv"] = importQLinearConv;
}

} // namespace ign::import
