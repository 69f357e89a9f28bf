//===- ConvTransposeToConv.cpp - transposed convs as phase convs ----------===//
//
// A transposed convolution with stride s writes output o from input pixel
// i through tap k where o + pad = s * i + k. Output pixels with the same
// phase r = (o + pad) mod s read only the taps k = r + s * m, and input
// pixel i = q - m for o + pad = s * q + r: per phase a plain stride-1
// convolution with ceil(K / s) taps. All s^d phases together are one
// convolution with F * s^d filters (filter (f, r...) holds the phase's
// taps of w[:, f], flipped), over the input padded by ceil(K / s) - 1,
// followed by a pixel shuffle: a reshape, an ign.transpose and a reshape
// interleave the phases, an ign.slice crops the pad.
//
// The gemm + col2im lowering (convTransposeToMatmul) writes K^d columns
// per input pixel (16 MB for pose-ResNet's last 4x4 stride-2 layer) and
// sums them with a gather per output; the convolution writes each output
// once and takes the direct-convolution kernels. Its extra work is the
// zero taps when s does not divide K, and a row of outputs cropped at each
// end: only rewrites that add at most 40% more multiplies are done.
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "Activations.h"
#include "WeightConstants.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace ign {
namespace {

/// At most this many times the multiplies of the transposed convolution:
/// the direct kernels run near the FMA peak, the Gemm (transposed A) and
/// col2im well below it. pose-ResNet's first 4x4 stride-2 layer (512 ->
/// 256 channels, 8x8 -> 16x16; 1.27x the multiplies, its cropped border a
/// large share): Gemm 3.40 + col2im 0.41 ms, convolution 2.98 + shuffle
/// 0.04. A 3x3 stride-2 layer (1.78x: 2x2 taps per phase, 9 taps) is not
/// rewritten.
constexpr double kMaxExtraWork = 1.4;

/// The sub-pixel form of one transposed convolution, per spatial dim.
struct SubPixel {
  SmallVector<int64_t> stride, taps, count, padLow, padHigh, crop, out, kernel;
  int64_t n = 0, c = 0, f = 0;
};

/// Whether a row of `count` pixels is a prime between 16 and 32: AMX
/// blocks divide a row into tiles of one width, at most 16 pixels (odd
/// ones) or two of up to 16, so such a row takes none (DirectConv.cpp's
/// amxBlockPixels); one pixel more makes it two tiles.
bool primeRow(int64_t count) {
  if (count <= 16 || count >= 32)
    return false;
  for (int64_t d = 2; d * d <= count; ++d)
    if (count % d == 0)
      return false;
  return true;
}

/// The plan for `op`, or nullopt when it is not rewritten: grouped,
/// dilated, dynamic or with a non-constant weight, or costing more than
/// kMaxExtraWork times its multiplies. With `evenRows`, the convolution's
/// rows of a prime count (primeRow) are computed one pixel longer, over
/// one more column of padding, and the extra pixel cropped: pose-ResNet's
/// 17 x 17 phases of its second 4x4 stride-2 layer ran in fp32 (4.0 ms).
std::optional<SubPixel> planFor(ConvTransposeOp op, bool evenRows) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto w = dyn_cast<RankedTensorType>(op.getWeight().getType());
  auto out = dyn_cast<RankedTensorType>(op.getType());
  if (!in || !w || !out || !in.hasStaticShape() || !w.hasStaticShape() ||
      !out.hasStaticShape() || op.getGroup() != 1 || in.getRank() < 3 ||
      !in.getElementType().isF32())
    return std::nullopt;
  auto dilations = toI64Vector(op.getDilations());
  if (llvm::any_of(dilations, [](int64_t d) { return d != 1; }))
    return std::nullopt;
  SubPixel p;
  p.n = in.getDimSize(0);
  p.c = in.getDimSize(1);
  p.f = out.getDimSize(1);
  p.stride = toI64Vector(op.getStrides());
  auto pads = toI64Vector(op.getPads());
  int64_t spatial = in.getRank() - 2;
  double work = 1, convWork = 1;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t s = p.stride[i], k = w.getDimSize(i + 2), x = in.getDimSize(i + 2),
            o = out.getDimSize(i + 2), pad = pads[i];
    // Conv output q covers o + pad in [s * (first + q), ... + s).
    int64_t taps = llvm::divideCeil(k, s), first = pad / s;
    int64_t count = llvm::divideCeil(o + pad, s) - first;
    int64_t low = taps - 1 - first, high = count + first - x;
    if (low < 0 || high < 0)
      return std::nullopt;
    p.taps.push_back(taps);
    p.count.push_back(count);
    p.padLow.push_back(low);
    p.padHigh.push_back(high);
    p.crop.push_back(pad - s * first);
    p.out.push_back(o);
    p.kernel.push_back(k);
    work *= double(x) * k;
    convWork *= double(count) * s * taps;
  }
  if (convWork > kMaxExtraWork * work)
    return std::nullopt;
  if (evenRows && primeRow(p.count.back())) {
    ++p.count.back();
    ++p.padHigh.back();
  }
  return p;
}

