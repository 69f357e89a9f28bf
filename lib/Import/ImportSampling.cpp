//===- ImportSampling.cpp - GridSample ------------------------------------===//
//
// GridSample (opset 16, 4-D) imports as its arithmetic, as ONNX's reference
// computes it: the grid's normalized coordinates are mapped to pixels
// (align_corners or not), rounded half to even for `nearest`, moved inside
// by `border` (clamped; for bicubic only its taps are, as in PyTorch and
// onnxruntime) or `reflection` (reflected at the borders) padding,
// and every tap of the interpolation (1 nearest, 2 x 2 bilinear, 4 x 4
// bicubic with a = -0.75) is a GatherElements of the image's rows flattened,
// weighted and summed; `zeros` padding selects 0 for taps outside it.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

using namespace mlir;

namespace ign::import {
namespace {

/// Builds elementwise arithmetic on f32 tensors, remembering a failure
/// (already reported at the node) instead of returning it from every call.
class Arith {
public:
  explicit Arith(NodeImporter &n) : n(n), f32(n.builder().getF32Type()) {}
  bool failed() const { return bad; }

  Value c(double v) { return n.scalarConstant(f32, v); }
  template <typename OpT> Value op(ValueRange operands) {
    if (bad)
      return operands[0];
    auto r = n.createValue<OpT>(operands);
    if (mlir::failed(r)) {
      bad = true;
      return operands[0];
    }
    return *r;
  }
  Value add(Value a, Value b) { return op<AddOp>({a, b}); }
  Value sub(Value a, Value b) { return op<SubOp>({a, b}); }
  Value mul(Value a, Value b) { return op<MulOp>({a, b}); }
  Value div(Value a, Value b) { return op<DivOp>({a, b}); }
  Value floor(Value a) { return op<FloorOp>({a}); }
  Value less(Value a, Value b) { return op<LessOp>({a, b}); }
  Value greater(Value a, Value b) { return op<GreaterOp>({a, b}); }
  Value either(Value a, Value b) { return op<OrOp>({a, b}); }
  Value both(Value a, Value b) { return op<AndOp>({a, b}); }
  Value select(Value cond, Value a, Value b) {
    return op<SelectOp>({cond, a, b});
  }
  Value clamp(Value v, double lo, double hi) {
    return select(less(v, c(lo)), c(lo), select(greater(v, c(hi)), c(hi), v));
  }
  Value round(Value a) { return op<RoundOp>({a}); }
  Value cast(Value a, Type to) {
    if (bad)
      return a;
    auto r = n.createValue<CastOp>(a, {n.named("to", TypeAttr::get(to))});
    bad |= mlir::failed(r);
    return bad ? a : *r;
  }
  Value reshape(Value a, ArrayRef<int64_t> shape) {
    if (bad)
      return a;
    auto r = n.reshape(a, shape);
    bad |= mlir::failed(r);
    return bad ? a : *r;
  }
  NodeImporter &node() { return n; }

private:
  NodeImporter &n;
  Type f32;
  bool bad = false;
};

/// Reflects v into [lo, hi] (ONNX's _gs_reflect): by the nearer border,
/// as many times as the distance holds the range.
Value reflect(Arith &a, Value v, double lo, double hi) {
  double range = hi - lo;
  auto fold = [&](Value dx, double from, double to) {
    // n = floor(dx / range), r = dx - n range: from +- r when n is even.
    Value k = a.floor(a.div(dx, a.c(range)));
    Value r = a.sub(dx, a.mul(k, a.c(range)));
    Value odd =
        a.greater(a.sub(k, a.mul(a.c(2), a.floor(a.div(k, a.c(2))))), a.c(0.5));
    Value sign = a.c(from < to ? 1.0 : -1.0);
    return a.select(odd, a.sub(a.c(to), a.mul(sign, r)),
                    a.add(a.c(from), a.mul(sign, r)));
  };
  Value below = fold(a.sub(a.c(lo), v), lo, hi);
  Value above = fold(a.sub(v, a.c(hi)), hi, lo);
  return a.select(a.less(v, a.c(lo)), below,
                  a.select(a.greater(v, a.c(hi)), above, v));
}

struct Axis {
  int64_t size;  // pixels along it
  double lo, hi; // the borders reflection reflects at
};

struct GridSampleSpec {
  std::string mode, padding;
  bool alignCorners = false;
};

/// The image's pixels at integer taps (tx, ty) [N, Ho, Wo] (as floats), for
/// every channel: [N, C, Ho, Wo]. Taps outside are moved in by the padding
/// mode, or read as 0 with `zeros`.
Value pixelsAt(Arith &a, Value image, Value tx, Value ty, const Axis &ax,
               const Axis &ay, const GridSampleSpec &spec,
               ArrayRef<int64_t> outShape) {
  int64_t n = outShape[0], c = outShape[1], ho = outShape[2], wo = outShape[3];
  Value inside;
  if (spec.padding == "zeros")
    inside = a.both(
        a.both(a.greater(tx, a.c(-0.5)), a.less(tx, a.c(ax.size - 0.5))),
        a.both(a.greater(ty, a.c(-0.5)), a.less(ty, a.c(ay.size - 0.5))));
  else if (spec.padding == "reflection") {
    tx = a.floor(reflect(a, tx, ax.lo, ax.hi));
    ty = a.floor(reflect(a, ty, ay.lo, ay.hi));
  }
  tx = a.clamp(tx, 0, ax.size - 1);
  ty = a.clamp(ty, 0, ay.size - 1);
  Value flat = a.add(a.mul(ty, a.c(ax.size)), tx);
  Type i64 = IntegerType::get(image.getContext(), 64);
  Value index = a.reshape(a.cast(flat, i64), {n, 1, ho * wo});
  if (a.failed())
    return image;
  auto expanded = a.node().createValue<ExpandOp>(
      index, {a.node().named("shape", a.node().i64Array({n, c, ho * wo}))});
  if (failed(expanded))
    return a.op<AddOp>({image, image}); // marks the failure
  auto taps = a.node().createValue<GatherElementsOp>(
      {image, *expanded}, {a.node().namedI64("axis", 2)});
  if (failed(taps))
    return a.op<AddOp>({image, image});
  Value pixels = a.reshape(*taps, outShape);
  if (!inside)
    return pixels;
  return a.select(a.reshape(inside, {n, 1, ho, wo}), pixels, a.c(0));
}

/// Keys' cubic convolution weights (a = -0.75) of the four taps around a
/// point at fraction t past the second.
std::array<Value, 4> cubicWeights(Arith &a, Value t) {
  const double alpha = -0.75;
  auto far = [&](Value x) { // 1 < x < 2
    return a.sub(
        a.mul(a.add(a.mul(a.sub(a.mul(a.c(alpha), x), a.c(5 * alpha)), x),
                    a.c(8 * alpha)),
              x),
        a.c(4 * alpha));
  };
  auto near = [&](Value x) { // x <= 1
    return a.add(
        a.mul(a.mul(a.sub(a.mul(a.c(alpha + 2), x), a.c(alpha + 3)), x), x),
        a.c(1));
  };
  Value one = a.c(1), two = a.c(2);
  return {far(a.add(t, one)), near(t), near(a.sub(one, t)), far(a.sub(two, t))};
}

LogicalResult importGridSample(NodeImporter &n) {
  auto xType = n.inputType(0), gridType = n.inputType(1);
  auto image = n.input(0), grid = n.input(1);
  auto mode = n.attrString("mode", "bilinear");
  auto padding = n.attrString("padding_mode", "zeros");
  auto align = n.attrInt("align_corners", 0);
  if (failed(xType) || failed(gridType) || failed(image) || failed(grid) ||
      failed(mode) || failed(padding) || failed(align))
    return failure();
  GridSampleSpec spec{*mode, *padding, *align != 0};
  if (spec.mode == "linear")
    spec.mode = "bilinear";
  if (spec.mode == "cubic")
    spec.mode = "bicubic";
  if (spec.mode != "bilinear" && spec.mode != "nearest" &&
      spec.mode != "bicubic")
    return n.error() << "GridSample mode '" << *mode << "' is not supported";
  if (spec.padding != "zeros" && spec.padding != "border" &&
      spec.padding != "reflection")
    return n.error() << "GridSample padding_mode '" << *padding
                     << "' is not supported";
  if (!xType->getElementType().isF32() || xType->getRank() != 4 ||
      gridType->getRank() != 4 || gridType->getDimSize(3) != 2 ||
      gridType->getDimSize(0) != xType->getDimSize(0) ||
      !gridType->getElementType().isF32())
    return n.error() << "GridSample of " << *xType << " at " << *gridType
                     << ": a 4-D f32 image and an [N, Ho, Wo, 2] f32 grid "
                        "are supported";
  int64_t batch = xType->getDimSize(0), channels = xType->getDimSize(1),
          h = xType->getDimSize(2), w = xType->getDimSize(3),
          ho = gridType->getDimSize(1), wo = gridType->getDimSize(2);
  SmallVector<int64_t> outShape{batch, channels, ho, wo};
  auto axis = [&](int64_t size) {
    return spec.alignCorners ? Axis{size, 0.0, double(size - 1)}
                             : Axis{size, -0.5, size - 0.5};
  };
  Axis ax = axis(w), ay = axis(h);

  Arith a(n);
  Value flatImage = a.reshape(*image, {batch, channels, h * w});
  auto coordinate = [&](int64_t part, const Axis &along) {
    SmallVector<int64_t> starts{0, 0, 0, part}, sizes{batch, ho, wo, 1};
    auto g = n.createValue<SliceOp>(
        *grid, {n.named("starts", n.i64Array(starts)),
                n.named("sizes", n.i64Array(sizes)),
                n.named("steps", n.i64Array({1, 1, 1, 1}))});
    if (failed(g))
      return a.op<AddOp>({*grid, *grid});
    Value v = a.reshape(*g, {batch, ho, wo});
    double d = double(along.size);
    // Normalized [-1, 1] to pixels.
    v = spec.alignCorners
            ? a.mul(a.add(v, a.c(1)), a.c((d - 1) / 2))
            : a.div(a.sub(a.mul(a.add(v, a.c(1)), a.c(d)), a.c(1)), a.c(2));
    if (spec.mode == "nearest")
      v = a.round(v);
    Value outside =
        a.either(a.less(v, a.c(along.lo)), a.greater(v, a.c(along.hi)));
    // Bicubic taps reach two pixels past the point: clamping the point
    // too would drop the inner pixels a point just outside still sees.
    // PyTorch (whose grid_sample exporters emit) and onnxruntime clamp only
    // the taps there; ONNX's reference evaluator clamps both.
    if (spec.padding == "border" && spec.mode != "bicubic")
      v = a.select(outside, a.clamp(v, 0, d - 1), v);
    else if (spec.padding == "reflection")
      v = reflect(a, v, along.lo, along.hi);
    return v;
  };
  Value x = coordinate(0, ax), y = coordinate(1, ay);
  auto at = [&](Value tx, Value ty) {
    return pixelsAt(a, flatImage, tx, ty, ax, ay, spec, outShape);
  };
  auto weighted = [&](Value weight, Value pixels) {
    return a.mul(a.reshape(weight, {batch, 1, ho, wo}), pixels);
  };

  Value result;
  if (spec.mode == "nearest") {
    result = at(x, y);
  } else {
    Value x0 = a.floor(x), y0 = a.floor(y);
    Value tx = a.sub(x, x0), ty = a.sub(y, y0);
    SmallVector<Value, 4> wx, wy;
    int64_t first = 0;
    if (spec.mode == "bilinear") {
      wx = {a.sub(a.c(1), tx), tx};
      wy = {a.sub(a.c(1), ty), ty};
    } else {
      auto cx = cubicWeights(a, tx), cy = cubicWeights(a, ty);
      wx.assign(cx.begin(), cx.end());
      wy.assign(cy.begin(), cy.end());
      first = -1;
    }
    for (size_t j = 0; j < wy.size(); ++j) {
      Value row;
      Value ty_ = a.add(y0, a.c(double(first + int64_t(j))));
      for (size_t i = 0; i < wx.size(); ++i) {
        Value tx_ = a.add(x0, a.c(double(first + int64_t(i))));
        Value term = weighted(wx[i], at(tx_, ty_));
        row = row ? a.add(row, term) : term;
      }
      Value term = weighted(wy[j], row);
      result = result ? a.add(result, term) : term;
    }
  }
  if (a.failed())
    return failure();
  return n.setOutput(0, result);
}

} // namespace

void registerSamplingHandlers(HandlerMap &m) {
  m["GridSample"] = importGridSample;
}

} // namespace ign::import
