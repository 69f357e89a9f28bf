//===- IgnOps.cpp - type inference, verification and folding of ign ops ---===//
//
// Every op infers its result type here from operands and attributes. The
// functions only read what they have checked, and report problems through
// emitOptionalError, because Debian's MLIR has no assertions to catch misuse.
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace ign;

#include "ign/Dialect/Ign/IR/IgnDialect.cpp.inc"

void IgnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ign/Dialect/Ign/IR/IgnOps.cpp.inc"
      >();
}

Operation *IgnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

namespace {
using Loc = std::optional<Location>;
using Types = SmallVectorImpl<Type>;

/// The operand's type if it is a statically shaped ranked tensor.
RankedTensorType staticTensor(Value v) {
  if (!v)
    return {};
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.hasStaticShape() ? type : RankedTensorType();
}

/// "[a, b, c]" for lists of values (perm, sizes, axes).
std::string listStr(ArrayRef<int64_t> values) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(values, os);
  os << "]";
  return s;
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  os << "]";
  return s;
}

/// Resolves a possibly negative axis against `rank`; nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

LogicalResult requireTensor(Loc loc, Value v, RankedTensorType &type,
                            StringRef what) {
  type = staticTensor(v);
  if (!type)
    return emitOptionalError(loc, what, " must be a statically shaped tensor");
  return success();
}
} // namespace

SmallVector<int64_t> ign::toI64Vector(ArrayAttr array) {
  SmallVector<int64_t> values;
  if (!array)
    return values;
  for (Attribute a : array)
    if (auto i = dyn_cast<IntegerAttr>(a))
      values.push_back(i.getInt());
  return values;
}

std::optional<SmallVector<int64_t>>
ign::broadcastShapes(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t r = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (l != r && l != 1 && r != 1)
      return std::nullopt;
    result[i] = l == 1 ? r : l;
  }
  return result;
}

LogicalResult ign::inferBroadcastBinary(MLIRContext *ctx, Loc loc, Value lhs,
                                        Value rhs, bool isPredicate,
                                        Types &types) {
  RankedTensorType l, r;
  if (failed(requireTensor(loc, lhs, l, "lhs")) ||
      failed(requireTensor(loc, rhs, r, "rhs")))
    return failure();
  if (l.getElementType() != r.getElementType())
    return emitOptionalError(loc, "operand element types differ: ",
                             l.getElementType(), " vs ", r.getElementType());
  auto shape = broadcastShapes(l.getShape(), r.getShape());
  if (!shape)
    return emitOptionalError(loc, "shapes ", shapeStr(l.getShape()), " and ",
                             shapeStr(r.getShape()), " do not broadcast");
  Type element = isPredicate ? IntegerType::get(ctx, 1) : l.getElementType();
  types.push_back(RankedTensorType::get(*shape, element));
  return success();
}

