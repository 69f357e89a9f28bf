//===- SplitConvPadding.cpp - a convolution's padding as its own op -------===//
//
// Tiling a padded convolution into workgroups needs the padding inside each
// tile, and upstream tile-and-fuse left tensor.pad outside the tiles (LLVM 19,
// seen on a padded 3x3 convolution). As its own op, the padding is a cheap
// copy kernel and the convolution tiles.
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace ign {
#define GEN_PASS_DEF_SPLITCONVPADDING
#include "ign/Transforms/Passes.h.inc"
} // namespace ign

using namespace mlir;

namespace ign {

void splitConvPadding(func::FuncOp func) {
  SmallVector<ConvOp> convs;
  func.walk([&](ConvOp op) {
    if (llvm::any_of(op.getPads().getAsValueRange<IntegerAttr>(),
                     [](const APInt &p) { return !p.isZero(); }))
      convs.push_back(op);
  });
  for (ConvOp op : convs) {
    OpBuilder b(op);
    auto type = cast<RankedTensorType>(op.getInput().getType());
    SmallVector<int64_t> pads;
    for (const APInt &p : op.getPads().getAsValueRange<IntegerAttr>())
      pads.push_back(p.getSExtValue());
    // ign.pad takes ONNX's layout: all begins, then all ends, per dim.
    int64_t spatial = int64_t(pads.size()) / 2, rank = type.getRank();
    SmallVector<int64_t> full(2 * rank, 0), shape(type.getShape());
    for (int64_t i = 0; i < spatial; ++i) {
      full[2 + i] = pads[i];
      full[rank + 2 + i] = pads[spatial + i];
      shape[2 + i] += pads[i] + pads[spatial + i];
    }
    // Zero channels padChannels added join the same pad (one copy).
    Value input = op.getInput();
    if (auto channels = input.getDefiningOp<PadOp>();
        channels && channels.getMode() == "constant" &&
        channels.getValue().isZero() && channels->hasOneUse()) {
      SmallVector<int64_t> inner;
      for (const APInt &p : channels.getPads().getAsValueRange<IntegerAttr>())
        inner.push_back(p.getSExtValue());
      if (int64_t(inner.size()) == 2 * rank) {
        for (int64_t i = 0; i < 2 * rank; ++i)
          full[i] += inner[i];
        input = channels.getInput();
      }
    }
    auto padded = b.create<PadOp>(
        op.getLoc(), RankedTensorType::get(shape, type.getElementType()), input,
        b.getI64ArrayAttr(full), b.getStringAttr("constant"),
        b.getF64FloatAttr(0.0));
    Operation *joined =
        input == op.getInput() ? nullptr : op.getInput().getDefiningOp();
    op.getInputMutable().assign(padded);
    op.setPadsAttr(b.getI64ArrayAttr(SmallVector<int64_t>(pads.size(), 0)));
    if (joined)
      joined->erase();
  }
}

namespace {
struct SplitConvPaddingPass
    : public impl::SplitConvPaddingBase<SplitConvPaddingPass> {
  void runOnOperation() override { splitConvPadding(getOperation()); }
};
} // namespace

} // namespace ign
