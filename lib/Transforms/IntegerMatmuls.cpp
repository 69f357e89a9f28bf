//===- IntegerMatmuls.cpp - quantized matmuls as integer contractions -----===//
//
// A QDQ model multiplies dequantized activations by dequantized weights:
//   matmul((cast(aq) - za) * sa, W)   with W = (wq - 0) * sw[n] folded
// (aq ui8 per tensor, wq int8 per tensor or per output column, symmetric).
// The same sum, exactly, in integers:
//   sa * sw[n] * (sum_k aq[m, k] * wq[k, n] - za * sum_k wq[k, n])
// so the matmul becomes an integer one accumulating in i32 (of bytes for
// the host's VNNI register tiles, or of the same integers as 16-bit words
// for its vpmaddwd ones on AVX2: GroupedDots.h), and the rest an
// elementwise epilogue:
// a constant column correction, a conversion and one scale per column. The
// weight is read back from its f32 constant and its kDequantizedAttr, and
// only when every value converts back exactly. Gemms (their bias added
// after) and 1x1 convolutions likewise; int8 activations move up by 128
// (VNNI multiplies unsigned by signed bytes). The operator forms:
// MatMulInteger / QLinearMatMul's i32 matmul(cast(aq) - za, cast(wq))
// becomes the byte matmul less za * colsum(wq) (za may be computed at run
// time), and ConvInteger / QLinearConv's i32 convolution the f32 one of
// the same integers where f32 holds every partial sum exactly. A max pool
// of dequantized activations pools their bytes (exact on every CPU: the
// dequantization never reorders values).
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "WeightConstants.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>

namespace ign {
#define GEN_PASS_DEF_INTEGERMATMULS
#include "ign/Transforms/Passes.h.inc"
} // namespace ign

using namespace mlir;