/// Output size of a sliding window along one dim (ONNX pooling/conv rule).
static std::optional<int64_t> windowOutputSize(int64_t in, int64_t kernel,
                                               int64_t stride, int64_t padBegin,
                                               int64_t padEnd, int64_t dilation,
                                               bool ceil) {
  int64_t effective = (kernel - 1) * dilation + 1;
  int64_t span = in + padBegin + padEnd - effective;
  if (span < 0 || stride <= 0)
    return std::nullopt;
  int64_t out = (ceil ? (span + stride - 1) / stride : span / stride) + 1;
  // In ceil mode the last window must start inside the input or left pad.
  if (ceil && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

/// Checks that kernel/strides/pads/dilations fit `spatial` dims.
static LogicalResult checkWindowAttrs(Loc loc, size_t spatial,
                                      ArrayRef<int64_t> kernel,
                                      ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> pads,
                                      ArrayRef<int64_t> dilations) {
  if (kernel.size() != spatial || strides.size() != spatial ||
      dilations.size() != spatial || pads.size() != 2 * spatial)
    return emitOptionalError(loc, "window attributes do not match ", spatial,
                             " spatial dims (kernel ", kernel.size(),
                             ", strides ", strides.size(), ", dilations ",
                             dilations.size(), ", pads ", pads.size(), ")");
  for (size_t i = 0; i < spatial; ++i)
    if (kernel[i] <= 0 || strides[i] <= 0 || dilations[i] <= 0 || pads[i] < 0 ||
        pads[i + spatial] < 0)
      return emitOptionalError(loc, "kernel, strides and dilations must be "
                                    "positive and pads non-negative");
  return success();
}

LogicalResult ign::inferPoolType(Loc loc, Value input, ArrayAttr kernelAttr,
                                 ArrayAttr stridesAttr, ArrayAttr padsAttr,
                                 ArrayAttr dilationsAttr, bool ceilMode,
                                 Types &types) {
  RankedTensorType type;
  if (failed(requireTensor(loc, input, type, "input")))
    return failure();
  if (type.getRank() < 3)
    return emitOptionalError(loc, "pooling input must have rank >= 3, got ",
                             type.getRank());
  size_t spatial = type.getRank() - 2;
  auto kernel = toI64Vector(kernelAttr), strides = toI64Vector(stridesAttr),
       pads = toI64Vector(padsAttr), dilations = toI64Vector(dilationsAttr);
  if (failed(checkWindowAttrs(loc, spatial, kernel, strides, pads, dilations)))
    return failure();
  SmallVector<int64_t> shape(type.getShape().take_front(2));
  for (size_t i = 0; i < spatial; ++i) {
    auto out =
        windowOutputSize(type.getDimSize(i + 2), kernel[i], strides[i], pads[i],
                         pads[i + spatial], dilations[i], ceilMode);
    if (!out)
      return emitOptionalError(loc, "pooling window ", kernel[i],
                               " does not fit spatial dim ", i, " of size ",
                               type.getDimSize(i + 2), " with its padding");
    shape.push_back(*out);
  }
  types.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult ign::inferReduceType(Loc loc, Value input, ArrayAttr axesAttr,
                                   bool keepdims, Types &types) {
  RankedTensorType type;
  if (failed(requireTensor(loc, input, type, "input")))
    return failure();
  auto axes = toI64Vector(axesAttr);
  if (axes.empty())
    return emitOptionalError(loc, "reduction needs at least one axis");
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis < 0 || axis >= type.getRank() || (i > 0 && axes[i - 1] >= axis))
      return emitOptionalError(loc,
                               "reduction axes must be sorted, unique and "
                               "in [0, ",
                               type.getRank(), ")");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(type.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult ign::inferArgReduceType(MLIRContext *ctx, Loc loc, Value input,
                                      int64_t axis, bool keepdims,
                                      Types &types) {
  RankedTensorType type;
  if (failed(requireTensor(loc, input, type, "input")))
    return failure();
  if (axis < 0 || axis >= type.getRank())
    return emitOptionalError(loc, "axis ", axis, " out of range for rank ",
                             type.getRank());
  SmallVector<int64_t> shape(type.getShape());
  if (keepdims)
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  types.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult ign::inferSameTypeWithAxis(Loc loc, Value input, int64_t axis,
                                         Types &types) {
  RankedTensorType type;
  if (failed(requireTensor(loc, input, type, "input")))
    return failure();
  if (axis < 0 || axis >= std::max<int64_t>(type.getRank(), 1))
    return emitOptionalError(loc, "axis ", axis, " out of range for rank ",
                             type.getRank());
  types.push_back(type);
  return success();
}

#define IGN_VERIFY_ADAPTOR()                                                   \
  if (failed(verifyAdaptor(ctx, loc, adaptor)))                                \
  return failure()

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult inferPredicate(MLIRContext *ctx, Loc loc, Value input,
                                    Types &types) {
  RankedTensorType type;
  if (failed(requireTensor(loc, input, type, "input")))
    return failure();
  types.push_back(type.clone(IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult IsNaNOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                        Adaptor adaptor, Types &types) {
  return inferPredicate(ctx, loc, adaptor.getInput(), types);
}

LogicalResult IsInfOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                        Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  return inferPredicate(ctx, loc, adaptor.getInput(), types);
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                       Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType type;
  if (failed(requireTensor(loc, adaptor.getInput(), type, "input")))
    return failure();
  Type to = adaptor.getTo();
  if (!isa<FloatType, IntegerType>(to))
    return emitOptionalError(loc, "cannot cast to ", to);
  types.push_back(type.clone(to));
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                         Adaptor adaptor, Types &types) {
  RankedTensorType cond;
  if (failed(requireTensor(loc, adaptor.getCondition(), cond, "condition")))
    return failure();
  SmallVector<Type> values;
  if (failed(inferBroadcastBinary(ctx, loc, adaptor.getLhs(), adaptor.getRhs(),
                                  false, values)))
    return failure();
  auto valueType = cast<RankedTensorType>(values.front());
  auto shape = broadcastShapes(cond.getShape(), valueType.getShape());
  if (!shape)
    return emitOptionalError(loc, "condition shape ", shapeStr(cond.getShape()),
                             " does not broadcast with ",
                             shapeStr(valueType.getShape()));
  types.push_back(RankedTensorType::get(*shape, valueType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                         Adaptor adaptor, Types &types) {
  RankedTensorType l, r;
  if (failed(requireTensor(loc, adaptor.getLhs(), l, "lhs")) ||
      failed(requireTensor(loc, adaptor.getRhs(), r, "rhs")))
    return failure();
  if (l.getRank() == 0 || r.getRank() == 0)
    return emitOptionalError(loc, "matmul operands must have rank >= 1");
  // 8-bit integers (of either signedness each) accumulate in i32, as the
  // integer contractions of quantized models do; so do signless 16-bit
  // ones by signless 16-bit ones (IntegerMatmuls.cpp's words).
  Type le = l.getElementType(), re = r.getElementType();
  bool bytes = (le.isInteger(8) && re.isInteger(8)) ||
               (le.isSignlessInteger(16) && re.isSignlessInteger(16));
  if (l.getElementType() != r.getElementType() && !bytes)
    return emitOptionalError(loc, "operand element types differ: ",
                             l.getElementType(), " vs ", r.getElementType());
  SmallVector<int64_t> ls(l.getShape()), rs(r.getShape());
  bool lhsVector = ls.size() == 1, rhsVector = rs.size() == 1;
  if (lhsVector)
    ls.insert(ls.begin(), 1);
  if (rhsVector)
    rs.push_back(1);
  int64_t k = ls.back(), kr = rs[rs.size() - 2];
  if (k != kr)
    return emitOptionalError(loc, "contraction dims differ: lhs ",
                             shapeStr(l.getShape()), " rhs ",
                             shapeStr(r.getShape()));
  auto batch = broadcastShapes(ArrayRef<int64_t>(ls).drop_back(2),
                               ArrayRef<int64_t>(rs).drop_back(2));
  if (!batch)
    return emitOptionalError(loc, "batch dims of ", shapeStr(l.getShape()),
                             " and ", shapeStr(r.getShape()),
                             " do not broadcast");
  SmallVector<int64_t> shape(*batch);
  if (!lhsVector)
    shape.push_back(ls[ls.size() - 2]);
  if (!rhsVector)
    shape.push_back(rs.back());
  Type element = bytes ? IntegerType::get(ctx, 32) : l.getElementType();
  types.push_back(RankedTensorType::get(shape, element));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                       Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType a, b;
  if (failed(requireTensor(loc, adaptor.getA(), a, "A")) ||
      failed(requireTensor(loc, adaptor.getB(), b, "B")))
    return failure();
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(loc, "gemm operands must be 2-D, got ",
                             shapeStr(a.getShape()), " and ",
                             shapeStr(b.getShape()));
  if (a.getElementType() != b.getElementType())
    return emitOptionalError(loc, "operand element types differ");
  int64_t m = adaptor.getTransA() ? a.getDimSize(1) : a.getDimSize(0);
  int64_t k = adaptor.getTransA() ? a.getDimSize(0) : a.getDimSize(1);
  int64_t kb = adaptor.getTransB() ? b.getDimSize(1) : b.getDimSize(0);
  int64_t n = adaptor.getTransB() ? b.getDimSize(0) : b.getDimSize(1);
  if (k != kb)
    return emitOptionalError(loc, "gemm contraction dims differ: ", k, " vs ",
                             kb);
  if (Value c = adaptor.getC()) {
    RankedTensorType ct;
    if (failed(requireTensor(loc, c, ct, "C")))
      return failure();
    auto shape = broadcastShapes(ct.getShape(), {m, n});
    if (!shape || (*shape)[0] != m || (*shape)[1] != n)
      return emitOptionalError(loc, "gemm bias ", shapeStr(ct.getShape()),
                               " does not broadcast to [", m, "x", n, "]");
  }
  types.push_back(RankedTensorType::get({m, n}, a.getElementType()));
  return success();
}

/// Shared checks of conv and conv_transpose; returns the spatial rank.
static FailureOr<size_t>
checkConvOperands(Loc loc, RankedTensorType &in, RankedTensorType &w,
                  Value input, Value weight, Value bias, int64_t group,
                  ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                  ArrayRef<int64_t> dilations, bool blocked = false,
                  bool bytes = false) {
  if (failed(requireTensor(loc, input, in, "input")) ||
      failed(requireTensor(loc, weight, w, "weight")))
    return failure();
  if (in.getRank() < 3 || w.getRank() != in.getRank() + (blocked ? 1 : 0))
    return emitOptionalError(loc, "conv input ", shapeStr(in.getShape()),
                             " and weight ", shapeStr(w.getShape()),
                             blocked ? " must be ranks >= 3 and one more"
                                     : " must have the same rank >= 3");
  if (in.getElementType() != w.getElementType() &&
      !(bytes && in.getElementType().isInteger(8) &&
        w.getElementType().isInteger(8)))
    return emitOptionalError(loc, "input and weight element types differ");
  if (group <= 0)
    return emitOptionalError(loc, "group must be positive, got ", group);
  size_t spatial = in.getRank() - 2;
  SmallVector<int64_t> kernel(blocked ? w.getShape().drop_front(2).drop_back()
                                      : w.getShape().drop_front(2));
  if (failed(checkWindowAttrs(loc, spatial, kernel, strides, pads, dilations)))
    return failure();
  if (bias) {
    RankedTensorType b;
    if (failed(requireTensor(loc, bias, b, "bias")))
      return failure();
    if (b.getRank() != 1)
      return emitOptionalError(loc, "bias must be 1-D, got ",
                               shapeStr(b.getShape()));
  }
  return spatial;
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                       Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in, w;
  auto strides = toI64Vector(adaptor.getStrides()),
       pads = toI64Vector(adaptor.getPads()),
       dilations = toI64Vector(adaptor.getDilations());
  int64_t group = adaptor.getGroup();
  IntegerAttr blockAttr = adaptor.getFilterBlockAttr();
  int64_t block = blockAttr ? blockAttr.getInt() : 0;
  if (block < 0)
    return emitOptionalError(loc, "filter_block must not be negative, got ",
                             block);
  auto spatial = checkConvOperands(
      loc, in, w, adaptor.getInput(), adaptor.getWeight(), adaptor.getBias(),
      group, strides, pads, dilations, block > 0, /*bytes=*/true);
  if (failed(spatial))
    return failure();
  if (block > 0 && (group != 1 || w.getDimSize(w.getRank() - 1) != block))
    return emitOptionalError(loc, "a filter_block ", block,
                             " weight must be [F / ", block, ", C, k..., ",
                             block, "] with group 1, got ",
                             shapeStr(w.getShape()), " with group ", group);
  // [F / T, C, k..., T] when blocked: its kernel dims start at 2 either way.
  int64_t channels = in.getDimSize(1),
          outChannels = block > 0 ? w.getDimSize(0) * block : w.getDimSize(0),
          weightChannels = w.getDimSize(1);
  if (channels % group || outChannels % group ||
      weightChannels * group != channels)
    return emitOptionalError(loc, "input channels ", channels, ", group ",
                             group, " and weight ", shapeStr(w.getShape()),
                             " do not agree");
  if (Value bias = adaptor.getBias())
    if (cast<RankedTensorType>(bias.getType()).getDimSize(0) != outChannels)
      return emitOptionalError(loc, "bias size must equal output channels ",
                               outChannels);
  SmallVector<int64_t> shape{in.getDimSize(0), outChannels};
  for (size_t i = 0; i < *spatial; ++i) {
    auto out =
        windowOutputSize(in.getDimSize(i + 2), w.getDimSize(i + 2), strides[i],
                         pads[i], pads[i + *spatial], dilations[i], false);
    if (!out)
      return emitOptionalError(loc, "kernel ", shapeStr(w.getShape()),
                               " does not fit input ", shapeStr(in.getShape()),
                               " with its padding");
    shape.push_back(*out);
  }
  // Bytes (of either signedness) accumulate in i32.
  Type element = in.getElementType().isInteger(8)
                     ? Type(IntegerType::get(ctx, 32))
                     : in.getElementType();
  types.push_back(RankedTensorType::get(shape, element));
  return success();
}

LogicalResult Im2ColOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                         Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  SmallVector<Type> window;
  if (failed(inferPoolType(loc, adaptor.getInput(), adaptor.getKernelShape(),
                           adaptor.getStrides(), adaptor.getPads(),
                           adaptor.getDilations(), false, window)))
    return failure();
  auto out = cast<RankedTensorType>(window.front());
  int64_t k = 1, p = 1;
  for (int64_t d : toI64Vector(adaptor.getKernelShape()))
    k *= d;
  for (int64_t d : out.getShape().drop_front(2))
    p *= d;
  types.push_back(RankedTensorType::get(
      {out.getDimSize(0), out.getDimSize(1) * k, p}, out.getElementType()));
  return success();
}

LogicalResult Col2ImOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                         Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  auto in = dyn_cast<RankedTensorType>(adaptor.getInput().getType());
  auto inShape = toI64Vector(adaptor.getInputShape()),
       outShape = toI64Vector(adaptor.getOutputShape()),
       kernel = toI64Vector(adaptor.getKernelShape()),
       strides = toI64Vector(adaptor.getStrides()),
       pads = toI64Vector(adaptor.getPads()),
       dilations = toI64Vector(adaptor.getDilations());
  size_t s = kernel.size();
  if (!in || in.getRank() != 3 || !in.hasStaticShape())
    return emitOptionalError(loc, "col2im input must be a static [N, F*K, P]");
  if (s == 0 || inShape.size() != s || outShape.size() != s ||
      strides.size() != s || dilations.size() != s || pads.size() != 2 * s)
    return emitOptionalError(loc, "col2im attributes disagree on the number ",
                             "of spatial dims");
  int64_t k = 1, p = 1;
  for (size_t i = 0; i < s; ++i) {
    if (kernel[i] <= 0 || inShape[i] <= 0 || outShape[i] <= 0 ||
        strides[i] <= 0 || dilations[i] <= 0)
      return emitOptionalError(loc, "col2im sizes must be positive");
    k *= kernel[i];
    p *= inShape[i];
  }
  if (in.getDimSize(1) % k || in.getDimSize(2) != p)
    return emitOptionalError(loc, "col2im input ", shapeStr(in.getShape()),
                             " is not [N, F*", k, ", ", p, "]");
  int64_t f = in.getDimSize(1) / k;
  if (Value bias = adaptor.getBias()) {
    auto bt = dyn_cast<RankedTensorType>(bias.getType());
    if (!bt || bt.getRank() != 1 || bt.getDimSize(0) != f)
      return emitOptionalError(loc, "col2im bias must be [", f, "]");
  }
  SmallVector<int64_t> shape{in.getDimSize(0), f};
  llvm::append_range(shape, outShape);
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult ConvTransposeOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                                Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in, w;
  auto strides = toI64Vector(adaptor.getStrides()),
       pads = toI64Vector(adaptor.getPads()),
       dilations = toI64Vector(adaptor.getDilations()),
       outputPadding = toI64Vector(adaptor.getOutputPadding());
  int64_t group = adaptor.getGroup();
  auto spatial =
      checkConvOperands(loc, in, w, adaptor.getInput(), adaptor.getWeight(),
                        adaptor.getBias(), group, strides, pads, dilations);
  if (failed(spatial))
    return failure();
  if (outputPadding.size() != *spatial)
    return emitOptionalError(loc, "output_padding must have ", *spatial,
                             " values");
  if (w.getDimSize(0) != in.getDimSize(1) || in.getDimSize(1) % group)
    return emitOptionalError(loc, "input channels ", in.getDimSize(1),
                             " do not match weight ", shapeStr(w.getShape()),
                             " with group ", group);
  int64_t outChannels = w.getDimSize(1) * group;
  if (Value bias = adaptor.getBias())
    if (cast<RankedTensorType>(bias.getType()).getDimSize(0) != outChannels)
      return emitOptionalError(loc, "bias size must equal output channels ",
                               outChannels);
  SmallVector<int64_t> shape{in.getDimSize(0), outChannels};
  for (size_t i = 0; i < *spatial; ++i) {
    int64_t out = (in.getDimSize(i + 2) - 1) * strides[i] +
                  (w.getDimSize(i + 2) - 1) * dilations[i] + 1 - pads[i] -
                  pads[i + *spatial] + outputPadding[i];
    if (out <= 0)
      return emitOptionalError(loc, "transposed convolution output dim ", i,
                               " would be ", out);
    shape.push_back(out);
  }
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

namespace {
/// One einsum term: its letters and where "..." stands (or -1).
struct EinsumTerm {
  std::string letters;
  int ellipsisAt = -1;
};

std::optional<EinsumTerm> parseEinsumTerm(StringRef text) {
  EinsumTerm term;
  text = text.trim();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.substr(i).starts_with("...")) {
      if (term.ellipsisAt >= 0)
        return std::nullopt;
      term.ellipsisAt = term.letters.size();
      i += 2;
    } else if (llvm::isAlpha(text[i])) {
      term.letters.push_back(text[i]);
    } else if (text[i] != ' ') {
      return std::nullopt;
    }
  }
  return term;
}
} // namespace

LogicalResult EinsumOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                         Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  StringRef eq = adaptor.getEquation();
  auto [lhs, rhs] = eq.split("->");
  if (!eq.contains("->"))
    return emitOptionalError(loc, "einsum equation '", eq,
                             "' must name its output after '->'");
  SmallVector<StringRef> termTexts;
  lhs.split(termTexts, ',');
  if (termTexts.size() != adaptor.getInputs().size())
    return emitOptionalError(loc, "einsum equation '", eq, "' has ",
                             termTexts.size(), " inputs but the op has ",
                             adaptor.getInputs().size());
  llvm::DenseMap<char, int64_t> sizes;
  SmallVector<int64_t> ellipsisShape;
  Type element;
  for (auto [text, value] : llvm::zip(termTexts, adaptor.getInputs())) {
    RankedTensorType type;
    if (failed(requireTensor(loc, value, type, "einsum input")))
      return failure();
    if (element && element != type.getElementType())
      return emitOptionalError(loc, "einsum inputs differ in element type");
    element = type.getElementType();
    auto term = parseEinsumTerm(text);
    int64_t rank = type.getRank(), letters = term ? term->letters.size() : 0;
    if (!term || letters > rank || (term->ellipsisAt < 0 && letters != rank))
      return emitOptionalError(loc, "einsum term '", text,
                               "' does not fit an operand of shape ",
                               shapeStr(type.getShape()));
    int64_t ellipsisRank = rank - letters;
    int64_t at = std::max(term->ellipsisAt, 0);
    auto shape = type.getShape();
    auto broadcast =
        broadcastShapes(ellipsisShape, shape.slice(at, ellipsisRank));
    if (!broadcast)
      return emitOptionalError(loc, "einsum '...' dims do not broadcast");
    ellipsisShape = *broadcast;
    for (auto [i, c] : llvm::enumerate(term->letters)) {
      int64_t dim = shape[i < (size_t)at ? i : i + ellipsisRank];
      auto [it, inserted] = sizes.try_emplace(c, dim);
      if (!inserted && it->second != dim)
        return emitOptionalError(loc, "einsum index '", StringRef(&c, 1),
                                 "' has sizes ", it->second, " and ", dim);
    }
  }
  auto out = parseEinsumTerm(rhs);
  if (!out)
    return emitOptionalError(loc, "bad einsum output term '", rhs, "'");
  SmallVector<int64_t> shape;
  for (auto [i, c] : llvm::enumerate(out->letters)) {
    if ((int)i == out->ellipsisAt)
      shape.append(ellipsisShape);
    auto it = sizes.find(c);
    if (it == sizes.end())
      return emitOptionalError(loc, "einsum output index '", StringRef(&c, 1),
                               "' appears in no input");
    shape.push_back(it->second);
  }
  if (out->ellipsisAt == (int)out->letters.size())
    shape.append(ellipsisShape);
  types.push_back(RankedTensorType::get(shape, element));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Checks that each of `params` is 1-D of `size` elements.
static LogicalResult checkPerChannel(Loc loc, ValueRange params, int64_t size,
                                     StringRef what) {
  for (Value p : params) {
    RankedTensorType t;
    if (failed(requireTensor(loc, p, t, what)))
      return failure();
    if (t.getRank() != 1 || t.getDimSize(0) != size)
      return emitOptionalError(loc, what, " must have shape [", size, "], got ",
                               shapeStr(t.getShape()));
  }
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                            Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  if (in.getRank() < 2)
    return emitOptionalError(loc, "batch_norm input must have rank >= 2");
  if (failed(checkPerChannel(loc,
                             {adaptor.getScale(), adaptor.getBias(),
                              adaptor.getMean(), adaptor.getVariance()},
                             in.getDimSize(1), "scale/bias/mean/variance")))
    return failure();
  types.push_back(in);
  return success();
}

LogicalResult InstanceNormOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                               Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  if (in.getRank() < 3)
    return emitOptionalError(loc, "instance_norm input must have rank >= 3");
  if (failed(checkPerChannel(loc, {adaptor.getScale(), adaptor.getBias()},
                             in.getDimSize(1), "scale/bias")))
    return failure();
  types.push_back(in);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                            Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= in.getRank())
    return emitOptionalError(loc, "layer_norm axis ", axis,
                             " out of range for rank ", in.getRank());
  auto normalized = in.getShape().drop_front(axis);
  SmallVector<Value> params{adaptor.getScale()};
  if (adaptor.getBias())
    params.push_back(adaptor.getBias());
  for (Value p : params) {
    RankedTensorType t;
    if (failed(requireTensor(loc, p, t, "scale/bias")))
      return failure();
    auto b = broadcastShapes(t.getShape(), normalized);
    if (!b || ArrayRef<int64_t>(*b) != normalized)
      return emitOptionalError(loc, "layer_norm scale/bias ",
                               shapeStr(t.getShape()),
                               " does not broadcast to ", shapeStr(normalized));
  }
  types.push_back(in);
  return success();
}

LogicalResult GroupNormOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                            Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  int64_t groups = adaptor.getNumGroups();
  if (in.getRank() < 2 || groups <= 0 || in.getDimSize(1) % groups)
    return emitOptionalError(loc, "channels of ", shapeStr(in.getShape()),
                             " do not split into ", groups, " groups");
  if (failed(checkPerChannel(loc, {adaptor.getScale(), adaptor.getBias()},
                             in.getDimSize(1), "scale/bias")))
    return failure();
  types.push_back(in);
  return success();
}

LogicalResult LRNOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                      Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  if (in.getRank() < 2 || adaptor.getSize() <= 0)
    return emitOptionalError(loc, "lrn needs rank >= 2 and a positive size");
  types.push_back(in);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult CumSumOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                         Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  return inferSameTypeWithAxis(loc, adaptor.getInput(), adaptor.getAxis(),
                               types);
}

LogicalResult NonMaxSuppressionOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                                    Adaptor adaptor,
                                                    Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType boxes, scores, maxOut, iou, floor;
  if (failed(requireTensor(loc, adaptor.getBoxes(), boxes, "boxes")) ||
      failed(requireTensor(loc, adaptor.getScores(), scores, "scores")) ||
      failed(
          requireTensor(loc, adaptor.getMaxOutput(), maxOut, "max_output")) ||
      failed(requireTensor(loc, adaptor.getIouThreshold(), iou,
                           "iou_threshold")) ||
      failed(requireTensor(loc, adaptor.getScoreThreshold(), floor,
                           "score_threshold")))
    return failure();
  Type f32 = Float32Type::get(ctx);
  bool ok = boxes.getRank() == 3 && boxes.getDimSize(2) == 4 &&
            scores.getRank() == 3 &&
            scores.getDimSize(0) == boxes.getDimSize(0) &&
            scores.getDimSize(2) == boxes.getDimSize(1) &&
            boxes.getElementType() == f32 && scores.getElementType() == f32 &&
            maxOut.getRank() == 0 && maxOut.getElementType().isInteger(64) &&
            iou.getRank() == 0 && iou.getElementType() == f32 &&
            floor.getRank() == 0 && floor.getElementType() == f32;
  if (!ok)
    return emitOptionalError(
        loc,
        "non_max_suppression needs f32 boxes [B, N, 4], f32 scores "
        "[B, C, N], an i64 max_output and f32 thresholds (0-d), got ",
        boxes, ", ", scores, ", ", maxOut, ", ", iou, ", ", floor);
  int64_t width = adaptor.getWidth();
  if (width < 1 || width > scores.getDimSize(2))
    return emitOptionalError(loc, "non_max_suppression width ", width,
                             " is not in 1..", scores.getDimSize(2));
  types.push_back(
      RankedTensorType::get({scores.getDimSize(0), scores.getDimSize(1), width},
                            IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                       Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  int64_t axis = adaptor.getAxis(), k = adaptor.getK();
  if (axis < 0 || axis >= in.getRank())
    return emitOptionalError(loc, "topk axis ", axis, " out of range");
  if (k < 0 || k > in.getDimSize(axis))
    return emitOptionalError(loc, "topk k=", k, " exceeds dim size ",
                             in.getDimSize(axis));
  SmallVector<int64_t> shape(in.getShape());
  shape[axis] = k;
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  types.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// Recurrent
//===----------------------------------------------------------------------===//

template <typename AdaptorT>
static LogicalResult inferRecurrent(Loc loc, AdaptorT &adaptor, int64_t gates,
                                    int numStates, Types &types) {
  RankedTensorType x, w, r;
  bool projected = bool(adaptor.getProjectedInput());
  if (failed(requireTensor(loc, adaptor.getX(), x, "X")) ||
      failed(requireTensor(loc, adaptor.getR(), r, "R")))
    return failure();
  if (projected && adaptor.getW())
    return emitOptionalError(loc, "W must be absent with projected_input");
  if (!projected && failed(requireTensor(loc, adaptor.getW(), w, "W")))
    return failure();
  int64_t dirs = adaptor.getDirection() == "bidirectional" ? 2 : 1;
  int64_t hidden = adaptor.getHiddenSize();
  if (x.getRank() != 3)
    return emitOptionalError(loc, "X must be [seq, batch, input], got ",
                             shapeStr(x.getShape()));
  if (projected && x.getDimSize(2) != dirs * gates * hidden)
    return emitOptionalError(loc, "projected X must be [seq, batch, ",
                             dirs * gates * hidden, "], got ",
                             shapeStr(x.getShape()));
  if (!projected &&
      (w.getRank() != 3 || w.getDimSize(0) != dirs ||
       w.getDimSize(1) != gates * hidden || w.getDimSize(2) != x.getDimSize(2)))
    return emitOptionalError(loc, "W must be [", dirs, "x", gates * hidden, "x",
                             x.getDimSize(2), "], got ",
                             shapeStr(w.getShape()));
  if (r.getRank() != 3 || r.getDimSize(0) != dirs ||
      r.getDimSize(1) != gates * hidden || r.getDimSize(2) != hidden)
    return emitOptionalError(loc, "R must be [", dirs, "x", gates * hidden, "x",
                             hidden, "], got ", shapeStr(r.getShape()));
  Type element = x.getElementType();
  int64_t seq = x.getDimSize(0), batch = x.getDimSize(1);
  auto expect = [&](Value v, ArrayRef<int64_t> shape,
                    StringRef what) -> LogicalResult {
    if (!v)
      return success();
    RankedTensorType t;
    if (failed(requireTensor(loc, v, t, what)))
      return failure();
    if (t.getShape() != shape)
      return emitOptionalError(loc, what, " must be ", shapeStr(shape),
                               ", got ", shapeStr(t.getShape()));
    return success();
  };
  int64_t biasGates = gates * 2;
  if (failed(expect(adaptor.getB(), {dirs, biasGates * hidden}, "B")) ||
      failed(expect(adaptor.getSequenceLens(), {batch}, "sequence_lens")) ||
      failed(expect(adaptor.getInitialH(), {dirs, batch, hidden}, "initial_h")))
    return failure();
  if constexpr (std::is_same_v<AdaptorT, LSTMOp::Adaptor>) {
    if (failed(expect(adaptor.getInitialC(), {dirs, batch, hidden},
                      "initial_c")) ||
        failed(expect(adaptor.getPeepholes(), {dirs, 3 * hidden}, "P")))
      return failure();
  }
  types.push_back(RankedTensorType::get({seq, dirs, batch, hidden}, element));
  for (int i = 0; i < numStates; ++i)
    types.push_back(RankedTensorType::get({dirs, batch, hidden}, element));
  return success();
}

LogicalResult LSTMOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                       Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  return inferRecurrent(loc, adaptor, 4, 2, types);
}
LogicalResult GRUOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                      Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  return inferRecurrent(loc, adaptor, 3, 1, types);
}
LogicalResult RNNOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                      Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  return inferRecurrent(loc, adaptor, 1, 1, types);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                           Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  auto type = dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type || !type.hasStaticShape())
    return emitOptionalError(loc, "constant must be a static tensor");
  types.push_back(type);
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                          Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  auto shape = toI64Vector(adaptor.getShape());
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return emitOptionalError(loc, "reshape target ", shapeStr(shape),
                               " has a negative dim");
    count *= d;
  }
  if (count != in.getNumElements())
    return emitOptionalError(loc, "cannot reshape ", shapeStr(in.getShape()),
                             " (", in.getNumElements(), " elements) to ",
                             shapeStr(shape), " (", count, " elements)");
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    setOperand(inner.getInput());
    return getResult();
  }
  return {};
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                            Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  auto perm = toI64Vector(adaptor.getPerm());
  SmallVector<bool> seen(in.getRank(), false);
  if ((int64_t)perm.size() != in.getRank())
    return emitOptionalError(loc, "perm has ", perm.size(),
                             " entries for rank ", in.getRank());
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOptionalError(loc, "perm ", listStr(perm),
                               " is not a permutation");
    seen[p] = true;
    shape.push_back(in.getDimSize(p));
  }
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                         Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "concat needs at least one input");
  RankedTensorType first;
  if (failed(requireTensor(loc, adaptor.getInputs()[0], first, "input")))
    return failure();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= first.getRank())
    return emitOptionalError(loc, "concat axis ", axis,
                             " out of range for rank ", first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value v : adaptor.getInputs()) {
    RankedTensorType t;
    if (failed(requireTensor(loc, v, t, "input")))
      return failure();
    if (t.getElementType() != first.getElementType() ||
        t.getRank() != first.getRank())
      return emitOptionalError(loc, "concat inputs differ in rank or type");
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != shape[d])
        return emitOptionalError(loc, "concat input ", shapeStr(t.getShape()),
                                 " differs from ", shapeStr(first.getShape()),
                                 " outside axis ", axis);
    shape[axis] += t.getDimSize(axis);
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                        Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= in.getRank())
    return emitOptionalError(loc, "split axis ", axis, " out of range");
  auto sizes = toI64Vector(adaptor.getSizes());
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return emitOptionalError(loc, "split sizes must be non-negative");
    total += s;
  }
  if (sizes.empty() || total != in.getDimSize(axis))
    return emitOptionalError(loc, "split sizes ", listStr(sizes),
                             " do not add up to dim ", in.getDimSize(axis));
  for (int64_t s : sizes) {
    SmallVector<int64_t> shape(in.getShape());
    shape[axis] = s;
    types.push_back(RankedTensorType::get(shape, in.getElementType()));
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                        Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  auto starts = toI64Vector(adaptor.getStarts()),
       sizes = toI64Vector(adaptor.getSizes()),
       steps = toI64Vector(adaptor.getSteps());
  int64_t rank = in.getRank();
  if ((int64_t)starts.size() != rank || (int64_t)sizes.size() != rank ||
      (int64_t)steps.size() != rank)
    return emitOptionalError(loc, "slice starts/sizes/steps need ", rank,
                             " entries each");
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = in.getDimSize(d);
    if (steps[d] == 0 || sizes[d] < 0)
      return emitOptionalError(loc, "slice dim ", d,
                               ": step must be non-zero and size >= 0");
    if (sizes[d] == 0)
      continue;
    int64_t last = starts[d] + (sizes[d] - 1) * steps[d];
    if (starts[d] < 0 || starts[d] >= dim || last < 0 || last >= dim)
      return emitOptionalError(loc, "slice dim ", d, " reads outside [0, ", dim,
                               ")");
  }
  types.push_back(RankedTensorType::get(sizes, in.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                         Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType data, indices;
  if (failed(requireTensor(loc, adaptor.getData(), data, "data")) ||
      failed(requireTensor(loc, adaptor.getIndices(), indices, "indices")))
    return failure();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(loc, "gather axis ", axis,
                             " out of range for rank ", data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  types.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                                 Adaptor adaptor,
                                                 Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType data, indices;
  if (failed(requireTensor(loc, adaptor.getData(), data, "data")) ||
      failed(requireTensor(loc, adaptor.getIndices(), indices, "indices")))
    return failure();
  if (data.getRank() != indices.getRank() || adaptor.getAxis() < 0 ||
      adaptor.getAxis() >= data.getRank())
    return emitOptionalError(loc, "gather_elements needs data and indices of "
                                  "equal rank and an axis in range");
  types.push_back(indices.clone(data.getElementType()));
  return success();
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                           Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType data, indices;
  if (failed(requireTensor(loc, adaptor.getData(), data, "data")) ||
      failed(requireTensor(loc, adaptor.getIndices(), indices, "indices")))
    return failure();
  int64_t b = adaptor.getBatchDims();
  if (indices.getRank() < 1)
    return emitOptionalError(loc, "gather_nd indices must have rank >= 1");
  int64_t m = indices.getShape().back();
  if (b < 0 || b >= indices.getRank() || b + m > data.getRank() ||
      indices.getShape().take_front(b) != data.getShape().take_front(b))
    return emitOptionalError(loc, "gather_nd indices ",
                             shapeStr(indices.getShape()), " do not fit data ",
                             shapeStr(data.getShape()), " with batch_dims ", b);
  SmallVector<int64_t> shape(indices.getShape().drop_back());
  llvm::append_range(shape, data.getShape().drop_front(b + m));
  types.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

/// A scatter's updates carry data's element type and its indices are
/// integers (the lowering selects between data and update elements).
static LogicalResult verifyScatterTypes(std::optional<Location> loc,
                                        StringRef op, RankedTensorType data,
                                        RankedTensorType indices,
                                        RankedTensorType updates) {
  if (updates.getElementType() != data.getElementType())
    return emitOptionalError(loc, op,
                             " updates must have the data's element "
                             "type ",
                             data.getElementType(), ", got ",
                             updates.getElementType());
  if (!isa<IntegerType>(indices.getElementType()))
    return emitOptionalError(loc, op, " indices must be integers, got ",
                             indices.getElementType());
  return success();
}

LogicalResult ScatterElementsOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                                  Adaptor adaptor,
                                                  Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType data, indices, updates;
  if (failed(requireTensor(loc, adaptor.getData(), data, "data")) ||
      failed(requireTensor(loc, adaptor.getIndices(), indices, "indices")) ||
      failed(requireTensor(loc, adaptor.getUpdates(), updates, "updates")) ||
      failed(
          verifyScatterTypes(loc, "scatter_elements", data, indices, updates)))
    return failure();
  if (indices.getShape() != updates.getShape() ||
      indices.getRank() != data.getRank() || adaptor.getAxis() < 0 ||
      adaptor.getAxis() >= data.getRank())
    return emitOptionalError(loc, "scatter_elements needs indices and updates "
                                  "of one shape, data of the same rank and "
                                  "an axis in range");
  // ONNX: updates fit inside data on every dim but the axis (where indices
  // address data), and an update needs a data element to land on.
  for (int64_t d = 0; d < data.getRank(); ++d)
    if ((d != adaptor.getAxis() &&
         updates.getDimSize(d) > data.getDimSize(d)) ||
        (updates.getNumElements() > 0 && data.getDimSize(d) == 0))
      return emitOptionalError(loc, "scatter_elements updates ", updates,
                               " do not fit data ", data, " off axis ",
                               adaptor.getAxis());
  types.push_back(data);
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                            Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType data, indices, updates;
  if (failed(requireTensor(loc, adaptor.getData(), data, "data")) ||
      failed(requireTensor(loc, adaptor.getIndices(), indices, "indices")) ||
      failed(requireTensor(loc, adaptor.getUpdates(), updates, "updates")) ||
      failed(verifyScatterTypes(loc, "scatter_nd", data, indices, updates)))
    return failure();
  if (indices.getRank() < 1 || indices.getShape().back() > data.getRank())
    return emitOptionalError(loc, "scatter_nd index tuples longer than data "
                                  "rank");
  SmallVector<int64_t> expected(indices.getShape().drop_back());
  llvm::append_range(expected,
                     data.getShape().drop_front(indices.getShape().back()));
  if (updates.getShape() != ArrayRef<int64_t>(expected))
    return emitOptionalError(loc, "scatter_nd updates must have shape ",
                             shapeStr(expected), ", got ",
                             shapeStr(updates.getShape()));
  types.push_back(data);
  return success();
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                         Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  auto shape = toI64Vector(adaptor.getShape());
  auto b = broadcastShapes(in.getShape(), shape);
  if (!b || ArrayRef<int64_t>(*b) != ArrayRef<int64_t>(shape))
    return emitOptionalError(loc, "cannot expand ", shapeStr(in.getShape()),
                             " to ", shapeStr(shape));
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult TileOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                       Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  auto repeats = toI64Vector(adaptor.getRepeats());
  if ((int64_t)repeats.size() != in.getRank())
    return emitOptionalError(loc, "tile needs one repeat per dim");
  SmallVector<int64_t> shape;
  for (auto [d, r] : llvm::zip(in.getShape(), repeats)) {
    if (r < 0)
      return emitOptionalError(loc, "tile repeats must be non-negative");
    shape.push_back(d * r);
  }
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                      Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  auto pads = toI64Vector(adaptor.getPads());
  int64_t rank = in.getRank();
  if ((int64_t)pads.size() != 2 * rank)
    return emitOptionalError(loc, "pad needs ", 2 * rank, " pads, got ",
                             pads.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = in.getDimSize(d) + pads[d] + pads[d + rank];
    if (size < 0)
      return emitOptionalError(loc, "pads crop dim ", d, " below zero");
    if (adaptor.getMode() == "reflect" &&
        (pads[d] >= in.getDimSize(d) || pads[d + rank] >= in.getDimSize(d)) &&
        (pads[d] > 0 || pads[d + rank] > 0))
      return emitOptionalError(loc, "reflect pads on dim ", d,
                               " must be smaller than its size ",
                               in.getDimSize(d));
    shape.push_back(size);
  }
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult ResizeOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                         Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  auto sizes = toI64Vector(adaptor.getSizes());
  if ((int64_t)sizes.size() != in.getRank() ||
      (int64_t)adaptor.getScales().size() != in.getRank())
    return emitOptionalError(loc,
                             "resize needs one size and one scale per "
                             "dim of ",
                             shapeStr(in.getShape()));
  if (llvm::any_of(sizes, [](int64_t s) { return s <= 0; }))
    return emitOptionalError(loc, "resize sizes must be positive, got ",
                             shapeStr(sizes));
  types.push_back(RankedTensorType::get(sizes, in.getElementType()));
  return success();
}

LogicalResult TriluOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                        Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType in;
  if (failed(requireTensor(loc, adaptor.getInput(), in, "input")))
    return failure();
  if (in.getRank() < 2)
    return emitOptionalError(loc, "trilu input must have rank >= 2");
  types.push_back(in);
  return success();
}

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *ctx, Loc loc,
                                         Adaptor adaptor, Types &types) {
  IGN_VERIFY_ADAPTOR();
  RankedTensorType indices, values;
  if (failed(requireTensor(loc, adaptor.getIndices(), indices, "indices")) ||
      failed(requireTensor(loc, adaptor.getValues(), values, "values")))
    return failure();
  if (values.getNumElements() != 2)
    return emitOptionalError(loc, "one_hot values must hold [off, on]");
  int64_t depth = adaptor.getDepth(), axis = adaptor.getAxis();
  if (depth <= 0 || axis < 0 || axis > indices.getRank())
    return emitOptionalError(loc,
                             "one_hot depth must be positive and axis in "
                             "[0, ",
                             indices.getRank(), "]");
  SmallVector<int64_t> shape(indices.getShape());
  shape.insert(shape.begin() + axis, depth);
  types.push_back(RankedTensorType::get(shape, values.getElementType()));
  return success();
}

