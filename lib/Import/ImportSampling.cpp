//===- ImportSampling.cpp - GridSample and RoiAlign -----------------------===//
//
// GridSample (opset 16, 4-D) imports as its arithmetic, as ONNX's reference
// computes it: the grid's normalized coordinates are mapped to pixels
// (align_corners or not), rounded half to even for `nearest`, moved inside
// by `border` (clamped; for bicubic only its taps are, as in PyTorch and
// onnxruntime) or `reflection` (reflected at the borders) padding,
// and every tap of the interpolation (1 nearest, 2 x 2 bilinear, 4 x 4
// bicubic with a = -0.75) is a GatherElements of the image's rows flattened,
// weighted and summed; `zeros` padding selects 0 for taps outside it.
// RoiAlign likewise: each region's bins sampled on a fixed grid
// (sampling_ratio), each sample a bilinear interpolation of four gathered
// pixels (onnxruntime's and ONNX's rules at the borders), averaged or maxed.
//
//===----------------------------------------------------------------------===//

#include "ImportArith.h"

using namespace mlir;

namespace ign::import {
namespace {

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

struct RoiAlignSpec {
  int64_t outH, outW, grid;
  double scale;
  bool halfPixel, average;
};

/// The value of one sample point (y, x) [R, OH, OW] of every region and
/// channel, [R, C, OH, OW]: the bilinear interpolation of four pixels with
/// ONNX's border rules (0 outside [-1, size], clamped to the last pixel).
/// `average` sums the weighted corners, else takes their maximum (as
/// onnxruntime's max mode does).
Value roiSample(Arith &a, Value flat, Value base, Value y, Value x, int64_t h,
                int64_t w, bool average, ArrayRef<int64_t> outShape) {
  int64_t r = outShape[0], oh = outShape[2], ow = outShape[3];
  Value outside =
      a.either(a.either(a.less(y, a.c(-1)), a.greater(y, a.c(double(h)))),
               a.either(a.less(x, a.c(-1)), a.greater(x, a.c(double(w)))));
  auto axis = [&](Value v, int64_t size, Value &low, Value &high) {
    v = a.select(a.less(v, a.c(0)), a.c(0), v);
    Value floor = a.floor(v);
    Value last = a.greater(floor, a.c(double(size - 2)));
    low = a.select(last, a.c(double(size - 1)), floor);
    high = a.select(last, a.c(double(size - 1)), a.add(floor, a.c(1)));
    return a.sub(a.select(last, a.c(double(size - 1)), v), low); // fraction
  };
  Value yl, yh, xl, xh;
  Value ly = axis(y, h, yl, yh), lx = axis(x, w, xl, xh);
  Value hy = a.sub(a.c(1), ly), hx = a.sub(a.c(1), lx);
  Type i64 = IntegerType::get(flat.getContext(), 64);
  auto corner = [&](Value yy, Value xx, Value weight) {
    Value pixel = a.cast(a.add(a.mul(yy, a.c(double(w))), xx), i64);
    Value index = a.op<AddOp>({base, a.reshape(pixel, {r, 1, oh, ow})});
    if (a.failed())
      return index;
    auto g = a.node().createValue<GatherOp>({flat, index},
                                            {a.node().namedI64("axis", 0)});
    if (failed(g))
      return a.op<AddOp>({index, index}) /* marks the failure */;
    return a.mul(a.reshape(weight, {r, 1, oh, ow}), *g);
  };
  Value v1 = corner(yl, xl, a.mul(hy, hx)), v2 = corner(yl, xh, a.mul(hy, lx)),
        v3 = corner(yh, xl, a.mul(ly, hx)), v4 = corner(yh, xh, a.mul(ly, lx));
  Value value =
      average ? a.add(a.add(v1, v2), a.add(v3, v4))
              : a.op<MaxOp>({a.op<MaxOp>({v1, v2}), a.op<MaxOp>({v3, v4})});
  return a.select(a.reshape(outside, {r, 1, oh, ow}), a.c(0), value);
}

// RoiAlign(X [N, C, H, W], rois [R, 4], batch_indices [R]) -> [R, C, OH, OW]
LogicalResult importRoiAlign(NodeImporter &n) {
  auto xType = n.inputType(0), roisType = n.inputType(1),
       batchType = n.inputType(2);
  auto x = n.input(0), rois = n.input(1), batch = n.input(2);
  auto oh = n.attrInt("output_height", 1), ow = n.attrInt("output_width", 1),
       ratio = n.attrInt("sampling_ratio", 0);
  auto scale = n.attrFloat("spatial_scale", 1.0f);
  auto mode = n.attrString("mode", "avg");
  auto transform =
      n.attrString("coordinate_transformation_mode",
                   n.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (failed(xType) || failed(roisType) || failed(batchType) || failed(x) ||
      failed(rois) || failed(batch) || failed(oh) || failed(ow) ||
      failed(ratio) || failed(scale) || failed(mode) || failed(transform))
    return failure();
  if (xType->getRank() != 4 || !xType->getElementType().isF32() ||
      roisType->getRank() != 2 || roisType->getDimSize(1) != 4 ||
      batchType->getRank() != 1 ||
      batchType->getDimSize(0) != roisType->getDimSize(0))
    return n.error() << "RoiAlign of " << *xType << " with rois " << *roisType
                     << " and batch indices " << *batchType
                     << ": an f32 [N, C, H, W], [R, 4] and [R] are supported";
  if (*mode != "avg" && *mode != "max")
    return n.error() << "RoiAlign mode '" << *mode << "' is not supported";
  if (*transform != "half_pixel" && *transform != "output_half_pixel")
    return n.error() << "RoiAlign coordinate_transformation_mode '"
                     << *transform << "' is not supported";
  if (*ratio <= 0)
    return n.error() << "RoiAlign with sampling_ratio " << *ratio
                     << " samples as many points as each region's size, "
                        "known only at run time: only a fixed "
                        "sampling_ratio > 0 is supported";
  if (*oh < 1 || *ow < 1)
    return n.error() << "RoiAlign output_height and output_width must be "
                        "positive";
  RoiAlignSpec spec{
      *oh, *ow, *ratio, *scale, *transform == "half_pixel", *mode == "avg"};
  int64_t nImages = xType->getDimSize(0), c = xType->getDimSize(1),
          h = xType->getDimSize(2), w = xType->getDimSize(3),
          r = roisType->getDimSize(0);
  SmallVector<int64_t> outShape{r, c, spec.outH, spec.outW};
  Arith a(n);
  Type i64 = n.builder().getI64Type();
  Value flat = a.reshape(*x, {nImages * c * h * w});
  // Each region's first element of each channel: (batch * C + c) * H * W.
  Value batchBase =
      a.mul(a.reshape(a.cast(*batch, i64), {r, 1, 1, 1}), a.i64(c * h * w));
  HostTensor channels;
  channels.elementType = i64;
  channels.shape = {1, c, 1, 1};
  channels.allocate();
  for (int64_t k = 0; k < c; ++k)
    channels.ints[k] = k * h * w;
  Value base = a.op<AddOp>({batchBase, n.constant(channels)});
  // Region corners and bins, [R, 1, 1] (y along OH, x along OW).
  double offset = spec.halfPixel ? 0.5 : 0.0;
  auto corner = [&](int64_t k) {
    SmallVector<int64_t> starts{0, k}, sizes{r, 1};
    auto s =
        n.createValue<SliceOp>(*rois, {n.named("starts", n.i64Array(starts)),
                                       n.named("sizes", n.i64Array(sizes)),
                                       n.named("steps", n.i64Array({1, 1}))});
    if (failed(s))
      return a.op<AddOp>({*rois, *rois});
    return a.sub(a.mul(a.reshape(*s, {r, 1, 1}), a.c(spec.scale)), a.c(offset));
  };
  Value x0 = corner(0), y0 = corner(1), x1 = corner(2), y1 = corner(3);
  Value roiW = a.sub(x1, x0), roiH = a.sub(y1, y0);
  if (!spec.halfPixel) {
    roiW = a.select(a.less(roiW, a.c(1)), a.c(1), roiW);
    roiH = a.select(a.less(roiH, a.c(1)), a.c(1), roiH);
  }
  Value binH = a.div(roiH, a.c(double(spec.outH))),
        binW = a.div(roiW, a.c(double(spec.outW)));
  HostTensor rows, cols;
  rows.elementType = cols.elementType = n.builder().getF32Type();
  rows.shape = {1, spec.outH, 1};
  cols.shape = {1, 1, spec.outW};
  rows.allocate();
  cols.allocate();
  for (int64_t i = 0; i < spec.outH; ++i)
    rows.floats[i] = double(i);
  for (int64_t i = 0; i < spec.outW; ++i)
    cols.floats[i] = double(i);
  Value binY = a.add(y0, a.mul(n.constant(rows), binH)),
        binX = a.add(x0, a.mul(n.constant(cols), binW));
  Value result;
  for (int64_t iy = 0; iy < spec.grid; ++iy)
    for (int64_t ix = 0; ix < spec.grid; ++ix) {
      Value y = a.add(binY, a.mul(a.c((iy + 0.5) / spec.grid), binH));
      Value xs = a.add(binX, a.mul(a.c((ix + 0.5) / spec.grid), binW));
      // Both to [R, OH, OW].
      Value zeros = a.mul(a.add(y, xs), a.c(0));
      Value sample = roiSample(a, flat, base, a.add(y, zeros), a.add(xs, zeros),
                               h, w, spec.average, outShape);
      result = !result        ? sample
               : spec.average ? a.add(result, sample)
                              : a.op<MaxOp>({result, sample});
    }
  if (spec.average)
    result = a.div(result, a.c(double(spec.grid * spec.grid)));
  if (a.failed())
    return failure();
  return n.setOutput(0, result);
}

} // namespace

void registerSamplingHandlers(HandlerMap &m) {
  m["RoiAlign"] = importRoiAlign;
  m["GridSample"] = importGridSample;
}

} // namespace ign::import