namespace ign {
namespace {

/// Fewest input channels a spatial byte convolution pads to whole quads:
/// an RGB stem's 3 (to 4; ResNet-50's 7 x 7 stem 2.4 ms in f32 on Zen 4).
/// With 1 or 2 channels the padding would be most of the multiplies.
constexpr int64_t kMinPaddedQuadChannels = 3;

/// The one value of a constant (through casts and reshapes) of one
/// element, as a double.
std::optional<double> scalarConstant(Value v) {
  while (v) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (isa<CastOp, ReshapeOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    auto c = dyn_cast<ConstantOp>(def);
    auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
    if (!dense || dense.getNumElements() != 1)
      return std::nullopt;
    Type t = dense.getElementType();
    if (isa<FloatType>(t))
      return (*dense.value_begin<APFloat>()).convertToDouble();
    if (auto it = dyn_cast<IntegerType>(t)) {
      APInt i = *dense.value_begin<APInt>();
      return it.isUnsigned() ? double(i.getZExtValue())
                             : double(i.getSExtValue());
    }
    return std::nullopt;
  }
  return std::nullopt;
}

/// Whether `v` is a constant (through casts and reshapes) of zeros only:
/// a zero point of 0, per tensor or per channel.
bool isZeroConstant(Value v) {
  while (v && isa_and_nonnull<CastOp, ReshapeOp>(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  auto c = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  if (!dense)
    return false;
  if (isa<FloatType>(dense.getElementType()))
    return llvm::all_of(dense.getValues<APFloat>(),
                        [](const APFloat &x) { return x.isZero(); });
  return isa<IntegerType>(dense.getElementType()) &&
         llvm::all_of(dense.getValues<APInt>(),
                      [](const APInt &x) { return x.isZero(); });
}

/// The operands' element for `operands` (Bytes or Words): the bytes as
/// they are, or signless 16-bit words.
Value asOperands(OpBuilder &b, Location loc, Value q,
                 IntegerOperands operands) {
  if (operands != IntegerOperands::Words)
    return q;
  auto type = cast<RankedTensorType>(q.getType());
  return b.create<CastOp>(loc, type.clone(b.getI16Type()), q, b.getI16Type());
}

/// A scalar i32 constant.
Value i32Constant(OpBuilder &b, Location loc, int32_t v) {
  auto type = RankedTensorType::get({}, b.getI32Type());
  return b.create<ConstantOp>(
      loc, type, DenseElementsAttr::get(type, b.getI32IntegerAttr(v)));
}

/// int8 `q` + 128 as ui8: VNNI multiplies unsigned by signed bytes, so
/// signed activations move up by 128 (and their zero point with them).
Value plus128(OpBuilder &b, Location loc, Value q) {
  auto type = cast<RankedTensorType>(q.getType());
  Value wide =
      b.create<CastOp>(loc, type.clone(b.getI32Type()), q, b.getI32Type());
  Value sum = b.create<AddOp>(loc, wide, i32Constant(b, loc, 128));
  Type u8 = IntegerType::get(b.getContext(), 8, IntegerType::Unsigned);
  return b.create<CastOp>(loc, type.clone(u8), sum, u8);
}

/// Activations dequantized per tensor: (cast(q) - zero) * scale, or
/// cast(q) * scale, of a ui8 or int8 `q`.
struct DequantizedActivations {
  Value q;
  double scale = 0;
  int64_t zero = 0;   // of the unsigned bytes
  bool shift = false; // `q` is int8: its bytes are q + 128 (and zero too)

  /// The activations as ui8: `q`, or int8 `q` + 128.
  Value unsignedBytes(OpBuilder &b, Location loc) const {
    return shift ? plus128(b, loc, q) : q;
  }
};

std::optional<DequantizedActivations> matchActivations(Value a) {
  auto mul = a.getDefiningOp<MulOp>();
  if (!mul)
    return std::nullopt;
  std::optional<double> scale = scalarConstant(mul.getRhs());
  if (!scale || !(*scale > 0) || !std::isfinite(*scale))
    return std::nullopt;
  DequantizedActivations d;
  d.scale = *scale;
  Value x = mul.getLhs();
  std::optional<double> zero = 0;
  if (auto sub = x.getDefiningOp<SubOp>()) {
    zero = scalarConstant(sub.getRhs());
    x = sub.getLhs();
  }
  auto cast = x.getDefiningOp<CastOp>();
  if (!cast || !cast.getType().getElementType().isF32() ||
      cast.getType() != a.getType() ||
      !cast.getInput().getType().getElementType().isInteger(8))
    return std::nullopt;
  d.q = cast.getInput();
  d.shift = !cast.getInput().getType().getElementType().isUnsignedInteger();
  if (!zero || *zero != std::floor(*zero))
    return std::nullopt;
  d.zero = int64_t(*zero) + (d.shift ? 128 : 0);
  if (d.zero < 0 || d.zero > 255)
    return std::nullopt;
  return d;
}

/// A weight of K x N elements dequantized from int8 with zero points 0,
/// per tensor or per output channel: stored [K, N], or with
/// `outputsLeading` [N, ...] (a Gemm's transposed weight, a convolution's
/// filters), its scales then along axis 0. Its integers as stored and each
/// output channel's scale.
struct QuantizedWeight {
  std::vector<int8_t> q;
  std::vector<double> scale; // [N]
  bool outputsLeading = false;
  int64_t k = 0, n = 0;

  int8_t at(int64_t kk, int64_t j) const {
    return q[size_t(outputsLeading ? j * k + kk : kk * n + j)];
  }
  /// The integers as [K, N] (`leading` false) or [N, K].
  std::vector<int8_t> laidOut(bool leading) const {
    if (leading == outputsLeading)
      return q;
    std::vector<int8_t> t(q.size());
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j)
        t[size_t(leading ? j * k + kk : kk * n + j)] = at(kk, j);
    return t;
  }
  /// `zero` times each output channel's sum of integers.
  SmallVector<Attribute> correction(int64_t zero, Type i32) const {
    SmallVector<Attribute> c;
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        sum += at(kk, j);
      c.push_back(IntegerAttr::get(i32, zero * sum));
    }
    return c;
  }
};

std::optional<QuantizedWeight> matchWeight(Value w, int64_t k, int64_t n,
                                           bool outputsLeading) {
  auto c = w.getDefiningOp<ConstantOp>();
  auto type = cast<RankedTensorType>(w.getType());
  if (!c || !type.hasStaticShape() || type.getNumElements() != k * n)
    return std::nullopt;
  auto dict = c->getAttrOfType<DictionaryAttr>(kDequantizedAttr);
  if (!dict)
    return std::nullopt;
  auto integer = dict.getAs<TypeAttr>("type");
  auto scales = dict.getAs<DenseElementsAttr>("scale");
  auto zeros = dict.getAs<DenseElementsAttr>("zero_point");
  auto axis = dict.getAs<IntegerAttr>("axis");
  int64_t outputAxis = outputsLeading ? 0 : type.getRank() - 1;
  if (!integer || !integer.getValue().isInteger(8) ||
      integer.getValue().isUnsignedInteger() || !scales || !zeros ||
      !scales.getElementType().isF32() ||
      !zeros.getElementType().isInteger(64) ||
      scales.getNumElements() != (axis ? n : 1) ||
      zeros.getNumElements() != scales.getNumElements() ||
      (axis && axis.getInt() != outputAxis) || type.getDimSize(outputAxis) != n)
    return std::nullopt;
  for (APInt z : zeros.getValues<APInt>())
    if (!z.isZero())
      return std::nullopt;
  std::optional<std::vector<float>> values = constantFloats(w);
  if (!values || int64_t(values->size()) != k * n)
    return std::nullopt;
  QuantizedWeight qw;
  qw.outputsLeading = outputsLeading;
  qw.k = k;
  qw.n = n;
  for (float s : scales.getValues<float>())
    qw.scale.push_back(double(s));
  if (!axis)
    qw.scale.assign(size_t(n), qw.scale.front());
  qw.q.resize(values->size());
  for (int64_t e = 0; e < k * n; ++e) {
    double s = qw.scale[size_t(outputsLeading ? e / k : e % n)];
    float v = (*values)[size_t(e)];
    if (!(s > 0) || !std::isfinite(s))
      return std::nullopt;
    double q = std::nearbyint(double(v) / s);
    // The importer folded float((q - 0) * s): exactly that, or no match.
    if (q < -128 || q > 127 || float(q * s) != v)
      return std::nullopt;
    qw.q[size_t(e)] = int8_t(q);
  }
  return qw;
}

/// An i32 sum of `k` products of bytes cannot overflow, and (with words)
/// the steps are whole pairs: an odd K leaves the host's word tiles for
/// generic i32 code, slower than the f32 matmul.
bool sumFits(int64_t k, IntegerOperands operands) {
  return k <= (int64_t(1) << 31) / (255 * 128) &&
         (operands != IntegerOperands::Words || k % 2 == 0);
}

/// A small f32 or i32 constant [n] (inline).
Value vectorConstant(OpBuilder &b, Location loc, Type element,
                     ArrayRef<Attribute> values) {
  auto type = RankedTensorType::get({int64_t(values.size())}, element);
  return b.create<ConstantOp>(loc, type, DenseElementsAttr::get(type, values));
}

/// `acc` (i32, output channels along its last dim, or with `column` along
/// the one before: [N, 1] constants) less the activations' zero point times
/// each channel's weight sum, in f32, times the channels' scales.
Value rescale(OpBuilder &b, Location loc, Value acc,
              const DequantizedActivations &a, const QuantizedWeight &w,
              bool column) {
  MLIRContext *ctx = b.getContext();
  Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
  auto channels = [&](Type element, ArrayRef<Attribute> values) -> Value {
    Value v = vectorConstant(b, loc, element, values);
    if (!column)
      return v;
    return b.create<ReshapeOp>(loc, v, b.getI64ArrayAttr({w.n, 1})).getResult();
  };
  if (a.zero != 0)
    acc = b.create<SubOp>(loc, acc, channels(i32, w.correction(a.zero, i32)));
  auto accType = cast<RankedTensorType>(acc.getType());
  Value f = b.create<CastOp>(
      loc, RankedTensorType::get(accType.getShape(), f32), acc, f32);
  SmallVector<Attribute> scales;
  for (int64_t j = 0; j < w.n; ++j)
    scales.push_back(FloatAttr::get(f32, a.scale * w.scale[size_t(j)]));
  return b.create<MulOp>(loc, f, channels(f32, scales));
}

/// The constant of `w`'s integers, [K, N] or with `leading` [N, K]: int8,
/// or with Words `operands` int16.
Value integerWeight(OpBuilder &b, Location loc, const QuantizedWeight &w,
                    bool leading, Value from, IntegerOperands operands) {
  SmallVector<int64_t> shape =
      leading ? SmallVector<int64_t>{w.n, w.k} : SmallVector<int64_t>{w.k, w.n};
  std::vector<int8_t> q = w.laidOut(leading);
  if (operands == IntegerOperands::Words) // signless: signed
    return makeWeight(b, loc, RankedTensorType::get(shape, b.getI16Type()),
                      std::vector<int16_t>(q.begin(), q.end()),
                      weightName(from, ".int16"));
  return makeWeight(b, loc, RankedTensorType::get(shape, b.getI8Type()),
                    std::move(q), weightName(from, ".int8"));
}

/// The integer form of `lhs` x `rhs` (an ign.matmul or ign.gemm `op`, `rhs`
/// [K, N] or, `transposed`, [N, K]) when it multiplies dequantized
/// activations by a dequantized weight; null, changing nothing, otherwise.
Value integerMatmul(Operation *op, Value lhs, Value rhs, bool transposed,
                    IntegerOperands operands) {
  auto a = matchActivations(lhs);
  auto wType = cast<RankedTensorType>(rhs.getType());
  if (!a || wType.getRank() != 2)
    return {};
  int64_t k = wType.getDimSize(transposed ? 1 : 0);
  int64_t n = wType.getDimSize(transposed ? 0 : 1);
  auto w = matchWeight(rhs, k, n, transposed);
  if (!w || !sumFits(k, operands))
    return {};
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value wq = integerWeight(b, loc, *w, /*leading=*/false, rhs, operands);
  Value acc = b.create<MatMulOp>(
      loc, asOperands(b, loc, a->unsignedBytes(b, loc), operands), wq);
  return rescale(b, loc, acc, *a, *w, /*column=*/false);
}

/// An i32 value of bytes less an optional zero point: cast(q) or cast(q) -
/// zero, `q` ui8 or int8 (an i32 `zero` of one element, computed at run
/// time or not).
struct CenteredBytes {
  Value q, zero;
};

std::optional<CenteredBytes> matchCenteredBytes(Value v) {
  CenteredBytes c;
  if (auto sub = v.getDefiningOp<SubOp>()) {
    auto zeroType = cast<RankedTensorType>(sub.getRhs().getType());
    if (zeroType.getNumElements() != 1 || zeroType.getRank() > 1)
      return std::nullopt;
    c.zero = sub.getRhs();
    v = sub.getLhs();
  }
  auto cast = v.getDefiningOp<CastOp>();
  if (!cast || !cast.getInput().getType().getElementType().isInteger(8))
    return std::nullopt;
  c.q = cast.getInput();
  return c;
}

/// The int8 values of a constant [K, N] read as i32 (a cast of an int8
/// constant, or an i32 one within int8's range), less a zero point of 0;
/// `constant` is set to the constant.
std::optional<QuantizedWeight> matchConstantBytes(Value v, Value &constant) {
  if (auto sub = v.getDefiningOp<SubOp>()) {
    if (!isZeroConstant(sub.getRhs()))
      return std::nullopt;
    v = sub.getLhs();
  }
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() != 2 || !type.hasStaticShape())
    return std::nullopt;
  if (auto cast = v.getDefiningOp<CastOp>();
      cast && cast.getInput().getType().getElementType().isInteger(8) &&
      !cast.getInput().getType().getElementType().isUnsignedInteger())
    v = cast.getInput();
  std::optional<std::vector<int64_t>> values = constantIntegers(v);
  if (!values ||
      cast<RankedTensorType>(v.getType()).getElementType().isUnsignedInteger())
    return std::nullopt;
  constant = v;
  QuantizedWeight w;
  w.k = type.getDimSize(0);
  w.n = type.getDimSize(1);
  for (int64_t x : *values) {
    if (x < -128 || x > 127)
      return std::nullopt;
    w.q.push_back(int8_t(x));
  }
  return w;
}

/// matmul(cast(aq) - za, cast(wq)) in i32 (MatMulInteger, QLinearMatMul:
/// ui8 or int8 activations, a constant int8 weight with zero point 0) as
/// the byte matmul less za times the weight's column sums: the same
/// integers (int8 activations and their zero point moved up by 128).
bool rewriteCenteredMatmul(MatMulOp op, IntegerOperands operands) {
  auto type = cast<RankedTensorType>(op.getType());
  if (!type.getElementType().isInteger(32))
    return false;
  Value constant;
  auto a = matchCenteredBytes(op.getLhs());
  auto w = a ? matchConstantBytes(op.getRhs(), constant) : std::nullopt;
  if (!w || !sumFits(w->k, operands))
    return false;
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value wq = integerWeight(b, loc, *w, /*leading=*/false, constant, operands);
  Value q = a->q, zero = a->zero;
  if (!cast<RankedTensorType>(q.getType())
           .getElementType()
           .isUnsignedInteger()) {
    q = plus128(b, loc, q);
    zero = zero ? b.create<AddOp>(loc, zero, i32Constant(b, loc, 128))
                : i32Constant(b, loc, 128);
  }
  Value acc = b.create<MatMulOp>(loc, asOperands(b, loc, q, operands), wq);
  if (zero) {
    Type i32 = b.getI32Type();
    Value sums = vectorConstant(b, loc, i32, w->correction(1, i32));
    acc = b.create<SubOp>(loc, acc, b.create<MulOp>(loc, sums, zero));
  }
  op.getResult().replaceAllUsesWith(acc);
  op.erase();
  return true;
}

bool rewriteMatmul(MatMulOp op, IntegerOperands operands) {
  if (rewriteCenteredMatmul(op, operands))
    return true;
  Value y = integerMatmul(op, op.getLhs(), op.getRhs(), /*transposed=*/false,
                          operands);
  if (!y)
    return false;
  op.getResult().replaceAllUsesWith(y);
  op.erase();
  return true;
}

/// A gemm of a [M, K] by a [K, N] weight (or [N, K] with trans_b, as
/// exporters write linear layers: transposed at compile time), with alpha 1
/// and its bias (if any) added whole: the integer matmul, then the bias.
bool rewriteGemm(GemmOp op, IntegerOperands operands) {
  // (Gemm's verifier has the bias broadcast to [M, N]; an f32 one adds to
  // the f32 epilogue as is.)
  Value c = op.getC();
  bool plain =
      !op.getTransA() && op.getAlpha().convertToDouble() == 1 &&
      (!c || (op.getBeta().convertToDouble() == 1 &&
              cast<RankedTensorType>(c.getType()).getElementType().isF32()));
  if (!plain)
    return false;
  Value y = integerMatmul(op, op.getA(), op.getB(), op.getTransB(), operands);
  if (!y)
    return false;
  if (c)
    y = OpBuilder(op).create<AddOp>(op.getLoc(), y, c);
  op.getResult().replaceAllUsesWith(y);
  op.erase();
  return true;
}

/// `x` [N, C, ...] with `channels` more channels of `value` at the end.
Value padChannels(OpBuilder &b, Location loc, Value x, int64_t channels,
                  int64_t value) {
  auto type = cast<RankedTensorType>(x.getType());
  // ign.pad takes ONNX's layout: all begins, then all ends, per dim.
  int64_t rank = type.getRank();
  SmallVector<int64_t> pads(2 * rank, 0), shape(type.getShape());
  pads[rank + 1] = channels;
  shape[1] += channels;
  return b.create<PadOp>(loc,
                         RankedTensorType::get(shape, type.getElementType()), x,
                         b.getI64ArrayAttr(pads), b.getStringAttr("constant"),
                         b.getF64FloatAttr(double(value)));
}

/// Filters [F, C] (`w`, outputs leading) with `extra` channels of zeros
/// after their C.
std::vector<int8_t> withZeroChannels(const QuantizedWeight &w, int64_t extra) {
  int64_t from = w.k, to = w.k + extra;
  std::vector<int8_t> q(size_t(w.n * to), 0);
  for (int64_t f = 0; f < w.n; ++f)
    std::copy_n(w.q.begin() + f * from, from, q.begin() + f * to);
  return q;
}

/// Replaces convolution `op` by its integer sums `acc` [N, F, P] rescaled
/// per filter (rescale), its bias added, in its output's shape.
void replaceByRescaled(OpBuilder &b, ConvOp op, Value acc,
                       const DequantizedActivations &a,
                       const QuantizedWeight &w) {
  Location loc = op.getLoc();
  Value y = rescale(b, loc, acc, a, w, /*column=*/true);
  if (Value bias = op.getBias())
    y = b.create<AddOp>(
        loc, y, b.create<ReshapeOp>(loc, bias, b.getI64ArrayAttr({w.n, 1})));
  auto out = cast<RankedTensorType>(op.getType());
  y = b.create<ReshapeOp>(loc, y, b.getI64ArrayAttr(out.getShape()));
  op.getResult().replaceAllUsesWith(y);
  op.erase();
}

/// A 1x1 unpadded convolution of dequantized activations by
/// dequantized filters (per filter): the integer matmul of the int8 filters
/// [F, C] by the input [N, C, P] (its bytes subsampled first when strided),
/// then the epilogue per filter, the bias
/// and the output's shape. Channels are padded (with the zero point, and
/// zero filters) to whole groups of 4 for VNNI.
///
/// Bytes only: the matmul streams the activations [C, P], which the host
/// packs into pairs of channels per pixel at run time; as 16-bit words
/// (AVX2) that copy made quantized ResNet-50 2.4x slower than its f32
/// convolutions, SqueezeNet 5.8x (one thread, Zen 3).
///
/// Spatial convolutions stay in f32 (the host's direct convolutions): as
/// im2col matmuls in bytes they ran slower than those (ResNet-50's 3x3
/// ones at 20 GOP/s streaming the columns, which every workgroup packed
/// again, and at 105-130 GOP/s reading them transposed, gathered a byte at
/// a time; direct in f32, 210 GFLOP/s). They need direct byte kernels in a
/// channels-last layout.
bool rewriteConv(ConvOp op, IntegerOperands operands) {
  if (operands != IntegerOperands::Bytes)
    return false;
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto wType = dyn_cast<RankedTensorType>(op.getWeight().getType());
  auto out = dyn_cast<RankedTensorType>(op.getType());
  auto isOne = [](int64_t v) { return v == 1; };
  if (!in || !wType || !out || !in.hasStaticShape() ||
      !wType.hasStaticShape() || !out.hasStaticShape() || op.getGroup() != 1 ||
      op.getFilterBlock() != 0 || in.getRank() < 3 ||
      !llvm::all_of(wType.getShape().drop_front(2), isOne) ||
      !llvm::all_of(toI64Vector(op.getPads()),
                    [](int64_t v) { return v == 0; }))
    return false;
  SmallVector<int64_t> strides = toI64Vector(op.getStrides());
  if (strides.size() + 2 != size_t(in.getRank()) ||
      llvm::any_of(strides, [](int64_t s) { return s < 1; }))
    return false;
  auto a = matchActivations(op.getInput());
  int64_t f = wType.getDimSize(0), c = wType.getDimSize(1);
  auto biasType = op.getBias() ? cast<RankedTensorType>(op.getBias().getType())
                               : RankedTensorType();
  if (!a || !sumFits(c, operands) ||
      (biasType &&
       (!biasType.getElementType().isF32() || biasType.getNumElements() != f)))
    return false;
  auto w = matchWeight(op.getWeight(), c, f, /*outputsLeading=*/true);
  if (!w)
    return false;
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value x = a->unsignedBytes(b, loc);
  // A strided one (ResNet's downsampling shortcuts) reads every stride-th
  // pixel: its bytes subsampled, where the f32 activations were before.
  if (!llvm::all_of(strides, isOne)) {
    SmallVector<int64_t> starts(in.getRank(), 0),
        sizes{in.getDimSize(0), in.getDimSize(1)}, steps{1, 1};
    llvm::append_range(sizes, out.getShape().drop_front(2));
    llvm::append_range(steps, strides);
    auto xType = cast<RankedTensorType>(x.getType());
    x = b.create<SliceOp>(loc,
                          RankedTensorType::get(sizes, xType.getElementType()),
                          x, b.getI64ArrayAttr(starts),
                          b.getI64ArrayAttr(sizes), b.getI64ArrayAttr(steps));
  }
  if (int64_t extra = (4 - c % 4) % 4) {
    w->q = withZeroChannels(*w, extra);
    w->k = c += extra;
    x = padChannels(b, loc, x, extra, a->zero);
  }
  int64_t n = in.getDimSize(0), p = out.getNumElements() / (n * f);
  x = b.create<ReshapeOp>(loc, x, b.getI64ArrayAttr({n, c, p}));
  Value wq = integerWeight(b, loc, *w, /*leading=*/true, op.getWeight(),
                           IntegerOperands::Bytes);
  replaceByRescaled(b, op, b.create<MatMulOp>(loc, wq, x), *a, *w);
  return true;
}

/// A spatial convolution (one group, a window larger than 1x1; channels
/// padded to whole groups of 4 as rewriteConv pads them, from 3) of
/// dequantized activations by dequantized filters,
/// with VNNI's bytes: the convolution of the unsigned bytes, padded with
/// their zero point, by the int8 filters [F, C, k...] into i32 (the host's
/// direct kernels take it in quads of channels), less the zero point times
/// each filter's sum, then the epilogue per filter and the bias, as the
/// 1x1 ones (rewriteConv). The padding's bytes stand for zero, so the
/// integers are exactly those of the dequantized convolution.
bool rewriteSpatialConv(ConvOp op, IntegerOperands operands) {
  if (operands != IntegerOperands::Bytes)
    return false;
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto wType = dyn_cast<RankedTensorType>(op.getWeight().getType());
  auto out = dyn_cast<RankedTensorType>(op.getType());
  if (!in || !wType || !out || !in.hasStaticShape() ||
      !wType.hasStaticShape() || !out.hasStaticShape() || op.getGroup() != 1 ||
      op.getFilterBlock() != 0 || in.getRank() < 3 ||
      wType.getRank() != in.getRank() ||
      llvm::all_of(wType.getShape().drop_front(2),
                   [](int64_t k) { return k == 1; }))
    return false;
  int64_t f = wType.getDimSize(0), c = wType.getDimSize(1);
  int64_t window = wType.getNumElements() / std::max<int64_t>(1, f * c);
  auto biasType = op.getBias() ? cast<RankedTensorType>(op.getBias().getType())
                               : RankedTensorType();
  auto a = matchActivations(op.getInput());
  // Channels are padded to whole quads (with the zero point, and zero
  // filters) but for fewer than kMinPaddedQuadChannels, where the padding
  // would be most of the multiplies.
  int64_t extra = (4 - c % 4) % 4;
  if (!a || (extra && c < kMinPaddedQuadChannels) ||
      !sumFits((c + extra) * window, operands) ||
      (biasType &&
       (!biasType.getElementType().isF32() || biasType.getNumElements() != f)))
    return false;
  auto w = matchWeight(op.getWeight(), c * window, f, /*outputsLeading=*/true);
  if (!w)
    return false;
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value x = a->unsignedBytes(b, loc);
  SmallVector<int64_t> filterShape(wType.getShape());
  if (extra) {
    // (A filter's weights are [C, k...]: its zero channels come last.)
    w->q = withZeroChannels(*w, extra * window);
    w->k += extra * window;
    filterShape[1] += extra;
  }
  // One pad of the bytes with their zero point: the window's and the
  // channels' (ign.pad's layout: all begins, then all ends, per dim).
  SmallVector<int64_t> pads = toI64Vector(op.getPads());
  int64_t rank = in.getRank(), spatial = rank - 2;
  SmallVector<int64_t> all(2 * rank, 0), shape(in.getShape());
  all[rank + 1] = extra;
  shape[1] += extra;
  for (int64_t d = 0; d < spatial; ++d) {
    all[2 + d] = pads[d];
    all[rank + 2 + d] = pads[spatial + d];
    shape[2 + d] += pads[d] + pads[spatial + d];
  }
  if (llvm::any_of(all, [](int64_t p) { return p != 0; }))
    x = b.create<PadOp>(
        loc,
        RankedTensorType::get(
            shape, cast<RankedTensorType>(x.getType()).getElementType()),
        x, b.getI64ArrayAttr(all), b.getStringAttr("constant"),
        b.getF64FloatAttr(double(a->zero)));
  Value wq = makeWeight(
      b, loc, RankedTensorType::get(filterShape, b.getI8Type()),
      std::vector<int8_t>(w->q), weightName(op.getWeight(), ".int8"));
  auto acc = b.create<ConvOp>(
      loc, out.clone(b.getI32Type()), x, wq, /*bias=*/Value(), op.getStrides(),
      b.getI64ArrayAttr(SmallVector<int64_t>(pads.size(), 0)),
      op.getDilations(), b.getI64IntegerAttr(1), b.getI64IntegerAttr(0));
  int64_t n = out.getDimSize(0), p = out.getNumElements() / (n * f);
  replaceByRescaled(
      b, op,
      b.create<ReshapeOp>(loc, acc.getResult(), b.getI64ArrayAttr({n, f, p})),
      *a, *w);
  return true;
}

/// A constant (through a cast to i32) less a constant zero point of one
/// value or one per filter ([F, 1, ...]): its integers.
std::optional<std::vector<int64_t>> centeredConstant(Value v) {
  Value zero;
  if (auto sub = v.getDefiningOp<SubOp>()) {
    zero = sub.getRhs();
    v = sub.getLhs();
  }
  auto integers = [](Value c) -> std::optional<std::vector<int64_t>> {
    if (auto cast = c.getDefiningOp<CastOp>())
      c = cast.getInput();
    return constantIntegers(c);
  };
  std::optional<std::vector<int64_t>> w = integers(v);
  if (!w || w->empty() || !zero)
    return w;
  std::optional<std::vector<int64_t>> z = integers(zero);
  if (!z || z->empty() || w->size() % z->size() != 0)
    return std::nullopt;
  size_t per = w->size() / z->size(); // one zero point per filter, or all
  for (size_t i = 0; i < w->size(); ++i)
    (*w)[i] -= (*z)[i / per];
  return w;
}

/// An i32 convolution of bytes less their zero points (ConvInteger,
/// QLinearConv) by a constant weight computes exactly in f32 when no
/// partial sum can reach 2^24 (each filter's sum of |w| times 255, plus
/// its bias): then an f32 convolution (the host's direct kernels) of the
/// same values, converted back to i32, is the same integers. The i32
/// convolution ran at 4 GOP/s (ViT's patch embedding quantized
/// dynamically: 27.7 of its 57 ms).
bool rewriteIntegerConv(ConvOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  auto wType = cast<RankedTensorType>(op.getWeight().getType());
  if (!type.getElementType().isInteger(32) || !wType.hasStaticShape())
    return false;
  auto x = matchCenteredBytes(op.getInput());
  // |x - zero| <= 255 needs an 8-bit zero point too (any i32 one would
  // wrap the same in i32, but not bound the f32 sums).
  auto zeroCast = x && x->zero ? x->zero.getDefiningOp<CastOp>() : CastOp();
  if (x && x->zero &&
      (!zeroCast ||
       !zeroCast.getInput().getType().getElementType().isInteger(8)))
    return false;
  std::optional<std::vector<int64_t>> w =
      x ? centeredConstant(op.getWeight()) : std::nullopt;
  std::optional<std::vector<int64_t>> bias;
  if (op.getBias())
    bias = constantIntegers(op.getBias());
  int64_t f = wType.getDimSize(0);
  if (!w || int64_t(w->size()) != wType.getNumElements() || f == 0 ||
      (op.getBias() && (!bias || int64_t(bias->size()) != f)))
    return false;
  int64_t per = int64_t(w->size()) / f;
  for (int64_t i = 0; i < f; ++i) {
    int64_t bound = bias ? std::abs((*bias)[size_t(i)]) : 0;
    for (int64_t j = 0; j < per; ++j)
      bound += 255 * std::abs((*w)[size_t(i * per + j)]);
    if (bound >= (int64_t(1) << 24))
      return false;
  }
  OpBuilder b(op);
  Location loc = op.getLoc();
  Type f32 = b.getF32Type();
  auto toF32 = [&](Value v) -> Value {
    auto t = cast<RankedTensorType>(v.getType());
    return b.create<CastOp>(loc, t.clone(f32), v, f32);
  };
  Value input = toF32(x->q);
  if (x->zero)
    input = b.create<SubOp>(loc, input, toF32(x->zero));
  auto floats = [](const std::vector<int64_t> &v) {
    return std::vector<float>(v.begin(), v.end());
  };
  SmallVector<Value> operands{
      input,
      makeWeight(b, loc, wType.clone(f32), floats(*w), "integer_conv.f32")};
  if (bias)
    operands.push_back(makeWeight(b, loc, RankedTensorType::get({f}, f32),
                                  floats(*bias), "integer_conv.bias"));
  auto conv = b.create<ConvOp>(loc, type.clone(f32), operands, op->getAttrs());
  Value y = b.create<CastOp>(loc, type, conv, b.getI32Type());
  op.getResult().replaceAllUsesWith(y);
  op.erase();
  return true;
}

/// A max pool of dequantized activations ((cast(q) - z) * s, s > 0): the
/// max pool of q, dequantized. The dequantization is monotone (f32's
/// rounding never swaps two values), so each window's maximum is the same
/// f32 value; the pool reads and writes bytes instead of floats, and the
/// kernel before it, whose bytes it reads, need not write floats as well
/// (quantized SqueezeNet's three max pools of f32, 0.62 of its 3.6 ms). Where
/// the bytes are quantized in the pool's own kernel (from a concat of
/// differently scaled tensors), that loop runs first over the workgroup's
/// input (fuseElementwiseChains fuses nothing into a window's reduction).
bool rewriteMaxPool(MaxPoolOp op) {
  std::optional<DequantizedActivations> a = matchActivations(op.getInput());
  auto out = dyn_cast<RankedTensorType>(op.getType());
  if (!a || !out)
    return false;
  auto scale = op.getInput().getDefiningOp<MulOp>();
  auto centered = scale.getLhs().getDefiningOp<SubOp>();
  OpBuilder b(op);
  IRMapping map;
  map.map(op.getInput(), a->q);
  Operation *pooled = b.clone(*op, map);
  pooled->getResult(0).setType(
      out.clone(cast<RankedTensorType>(a->q.getType()).getElementType()));
  Location loc = op.getLoc();
  Value y =
      b.create<CastOp>(loc, out, pooled->getResult(0), out.getElementType());
  if (centered)
    y = b.create<SubOp>(loc, out, y, centered.getRhs());
  y = b.create<MulOp>(loc, out, y, scale.getRhs());
  op.getResult().replaceAllUsesWith(y);
  op.erase();
  return true;
}

struct IntegerMatmulsPass
    : public impl::IntegerMatmulsBase<IntegerMatmulsPass> {
  using IntegerMatmulsBase::IntegerMatmulsBase;
  void runOnOperation() override {
    integerMatmuls(getOperation(),
                   words ? IntegerOperands::Words : IntegerOperands::Bytes);
  }
};

} // namespace

