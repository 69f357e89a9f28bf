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

/// The channel count `op`'s input is padded to, or 0 when it is not.
int64_t paddedChannels(ConvOp op, int64_t multiple) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto w = dyn_cast<RankedTensorType>(op.getWeight().getType());
  auto out = dyn_cast<RankedTensorType>(op.getType());
  if (!in || !w || !out || !in.hasStaticShape() || !w.hasStaticShape() ||
      !out.hasStaticShape() || in.getRank() < 3 || op.getGroup() != 1 ||
      op.getFilterBlock() != 0 || !in.getElementType().isF32() ||
      out.getDimSize(1) < kMinPaddedFilters || !constantFloats(op.getWeight()))
    return 0;
  int64_t c = in.getDimSize(1);
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

} // namespace

void padChannels(func::FuncOp func, int64_t multiple) {
  if (multiple <= 1)
    return;
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
