//===- WeightLayouts.cpp - constant weights in the layout kernels read ----===//
//
// A Gemm with transB reads its weight [N, K] across rows at every step of
// the reduction; the host's register tiles then copy it into panels with a
// transpose per element on every run. A constant weight is transposed once
// here instead, and the Gemm reads [K, N] like a MatMul. Not for a
// matrix-vector product (at most kVectorRows rows, K a multiple of
// kDotLanes): the host's dot-product tiles read [N, K] as stored, both
// operands along the reduction (captcha_crnn's 1 x 4096 x 400 step, 40
// launches: 40-48 -> 23 ms for the model at one thread, onnxruntime 20).
//
//===----------------------------------------------------------------------===//

#include "WeightConstants.h"

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

using namespace mlir;

namespace ign {

constexpr int64_t kVectorRows = 4;
constexpr int64_t kDotLanes = 16;

void untransposeConstantWeights(func::FuncOp func) {
  SmallVector<GemmOp> gemms;
  func.walk([&](GemmOp op) {
    if (op.getTransB())
      gemms.push_back(op);
  });
  for (GemmOp op : gemms) {
    auto type = dyn_cast<RankedTensorType>(op.getB().getType());
    if (!type || type.getRank() != 2 || !type.hasStaticShape() ||
        !type.getElementType().isF32())
      continue;
    auto a = dyn_cast<RankedTensorType>(op.getA().getType());
    int64_t n = type.getDimSize(0), k = type.getDimSize(1);
    if (!a || !a.hasStaticShape() || a.getRank() != 2 ||
        (a.getDimSize(op.getTransA() ? 1 : 0) <= kVectorRows &&
         k % kDotLanes == 0))
      continue;
    std::optional<std::vector<float>> w = constantFloats(op.getB());
    if (!w || int64_t(w->size()) != n * k)
      continue;
    std::vector<float> t(w->size());
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c)
        t[c * n + r] = (*w)[r * k + c];
    OpBuilder b(op);
    auto to = RankedTensorType::get({k, n}, type.getElementType());
    Value weight = makeWeight(b, op.getLoc(), to, std::move(t),
                              weightName(op.getB(), ".t"));
    auto gemm = b.create<GemmOp>(op.getLoc(), op.getType(), op.getA(), weight,
                                 op.getC(), op.getAlphaAttr(), op.getBetaAttr(),
                                 op.getTransAAttr(), b.getBoolAttr(false));
    op.replaceAllUsesWith(gemm.getResult());
    op.erase();
  }
}

} // namespace ign