void integerMatmuls(func::FuncOp func, IntegerOperands operands) {
  SmallVector<Operation *> contractions;
  SmallVector<MaxPoolOp> pools;
  func.walk([&](Operation *op) {
    if (isa<MatMulOp, GemmOp, ConvOp>(op))
      contractions.push_back(op);
    if (auto pool = dyn_cast<MaxPoolOp>(op))
      pools.push_back(pool);
  });
  bool changed = false;
  for (MaxPoolOp pool : pools)
    changed |= rewriteMaxPool(pool);
  for (Operation *op : contractions) {
    auto conv = dyn_cast<ConvOp>(op);
    if (conv && rewriteIntegerConv(conv))
      changed = true;
    else if (operands == IntegerOperands::None)
      continue;
    else if (auto m = dyn_cast<MatMulOp>(op))
      changed |= rewriteMatmul(m, operands);
    else if (auto g = dyn_cast<GemmOp>(op))
      changed |= rewriteGemm(g, operands);
    else if (rewriteConv(conv, operands))
      changed = true;
    else
      changed |= rewriteSpatialConv(conv, operands);
  }
  if (!changed)
    return;
  // The dequantizations and f32 weights no matmul reads any more.
  for (Operation &op : llvm::make_early_inc_range(
           llvm::reverse(func.getBody().front().getOperations())))
    if (isa<ConstantOp, CastOp, SubOp, MulOp, MatMulOp, ReshapeOp>(op) &&
        op.use_empty())
      op.erase();
}

} // namespace ign
