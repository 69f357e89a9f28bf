//===- ConstantDivisions.cpp - divisions by constants as products ---------===//
//
// A float division by a constant, x / c, becomes the product x * (1 / c)
// with the reciprocals computed at compile time: a vdivps issues once per
// several cycles where a vmulps issues twice a cycle, and models divide
// whole activations by constants (HardSwish exported as x * clip(x + 3, 0,
// 6) / 6: PicoDet's 1 x 1 convolutions over 800 x 608 pixels spent a
// quarter of their epilogues dividing; attention scores by sqrt(d); GELU's
// x / sqrt(2)). The product differs from the quotient by at most an ulp
// (none for a power of two); divisors whose reciprocal is not a normal
// finite float keep the division.
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "WeightConstants.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

namespace ign {
#define GEN_PASS_DEF_CONSTANTDIVISIONS
#include "ign/Transforms/Passes.h.inc"
} // namespace ign

using namespace mlir;

namespace ign {
namespace {

/// Constants of at most this many elements are written inline; larger
/// reciprocals go to a blob of their own, as folded weights do.
constexpr size_t kMaxInlineElements = 64;

/// 1 / v for each of `values`, or nullopt when one is not a normal finite
/// float (zero, a denormal, infinity or NaN: the division's own result
/// there is no product).
std::optional<std::vector<float>> reciprocals(ArrayRef<float> values) {
  std::vector<float> out;
  out.reserve(values.size());
  for (float v : values) {
    float r = 1.0f / v;
    if (!std::isnormal(v) || !std::isnormal(r))
      return std::nullopt;
    out.push_back(r);
  }
  return out;
}

/// The constant `values` of the type of `like`.
Value reciprocalConstant(OpBuilder &b, Location loc, Value like,
                         std::vector<float> values) {
  auto type = cast<RankedTensorType>(like.getType());
  if (values.size() > kMaxInlineElements)
    return makeWeight(b, loc, type, std::move(values),
                      weightName(like, ".reciprocal"));
  return b.create<ConstantOp>(
      loc, DenseElementsAttr::get(type, ArrayRef<float>(values)));
}

struct ConstantDivisionsPass
    : public impl::ConstantDivisionsBase<ConstantDivisionsPass> {
  void runOnOperation() override { constantDivisions(getOperation()); }
};

} // namespace

void constantDivisions(func::FuncOp func) {
  SmallVector<DivOp> divisions;
  func.walk([&](DivOp op) { divisions.push_back(op); });
  for (DivOp op : divisions) {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || !type.getElementType().isF32())
      continue;
    std::optional<std::vector<float>> values = constantFloats(op.getRhs());
    if (!values)
      continue;
    std::optional<std::vector<float>> inverse = reciprocals(*values);
    if (!inverse)
      continue;
    OpBuilder b(op);
    Value r =
        reciprocalConstant(b, op.getLoc(), op.getRhs(), std::move(*inverse));
    Value product = b.create<MulOp>(op.getLoc(), op.getLhs(), r);
    op.replaceAllUsesWith(product);
    Value divisor = op.getRhs();
    op.erase();
    if (divisor.use_empty())
      divisor.getDefiningOp()->erase();
  }
}

} // namespace ign
