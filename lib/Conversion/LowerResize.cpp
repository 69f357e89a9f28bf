//===- LowerResize.cpp - Resize as an index-computing linalg.generic ------===//
//
// Every output element maps back to a real-valued input coordinate per dim
// (the coordinate transformation), then reads the nearest element, or
// blends 2 (linear) or 4 (cubic) neighbours per resized dim.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

using namespace mlir;

namespace ign::lowering {
namespace {

/// The scalar computation of one Resize output element, in f64: the input
/// coordinate per dim (the coordinate transformation), then the nearest
/// element or a blend of neighbours.
class ResizeBody {
public:
  ResizeBody(ResizeOp op, OpBuilder &nb, Location nl)
      : nb(nb), nl(nl), f64(nb.getF64Type()), inType(tensorType(op.getInput())),
        et(inType.getElementType()), rank(inType.getRank()),
        sizes(toI64Vector(op.getSizes())), mode(op.getMode()),
        ctm(op.getCoordinateTransformationMode()),
        nearestMode(op.getNearestMode()),
        cubicA(op.getCubicCoeffA().convertToDouble()),
        excludeOutside(op.getExcludeOutside()),
        extrapolation(op.getExtrapolationValue().convertToDouble()),
        input(op.getInput()) {
    for (Attribute a : op.getScales())
      scales.push_back(cast<FloatAttr>(a).getValueAsDouble());
    if (auto r = op.getRoiAttr())
      for (Attribute a : r)
        roi.push_back(cast<FloatAttr>(a).getValueAsDouble());
  }

  /// Yields the output element.
  void build() {
    // Per dim: the input coordinate, and whether it lies outside the
    // crop (tf_crop_and_resize extrapolates there).
    SmallVector<Value> coord(rank);
    Value outside = scalar(nb, nl, nb.getI1Type(), 0);
    for (int64_t d = 0; d < rank; ++d)
      coord[d] = coordinate(d, outside);
    Value result;
    if (mode == "nearest") {
      result = nearest(coord);
      if (!isFloat(et)) {
        // Integers pass through unchanged (no extrapolation outside
        // tf_crop_and_resize's crop, where the value is cast).
        Value fill = castScalar(nb, nl, cst(extrapolation), et);
        nb.create<linalg::YieldOp>(
            nl, Value(nb.create<arith::SelectOp>(nl, outside, fill, result)));
        return;
      }
      result = castScalar(nb, nl, result, f64);
    } else {
      // Taps per dim: (index, weight) pairs.
      SmallVector<SmallVector<std::pair<Value, Value>>> taps(rank);
      for (int64_t d = 0; d < rank; ++d)
        taps[d] = tapsAlong(d, coord[d]);
      result = sumOverTaps(taps);
    }
    result =
        nb.create<arith::SelectOp>(nl, outside, cst(extrapolation), result);
    nb.create<linalg::YieldOp>(nl, castScalar(nb, nl, result, et));
  }

private:
  Value cst(double v) { return scalar(nb, nl, f64, v); }
  Value add(Value x, Value y) { return nb.create<arith::AddFOp>(nl, x, y); }
  Value sub(Value x, Value y) { return nb.create<arith::SubFOp>(nl, x, y); }
  Value mul(Value x, Value y) { return nb.create<arith::MulFOp>(nl, x, y); }
  /// x / scale, divided (not times 1 / scale): exact where the quotient is
  /// (with IEEE division: the host's; Vulkan does not promise it), so that
  /// floor and ceil of a coordinate on a grid point do not depend on
  /// whether LLVM fuses a multiply and an add into an FMA (AVX2 code fused
  /// (4 + 0.5) * (1 / 3) - 0.5 into 0.99999999999999989, and a
  /// nearest/floor Resize read row 0 for row 1). Ratios multiply first and
  /// divide last for the same reason.
  Value byScale(Value x, double scale) {
    return nb.create<arith::DivFOp>(nl, x, cst(scale));
  }
  Value toIndex(Value f, int64_t limit) {
    // Clamp into [0, limit - 1] and convert.
    Value c = nb.create<arith::MaximumFOp>(
        nl, nb.create<arith::MinimumFOp>(nl, f, cst(double(limit - 1))),
        cst(0));
    Value i = nb.create<arith::FPToSIOp>(nl, nb.getI64Type(), c);
    return nb.create<arith::IndexCastOp>(nl, nb.getIndexType(), i);
  }