#define GET_OP_CLASSES
#include "ign/Dialect/Ign/IR/IgnOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

LogicalResult KernelOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("has ") << getInputs().size() << " inputs but its body "
                               << body.getNumArguments() << " arguments";
  for (auto [input, arg] : llvm::zip(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError("input type ")
             << input.getType() << " differs from its body argument's "
             << arg.getType();
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError("body must end in ign.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ") << yield.getValues().getTypes()
                                  << " but has results " << getResultTypes();
  return success();
}

//===----------------------------------------------------------------------===//
// IfOp
//===----------------------------------------------------------------------===//

LogicalResult IfOp::verify() {
  auto cond = cast<RankedTensorType>(getCondition().getType());
  if (!cond.hasStaticShape() || cond.getNumElements() != 1)
    return emitOpError("condition must hold one element, got ") << cond;
  if (!cond.getElementType().isIntOrIndex())
    return emitOpError("condition must be a bool or an integer, got ")
           << cond.getElementType();
  return success();
}

LogicalResult IfOp::verifySymbolUses(SymbolTableCollection &symbols) {
  for (auto [which, ref, error] :
       {std::tuple{"then", getThenGraphAttr(), getThenErrorAttr()},
        {"else", getElseGraphAttr(), getElseErrorAttr()}}) {
    if (!ref == !error)
      return emitOpError() << which << " branch needs a graph or an error";
    if (!ref)
      continue;
    auto graph = symbols.lookupNearestSymbolFrom<func::FuncOp>(*this, ref);
    if (!graph || graph.isExternal())
      return emitOpError() << which << " graph " << ref
                           << " is not a function with a body";
    FunctionType type = graph.getFunctionType();
    if (TypeRange(type.getInputs()) != TypeRange(getCaptures().getTypes()))
      return emitOpError() << which << " graph takes " << type.getInputs()
                           << " but the captures are "
                           << getCaptures().getTypes();
    if (TypeRange(type.getResults()) != TypeRange(getResultTypes()))
      return emitOpError() << which << " graph returns " << type.getResults()
                           << " but the op has results " << getResultTypes();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// LoopOp
//===----------------------------------------------------------------------===//

/// Whether `v` is a one-element tensor of an integer (or bool) type.
static bool isScalarInteger(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.hasStaticShape() && t.getNumElements() == 1 &&
         t.getElementType().isIntOrIndex();
}

LogicalResult LoopOp::verify() {
  if (getTripCount() && !isScalarInteger(getTripCount()))
    return emitOpError("trip count must be one integer");
  if (!isScalarInteger(getCondition()))
    return emitOpError("condition must be one bool or integer");
  if (getMaxTrips() && *getMaxTrips() < 0)
    return emitOpError("max_trips must not be negative");
  if (getMustRunAll() && !getMaxTrips())
    return emitOpError("must_run_all needs max_trips");
  size_t scans = getResults().size() - getInits().size();
  if (getResults().size() < getInits().size())
    return emitOpError("has fewer results than carried values");
  if (TypeRange(getResults().take_front(getInits().size()).getTypes()) !=
      TypeRange(getInits().getTypes()))
    return emitOpError("carried values and their results differ in type");
  if ((scans > 0 || !getScanInputs().empty()) && !getMaxTrips())
    return emitOpError("scan inputs and outputs need max_trips");
  for (Value in : getScanInputs()) {
    auto t = cast<RankedTensorType>(in.getType());
    if (t.getRank() == 0 || t.getDimSize(0) != *getMaxTrips())
      return emitOpError("scan input ")
             << t << " must have max_trips slices along its first axis";
  }
  for (Value out : getResults().drop_front(getInits().size())) {
    auto t = cast<RankedTensorType>(out.getType());
    if (t.getRank() == 0 || t.getDimSize(0) != *getMaxTrips())
      return emitOpError("scan output ")
             << t << " must have max_trips slices along its first axis";
  }
  return success();
}

/// `t` without its first axis: one iteration's slice.
static RankedTensorType sliceType(Type t) {
  auto r = cast<RankedTensorType>(t);
  return RankedTensorType::get(r.getShape().drop_front(), r.getElementType());
}

LogicalResult LoopOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto graph =
      symbols.lookupNearestSymbolFrom<func::FuncOp>(*this, getBodyAttr());
  if (!graph || graph.isExternal())
    return emitOpError() << "body " << getBodyAttr()
                         << " is not a function with a body";
  SmallVector<Type> args = {
      RankedTensorType::get({}, IntegerType::get(getContext(), 64)),
      getCondition().getType()};
  llvm::append_range(args, getInits().getTypes());
  for (Value in : getScanInputs())
    args.push_back(sliceType(in.getType()));
  llvm::append_range(args, getCaptures().getTypes());
  SmallVector<Type> results;
  if (getBodyCond())
    results.push_back(getCondition().getType());
  llvm::append_range(results, getInits().getTypes());
  for (Value out : getResults().drop_front(getInits().size()))
    results.push_back(sliceType(out.getType()));
  FunctionType type = graph.getFunctionType();
  if (TypeRange(type.getInputs()) != TypeRange(args) ||
      TypeRange(type.getResults()) != TypeRange(results))
    return emitOpError("body ")
           << getBodyAttr() << " has type " << type << ", expected "
           << FunctionType::get(getContext(), args, results);
  return success();
}

//===----------------------------------------------------------------------===//
// Folders of no-op data movement (canonicalization)
//===----------------------------------------------------------------------===//

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  auto perm = toI64Vector(getPerm());
  // transpose(transpose(x, p1), p2) = transpose(x, p1[p2[i]]).
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    auto first = toI64Vector(inner.getPerm());
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(first[p]);
    setOperand(inner.getInput());
    setPermAttr(Builder(getContext()).getI64ArrayAttr(composed));
    perm = composed;
    if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
      return getResult();
  }
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  return {};
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  auto type = cast<RankedTensorType>(getInput().getType());
  auto starts = toI64Vector(getStarts()), sizes = toI64Vector(getSizes()),
       steps = toI64Vector(getSteps());
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (starts[d] != 0 || steps[d] != 1 || sizes[d] != type.getDimSize(d))
      return {};
  return getInput();
}

