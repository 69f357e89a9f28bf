//===- LowerContractions.cpp - matmul, gemm, conv, pooling ----------------===//
//
// Reference forms: linalg.generic contractions over explicit iteration
// spaces. Padding is a tensor.pad in front; groups become an explicit dim.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

using namespace mlir;

namespace ign::lowering {
namespace {

/// C[batch, m, n] = sum_k A[batch', m, k] * B[batch'', k, n] with numpy
/// batch broadcasting; A and B are at least 2-D.
/// A batched matmul generic of `lhs` and `rhs` into `et` (their element
/// type, or i32 for 8-bit integers, each extended by its signedness in
/// `unsignedOperands`).
Value batchedMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                    bool transA = false, bool transB = false, Type et = Type(),
                    ArrayRef<bool> unsignedOperands = {false, false}) {
  auto lt = tensorType(lhs), rt = tensorType(rhs);
  if (!et)
    et = lt.getElementType();
  auto lb = lt.getShape().drop_back(2), rb = rt.getShape().drop_back(2);
  SmallVector<int64_t> batch = *broadcastShapes(lb, rb);
  int64_t nb = batch.size();
  int64_t m = transA ? lt.getShape().back() : lt.getShape()[lt.getRank() - 2];
  int64_t n = transB ? rt.getShape()[rt.getRank() - 2] : rt.getShape().back();
  MLIRContext *ctx = b.getContext();
  // dims: batch..., m, n, k
  AffineExpr dm = getAffineDimExpr(nb, ctx), dn = getAffineDimExpr(nb + 1, ctx),
             dk = getAffineDimExpr(nb + 2, ctx);
  auto operandMap = [&](ArrayRef<int64_t> ob, AffineExpr r, AffineExpr c) {
    AffineMap bm = broadcastMap(ctx, ob, batch);
    SmallVector<AffineExpr> exprs(bm.getResults());
    exprs.push_back(r);
    exprs.push_back(c);
    return AffineMap::get(nb + 3, 0, exprs, ctx);
  };
  SmallVector<AffineExpr> outExprs;
  for (int64_t i = 0; i < nb; ++i)
    outExprs.push_back(getAffineDimExpr(i, ctx));
  outExprs.push_back(dm);
  outExprs.push_back(dn);
  SmallVector<int64_t> outShape(batch);
  outShape.push_back(m);
  outShape.push_back(n);
  auto outType = RankedTensorType::get(outShape, et);
  Value acc = filled(b, loc, outType, scalar(b, loc, et, 0));
  SmallVector<AffineMap> maps{
      transA ? operandMap(lb, dk, dm) : operandMap(lb, dm, dk),
      transB ? operandMap(rb, dn, dk) : operandMap(rb, dk, dn),
      AffineMap::get(nb + 3, 0, outExprs, ctx)};
  return b
      .create<linalg::GenericOp>(
          loc, TypeRange{outType}, ValueRange{lhs, rhs}, ValueRange{acc}, maps,
          iterators(nb + 2, 1),
          [&](OpBuilder &nb2, Location nl, ValueRange a) {
            SmallVector<Value, 2> x{a[0], a[1]};
            for (int i = 0; i < 2; ++i)
              if (x[i].getType() != et)
                x[i] = unsignedOperands[i]
                           ? Value(nb2.create<arith::ExtUIOp>(nl, et, x[i]))
                           : Value(nb2.create<arith::ExtSIOp>(nl, et, x[i]));
            nb2.create<linalg::YieldOp>(
                nl, addV(nb2, nl, a[2], mulV(nb2, nl, x[0], x[1])));
          })
      .getResult(0);
}

struct MatMulLowering : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value lhs = op.getLhs(), rhs = op.getRhs();
    auto lt = tensorType(lhs), rt = tensorType(rhs);
    if (lt.getRank() == 1)
      lhs = reshape(b, loc, lhs, {1, lt.getDimSize(0)});
    if (rt.getRank() == 1)
      rhs = reshape(b, loc, rhs, {rt.getDimSize(0), 1});
    SmallVector<bool, 2> uns{false, false};
    if (auto a = op->getAttrOfType<DenseBoolArrayAttr>(kUnsignedOperandsAttr);
        a && a.size() == 2)
      uns.assign(a.asArrayRef().begin(), a.asArrayRef().end());
    Value r = batchedMatmul(b, loc, lhs, rhs, false, false,
                            rtype(op).getElementType(), uns);
    b.replaceOp(op, reshape(b, loc, r, rtype(op).getShape()));
    return success();
  }
};

struct GemmLowering : OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GemmOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value r = batchedMatmul(b, loc, op.getA(), op.getB(), op.getTransA(),
                            op.getTransB());
    auto type = rtype(op);
    Type et = type.getElementType();
    double alpha = op.getAlpha().convertToDouble(),
           beta = op.getBeta().convertToDouble();
    SmallVector<Value> ins{r};
    if (op.getC() && beta != 0)
      ins.push_back(op.getC());
    r = elementwise(
        b, loc, type, ins, [&](OpBuilder &nb, Location nl, ValueRange a) {
          Value v = a[0];
          if (alpha != 1)
            v = mulV(nb, nl, v, scalar(nb, nl, et, alpha));
          if (a.size() > 1)
            v = addV(nb, nl, v,
                     beta == 1 ? a[1]
                               : mulV(nb, nl, a[1], scalar(nb, nl, et, beta)));
          return v;
        });
    b.replaceOp(op, r);
    return success();
  }
};

