//===- LowerDataMovement.cpp - constants, shapes, indexing, normalization
//--===//

#include "LoweringUtils.h"

#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace ign::lowering {
namespace {

template <typename OpT, typename F> struct Lambda : OpRewritePattern<OpT> {
  Lambda(MLIRContext *ctx, F f) : OpRewritePattern<OpT>(ctx), f(f) {}
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &b) const override {
    return f(op, b);
  }
  F f;
};

template <typename OpT, typename F>
void addLambda(RewritePatternSet &patterns, F f) {
  patterns.add(std::make_unique<Lambda<OpT, F>>(patterns.getContext(), f));
}

/// A generic op computing each output element from its index vector.
Value fromIndices(
    OpBuilder &b, Location loc, RankedTensorType outType, ValueRange inputs,
    ArrayRef<AffineMap> inputMaps,
    std::function<Value(OpBuilder &, Location, ValueRange idx, ValueRange args)>
        body) {
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(outType.getRank()));
  Value init = b.create<tensor::EmptyOp>(loc, outType.getShape(),
                                         outType.getElementType());
  return b
      .create<linalg::GenericOp>(
          loc, TypeRange{outType}, inputs, ValueRange{init}, maps,
          iterators(outType.getRank()),
          [&](OpBuilder &nb, Location nl, ValueRange a) {
            SmallVector<Value> idx;
            for (int64_t d = 0; d < outType.getRank(); ++d)
              idx.push_back(nb.create<linalg::IndexOp>(nl, d));
            nb.create<linalg::YieldOp>(nl, body(nb, nl, idx, a.drop_back()));
          })
      .getResult(0);
}

Value idxConst(OpBuilder &b, Location l, int64_t v) {
  return b.create<arith::ConstantIndexOp>(l, v);
}

/// An index-typed value from an integer element (i32/i64).
Value toIndex(OpBuilder &b, Location l, Value v) {
  return b.create<arith::IndexCastOp>(l, b.getIndexType(), v);
}