  /// The input coordinate of the output element along dim d; ORs into
  /// `outside` whether it lies outside tf_crop_and_resize's crop.
  Value coordinate(int64_t d, Value &outside) {
    int64_t in = inType.getDimSize(d), out = sizes[d];
    Value x = nb.create<arith::SIToFPOp>(
        nl, f64,
        nb.create<arith::IndexCastOp>(nl, nb.getI64Type(),
                                      nb.create<linalg::IndexOp>(nl, d)));
    double s = scales[d];
    Value c;
    if (ctm == "asymmetric") {
      c = byScale(x, s);
    } else if (ctm == "align_corners") {
      // ONNX uses the unrounded output length in * scale here.
      double len = double(in) * s;
      c = len <= 1 ? cst(0) : byScale(mul(x, cst(double(in - 1))), len - 1);
    } else if (ctm == "pytorch_half_pixel") {
      c = out > 1 ? sub(byScale(add(x, cst(0.5)), s), cst(0.5)) : cst(0);
    } else if (ctm == "tf_half_pixel_for_nn") {
      c = byScale(add(x, cst(0.5)), s);
    } else if (ctm == "half_pixel_symmetric") {
      double adjustment = double(out) / (double(in) * s);
      double center = double(in) / 2;
      double offset = center * (1 - adjustment);
      c = add(cst(offset), sub(byScale(add(x, cst(0.5)), s), cst(0.5)));
    } else if (ctm == "tf_crop_and_resize") {
      double start = roi.size() == size_t(2 * rank) ? roi[d] : 0;
      double end = roi.size() == size_t(2 * rank) ? roi[d + rank] : 1;
      c = out > 1 ? add(cst(start * (in - 1)),
                        byScale(mul(x, cst((end - start) * (in - 1))),
                                double(out - 1)))
                  : cst(0.5 * (start + end) * (in - 1));
      Value lo =
          nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OLT, c, cst(0));
      Value hi = nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OGT, c,
                                          cst(double(in - 1)));
      outside = nb.create<arith::OrIOp>(nl, outside,
                                        nb.create<arith::OrIOp>(nl, lo, hi));
    } else { // half_pixel
      c = sub(byScale(add(x, cst(0.5)), s), cst(0.5));
    }
    return c;
  }

  /// The input element nearest to the coordinates, by the nearest mode.
  Value nearest(ArrayRef<Value> coord) {
    SmallVector<Value> idx;
    for (int64_t d = 0; d < rank; ++d) {
      Value c = coord[d], r;
      if (nearestMode == "floor")
        r = nb.create<math::FloorOp>(nl, c);
      else if (nearestMode == "ceil")
        r = nb.create<math::CeilOp>(nl, c);
      else if (nearestMode == "round_prefer_ceil")
        r = nb.create<math::FloorOp>(nl, add(c, cst(0.5)));
      else // round_prefer_floor
        r = nb.create<math::CeilOp>(nl, sub(c, cst(0.5)));
      idx.push_back(toIndex(r, inType.getDimSize(d)));
    }
    return nb.create<tensor::ExtractOp>(nl, input, idx);
  }