/// A linalg.generic over `parallel` then `reduction` loops that folds
/// `body(lhs, rhs, acc)` over two operands read through the given index
/// expressions into a tensor of `outType` that starts filled with `init`.
Value reduceGeneric(
    OpBuilder &b, Location loc, RankedTensorType outType, Value init, Value lhs,
    ArrayRef<AffineExpr> lhsE, Value rhs, ArrayRef<AffineExpr> rhsE,
    ArrayRef<AffineExpr> outE, int64_t parallel, int64_t reduction,
    function_ref<Value(OpBuilder &, Location, Value, Value, Value)> body) {
  MLIRContext *ctx = b.getContext();
  int64_t nd = parallel + reduction;
  Value acc = filled(b, loc, outType, init);
  return b
      .create<linalg::GenericOp>(
          loc, TypeRange{outType}, ValueRange{lhs, rhs}, ValueRange{acc},
          SmallVector<AffineMap>{AffineMap::get(nd, 0, lhsE, ctx),
                                 AffineMap::get(nd, 0, rhsE, ctx),
                                 AffineMap::get(nd, 0, outE, ctx)},
          iterators(parallel, reduction),
          [&](OpBuilder &nb, Location nl, ValueRange a) {
            nb.create<linalg::YieldOp>(nl, body(nb, nl, a[0], a[1], a[2]));
          })
      .getResult(0);
}

/// acc + lhs * rhs, the body of every convolution.
Value multiplyAdd(OpBuilder &b, Location loc, Value lhs, Value rhs, Value acc) {
  return addV(b, loc, acc, mulV(b, loc, lhs, rhs));
}

/// Grouped N-d convolution of an already padded input:
/// out[n, g, f, o...] = sum_{c, k...} in[n, g, c, o*s + k*d] * w[g, f, c, k...]
/// (w[f / T, c, k..., f % T] when `filterBlock` T > 0, with one group).
/// Bytes (`resultType` i32) are extended to it first, each by its
/// signedness (`unsignedInput`, `unsignedWeight`).
Value groupedConv(OpBuilder &b, Location loc, Value input, Value weight,
                  int64_t groups, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> dilations, ArrayRef<int64_t> outSpatial,
                  int64_t filterBlock, Type resultType = {},
                  bool unsignedInput = false, bool unsignedWeight = false) {
  auto it = tensorType(input), wt = tensorType(weight);
  Type et = resultType ? resultType : it.getElementType();
  auto body = [&](OpBuilder &nb, Location nl, Value x, Value w, Value acc) {
    auto extend = [&](Value v, bool isUnsigned) -> Value {
      if (v.getType() == et)
        return v;
      if (isUnsigned)
        return nb.create<arith::ExtUIOp>(nl, et, v);
      return nb.create<arith::ExtSIOp>(nl, et, v);
    };
    return multiplyAdd(nb, nl, extend(x, unsignedInput),
                       extend(w, unsignedWeight), acc);
  };
  int64_t s = it.getRank() - 2, N = it.getDimSize(0), C = it.getDimSize(1),
          F = filterBlock ? wt.getDimSize(0) * filterBlock : wt.getDimSize(0),
          Cg = C / groups, Fg = F / groups;
  auto kernelSize = [&](int64_t i) { return wt.getDimSize(i + 2); };
  MLIRContext *ctx = b.getContext();
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  if (groups == 1 || (Cg == 1 && Fg == 1)) {
    // Plain and depthwise convolutions index the 4-D tensors directly: no
    // reshapes, so tiling can fuse the padding into the convolution. Kernel
    // dims of size 1 get no loop, so a 1x1 convolution is a contraction
    // with plain (projected-permutation) indexing.
    // dims: n, f, o_0..o_{s-1}, [c,] k_i for each i with kernel size > 1
    bool depthwise = groups != 1;
    SmallVector<int64_t> kernelDims;
    for (int64_t i = 0; i < s; ++i)
      if (kernelSize(i) != 1)
        kernelDims.push_back(i);
    int64_t firstK = 2 + s + (depthwise ? 0 : 1);
    int64_t red = firstK - (2 + s) + int64_t(kernelDims.size());
    AffineExpr c = depthwise ? d(1) : d(2 + s);
    AffineExpr zero = getAffineConstantExpr(0, ctx);
    SmallVector<AffineExpr> inE{d(0), c}, outE{d(0), d(1)}, wE;
    if (filterBlock)
      wE = {d(1).floorDiv(filterBlock), c};
    else
      wE = {d(1), depthwise ? zero : c};
    for (int64_t i = 0; i < s; ++i) {
      auto *k = llvm::find(kernelDims, i);
      AffineExpr o = d(2 + i) * strides[i];
      if (k == kernelDims.end()) {
        inE.push_back(o);
        wE.push_back(zero);
      } else {
        AffineExpr kd = d(firstK + (k - kernelDims.begin()));
        inE.push_back(o + kd * dilations[i]);
        wE.push_back(kd);
      }
      outE.push_back(d(2 + i));
    }
    if (filterBlock)
      wE.push_back(d(1) % filterBlock);
    SmallVector<int64_t> outShape{N, F};
    llvm::append_range(outShape, outSpatial);
    return reduceGeneric(b, loc, RankedTensorType::get(outShape, et),
                         scalar(b, loc, et, 0), input, inE, weight, wE, outE,
                         2 + s, red, body);
  }
  SmallVector<int64_t> inShape{N, groups, Cg}, wShape{groups, Fg, Cg};
  llvm::append_range(inShape, it.getShape().drop_front(2));
  llvm::append_range(wShape, wt.getShape().drop_front(2));
  Value in = reshape(b, loc, input, inShape);
  Value w = reshape(b, loc, weight, wShape);
  // dims: n, g, f, o_0..o_{s-1}, c, k_0..k_{s-1}
  SmallVector<AffineExpr> inE{d(0), d(1), d(3 + s)}, wE{d(1), d(2), d(3 + s)},
      outE{d(0), d(1), d(2)};
  for (int64_t i = 0; i < s; ++i) {
    inE.push_back(d(3 + i) * strides[i] + d(4 + s + i) * dilations[i]);
    wE.push_back(d(4 + s + i));
    outE.push_back(d(3 + i));
  }
  SmallVector<int64_t> outShape{N, groups, Fg};
  llvm::append_range(outShape, outSpatial);
  Value r = reduceGeneric(b, loc, RankedTensorType::get(outShape, et),
                          scalar(b, loc, et, 0), in, inE, w, wE, outE, 3 + s,
                          1 + s, body);
  SmallVector<int64_t> flat{N, F};
  llvm::append_range(flat, outSpatial);
  return reshape(b, loc, r, flat);
}

