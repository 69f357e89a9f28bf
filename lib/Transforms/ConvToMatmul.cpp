//===- ConvToMatmul.cpp - convolutions as matmuls (im2col) ----------------===//
//
// In NCHW a convolution's contiguous output loop is one row of pixels (7 to
// 56 wide), too short for good vector code. As a matmul of the weight
// [F, C*K] with columns [N, C*K, P], the contiguous loop covers all P output
// pixels, and the host schedule register-tiles and vectorizes it. The
// columns are one ign.im2col (padding included), which fusion puts in the
// matmul's kernel; a 1x1 unit-stride unpadded convolution needs no
// columns: the input is the matrix.
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace ign {
#define GEN_PASS_DEF_CONVTOMATMUL
#include "ign/Transforms/Passes.h.inc"
} // namespace ign

using namespace mlir;

namespace ign {
namespace {

SmallVector<int64_t> values(ArrayAttr a) {
  SmallVector<int64_t> v;
  for (const APInt &x : a.getAsValueRange<IntegerAttr>())
    v.push_back(x.getSExtValue());
  return v;
}

/// One group, static shapes, at least one spatial dim.
bool isConvertible(ConvOp op) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto w = dyn_cast<RankedTensorType>(op.getWeight().getType());
  return in && w && in.hasStaticShape() && w.hasStaticShape() &&
         op.getGroup() == 1 && in.getRank() >= 3;
}

} // namespace

void convToMatmul(func::FuncOp func) {
  SmallVector<ConvOp> convs;
  func.walk([&](ConvOp op) {
    if (isConvertible(op))
      convs.push_back(op);
  });
  for (ConvOp op : convs) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto in = cast<RankedTensorType>(op.getInput().getType());
    auto out = cast<RankedTensorType>(op.getType());
    auto w = cast<RankedTensorType>(op.getWeight().getType());
    int64_t n = in.getDimSize(0), c = in.getDimSize(1), f = out.getDimSize(1),
            k = 1, p = 1;
    for (int64_t d : w.getShape().drop_front(2))
      k *= d;
    for (int64_t d : out.getShape().drop_front(2))
      p *= d;
    auto isOne = [](int64_t v) { return v == 1; };
    bool pointwise =
        k == 1 && llvm::all_of(values(op.getStrides()), isOne) &&
        llvm::all_of(values(op.getPads()), [](int64_t v) { return v == 0; });
    Value x = pointwise ? b.create<ReshapeOp>(loc, op.getInput(),
                                              b.getI64ArrayAttr({n, c, p}))
                              .getResult()
                        : b.create<Im2ColOp>(
                               loc, op.getInput(),
                               b.getI64ArrayAttr(w.getShape().drop_front(2)),
                               op.getStrides(), op.getPads(), op.getDilations())
                              .getResult();
    Value wm =
        b.create<ReshapeOp>(loc, op.getWeight(), b.getI64ArrayAttr({f, c * k}));
    Value y = b.create<MatMulOp>(loc, wm, x);
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
struct ConvToMatmulPass : public impl::ConvToMatmulBase<ConvToMatmulPass> {
  void runOnOperation() override { convToMatmul(getOperation()); }
};
} // namespace

} // namespace ign
