//===- PadChannels.cpp - zero input channels up to a tile's multiple ------===//
//
// A matrix unit sums products over a fixed number of steps per instruction:
// AMX's tdpbf16ps 32 bfloat16 pairs' worth. A convolution whose input
// channels are no multiple of it (Inception's 112, 144 and 528, EfficientNet's
// 24, 48 and 80) computed in fp32 instead (4-6x slower per multiply on a
// Sapphire Rapids). With zero channels appended to its input (an ign.pad,
// which joins the padding splitConvPadding moves out of the convolution)
// and zero weights for them, it takes the tiles: the products added are
// exact zeros, so the sums are those of the unpadded convolution.
//
// An RGB stem (3 channels, a 7 x 7 window of stride 2) has too few channels
// to pad: its window's columns are folded into the channels first (an
// ign.im2col of a one-row window, [N, C * kw, H, OW]), leaving a kh x 1
// window over C * kw = 21 channels, which are then padded to 32.
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "WeightConstants.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace ign {
namespace {

/// Channels are padded when that adds at most this share of multiplies
/// (24 -> 32, 48 -> 64, 80 -> 96, 112 -> 128; not 40) ...
constexpr double kMaxPaddedChannels = 1.5;
/// ... or this share for a convolution with a window (16 -> 32: compute
/// bound, the tiles' products 4x the fp32 kernels' rate; a 1x1 one is a
/// matmul whose input copy costs as much as the padding saves).
constexpr double kMaxPaddedWindowChannels = 2.0;
/// Filters (the tiles' rows) a padded convolution has at least.
constexpr int64_t kMinPaddedFilters = 16;

/// Whether `op`'s channels may be padded or folded: static f32 shapes (its
/// input of rank 3 or more), one group, no filter blocks yet, at least
/// kMinPaddedFilters filters and a constant weight.
bool takesChannels(ConvOp op) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto w = dyn_cast<RankedTensorType>(op.getWeight().getType());
  auto out = dyn_cast<RankedTensorType>(op.getType());
  return in && w && out && in.hasStaticShape() && w.hasStaticShape() &&
         out.hasStaticShape() && in.getRank() >= 3 && op.getGroup() == 1 &&
         op.getFilterBlock() == 0 && in.getElementType().isF32() &&
         out.getDimSize(1) >= kMinPaddedFilters &&
         constantFloats(op.getWeight());
}

/// The channel count `op`'s input is padded to, or 0 when it is not.
int64_t paddedChannels(ConvOp op, int64_t multiple) {
  if (!takesChannels(op))
    return 0;
  auto w = cast<RankedTensorType>(op.getWeight().getType());
  int64_t c = cast<RankedTensorType>(op.getInput().getType()).getDimSize(1);
  int64_t padded = llvm::alignTo(c, multiple);
  bool window = w.getNumElements() > w.getDimSize(0) * c;
  if (c % multiple == 0 ||
      padded > (window ? kMaxPaddedWindowChannels : kMaxPaddedChannels) * c)
    return 0;
  return padded;
}

/// Weight [F, C, k...] with zero channels up to `padded`.
Value paddedWeight(OpBuilder &b, Location loc, Value weight, int64_t padded) {
  auto type = cast<RankedTensorType>(weight.getType());
  int64_t f = type.getDimSize(0), c = type.getDimSize(1);
  int64_t window = type.getNumElements() / (f * c);
  std::vector<float> values = *constantFloats(weight);
  std::vector<float> out(size_t(f * padded * window), 0.0f);
  for (int64_t i = 0; i < f; ++i)
    std::copy_n(values.begin() + i * c * window, c * window,
                out.begin() + i * padded * window);
  SmallVector<int64_t> shape(type.getShape());
  shape[1] = padded;
  return makeWeight(b, loc, RankedTensorType::get(shape, type.getElementType()),
                    std::move(out),
                    weightName(weight, ".channels" + std::to_string(padded)));
}

/// The folded input of a stem is at most this many times its input's
/// bytes (a 7 x 7 stride-2 stem's: 21 x 230 x 112 of 3 x 224 x 224, 3.6).
constexpr double kMaxFoldedBytes = 4.0;
/// Multiplies per folded input element (filters x kh / sh) a folded stem
/// has at least: the fold, its channel padding and the pair copy pass over
/// the folded input three times, which the tiles must win back. ResNet's
/// 64 x 7 / 2 = 224 gained (1.91 -> 1.26 ms); YOLO-CSP-n's 6 x 6 stride-2
/// stem of 16 filters over 640 x 640, 16 x 6 / 2 = 48, lost (4.4 -> 8.2).
constexpr int64_t kMinFoldedWork = 128;