/// Adds a per-channel bias (dim 1).
Value addBias(OpBuilder &b, Location loc, Value out, Value bias) {
  auto type = tensorType(out);
  SmallVector<int64_t> shape(type.getRank(), 1);
  shape[1] = type.getDimSize(1);
  Value bk = reshape(b, loc, bias, shape);
  return elementwise(b, loc, type, ValueRange{out, bk},
                     [](OpBuilder &nb, Location nl, ValueRange a) {
                       return addV(nb, nl, a[0], a[1]);
                     });
}

struct ConvLowering : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto pads = toI64Vector(op.getPads());
    int64_t s = pads.size() / 2;
    auto it = tensorType(op.getInput());
    SmallVector<int64_t> lo(2, 0), hi(2, 0);
    lo.append(pads.begin(), pads.begin() + s);
    hi.append(pads.begin() + s, pads.end());
    Value in = padConstant(b, loc, op.getInput(), lo, hi,
                           scalar(b, loc, it.getElementType(), 0));
    SmallVector<bool, 2> uns{false, false};
    if (auto a = op->getAttrOfType<DenseBoolArrayAttr>(kUnsignedOperandsAttr);
        a && a.size() == 2)
      uns.assign(a.asArrayRef().begin(), a.asArrayRef().end());
    Value r = groupedConv(
        b, loc, in, op.getWeight(), op.getGroup(), toI64Vector(op.getStrides()),
        toI64Vector(op.getDilations()), rtype(op).getShape().drop_front(2),
        op.getFilterBlock(), rtype(op).getElementType(), uns[0], uns[1]);
    if (op.getBias())
      r = addBias(b, loc, r, op.getBias());
    b.replaceOp(op, r);
    return success();
  }
};

/// Columns of a window one row high over an unpadded 2-D input (a stem's
/// columns folded into channels, PadChannels.cpp): [N, C, kw, H, OW],
/// element [n, c, kx, y, x] the input's [n, c, y, sx x + dx kx], collapsed
/// to [N, C * kw, H * OW]. A strided copy, where the gather below took
/// 2.6 ns per element (ResNet-50's stem: 1.4 ms); null when `op` is no
/// such window.
static Value rowWindowColumns(PatternRewriter &b, Im2ColOp op) {
  auto it = tensorType(op.getInput());
  auto kernel = toI64Vector(op.getKernelShape()),
       strides = toI64Vector(op.getStrides()), pads = toI64Vector(op.getPads()),
       dilations = toI64Vector(op.getDilations());
  if (it.getRank() != 4 || kernel.size() != 2 || kernel[0] != 1 ||
      strides[0] != 1 || dilations[0] != 1 ||
      llvm::any_of(pads, [](int64_t p) { return p != 0; }))
    return {};
  int64_t n = it.getDimSize(0), c = it.getDimSize(1), h = it.getDimSize(2);
  int64_t kw = kernel[1];
  int64_t ow =
      (it.getDimSize(3) - (kw - 1) * dilations[1] - 1) / strides[1] + 1;
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  Type et = it.getElementType();
  Value init =
      b.create<tensor::EmptyOp>(loc, SmallVector<int64_t>{n, c, kw, h, ow}, et);
  auto copy = b.create<linalg::GenericOp>(
      loc, TypeRange{init.getType()}, ValueRange{op.getInput()},
      ValueRange{init},
      SmallVector<AffineMap>{
          AffineMap::get(
              5, 0, {d(0), d(1), d(3), d(4) * strides[1] + d(2) * dilations[1]},
              ctx),
          AffineMap::getMultiDimIdentityMap(5, ctx)},
      iterators(5, 0), [](OpBuilder &nb, Location nl, ValueRange a) {
        nb.create<linalg::YieldOp>(nl, a[0]);
      });
  return b.create<tensor::CollapseShapeOp>(
      loc, rtype(op), copy.getResult(0),
      SmallVector<ReassociationIndices>{{0}, {1, 2}, {3, 4}});
}