/// Constants and the ops that move whole slices of a tensor: reshapes,
/// transposes, concatenation and splits, slices, broadcasts and tiling.
void populateShapePatterns(RewritePatternSet &patterns) {
  addLambda<ConstantOp>(patterns, [](ConstantOp op, PatternRewriter &b) {
    b.replaceOpWithNewOp<arith::ConstantOp>(op, rtype(op),
                                            cast<TypedAttr>(op.getValue()));
    return success();
  });
  addLambda<ReshapeOp>(patterns, [](ReshapeOp op, PatternRewriter &b) {
    b.replaceOp(op,
                reshape(b, op.getLoc(), op.getInput(), rtype(op).getShape()));
    return success();
  });
  addLambda<TransposeOp>(patterns, [](TransposeOp op, PatternRewriter &b) {
    auto type = rtype(op);
    Value init = b.create<tensor::EmptyOp>(op.getLoc(), type.getShape(),
                                           type.getElementType());
    SmallVector<int64_t> perm = toI64Vector(op.getPerm());
    b.replaceOp(op, b.create<linalg::TransposeOp>(op.getLoc(), op.getInput(),
                                                  init, perm)
                        ->getResult(0));
    return success();
  });
  addLambda<ConcatOp>(patterns, [](ConcatOp op, PatternRewriter &b) {
    Location loc = op.getLoc();
    auto type = rtype(op);
    Value acc =
        b.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType());
    int64_t axis = op.getAxis(), offset = 0;
    for (Value in : op.getInputs()) {
      auto it = tensorType(in);
      SmallVector<OpFoldResult> off(type.getRank(), b.getIndexAttr(0)), sz,
          st(type.getRank(), b.getIndexAttr(1));
      off[axis] = b.getIndexAttr(offset);
      for (int64_t d : it.getShape())
        sz.push_back(b.getIndexAttr(d));
      acc = b.create<tensor::InsertSliceOp>(loc, in, acc, off, sz, st);
      offset += it.getDimSize(axis);
    }
    b.replaceOp(op, acc);
    return success();
  });
  addLambda<SplitOp>(patterns, [](SplitOp op, PatternRewriter &b) {
    Location loc = op.getLoc();
    auto it = tensorType(op.getInput());
    int64_t axis = op.getAxis(), offset = 0;
    SmallVector<Value> results;
    for (Value r : op.getResults()) {
      auto rt = cast<RankedTensorType>(r.getType());
      SmallVector<OpFoldResult> off(it.getRank(), b.getIndexAttr(0)), sz,
          st(it.getRank(), b.getIndexAttr(1));
      off[axis] = b.getIndexAttr(offset);
      for (int64_t d : rt.getShape())
        sz.push_back(b.getIndexAttr(d));
      results.push_back(b.create<tensor::ExtractSliceOp>(loc, rt, op.getInput(),
                                                         off, sz, st));
      offset += rt.getDimSize(axis);
    }
    b.replaceOp(op, results);
    return success();
  });
  addLambda<SliceOp>(patterns, [](SliceOp op, PatternRewriter &b) {
    Location loc = op.getLoc();
    auto starts = toI64Vector(op.getStarts()),
         sizes = toI64Vector(op.getSizes()), steps = toI64Vector(op.getSteps());
    auto type = rtype(op);
    if (llvm::all_of(steps, [](int64_t s) { return s > 0; })) {
      SmallVector<OpFoldResult> off, sz, st;
      for (size_t d = 0; d < starts.size(); ++d) {
        off.push_back(b.getIndexAttr(starts[d]));
        sz.push_back(b.getIndexAttr(sizes[d]));
        st.push_back(b.getIndexAttr(steps[d]));
      }
      b.replaceOpWithNewOp<tensor::ExtractSliceOp>(op, type, op.getInput(), off,
                                                   sz, st);
      return success();
    }
    // Negative steps: each element read by index (start + i * step), not
    // through an indexing map: a map with a negative coefficient (x[::-1]
    // as 19 - i) is fine for the reference, but tiling computes an
    // operand's slice as if maps were increasing (a slice one short: a
    // linalg verifier error when the kernel was split into workgroups).
    b.replaceOp(op, fromIndices(b, loc, type, {}, {},
                                [&](OpBuilder &nb, Location nl, ValueRange idx,
                                    ValueRange) -> Value {
                                  SmallVector<Value> src;
                                  for (size_t d = 0; d < starts.size(); ++d) {
                                    Value i = nb.create<arith::MulIOp>(
                                        nl, idx[d],
                                        idxConst(nb, nl, steps[d]));
                                    src.push_back(nb.create<arith::AddIOp>(
                                        nl, i, idxConst(nb, nl, starts[d])));
                                  }
                                  return nb.create<tensor::ExtractOp>(
                                      nl, op.getInput(), src);
                                }));
    return success();
  });
  addLambda<ExpandOp>(patterns, [](ExpandOp op, PatternRewriter &b) {
    b.replaceOp(op, elementwise(b, op.getLoc(), rtype(op), op.getInput(),
                                [](OpBuilder &, Location, ValueRange a) {
                                  return a[0];
                                }));
    return success();
  });
  addLambda<TileOp>(patterns, [](TileOp op, PatternRewriter &b) {
    Location loc = op.getLoc();
    auto it = tensorType(op.getInput());
    b.replaceOp(op, fromIndices(b, loc, rtype(op), {}, {},
                                [&](OpBuilder &nb, Location nl, ValueRange idx,
                                    ValueRange) -> Value {
                                  SmallVector<Value> src;
                                  for (int64_t d = 0; d < it.getRank(); ++d)
                                    src.push_back(nb.create<arith::RemUIOp>(
                                        nl, idx[d],
                                        idxConst(nb, nl, it.getDimSize(d))));
                                  return nb.create<tensor::ExtractOp>(
                                      nl, op.getInput(), src);
                                }));
    return success();
  });
}

