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
    auto padded = b.create<PadOp>(
        op.getLoc(), RankedTensorType::get(shape, type.getElementType()),
        op.getInput(), b.getI64ArrayAttr(full), b.getStringAttr("constant"),
        b.getF64FloatAttr(0.0));
    op.getInputMutable().assign(padded);
    op.setPadsAttr(b.getI64ArrayAttr(SmallVector<int64_t>(pads.size(), 0)));
  }
}

namespace {
struct SplitConvPaddingPass
    : public impl::SplitConvPaddingBase<SplitConvPaddingPass> {
  void runOnOperation() override { splitConvPadding(getOperation()); }
};
} // namespace

} // namespace ign