/// Columns of a convolution: one parallel generic over [N, C*K, P] whose
/// body decomposes its indices into a channel, a kernel offset and an
/// output position and reads the input pixel there (0 in the padding).
/// Having no operands, it fuses into the tiles of the matmul that reads it.
struct Im2ColLowering : OpRewritePattern<Im2ColOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Im2ColOp op,
                                PatternRewriter &b) const override {
    if (Value columns = rowWindowColumns(b, op)) {
      b.replaceOp(op, columns);
      return success();
    }
    Location loc = op.getLoc();
    Value input = op.getInput();
    auto it = tensorType(input);
    auto outType = rtype(op);
    Type et = it.getElementType();
    auto kernel = toI64Vector(op.getKernelShape()),
         strides = toI64Vector(op.getStrides()),
         pads = toI64Vector(op.getPads()),
         dilations = toI64Vector(op.getDilations());
    int64_t s = kernel.size(), k = 1;
    for (int64_t d : kernel)
      k *= d;
    // Output spatial sizes, recovered from P and the window rule.
    SmallVector<int64_t> outSpatial;
    for (int64_t i = 0; i < s; ++i)
      outSpatial.push_back((it.getDimSize(2 + i) + pads[i] + pads[i + s] -
                            (kernel[i] - 1) * dilations[i] - 1) /
                               strides[i] +
                           1);
    Value init = b.create<tensor::EmptyOp>(loc, outType.getShape(), et);
    MLIRContext *ctx = b.getContext();
    auto generic = b.create<linalg::GenericOp>(
        loc, TypeRange{outType}, ValueRange{}, ValueRange{init},
        SmallVector<AffineMap>{AffineMap::getMultiDimIdentityMap(3, ctx)},
        iterators(3, 0), [&](OpBuilder &nb, Location nl, ValueRange a) {
          auto c = [&](int64_t v) {
            return nb.create<arith::ConstantIndexOp>(nl, v).getResult();
          };
          Value n = nb.create<linalg::IndexOp>(nl, 0);
          Value ck = nb.create<linalg::IndexOp>(nl, 1);
          Value p = nb.create<linalg::IndexOp>(nl, 2);
          Value ch = nb.create<arith::DivUIOp>(nl, ck, c(k));
          Value offset = nb.create<arith::RemUIOp>(nl, ck, c(k));
          // Row-major digits: the last spatial dim varies fastest.
          SmallVector<Value> kd(s), od(s);
          for (int64_t i = s - 1; i >= 0; --i) {
            kd[i] = nb.create<arith::RemUIOp>(nl, offset, c(kernel[i]));
            offset = nb.create<arith::DivUIOp>(nl, offset, c(kernel[i]));
            od[i] = nb.create<arith::RemUIOp>(nl, p, c(outSpatial[i]));
            p = nb.create<arith::DivUIOp>(nl, p, c(outSpatial[i]));
          }
          SmallVector<Value> idx{n, ch};
          Value inside;
          for (int64_t i = 0; i < s; ++i) {
            // x = o * stride + k * dilation - pad, compared unsigned: a
            // negative x wraps to a huge index and is outside too.
            Value x = nb.create<arith::SubIOp>(
                nl,
                nb.create<arith::AddIOp>(
                    nl, nb.create<arith::MulIOp>(nl, od[i], c(strides[i])),
                    nb.create<arith::MulIOp>(nl, kd[i], c(dilations[i]))),
                c(pads[i]));
            Value ok = nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::ult,
                                                x, c(it.getDimSize(2 + i)));
            inside = inside ? nb.create<arith::AndIOp>(nl, inside, ok) : ok;
            idx.push_back(nb.create<arith::SelectOp>(nl, ok, x, c(0)));
          }
          Value v = nb.create<tensor::ExtractOp>(nl, input, idx);
          nb.create<linalg::YieldOp>(
              nl, ValueRange{nb.create<arith::SelectOp>(
                      nl, inside, v, scalar(nb, nl, et, 0))});
        });
    b.replaceOp(op, generic.getResults());
    return success();
  }
};