/// The sub-pixel filters [F * S, C, taps...] (S = the product of the
/// strides; filter f * S + the row-major phase r): tap m of phase r is
/// w[c, f, r + s * (taps - 1 - m)], zero past the kernel. nullopt when
/// the weight is not a constant.
std::optional<std::vector<float>> subPixelFilters(Value weight,
                                                  const SubPixel &p) {
  std::optional<std::vector<float>> w = constantFloats(weight);
  if (!w)
    return std::nullopt;
  int64_t spatial = p.stride.size(), phases = 1, taps = 1, k = 1;
  for (int64_t i = 0; i < spatial; ++i) {
    phases *= p.stride[i];
    taps *= p.taps[i];
    k *= p.kernel[i];
  }
  std::vector<float> t(size_t(p.f * phases * p.c * taps), 0.0f);
  SmallVector<int64_t> r(spatial), m(spatial);
  for (int64_t phase = 0; phase < phases; ++phase) {
    for (int64_t i = spatial - 1, rest = phase; i >= 0; --i) {
      r[i] = rest % p.stride[i];
      rest /= p.stride[i];
    }
    for (int64_t tap = 0; tap < taps; ++tap) {
      // The tap's offset into w's window, or -1 past the kernel.
      int64_t offset = 0;
      for (int64_t i = spatial - 1, rest = tap; i >= 0; --i) {
        m[i] = rest % p.taps[i];
        rest /= p.taps[i];
      }
      for (int64_t i = 0; i < spatial && offset >= 0; ++i) {
        int64_t kd = r[i] + p.stride[i] * (p.taps[i] - 1 - m[i]);
        offset = kd < p.kernel[i] ? offset * p.kernel[i] + kd : -1;
      }
      if (offset < 0)
        continue;
      for (int64_t f = 0; f < p.f; ++f)
        for (int64_t c = 0; c < p.c; ++c)
          t[((f * phases + phase) * p.c + c) * taps + tap] =
              (*w)[(c * p.f + f) * k + offset];
    }
  }
  return t;
}

/// The bias of every phase's filters: b[f] for filter f * S + r.
Value subPixelBias(OpBuilder &b, Location loc, Value bias, int64_t phases) {
  std::optional<std::vector<float>> v = constantFloats(bias);
  if (!v)
    return Value();
  std::vector<float> t;
  for (float x : *v)
    t.insert(t.end(), size_t(phases), x);
  auto type = RankedTensorType::get({int64_t(t.size())}, b.getF32Type());
  return makeWeight(b, loc, type, std::move(t), weightName(bias, ".subpixel"));
}