  /// Linear (2) or cubic (4) taps along dim d at coordinate c.
  SmallVector<std::pair<Value, Value>> tapsAlong(int64_t d, Value c) {
    SmallVector<std::pair<Value, Value>> taps;
    int64_t in = inType.getDimSize(d);
    Value base = nb.create<math::FloorOp>(nl, c);
    Value t = sub(c, base);
    if (mode == "linear") {
      taps.push_back({toIndex(base, in), sub(cst(1), t)});
      taps.push_back({toIndex(add(base, cst(1)), in), t});
      return taps;
    }
    // Cubic (Keys) with coefficient A; exclude_outside drops taps
    // outside the input and renormalizes.
    SmallVector<Value> ws, pos;
    for (int k = -1; k <= 2; ++k) {
      Value p = add(base, cst(k));
      Value w = cubicWeight(sub(t, cst(k)));
      if (excludeOutside) {
        Value lo =
            nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OLT, p, cst(0));
        Value hi = nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OGT, p,
                                            cst(double(in - 1)));
        w = nb.create<arith::SelectOp>(nl, nb.create<arith::OrIOp>(nl, lo, hi),
                                       cst(0), w);
      }
      ws.push_back(w);
      pos.push_back(p);
    }
    Value total = add(add(ws[0], ws[1]), add(ws[2], ws[3]));
    for (int k = 0; k < 4; ++k)
      taps.push_back({toIndex(pos[k], in),
                      excludeOutside
                          ? Value(nb.create<arith::DivFOp>(nl, ws[k], total))
                          : ws[k]});
    return taps;
  }

  /// The cubic convolution kernel's weight at distance `dist`.
  Value cubicWeight(Value dist) {
    double A = cubicA;
    Value ad = nb.create<math::AbsFOp>(nl, dist);
    Value ad2 = mul(ad, ad), ad3 = mul(ad2, ad);
    Value near = add(sub(mul(cst(A + 2), ad3), mul(cst(A + 3), ad2)), cst(1));
    Value far = add(sub(add(mul(cst(A), ad3), mul(cst(-5 * A), ad2)), cst(0)),
                    add(mul(cst(8 * A), ad), cst(-4 * A)));
    Value isNear =
        nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OLE, ad, cst(1));
    Value isFar =
        nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OLT, ad, cst(2));
    return nb.create<arith::SelectOp>(
        nl, isNear, near, nb.create<arith::SelectOp>(nl, isFar, far, cst(0)));
  }

  /// The weighted sum of the input over every combination of taps.
  Value sumOverTaps(ArrayRef<SmallVector<std::pair<Value, Value>>> taps) {
    Value acc = cst(0);
    SmallVector<size_t> pick(rank, 0);
    while (true) {
      SmallVector<Value> idx;
      Value w = cst(1);
      for (int64_t d = 0; d < rank; ++d) {
        idx.push_back(taps[d][pick[d]].first);
        w = mul(w, taps[d][pick[d]].second);
      }
      Value v =
          castScalar(nb, nl, nb.create<tensor::ExtractOp>(nl, input, idx), f64);
      acc = add(acc, mul(w, v));
      int64_t d = rank - 1;
      while (d >= 0 && ++pick[d] == taps[d].size())
        pick[d--] = 0;
      if (d < 0)
        break;
    }
    return acc;
  }

  OpBuilder &nb;
  Location nl;
  Type f64;
  RankedTensorType inType;
  Type et;
  int64_t rank;
  SmallVector<int64_t> sizes;
  SmallVector<double> scales, roi;
  StringRef mode, ctm, nearestMode;
  double cubicA;
  bool excludeOutside;
  double extrapolation;
  Value input;
};

struct ResizeLowering : OpRewritePattern<ResizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ResizeOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto inType = tensorType(op.getInput());
    auto outType = rtype(op);
    Type et = inType.getElementType();
    StringRef modeName = op.getMode();
    // Integer tensors resize by nearest neighbour only (blending would need
    // a rounding rule ONNX does not give).
    if (!isFloat(et) && modeName != "nearest")
      return b.notifyMatchFailure(op, "linear or cubic resize of integers");
    int64_t rank = inType.getRank();
    Value init = b.create<tensor::EmptyOp>(loc, outType.getShape(), et);
    auto generic = b.create<linalg::GenericOp>(
        loc, TypeRange{outType}, ValueRange{}, ValueRange{init},
        SmallVector<AffineMap>{b.getMultiDimIdentityMap(rank)}, iterators(rank),
        [&](OpBuilder &nb, Location nl, ValueRange) {
          ResizeBody(op, nb, nl).build();
        });
    b.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateResizePatterns(RewritePatternSet &patterns) {
  patterns.add<ResizeLowering>(patterns.getContext());
}

} // namespace ign::lowering