/// Gathers: each output element read at an index taken from another tensor.
void populateGatherPatterns(RewritePatternSet &patterns) {
  addLambda<GatherOp>(patterns, [](GatherOp op, PatternRewriter &b) {
    Location loc = op.getLoc();
    auto dt = tensorType(op.getData()), itp = tensorType(op.getIndices());
    int64_t axis = op.getAxis(), q = itp.getRank();
    MLIRContext *ctx = b.getContext();
    SmallVector<AffineExpr> idxExprs;
    for (int64_t i = 0; i < q; ++i)
      idxExprs.push_back(getAffineDimExpr(axis + i, ctx));
    AffineMap idxMap = AffineMap::get(rtype(op).getRank(), 0, idxExprs, ctx);
    b.replaceOp(
        op, fromIndices(b, loc, rtype(op), op.getIndices(), idxMap,
                        [&](OpBuilder &nb, Location nl, ValueRange idx,
                            ValueRange a) -> Value {
                          SmallVector<Value> src;
                          for (int64_t d = 0; d < axis; ++d)
                            src.push_back(idx[d]);
                          src.push_back(safeIndex(nb, nl, toIndex(nb, nl, a[0]),
                                                  dt.getDimSize(axis)));
                          for (int64_t d = axis + 1; d < dt.getRank(); ++d)
                            src.push_back(idx[d - 1 + q]);
                          return nb.create<tensor::ExtractOp>(nl, op.getData(),
                                                              src);
                        }));
    return success();
  });
  addLambda<GatherElementsOp>(patterns, [](GatherElementsOp op,
                                           PatternRewriter &b) {
    Location loc = op.getLoc();
    auto dt = tensorType(op.getData());
    int64_t axis = op.getAxis();
    b.replaceOp(op, fromIndices(b, loc, rtype(op), op.getIndices(),
                                b.getMultiDimIdentityMap(dt.getRank()),
                                [&](OpBuilder &nb, Location nl, ValueRange idx,
                                    ValueRange a) -> Value {
                                  SmallVector<Value> src(idx);
                                  src[axis] =
                                      safeIndex(nb, nl, toIndex(nb, nl, a[0]),
                                                dt.getDimSize(axis));
                                  return nb.create<tensor::ExtractOp>(
                                      nl, op.getData(), src);
                                }));
    return success();
  });
}

/// Pad in every mode.
void populatePadPatterns(RewritePatternSet &patterns) {
  addLambda<PadOp>(patterns, [](PadOp op, PatternRewriter &b) {
    Location loc = op.getLoc();
    auto it = tensorType(op.getInput());
    auto pads = toI64Vector(op.getPads());
    int64_t rank = it.getRank();
    Type et = it.getElementType();
    if (op.getMode() == "constant" &&
        llvm::all_of(pads, [](int64_t p) { return p >= 0; })) {
      SmallVector<int64_t> lo(pads.begin(), pads.begin() + rank),
          hi(pads.begin() + rank, pads.end());
      b.replaceOp(
          op, padConstant(b, loc, op.getInput(), lo, hi,
                          scalar(b, loc, et, op.getValue().convertToDouble())));
      return success();
    }
    // General form: each output index maps back to an input index by the
    // mode (edge: clamp, reflect: mirror, wrap: modulo); constant mode reads
    // the pad value outside the input.
    StringRef mode = op.getMode();
    double value = op.getValue().convertToDouble();
    b.replaceOp(
        op,
        fromIndices(
            b, loc, rtype(op), {}, {},
            [&](OpBuilder &nb, Location nl, ValueRange idx,
                ValueRange) -> Value {
              SmallVector<Value> src;
              Value inside = scalar(nb, nl, nb.getI1Type(), 1);
              for (int64_t d = 0; d < rank; ++d) {
                int64_t n = it.getDimSize(d);
                Value i = nb.create<arith::SubIOp>(
                    nl,
                    nb.create<arith::IndexCastOp>(nl, nb.getI64Type(), idx[d]),
                    scalar(nb, nl, nb.getI64Type(), pads[d]));
                Value zero = scalar(nb, nl, nb.getI64Type(), 0);
                Value last = scalar(nb, nl, nb.getI64Type(), n - 1);
                Value nn = scalar(nb, nl, nb.getI64Type(), n);
                if (mode == "edge" || mode == "constant") {
                  if (mode == "constant") {
                    Value ge = nb.create<arith::CmpIOp>(
                        nl, arith::CmpIPredicate::sge, i, zero);
                    Value le = nb.create<arith::CmpIOp>(
                        nl, arith::CmpIPredicate::sle, i, last);
                    inside = nb.create<arith::AndIOp>(
                        nl, inside, nb.create<arith::AndIOp>(nl, ge, le));
                  }
                  i = nb.create<arith::MaxSIOp>(
                      nl, nb.create<arith::MinSIOp>(nl, i, last), zero);
                } else if (mode == "wrap") {
                  Value r = nb.create<arith::RemSIOp>(nl, i, nn);
                  Value neg = nb.create<arith::CmpIOp>(
                      nl, arith::CmpIPredicate::slt, r, zero);
                  i = nb.create<arith::SelectOp>(
                      nl, neg, nb.create<arith::AddIOp>(nl, r, nn), r);
                } else { // reflect: period 2(n-1)
                  if (n == 1) {
                    i = zero;
                  } else {
                    Value period = scalar(nb, nl, nb.getI64Type(), 2 * (n - 1));
                    Value a = nb.create<math::AbsIOp>(nl, i);
                    Value r = nb.create<arith::RemSIOp>(nl, a, period);
                    Value over = nb.create<arith::CmpIOp>(
                        nl, arith::CmpIPredicate::sgt, r, last);
                    i = nb.create<arith::SelectOp>(
                        nl, over, nb.create<arith::SubIOp>(nl, period, r), r);
                  }
                }
                src.push_back(
                    nb.create<arith::IndexCastOp>(nl, nb.getIndexType(), i));
              }
              Value v = nb.create<tensor::ExtractOp>(nl, op.getInput(), src);
              if (mode != "constant")
                return v;
              return nb.create<arith::SelectOp>(nl, inside, v,
                                                scalar(nb, nl, et, value));
            }));
    return success();
  });
}