/// Whether `op`'s window columns fold into its channels (foldColumns): a
/// 2-D ungrouped, undilated convolution of a constant weight whose channels
/// are too few to pad, over overlapping windows of a column stride of 2 or
/// more (stride below kw: a patch embedding's columns are a plain im2col
/// matmul; at stride 1 the folded input is kw times the input: DDDDOCR's
/// 3x3 convolution of 12 channels over 208 x 208, folded to 36 padded to
/// 64, ran 2.0 -> 5.8 ms with its copies), whose folded channels pad
/// within kMaxPaddedWindowChannels and input within kMaxFoldedBytes, with
/// kMinFoldedWork multiplies per folded element.
bool foldsColumns(ConvOp op, int64_t multiple) {
  if (!takesChannels(op))
    return false;
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto w = cast<RankedTensorType>(op.getWeight().getType());
  auto out = cast<RankedTensorType>(op.getType());
  if (in.getRank() != 4)
    return false;
  SmallVector<int64_t> strides = toI64Vector(op.getStrides()),
                       pads = toI64Vector(op.getPads()),
                       dilations = toI64Vector(op.getDilations());
  int64_t c = in.getDimSize(1), kh = w.getDimSize(2), kw = w.getDimSize(3);
  if (strides.size() != 2 || pads.size() != 4 ||
      llvm::any_of(dilations, [](int64_t d) { return d != 1; }) || kh < 2 ||
      kw < 2 || strides[1] < 2 || strides[1] >= kw || c % multiple == 0 ||
      paddedChannels(op, multiple))
    return false;
  int64_t folded = c * kw;
  int64_t rows = in.getDimSize(2) + pads[0] + pads[2];
  if (out.getDimSize(1) * kh / strides[0] < kMinFoldedWork)
    return false;
  return llvm::alignTo(folded, multiple) <=
             kMaxPaddedWindowChannels * double(folded) &&
         folded * rows * out.getDimSize(3) <=
             kMaxFoldedBytes * double(in.getNumElements() / in.getDimSize(0));
}

/// `op` (foldsColumns) as a kh x 1 convolution of stride [sh, 1], unpadded,
/// over its input's columns ([N, C * kw, H + pads, OW]: element [n, c kw +
/// kx, y, x] the padded input's [n, c, y, sw x + kx]), its weight's
/// [f, c kw + kx, ky, 0] the weight's [f, c, ky, kx].
void foldColumns(ConvOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto w = cast<RankedTensorType>(op.getWeight().getType());
  auto out = cast<RankedTensorType>(op.getType());
  SmallVector<int64_t> strides = toI64Vector(op.getStrides());
  int64_t n = in.getDimSize(0), c = in.getDimSize(1);
  int64_t f = w.getDimSize(0), kh = w.getDimSize(2), kw = w.getDimSize(3);
  // The padding first (a kernel of its own; ign.pad takes ONNX's layout),
  // then the columns of the padded input (a strided copy).
  SmallVector<int64_t> pads = toI64Vector(op.getPads());
  int64_t rows = in.getDimSize(2) + pads[0] + pads[2], ow = out.getDimSize(3);
  Value input = op.getInput();
  if (llvm::any_of(pads, [](int64_t p) { return p != 0; }))
    input = b.create<PadOp>(
        loc,
        RankedTensorType::get(
            {n, c, rows, in.getDimSize(3) + pads[1] + pads[3]},
            in.getElementType()),
        input,
        b.getI64ArrayAttr({0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3]}),
        b.getStringAttr("constant"), b.getF64FloatAttr(0.0));
  auto cols = b.create<Im2ColOp>(loc, input, b.getI64ArrayAttr({1, kw}),
                                 b.getI64ArrayAttr({1, strides[1]}),
                                 b.getI64ArrayAttr({0, 0, 0, 0}),
                                 b.getI64ArrayAttr({1, 1}));
  Value x = b.create<ReshapeOp>(loc, cols.getResult(),
                                b.getI64ArrayAttr({n, c * kw, rows, ow}));
  std::vector<float> values = *constantFloats(op.getWeight());
  std::vector<float> folded(values.size());
  for (int64_t i = 0; i < f * c; ++i)
    for (int64_t ky = 0; ky < kh; ++ky)
      for (int64_t kx = 0; kx < kw; ++kx)
        folded[((i * kw + kx) * kh + ky)] = values[(i * kh + ky) * kw + kx];
  Value weight = makeWeight(
      b, loc, RankedTensorType::get({f, c * kw, kh, 1}, w.getElementType()),
      std::move(folded), weightName(op.getWeight(), ".columns"));
  op.getInputMutable().assign(x);
  op.getWeightMutable().assign(weight);
  op.setStridesAttr(b.getI64ArrayAttr({strides[0], 1}));
  op.setPadsAttr(b.getI64ArrayAttr({0, 0, 0, 0}));
}

} // namespace

void padChannels(func::FuncOp func, int64_t multiple) {
  if (multiple <= 1)
    return;
  SmallVector<ConvOp> stems;
  func.walk([&](ConvOp op) {
    if (foldsColumns(op, multiple))
      stems.push_back(op);
  });
  for (ConvOp op : stems)
    foldColumns(op);
  SmallVector<std::pair<ConvOp, int64_t>> convs;
  func.walk([&](ConvOp op) {
    if (int64_t padded = paddedChannels(op, multiple))
      convs.push_back({op, padded});
  });
  for (auto [op, padded] : convs) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto in = cast<RankedTensorType>(op.getInput().getType());
    int64_t rank = in.getRank();
    // ign.pad takes ONNX's layout: all begins, then all ends.
    SmallVector<int64_t> pads(2 * rank, 0), shape(in.getShape());
    pads[rank + 1] = padded - shape[1];
    shape[1] = padded;
    auto input =
        b.create<PadOp>(loc, RankedTensorType::get(shape, in.getElementType()),
                        op.getInput(), b.getI64ArrayAttr(pads),
                        b.getStringAttr("constant"), b.getF64FloatAttr(0.0));
    Value weight = paddedWeight(b, loc, op.getWeight(), padded);
    op.getInputMutable().assign(input);
    op.getWeightMutable().assign(weight);
  }
}

} // namespace ign