/// The sum of a transposed convolution's matmul columns: a generic over
/// the output (n, f, o...) reducing over the window offsets (k...), whose
/// body reads the column of the input pixel i with i * stride = o + pad -
/// k * dilation (0 where no such pixel is). Reading the columns only in its
/// body, it fuses into the tiles of the bias add (or whatever consumes it).
struct Col2ImLowering : OpRewritePattern<Col2ImOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Col2ImOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value cols = op.getInput();
    auto outType = rtype(op);
    Type et = outType.getElementType();
    auto inShape = toI64Vector(op.getInputShape()),
         kernel = toI64Vector(op.getKernelShape()),
         strides = toI64Vector(op.getStrides()),
         pads = toI64Vector(op.getPads()),
         dilations = toI64Vector(op.getDilations());
    int64_t s = kernel.size(), k = 1;
    for (int64_t d : kernel)
      k *= d;
    int64_t loops = 2 + 2 * s;
    MLIRContext *ctx = b.getContext();
    Value init = filled(b, loc, outType, scalar(b, loc, et, 0));
    SmallVector<AffineExpr> outE;
    for (int64_t d = 0; d < 2 + s; ++d)
      outE.push_back(getAffineDimExpr(d, ctx));
    auto body = [&](OpBuilder &nb, Location nl, ValueRange a) {
      auto c = [&](int64_t v) {
        return nb.create<arith::ConstantIndexOp>(nl, v).getResult();
      };
      Value n = nb.create<linalg::IndexOp>(nl, 0);
      Value f = nb.create<linalg::IndexOp>(nl, 1);
      Value pixel = c(0), inside;
      for (int64_t i = 0; i < s; ++i) {
        Value o = nb.create<linalg::IndexOp>(nl, 2 + i);
        Value kd = nb.create<linalg::IndexOp>(nl, 2 + s + i);
        // t = o + pad - k * dilation; negative t wraps to a huge unsigned
        // value whose quotient is out of range too.
        Value t = nb.create<arith::SubIOp>(
            nl, nb.create<arith::AddIOp>(nl, o, c(pads[i])),
            nb.create<arith::MulIOp>(nl, kd, c(dilations[i])));
        Value x = nb.create<arith::DivUIOp>(nl, t, c(strides[i]));
        Value ok = nb.create<arith::AndIOp>(
            nl,
            nb.create<arith::CmpIOp>(
                nl, arith::CmpIPredicate::eq,
                nb.create<arith::RemUIOp>(nl, t, c(strides[i])), c(0)),
            nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::ult, x,
                                     c(inShape[i])));
        inside = inside ? nb.create<arith::AndIOp>(nl, inside, ok) : ok;
        x = nb.create<arith::SelectOp>(nl, ok, x, c(0));
        pixel = nb.create<arith::AddIOp>(
            nl, nb.create<arith::MulIOp>(nl, pixel, c(inShape[i])), x);
      }
      // The column's row: f * K + the row-major index of the offsets.
      Value offset = c(0);
      for (int64_t i = 0; i < s; ++i)
        offset = nb.create<arith::AddIOp>(
            nl, nb.create<arith::MulIOp>(nl, offset, c(kernel[i])),
            nb.create<linalg::IndexOp>(nl, 2 + s + i));
      Value row = nb.create<arith::AddIOp>(
          nl, nb.create<arith::MulIOp>(nl, f, c(k)), offset);
      Value v =
          nb.create<tensor::ExtractOp>(nl, cols, ValueRange{n, row, pixel});
      v = nb.create<arith::SelectOp>(nl, inside, v, scalar(nb, nl, et, 0));
      nb.create<linalg::YieldOp>(nl, addV(nb, nl, a[1], v));
    };
    // The window's extent comes from an operand the body never reads (as
    // a pooling window's does).
    SmallVector<AffineExpr> windowE;
    for (int64_t d = 0; d < s; ++d)
      windowE.push_back(getAffineDimExpr(2 + s + d, ctx));
    Value window = b.create<tensor::EmptyOp>(loc, kernel, et);
    Value r =
        b.create<linalg::GenericOp>(
             loc, TypeRange{outType}, ValueRange{window}, ValueRange{init},
             SmallVector<AffineMap>{AffineMap::get(loops, 0, windowE, ctx),
                                    AffineMap::get(loops, 0, outE, ctx)},
             iterators(2 + s, s), body)
            .getResult(0);
    if (op.getBias())
      r = addBias(b, loc, r, op.getBias());
    b.replaceOp(op, r);
    return success();
  }
};

