//===- FoldBatchNorm.cpp - batch norm into the preceding conv or gemm -----===//
//
// In inference, BatchNormalization is y = x * s + t per channel, with
// s = scale / sqrt(var + eps) and t = bias - mean * s. After a convolution
// (transposed or not) or a gemm whose weights are constants, it folds into
// them:
//   W'[f, ...] = W[f, ...] * s[f],  b'[f] = (b[f] - mean[f]) * s[f] + bias[f]
// and the model computes one op less per layer (torch exports in training
// mode, or tf2onnx, leave BatchNormalization after every convolution).
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "WeightConstants.h"

#include "mlir/IR/Builders.h"

#include <cmath>

namespace ign {
#define GEN_PASS_DEF_FOLDBATCHNORM
#include "ign/Transforms/Passes.h.inc"
} // namespace ign

using namespace mlir;

namespace ign {
namespace {

/// b[f] * s[f] + t[f] for the bias `old` of a convolution (0 where there
/// is none), or nullopt when it is not a constant of one value per channel.
std::optional<std::vector<float>> foldedBias(Value old, ArrayRef<float> s,
                                             ArrayRef<float> t) {
  std::vector<float> bias(t.begin(), t.end());
  if (!old)
    return bias;
  auto values = constantFloats(old);
  if (!values || values->size() != s.size())
    return std::nullopt;
  for (size_t f = 0; f < s.size(); ++f)
    bias[f] += (*values)[f] * s[f];
  return bias;
}

/// New constants for the folded weight `w` (the shape of `weight`) and
/// bias of a convolution or gemm.
std::pair<Value, Value> foldedConstants(OpBuilder &b, Location loc,
                                        Value weight, std::vector<float> w,
                                        std::vector<float> bias) {
  auto wType = cast<RankedTensorType>(weight.getType());
  auto biasType = RankedTensorType::get({int64_t(bias.size())}, b.getF32Type());
  Value nw = makeWeight(b, loc, wType, std::move(w), weightName(weight, ".bn"));
  Value nb = makeWeight(b, loc, biasType, std::move(bias),
                        weightName(weight, ".bn_bias"));
  return {nw, nb};
}

/// W'[f, ...] = W[f, ...] * s[f]: a convolution's weight [F, C / g, k...].
Value foldIntoConv(OpBuilder &b, ConvOp conv, ArrayRef<float> s,
                   ArrayRef<float> t) {
  auto w = constantFloats(conv.getWeight());
  auto bias = foldedBias(conv.getBias(), s, t);
  if (conv.getFilterBlock() != 0 || !w || !bias)
    return Value();
  auto wType = cast<RankedTensorType>(conv.getWeight().getType());
  int64_t channels = s.size(), per = wType.getNumElements() / channels;
  for (int64_t f = 0; f < channels; ++f)
    for (int64_t i = 0; i < per; ++i)
      (*w)[f * per + i] *= s[f];
  Location loc = conv.getLoc();
  auto [nw, nb] = foldedConstants(b, loc, conv.getWeight(), std::move(*w),
                                  std::move(*bias));
  return b.create<ConvOp>(loc, conv.getInput(), nw, nb, conv.getStrides(),
                          conv.getPads(), conv.getDilations(),
                          conv.getGroupAttr());
}

/// A transposed convolution's weight is [C, F / g, k...]: output channel
/// (c / (C / g)) * (F / g) + j reads W[c, j].
Value foldIntoConvTranspose(OpBuilder &b, ConvTransposeOp conv,
                            ArrayRef<float> s, ArrayRef<float> t) {
  auto w = constantFloats(conv.getWeight());
  auto bias = foldedBias(conv.getBias(), s, t);
  if (!w || !bias)
    return Value();
  auto wType = cast<RankedTensorType>(conv.getWeight().getType());
  int64_t channels = s.size(), in = wType.getDimSize(0),
          perGroup = wType.getDimSize(1), group = conv.getGroup();
  int64_t window = wType.getNumElements() / (in * perGroup);
  if (group <= 0 || in % group || perGroup * group != channels)
    return Value();
  for (int64_t c = 0; c < in; ++c)
    for (int64_t j = 0; j < perGroup; ++j)
      for (int64_t k = 0; k < window; ++k)
        (*w)[(c * perGroup + j) * window + k] *=
            s[(c / (in / group)) * perGroup + j];
  Location loc = conv.getLoc();
  auto [nw, nb] = foldedConstants(b, loc, conv.getWeight(), std::move(*w),
                                  std::move(*bias));
  return b.create<ConvTransposeOp>(
      loc, conv.getInput(), nw, nb, conv.getStrides(), conv.getPads(),
      conv.getDilations(), conv.getOutputPadding(), conv.getGroupAttr());
}

/// out = alpha * A B + beta * C, so B's column n (row n when transposed)
/// scales by s[n] and C' = C * s + t / beta.
Value foldIntoGemm(OpBuilder &b, GemmOp gemm, ArrayRef<float> s,
                   ArrayRef<float> t) {
  auto w = constantFloats(gemm.getB());
  auto bType = cast<RankedTensorType>(gemm.getB().getType());
  float beta = gemm.getBeta().convertToFloat();
  if (!w || bType.getRank() != 2 || beta == 0)
    return Value();
  int64_t channels = s.size();
  std::vector<float> c(channels, 0.0f);
  if (Value old = gemm.getC()) {
    auto values = constantFloats(old);
    if (!values || cast<RankedTensorType>(old.getType()).getRank() > 1 ||
        (values->size() != 1 && int64_t(values->size()) != channels))
      return Value();
    for (int64_t f = 0; f < channels; ++f)
      c[f] = (*values)[values->size() == 1 ? 0 : f];
  }
  for (int64_t f = 0; f < channels; ++f)
    c[f] = c[f] * s[f] + t[f] / beta;
  int64_t rows = bType.getDimSize(0), cols = bType.getDimSize(1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k)
      (*w)[r * cols + k] *= s[gemm.getTransB() ? r : k];
  Location loc = gemm.getLoc();
  auto [nw, nc] =
      foldedConstants(b, loc, gemm.getB(), std::move(*w), std::move(c));
  return b.create<GemmOp>(loc, gemm.getA(), nw, nc, gemm.getAlphaAttr(),
                          gemm.getBetaAttr(), gemm.getTransAAttr(),
                          gemm.getTransBAttr());
}

/// Folds `bn` into the convolution, transposed convolution or gemm
/// computing its input, when that feeds nothing else and every parameter
/// is a constant. Returns whether it did.
bool foldOne(BatchNormOp bn) {
  Value x = bn.getInput();
  Operation *producer = x.getDefiningOp();
  if (!producer || !x.hasOneUse() ||
      !isa<ConvOp, ConvTransposeOp, GemmOp>(producer) ||
      cast<RankedTensorType>(x.getType()).getRank() < 2)
    return false;
  auto scale = constantFloats(bn.getScale()),
       bias = constantFloats(bn.getBias()), mean = constantFloats(bn.getMean()),
       var = constantFloats(bn.getVariance());
  if (!scale || !bias || !mean || !var)
    return false;
  int64_t channels = cast<RankedTensorType>(x.getType()).getDimSize(1);
  for (auto *p : {&*scale, &*bias, &*mean, &*var})
    if (int64_t(p->size()) != channels)
      return false;
  std::vector<float> s(channels), t(channels);
  float eps = bn.getEpsilon().convertToFloat();
  for (int64_t f = 0; f < channels; ++f) {
    s[f] = (*scale)[f] / std::sqrt((*var)[f] + eps);
    t[f] = (*bias)[f] - (*mean)[f] * s[f];
  }
  OpBuilder b(producer);
  Value folded;
  if (auto conv = dyn_cast<ConvOp>(producer))
    folded = foldIntoConv(b, conv, s, t);
  else if (auto conv = dyn_cast<ConvTransposeOp>(producer))
    folded = foldIntoConvTranspose(b, conv, s, t);
  else
    folded = foldIntoGemm(b, cast<GemmOp>(producer), s, t);
  if (!folded)
    return false;
  bn.replaceAllUsesWith(folded);
  bn.erase();
  producer->erase();
  return true;
}

struct FoldBatchNormPass : public impl::FoldBatchNormBase<FoldBatchNormPass> {
  void runOnOperation() override { foldBatchNorm(getOperation()); }
};

} // namespace

void foldBatchNorm(func::FuncOp func) {
  SmallVector<BatchNormOp> norms;
  func.walk([&](BatchNormOp bn) { norms.push_back(bn); });
  for (BatchNormOp bn : norms)
    (void)foldOne(bn);
  // Constants the folded ops no longer read.
  for (Operation &op : llvm::make_early_inc_range(
           llvm::reverse(func.getBody().front().getOperations())))
    if (isa<ConstantOp>(op) && op.use_empty())
      op.erase();
}

} // namespace ign