/// Triangles and one-hot encodings: each element chosen by comparing its
/// indices.
void populateMaskPatterns(RewritePatternSet &patterns) {
  addLambda<TriluOp>(patterns, [](TriluOp op, PatternRewriter &b) {
    Location loc = op.getLoc();
    auto type = rtype(op);
    int64_t rank = type.getRank(), k = op.getK();
    bool upper = op.getUpper();
    Type et = type.getElementType();
    b.replaceOp(
        op,
        fromIndices(b, loc, type, op.getInput(), b.getMultiDimIdentityMap(rank),
                    [&](OpBuilder &nb, Location nl, ValueRange idx,
                        ValueRange a) -> Value {
                      Value r = nb.create<arith::IndexCastOp>(
                          nl, nb.getI64Type(), idx[rank - 2]);
                      Value c = nb.create<arith::IndexCastOp>(
                          nl, nb.getI64Type(), idx[rank - 1]);
                      Value rk = nb.create<arith::AddIOp>(
                          nl, r, scalar(nb, nl, nb.getI64Type(), k));
                      // upper keeps c - r >= k, lower keeps c - r <= k.
                      Value keep = nb.create<arith::CmpIOp>(
                          nl,
                          upper ? arith::CmpIPredicate::sge
                                : arith::CmpIPredicate::sle,
                          c, rk);
                      return nb.create<arith::SelectOp>(nl, keep, a[0],
                                                        scalar(nb, nl, et, 0));
                    }));
    return success();
  });
  addLambda<OneHotOp>(patterns, [](OneHotOp op, PatternRewriter &b) {
    Location loc = op.getLoc();
    auto type = rtype(op);
    int64_t axis = op.getAxis(), depth = op.getDepth(), rank = type.getRank();
    MLIRContext *ctx = b.getContext();
    SmallVector<AffineExpr> idxExprs;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        idxExprs.push_back(getAffineDimExpr(d, ctx));
    AffineMap idxMap = AffineMap::get(rank, 0, idxExprs, ctx);
    b.replaceOp(
        op,
        fromIndices(b, loc, type, op.getIndices(), idxMap,
                    [&](OpBuilder &nb, Location nl, ValueRange idx,
                        ValueRange a) -> Value {
                      Value i = a[0];
                      if (!i.getType().isInteger(64))
                        i = nb.create<arith::ExtSIOp>(nl, nb.getI64Type(), i);
                      Value neg = nb.create<arith::CmpIOp>(
                          nl, arith::CmpIPredicate::slt, i,
                          scalar(nb, nl, nb.getI64Type(), 0));
                      i = nb.create<arith::SelectOp>(
                          nl, neg,
                          nb.create<arith::AddIOp>(
                              nl, i, scalar(nb, nl, nb.getI64Type(), depth)),
                          i);
                      Value pos = nb.create<arith::IndexCastOp>(
                          nl, nb.getI64Type(), idx[axis]);
                      Value hot = nb.create<arith::CmpIOp>(
                          nl, arith::CmpIPredicate::eq, i, pos);
                      Value off = nb.create<tensor::ExtractOp>(
                          nl, op.getValues(), ValueRange{idxConst(nb, nl, 0)});
                      Value on = nb.create<tensor::ExtractOp>(
                          nl, op.getValues(), ValueRange{idxConst(nb, nl, 1)});
                      return nb.create<arith::SelectOp>(nl, hot, on, off);
                    }));
    return success();
  });
}