/// At scale 1 every coordinate transformation but tf_crop_and_resize and
/// tf_half_pixel_for_nn maps an output pixel onto the same input pixel,
/// where nearest picks it and the linear and cubic weights are (0, 1, 0, 0):
/// the input (but for an infinite or NaN neighbour, which a zero weight
/// would have spread as NaN) (DINOv2 resized its position embedding from 16 x
/// 16 to 16 x 16 bicubically on every run, 5.7 ms).
OpFoldResult ResizeOp::fold(FoldAdaptor) {
  auto type = cast<RankedTensorType>(getInput().getType());
  StringRef ctm = getCoordinateTransformationMode();
  if (!type.hasStaticShape() || ctm == "tf_crop_and_resize" ||
      ctm == "tf_half_pixel_for_nn" || getType() != getInput().getType())
    return {};
  auto sizes = toI64Vector(getSizes());
  ArrayAttr scales = getScales();
  if (int64_t(sizes.size()) != type.getRank() ||
      int64_t(scales.size()) != type.getRank())
    return {};
  for (int64_t d = 0; d < type.getRank(); ++d) {
    auto scale = dyn_cast<FloatAttr>(scales[d]);
    if (sizes[d] != type.getDimSize(d) || !scale ||
        scale.getValueAsDouble() != 1.0)
      return {};
  }
  return getInput();
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  auto pads = toI64Vector(getPads());
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return getInput();
  return {};
}