/// Transposed convolution as a convolution: the input is spread out by the
/// stride (zeros between), padded by d*(k-1) - pad, and convolved with the
/// spatially flipped kernel whose in/out channels are swapped per group.
struct ConvTransposeLowering : OpRewritePattern<ConvTransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvTransposeOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto it = tensorType(op.getInput()), wt = tensorType(op.getWeight());
    Type et = it.getElementType();
    auto strides = toI64Vector(op.getStrides()),
         pads = toI64Vector(op.getPads()), dil = toI64Vector(op.getDilations()),
         outPad = toI64Vector(op.getOutputPadding());
    int64_t s = it.getRank() - 2, G = op.getGroup(), C = it.getDimSize(1),
            Fg = wt.getDimSize(1), Cg = C / G;
    MLIRContext *ctx = b.getContext();
    // 1. Spread the input: zeros of size (i-1)*stride+1, input at stride.
    SmallVector<int64_t> spread(it.getShape());
    for (int64_t i = 0; i < s; ++i)
      spread[i + 2] = (it.getDimSize(i + 2) - 1) * strides[i] + 1;
    Value zeros = filled(b, loc, RankedTensorType::get(spread, et),
                         scalar(b, loc, et, 0));
    SmallVector<OpFoldResult> offsets(it.getRank(), b.getIndexAttr(0)), sizes,
        steps;
    for (int64_t d = 0; d < it.getRank(); ++d) {
      sizes.push_back(b.getIndexAttr(it.getDimSize(d)));
      steps.push_back(b.getIndexAttr(d < 2 ? 1 : strides[d - 2]));
    }
    Value in = b.create<tensor::InsertSliceOp>(loc, op.getInput(), zeros,
                                               offsets, sizes, steps);
    // 2. Pad (negative pads crop).
    SmallVector<int64_t> lo(2, 0), hi(2, 0), cropLo(2, 0), cropHi(2, 0);
    for (int64_t i = 0; i < s; ++i) {
      int64_t full = dil[i] * (wt.getDimSize(i + 2) - 1);
      int64_t l = full - pads[i], h = full - pads[i + s] + outPad[i];
      lo.push_back(std::max<int64_t>(l, 0));
      hi.push_back(std::max<int64_t>(h, 0));
      cropLo.push_back(std::max<int64_t>(-l, 0));
      cropHi.push_back(std::max<int64_t>(-h, 0));
    }
    in = padConstant(b, loc, in, lo, hi, scalar(b, loc, et, 0));
    if (llvm::any_of(cropLo, [](int64_t v) { return v; }) ||
        llvm::any_of(cropHi, [](int64_t v) { return v; })) {
      auto pt = tensorType(in);
      SmallVector<OpFoldResult> off, sz, st;
      SmallVector<int64_t> shape;
      for (int64_t d = 0; d < pt.getRank(); ++d) {
        off.push_back(b.getIndexAttr(cropLo[d]));
        shape.push_back(pt.getDimSize(d) - cropLo[d] - cropHi[d]);
        sz.push_back(b.getIndexAttr(shape.back()));
        st.push_back(b.getIndexAttr(1));
      }
      in = b.create<tensor::ExtractSliceOp>(
          loc, RankedTensorType::get(shape, et), in, off, sz, st);
    }
    // 3. Weight [C, Fg, k...] -> [G*Fg, Cg, k...] flipped spatially.
    SmallVector<int64_t> wShape{G * Fg, Cg};
    llvm::append_range(wShape, wt.getShape().drop_front(2));
    Value wg = reshape(b, loc, op.getWeight(), [&] {
      SmallVector<int64_t> sh{G, Cg, Fg};
      llvm::append_range(sh, wt.getShape().drop_front(2));
      return sh;
    }());
    // dims of the new weight: (g, f, c, k...) reading old (g, c, f, K-1-k).
    int64_t nd = 3 + s;
    SmallVector<AffineExpr> readE{getAffineDimExpr(0, ctx),
                                  getAffineDimExpr(2, ctx),
                                  getAffineDimExpr(1, ctx)};
    for (int64_t i = 0; i < s; ++i)
      readE.push_back(wt.getDimSize(i + 2) - 1 - getAffineDimExpr(3 + i, ctx));
    SmallVector<int64_t> newShape{G, Fg, Cg};
    llvm::append_range(newShape, wt.getShape().drop_front(2));
    auto newType = RankedTensorType::get(newShape, et);
    Value w = b.create<linalg::GenericOp>(
                   loc, TypeRange{newType}, ValueRange{wg},
                   ValueRange{b.create<tensor::EmptyOp>(loc, newShape, et)},
                   SmallVector<AffineMap>{AffineMap::get(nd, 0, readE, ctx),
                                          b.getMultiDimIdentityMap(nd)},
                   iterators(nd),
                   [](OpBuilder &nb, Location nl, ValueRange a) {
                     nb.create<linalg::YieldOp>(nl, a[0]);
                   })
                  .getResult(0);
    w = reshape(b, loc, w, wShape);
    SmallVector<int64_t> ones(s, 1);
    Value r = groupedConv(b, loc, in, w, G, ones, dil,
                          rtype(op).getShape().drop_front(2),
                          /*filterBlock=*/0);
    if (op.getBias())
      r = addBias(b, loc, r, op.getBias());
    b.replaceOp(op, r);
    return success();
  }
};

/// Sliding-window reduction over the spatial dims of a padded input.
Value windowReduce(
    OpBuilder &b, Location loc, Value in, ArrayRef<int64_t> kernel,
    ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
    ArrayRef<int64_t> outShape, Value init,
    std::function<Value(OpBuilder &, Location, Value, Value)> f) {
  auto it = tensorType(in);
  int64_t s = kernel.size();
  MLIRContext *ctx = b.getContext();
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> inE{d(0), d(1)}, outE{d(0), d(1)};
  for (int64_t i = 0; i < s; ++i) {
    inE.push_back(d(2 + i) * strides[i] + d(2 + s + i) * dilations[i]);
    outE.push_back(d(2 + i));
  }
  // The kernel operand only carries the window extent.
  Value window = b.create<tensor::EmptyOp>(loc, kernel, it.getElementType());
  SmallVector<AffineExpr> kE;
  for (int64_t i = 0; i < s; ++i)
    kE.push_back(d(2 + s + i));
  return reduceGeneric(b, loc,
                       RankedTensorType::get(outShape, it.getElementType()),
                       init, in, inE, window, kE, outE, 2 + s, s,
                       [&](OpBuilder &nb, Location nl, Value x, Value,
                           Value acc) { return f(nb, nl, x, acc); });
}