// (x - mean) / sqrt(var + eps) over `axes`, then * scale + bias; the
// statistics are ign.reduce_mean ops lowered by the reduction patterns.
Value normalizeOverAxes(PatternRewriter &b, Location loc, Value x,
                        ArrayRef<int64_t> axes, double eps) {
  auto type = tensorType(x);
  Type et = type.getElementType();
  SmallVector<int64_t> kept(type.getShape());
  for (int64_t a : axes)
    kept[a] = 1;
  auto keptType = RankedTensorType::get(kept, et);
  auto axesAttr = b.getI64ArrayAttr(axes);
  Value mean = b.create<ReduceMeanOp>(loc, keptType, x, axesAttr, true);
  Value centered =
      elementwise(b, loc, type, ValueRange{x, mean},
                  [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                    return nb.create<arith::SubFOp>(nl, a[0], a[1]);
                  });
  Value sq = elementwise(b, loc, type, centered,
                         [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                           return nb.create<arith::MulFOp>(nl, a[0], a[0]);
                         });
  Value var = b.create<ReduceMeanOp>(loc, keptType, sq, axesAttr, true);
  return elementwise(
      b, loc, type, ValueRange{centered, var},
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value v = nb.create<arith::AddFOp>(nl, a[1], scalar(nb, nl, et, eps));
        return nb.create<arith::DivFOp>(nl, a[0],
                                        nb.create<math::SqrtOp>(nl, v));
      });
}

Value scaleAndShift(PatternRewriter &b, Location loc, Value x, Value scale,
                    Value bias, ArrayRef<int64_t> pshape) {
  auto type = tensorType(x);
  SmallVector<Value> ins{x, reshape(b, loc, scale, pshape)};
  if (bias)
    ins.push_back(reshape(b, loc, bias, pshape));
  return elementwise(
      b, loc, type, ins, [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value v = nb.create<arith::MulFOp>(nl, a[0], a[1]);
        return a.size() > 2 ? Value(nb.create<arith::AddFOp>(nl, v, a[2])) : v;
      });
}