/// The convolution's output [N, F * S, count...] interleaved into
/// [N, F, count_0 * s_0, ...] and cropped to the transposed convolution's
/// output.
Value pixelShuffle(OpBuilder &b, Location loc, Value y, const SubPixel &p) {
  int64_t spatial = p.stride.size();
  // [N, F, s..., count...] -> [N, F, count_0, s_0, count_1, s_1, ...]
  SmallVector<int64_t> split{p.n, p.f}, perm{0, 1}, joined{p.n, p.f};
  llvm::append_range(split, p.stride);
  llvm::append_range(split, p.count);
  for (int64_t i = 0; i < spatial; ++i) {
    perm.push_back(2 + spatial + i);
    perm.push_back(2 + i);
    joined.push_back(p.count[i] * p.stride[i]);
  }
  SmallVector<int64_t> permuted;
  for (int64_t d : perm)
    permuted.push_back(split[d]);
  Value r = b.create<ReshapeOp>(loc, y, b.getI64ArrayAttr(split));
  r = b.create<TransposeOp>(loc,
                            RankedTensorType::get(permuted, b.getF32Type()), r,
                            b.getI64ArrayAttr(perm));
  r = b.create<ReshapeOp>(loc, r, b.getI64ArrayAttr(joined));
  SmallVector<int64_t> starts{0, 0}, sizes{p.n, p.f}, steps(2 + spatial, 1);
  llvm::append_range(starts, p.crop);
  llvm::append_range(sizes, p.out);
  if (llvm::all_of(p.crop, [](int64_t c) { return c == 0; }) &&
      ArrayRef<int64_t>(sizes) == ArrayRef<int64_t>(joined))
    return r;
  return b.create<SliceOp>(loc, r, b.getI64ArrayAttr(starts),
                           b.getI64ArrayAttr(sizes), b.getI64ArrayAttr(steps));
}

/// Rewrites `op` when planFor takes it; false when it is left.
bool rewrite(ConvTransposeOp op, bool evenRows) {
  std::optional<SubPixel> p = planFor(op, evenRows);
  if (!p)
    return false;
  std::optional<std::vector<float>> filters =
      subPixelFilters(op.getWeight(), *p);
  if (!filters)
    return false;
  OpBuilder b(op);
  Location loc = op.getLoc();
  int64_t phases = 1;
  for (int64_t s : p->stride)
    phases *= s;
  Value bias;
  if (op.getBias() && !(bias = subPixelBias(b, loc, op.getBias(), phases)))
    return false;
  SmallVector<int64_t> wShape{p->f * phases, p->c}, pads(p->padLow),
      ones(p->stride.size(), 1);
  llvm::append_range(wShape, p->taps);
  llvm::append_range(pads, p->padHigh);
  Value w =
      makeWeight(b, loc, RankedTensorType::get(wShape, b.getF32Type()),
                 std::move(*filters), weightName(op.getWeight(), ".subpixel"));
  Value y =
      b.create<ConvOp>(loc, op.getInput(), w, bias, b.getI64ArrayAttr(ones),
                       b.getI64ArrayAttr(pads), b.getI64ArrayAttr(ones),
                       b.getI64IntegerAttr(1), b.getI64IntegerAttr(0));
  // The activations commute with the pixel shuffle and move before it,
  // into the convolution's kernel.
  SmallVector<Operation *> moved = activationsOf(op.getResult());
  y = applyActivations(b, op.getResult(), y, moved);
  Operation *last = moved.empty() ? op.getOperation() : moved.back();
  last->getResult(0).replaceAllUsesWith(pixelShuffle(b, loc, y, *p));
  for (Operation *a : llvm::reverse(moved))
    a->erase();
  op.erase();
  return true;
}

} // namespace

void convTransposeToConv(func::FuncOp func, bool evenRows) {
  SmallVector<ConvTransposeOp> ops;
  func.walk([&](ConvTransposeOp op) { ops.push_back(op); });
  for (ConvTransposeOp op : ops)
    rewrite(op, evenRows);
}

} // namespace ign