/// Begin and end pads of a pooled NC[D]HW input: the explicit pads, with the
/// end pads grown so that ceil-mode windows fit.
struct PoolPads {
  SmallVector<int64_t> lo, hi;
};
PoolPads poolPads(RankedTensorType in, ArrayRef<int64_t> outShape,
                  ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> pads, ArrayRef<int64_t> dil) {
  int64_t s = kernel.size();
  PoolPads p{SmallVector<int64_t>(2, 0), SmallVector<int64_t>(2, 0)};
  for (int64_t i = 0; i < s; ++i) {
    p.lo.push_back(pads[i]);
    int64_t need = (outShape[i + 2] - 1) * strides[i] +
                   (kernel[i] - 1) * dil[i] + 1 - in.getDimSize(i + 2) -
                   pads[i];
    p.hi.push_back(std::max<int64_t>(need, pads[i + s]));
  }
  return p;
}

/// The number of taps each output position of an average pool counts, as a
/// constant [O...] over the spatial dims: taps on the input, and on the
/// explicit padding with count_include_pad; never on the ceil-mode extra.
/// Computed here rather than by pooling a padded tensor of ones on every
/// run (an Inception branch's 3x3 pool over 192 x 28 x 28 spent half its
/// time on those counts).
Value windowCounts(OpBuilder &b, Location loc, Type et, RankedTensorType in,
                   ArrayRef<int64_t> outShape, ArrayRef<int64_t> kernel,
                   ArrayRef<int64_t> strides, ArrayRef<int64_t> dil,
                   ArrayRef<int64_t> pads, bool includePad) {
  int64_t s = kernel.size();
  SmallVector<int64_t> shape(outShape.drop_front(2));
  SmallVector<SmallVector<int64_t>> perDim(s);
  for (int64_t i = 0; i < s; ++i) {
    int64_t size = in.getDimSize(i + 2);
    int64_t first = includePad ? -pads[i] : 0;
    int64_t end = includePad ? size + pads[i + s] : size;
    for (int64_t o = 0; o < shape[i]; ++o) {
      int64_t n = 0;
      for (int64_t k = 0; k < kernel[i]; ++k) {
        int64_t p = o * strides[i] + k * dil[i] - pads[i];
        n += p >= first && p < end;
      }
      perDim[i].push_back(n);
    }
  }
  auto type = RankedTensorType::get(shape, et);
  SmallVector<Attribute> counts;
  SmallVector<int64_t> at(s, 0);
  for (int64_t e = 0, total = type.getNumElements(); e < total; ++e) {
    int64_t n = 1;
    for (int64_t i = 0, rest = e; i < s; ++i) {
      int64_t stride = 1;
      for (int64_t j = i + 1; j < s; ++j)
        stride *= shape[j];
      n *= perDim[i][(rest / stride) % shape[i]];
    }
    counts.push_back(b.getFloatAttr(et, double(n)));
  }
  return b.create<arith::ConstantOp>(loc, type,
                                     DenseElementsAttr::get(type, counts));
}

template <typename OpT> struct PoolLowering : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto it = tensorType(op.getInput());
    Type et = it.getElementType();
    auto kernel = toI64Vector(op.getKernelShape()),
         strides = toI64Vector(op.getStrides()),
         pads = toI64Vector(op.getPads()), dil = toI64Vector(op.getDilations());
    auto outShape =
        cast<RankedTensorType>(op->getResult(0).getType()).getShape();
    auto [lo, hi] = poolPads(it, outShape, kernel, strides, pads, dil);
    Operation *raw = op.getOperation();
    if (isa<MaxPoolOp>(raw)) {
      bool uns = isUnsignedOp(raw);
      Value in =
          padConstant(b, loc, op.getInput(), lo, hi, lowest(b, loc, et, uns));
      Value r = windowReduce(
          b, loc, in, kernel, strides, dil, outShape, lowest(b, loc, et, uns),
          [&](OpBuilder &nb, Location nl, Value x, Value acc) -> Value {
            if (isFloat(et))
              return nb.create<arith::MaximumFOp>(nl, x, acc);
            return uns ? Value(nb.create<arith::MaxUIOp>(nl, x, acc))
                       : Value(nb.create<arith::MaxSIOp>(nl, x, acc));
          });
      b.replaceOp(op, r);
      return success();
    }
    auto sumFn = [](OpBuilder &nb, Location nl, Value x, Value acc) -> Value {
      return nb.create<arith::AddFOp>(nl, x, acc);
    };
    if (auto lp = dyn_cast<LpPoolOp>(raw)) {
      int64_t p = lp.getP();
      Value in =
          padConstant(b, loc, op.getInput(), lo, hi, scalar(b, loc, et, 0));
      Value r = windowReduce(
          b, loc, in, kernel, strides, dil, outShape, scalar(b, loc, et, 0),
          [&](OpBuilder &nb, Location nl, Value x, Value acc) -> Value {
            Value ax = nb.create<math::AbsFOp>(nl, x);
            Value pw = nb.create<math::PowFOp>(nl, ax, scalar(nb, nl, et, p));
            return nb.create<arith::AddFOp>(nl, pw, acc);
          });
      r = elementwise(b, loc, tensorType(r), r,
                      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                        return nb.create<math::PowFOp>(
                            nl, a[0], scalar(nb, nl, et, 1.0 / p));
                      });
      b.replaceOp(op, r);
      return success();
    }
    // Average: window sums divided by the window counts, a constant.
    bool includePad = cast<AvgPoolOp>(raw).getCountIncludePad();
    Value in =
        padConstant(b, loc, op.getInput(), lo, hi, scalar(b, loc, et, 0));
    Value sums = windowReduce(b, loc, in, kernel, strides, dil, outShape,
                              scalar(b, loc, et, 0), sumFn);
    Value counts = windowCounts(b, loc, et, it, outShape, kernel, strides, dil,
                                pads, includePad);
    Value r =
        elementwise(b, loc, tensorType(sums), ValueRange{sums, counts},
                    [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                      return nb.create<arith::DivFOp>(nl, a[0], a[1]);
                    });
    b.replaceOp(op, r);
    return success();
  }
};