/// Normalizations decompose into ign ops that the same conversion lowers.
void populateNormalizationPatterns(RewritePatternSet &patterns) {
  addLambda<BatchNormOp>(patterns, [](BatchNormOp op, PatternRewriter &b) {
    Location loc = op.getLoc();
    auto type = rtype(op);
    Type et = type.getElementType();
    SmallVector<int64_t> pshape(type.getRank(), 1);
    pshape[1] = type.getDimSize(1);
    double eps = op.getEpsilon().convertToDouble();
    Value x = op.getInput();
    Value mean = reshape(b, loc, op.getMean(), pshape),
          var = reshape(b, loc, op.getVariance(), pshape),
          scale = reshape(b, loc, op.getScale(), pshape),
          bias = reshape(b, loc, op.getBias(), pshape);
    b.replaceOp(
        op, elementwise(b, loc, type, ValueRange{x, mean, var, scale, bias},
                        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                          Value d = nb.create<arith::SubFOp>(nl, a[0], a[1]);
                          Value v = nb.create<arith::AddFOp>(
                              nl, a[2], scalar(nb, nl, et, eps));
                          Value r = nb.create<math::SqrtOp>(nl, v);
                          Value n = nb.create<arith::DivFOp>(nl, d, r);
                          return nb.create<arith::AddFOp>(
                              nl, nb.create<arith::MulFOp>(nl, n, a[3]), a[4]);
                        }));
    return success();
  });
  addLambda<InstanceNormOp>(
      patterns, [](InstanceNormOp op, PatternRewriter &b) {
        auto type = rtype(op);
        SmallVector<int64_t> axes;
        for (int64_t d = 2; d < type.getRank(); ++d)
          axes.push_back(d);
        Value n = normalizeOverAxes(b, op.getLoc(), op.getInput(), axes,
                                    op.getEpsilon().convertToDouble());
        SmallVector<int64_t> pshape(type.getRank(), 1);
        pshape[1] = type.getDimSize(1);
        b.replaceOp(op, scaleAndShift(b, op.getLoc(), n, op.getScale(),
                                      op.getBias(), pshape));
        return success();
      });
  addLambda<LayerNormOp>(patterns, [](LayerNormOp op, PatternRewriter &b) {
    auto type = rtype(op);
    SmallVector<int64_t> axes;
    for (int64_t d = op.getAxis(); d < type.getRank(); ++d)
      axes.push_back(d);
    Value n = normalizeOverAxes(b, op.getLoc(), op.getInput(), axes,
                                op.getEpsilon().convertToDouble());
    // scale/bias broadcast numpy-style against the normalized dims.
    auto st = tensorType(op.getScale());
    SmallVector<int64_t> pshape(st.getShape());
    b.replaceOp(op, scaleAndShift(b, op.getLoc(), n, op.getScale(),
                                  op.getBias(), pshape));
    return success();
  });
  addLambda<GroupNormOp>(patterns, [](GroupNormOp op, PatternRewriter &b) {
    Location loc = op.getLoc();
    auto type = rtype(op);
    int64_t G = op.getNumGroups(), N = type.getDimSize(0),
            C = type.getDimSize(1);
    SmallVector<int64_t> grouped{N, G, type.getNumElements() / (N * G)};
    Value x = reshape(b, loc, op.getInput(), grouped);
    Value n =
        normalizeOverAxes(b, loc, x, {2}, op.getEpsilon().convertToDouble());
    n = reshape(b, loc, n, type.getShape());
    SmallVector<int64_t> pshape(type.getRank(), 1);
    pshape[1] = C;
    b.replaceOp(op,
                scaleAndShift(b, loc, n, op.getScale(), op.getBias(), pshape));
    return success();
  });
  addLambda<LRNOp>(patterns, [](LRNOp op, PatternRewriter &b) {
    // y = x / (bias + alpha/size * sum_{c' in window} x[c']^2)^beta
    Location loc = op.getLoc();
    auto type = rtype(op);
    Type et = type.getElementType();
    int64_t size = op.getSize(), rank = type.getRank();
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    Value sq =
        elementwise(b, loc, type, op.getInput(),
                    [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                      return nb.create<arith::MulFOp>(nl, a[0], a[0]);
                    });
    SmallVector<int64_t> plo(rank, 0), phi(rank, 0);
    plo[1] = lo;
    phi[1] = hi;
    Value padded = padConstant(b, loc, sq, plo, phi, scalar(b, loc, et, 0));
    MLIRContext *ctx = b.getContext();
    SmallVector<AffineExpr> inE, outE;
    for (int64_t d = 0; d < rank; ++d) {
      outE.push_back(getAffineDimExpr(d, ctx));
      inE.push_back(d == 1
                        ? getAffineDimExpr(1, ctx) + getAffineDimExpr(rank, ctx)
                        : getAffineDimExpr(d, ctx));
    }
    Value window = b.create<tensor::EmptyOp>(loc, ArrayRef<int64_t>{size}, et);
    Value acc = filled(b, loc, type, scalar(b, loc, et, 0));
    Value sums =
        b.create<linalg::GenericOp>(
             loc, TypeRange{type}, ValueRange{padded, window}, ValueRange{acc},
             SmallVector<AffineMap>{
                 AffineMap::get(rank + 1, 0, inE, ctx),
                 AffineMap::get(rank + 1, 0, {getAffineDimExpr(rank, ctx)},
                                ctx),
                 AffineMap::get(rank + 1, 0, outE, ctx)},
             iterators(rank, 1),
             [](OpBuilder &nb, Location nl, ValueRange a) {
               nb.create<linalg::YieldOp>(
                   nl, Value(nb.create<arith::AddFOp>(nl, a[0], a[2])));
             })
            .getResult(0);
    double alpha = op.getAlpha().convertToDouble(),
           beta = op.getBeta().convertToDouble(),
           bias = op.getBias().convertToDouble();
    b.replaceOp(
        op, elementwise(b, loc, type, ValueRange{op.getInput(), sums},
                        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                          Value s = nb.create<arith::MulFOp>(
                              nl, a[1], scalar(nb, nl, et, alpha / size));
                          Value d = nb.create<arith::AddFOp>(
                              nl, s, scalar(nb, nl, et, bias));
                          Value p = nb.create<math::PowFOp>(
                              nl, d, scalar(nb, nl, et, beta));
                          return nb.create<arith::DivFOp>(nl, a[0], p);
                        }));
    return success();
  });
}

} // namespace

void populateDataMovementPatterns(RewritePatternSet &patterns) {
  populateShapePatterns(patterns);
  populateGatherPatterns(patterns);
  populatePadPatterns(patterns);
  populateMaskPatterns(patterns);
  populateNormalizationPatterns(patterns);
}

} // namespace ign::lowering
