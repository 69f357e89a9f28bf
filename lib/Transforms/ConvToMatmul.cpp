//===- ConvToMatmul.cpp - convolutions as matmuls (im2col) ----------------===//
//
// In NCHW a convolution's contiguous output loop is one row of pixels (7 to
// 56 wide), too short for good vector code. As a matmul of the weight
// [F, C*K] with columns [N, C*K, P], the contiguous loop covers all P output
// pixels, and the host schedule register-tiles and vectorizes it. A 1x1
// unit-stride convolution needs no columns: the input is the matrix.
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

/// One group, no padding, static shapes, at least one spatial dim.
bool isConvertible(ConvOp op) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto w = dyn_cast<RankedTensorType>(op.getWeight().getType());
  return in && w && in.hasStaticShape() && w.hasStaticShape() &&
         op.getGroup() == 1 && in.getRank() >= 3 &&
         llvm::all_of(values(op.getPads()), [](int64_t p) { return p == 0; });
}

/// The columns of a convolution: for every kernel offset, the input pixels
/// it multiplies at each output position, as [N, C, K, out...].
Value im2col(OpBuilder &b, Location loc, ConvOp op) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto out = cast<RankedTensorType>(op.getType());
  auto w = cast<RankedTensorType>(op.getWeight().getType());
  ArrayRef<int64_t> kernel = w.getShape().drop_front(2),
                    outSpatial = out.getShape().drop_front(2);
  SmallVector<int64_t> strides = values(op.getStrides()),
                       dilations = values(op.getDilations());
  int64_t s = int64_t(kernel.size()), n = in.getDimSize(0),
          c = in.getDimSize(1);
  SmallVector<int64_t> unsqueezed{n, c, 1};
  llvm::append_range(unsqueezed, outSpatial);
  SmallVector<Value> columns;
  SmallVector<int64_t> offset(s, 0);
  // Kernel offsets in row-major order, matching the weight's [F, C, k...].
  while (true) {
    SmallVector<int64_t> starts{0, 0}, sizes{n, c}, steps{1, 1};
    for (int64_t i = 0; i < s; ++i) {
      starts.push_back(offset[i] * dilations[i]);
      sizes.push_back(outSpatial[i]);
      steps.push_back(strides[i]);
    }
    Value slice =
        b.create<SliceOp>(loc, op.getInput(), b.getI64ArrayAttr(starts),
                          b.getI64ArrayAttr(sizes), b.getI64ArrayAttr(steps));
    columns.push_back(
        b.create<ReshapeOp>(loc, slice, b.getI64ArrayAttr(unsqueezed)));
    int64_t i = s - 1;
    while (i >= 0 && ++offset[i] == kernel[i])
      offset[i--] = 0;
    if (i < 0)
      break;
  }
  if (columns.size() == 1)
    return columns.front();
  return b.create<ConcatOp>(loc, columns, b.getI64IntegerAttr(2));
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
    bool pointwise = k == 1 && llvm::all_of(values(op.getStrides()),
                                            [](int64_t s) { return s == 1; });
    Value cols = pointwise ? op.getInput() : im2col(b, loc, op);
    Value x = b.create<ReshapeOp>(loc, cols, b.getI64ArrayAttr({n, c * k, p}));
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