/// Max pooling that also yields the flat index of each maximum in the
/// unpadded input (row-major over N, C and spatial dims; storage_order 1
/// is column-major over the spatial dims). Ties keep the first position.
struct MaxPoolWithIndicesLowering : OpRewritePattern<MaxPoolWithIndicesOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaxPoolWithIndicesOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto it = tensorType(op.getInput());
    Type et = it.getElementType();
    if (!isFloat(et))
      return b.notifyMatchFailure(op, "integer max pool with indices");
    auto kernel = toI64Vector(op.getKernelShape()),
         strides = toI64Vector(op.getStrides()),
         pads = toI64Vector(op.getPads()), dil = toI64Vector(op.getDilations());
    auto outType = cast<RankedTensorType>(op.getOutput().getType());
    auto idxType = cast<RankedTensorType>(op.getIndices().getType());
    int64_t s = kernel.size(), nd = 2 + 2 * s;
    bool columnMajor = op.getStorageOrder() == 1;
    auto [lo, hi] =
        poolPads(it, outType.getShape(), kernel, strides, pads, dil);
    Value in = padConstant(b, loc, op.getInput(), lo, hi, lowest(b, loc, et));
    MLIRContext *ctx = b.getContext();
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> inE{d(0), d(1)}, outE{d(0), d(1)}, kE;
    for (int64_t i = 0; i < s; ++i) {
      inE.push_back(d(2 + i) * strides[i] + d(2 + s + i) * dil[i]);
      outE.push_back(d(2 + i));
      kE.push_back(d(2 + s + i));
    }
    Value vals = filled(b, loc, outType, lowest(b, loc, et));
    Value idxs = filled(b, loc, idxType, scalar(b, loc, b.getI64Type(), 0));
    Value window = b.create<tensor::EmptyOp>(loc, kernel, et);
    AffineMap outMap = AffineMap::get(nd, 0, outE, ctx);
    auto generic = b.create<linalg::GenericOp>(
        loc, TypeRange{outType, idxType}, ValueRange{in, window},
        ValueRange{vals, idxs},
        SmallVector<AffineMap>{AffineMap::get(nd, 0, inE, ctx),
                               AffineMap::get(nd, 0, kE, ctx), outMap, outMap},
        iterators(2 + s, s), [&](OpBuilder &nb, Location nl, ValueRange a) {
          auto i64 = [&](Value v) {
            return nb.create<arith::IndexCastOp>(nl, nb.getI64Type(), v)
                .getResult();
          };
          auto c = [&](int64_t v) {
            return scalar(nb, nl, nb.getI64Type(), v);
          };
          // Unpadded input coordinates of this window element.
          SmallVector<Value> pos;
          for (int64_t i = 0; i < s; ++i) {
            Value o = i64(nb.create<linalg::IndexOp>(nl, 2 + i));
            Value k = i64(nb.create<linalg::IndexOp>(nl, 2 + s + i));
            Value p = nb.create<arith::AddIOp>(
                nl, nb.create<arith::MulIOp>(nl, o, c(strides[i])),
                nb.create<arith::MulIOp>(nl, k, c(dil[i])));
            pos.push_back(nb.create<arith::SubIOp>(nl, p, c(pads[i])));
          }
          Value flat = nb.create<arith::AddIOp>(
              nl,
              nb.create<arith::MulIOp>(nl,
                                       i64(nb.create<linalg::IndexOp>(nl, 0)),
                                       c(it.getDimSize(1))),
              i64(nb.create<linalg::IndexOp>(nl, 1)));
          SmallVector<int64_t> order;
          for (int64_t i = 0; i < s; ++i)
            order.push_back(columnMajor ? s - 1 - i : i);
          for (int64_t i : order)
            flat = nb.create<arith::AddIOp>(
                nl, nb.create<arith::MulIOp>(nl, flat, c(it.getDimSize(2 + i))),
                pos[i]);
          Value better = nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OGT,
                                                  a[0], a[2]);
          nb.create<linalg::YieldOp>(
              nl,
              ValueRange{nb.create<arith::SelectOp>(nl, better, a[0], a[2]),
                         nb.create<arith::SelectOp>(nl, better, flat, a[3])});
        });
    b.replaceOp(op, generic.getResults());
    return success();
  }
};

} // namespace

void populateContractionPatterns(RewritePatternSet &patterns) {
  patterns.add<MaxPoolWithIndicesLowering>(patterns.getContext());
  patterns.add<MatMulLowering, GemmLowering, ConvLowering, Im2ColLowering,
               Col2ImLowering, ConvTransposeLowering, PoolLowering<MaxPoolOp>,
               PoolLowering<AvgPoolOp>, PoolLowering<LpPoolOp>>(
      patterns.getContext());
}

} // namespace ign::lowering
