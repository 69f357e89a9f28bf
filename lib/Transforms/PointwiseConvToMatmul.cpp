//===- PointwiseConvToMatmul.cpp - 1x1 convolutions as matmuls ------------===//
//
// A pointwise convolution in NCHW is a matmul of the weight [F, C] with the
// input seen as [N, C, H*W]. As such it is a plain contraction that the
// host's default schedule register-tiles and vectorizes, where the direct
// convolution loop nest only reaches LLVM's loop vectorizer.
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace ign {
#define GEN_PASS_DEF_POINTWISECONVTOMATMUL
#include "ign/Transforms/Passes.h.inc"
} // namespace ign

using namespace mlir;

namespace ign {
namespace {

bool allEqual(ArrayAttr values, int64_t v) {
  return llvm::all_of(values.getAsValueRange<IntegerAttr>(),
                      [&](const APInt &x) { return x.getSExtValue() == v; });
}

/// 1x1 kernel, unit strides, no padding, one group, static shapes.
bool isPointwise(ConvOp op) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto w = dyn_cast<RankedTensorType>(op.getWeight().getType());
  if (!in || !w || !in.hasStaticShape() || !w.hasStaticShape() ||
      op.getGroup() != 1 || in.getRank() < 3)
    return false;
  return llvm::all_of(w.getShape().drop_front(2),
                      [](int64_t k) { return k == 1; }) &&
         allEqual(op.getStrides(), 1) && allEqual(op.getPads(), 0);
}

} // namespace

void pointwiseConvToMatmul(func::FuncOp func) {
  SmallVector<ConvOp> convs;
  func.walk([&](ConvOp op) {
    if (isPointwise(op))
      convs.push_back(op);
  });
  for (ConvOp op : convs) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto in = cast<RankedTensorType>(op.getInput().getType());
    auto out = cast<RankedTensorType>(op.getType());
    int64_t n = in.getDimSize(0), c = in.getDimSize(1), f = out.getDimSize(1),
            p = 1;
    for (int64_t d : in.getShape().drop_front(2))
      p *= d;
    Value x =
        b.create<ReshapeOp>(loc, op.getInput(), b.getI64ArrayAttr({n, c, p}));
    Value w =
        b.create<ReshapeOp>(loc, op.getWeight(), b.getI64ArrayAttr({f, c}));
    Value y = b.create<MatMulOp>(loc, w, x);
    if (Value bias = op.getBias()) {
      Value column = b.create<ReshapeOp>(loc, bias, b.getI64ArrayAttr({f, 1}));
      y = b.create<AddOp>(loc, y, column);
    }
    SmallVector<int64_t> shape(out.getShape());
    Value result = b.create<ReshapeOp>(loc, y, b.getI64ArrayAttr(shape));
    op.replaceAllUsesWith(result);
    op.erase();
  }
}

namespace {
struct PointwiseConvToMatmulPass
    : public impl::PointwiseConvToMatmulBase<PointwiseConvToMatmulPass> {
  void runOnOperation() override { pointwiseConvToMatmul(getOperation()); }
};
} // namespace

} // namespace ign
