//===- SinkReshapes.cpp - pointwise ops before reshapes -------------------===//
//
// `relu(reshape(x))` computes the same elements as `reshape(relu(x))`. In
// the second form the relu reads x directly, so fusion can put it into the
// kernel that computes x (a reshape between two ops keeps them apart: it is
// a view of a buffer between kernels). A convolution computed as a matmul
// over [N, F, P] then carries its residual add and activation, which see
// the other operands through reshapes to [N, F, P] (views again).
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ign {
#define GEN_PASS_DEF_SINKRESHAPES
#include "ign/Transforms/Passes.h.inc"
} // namespace ign

using namespace mlir;

namespace ign {
namespace {

/// Splits two shapes of equal element count into consecutive groups of
/// equal products: {from dims [a, b), to dims [c, d)} per group. Unit dims
/// join the group before them (or the first).
std::optional<SmallVector<std::array<int64_t, 4>>>
commonGroups(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  SmallVector<std::array<int64_t, 4>> groups;
  int64_t i = 0, j = 0, n = from.size(), m = to.size();
  while (i < n || j < m) {
    int64_t i0 = i, j0 = j, pf = 1, pt = 1;
    if (i < n)
      pf *= from[i++];
    if (j < m)
      pt *= to[j++];
    while (pf != pt) {
      if (pf < pt && i < n)
        pf *= from[i++];
      else if (pt < pf && j < m)
        pt *= to[j++];
      else
        return std::nullopt;
    }
    // Trailing unit dims belong to this group.
    while (i < n && from[i] == 1 && (j == m || to[j] != 1))
      ++i;
    while (j < m && to[j] == 1 && (i == n || from[i] != 1))
      ++j;
    groups.push_back({i0, i, j0, j});
  }
  return groups;
}

/// The shape `operand` (broadcast to `to`) has in the `from` layout, or
/// nullopt when a group is neither wholly broadcast nor wholly present.
std::optional<SmallVector<int64_t>>
mapOperandShape(ArrayRef<int64_t> operand, ArrayRef<int64_t> from,
                ArrayRef<int64_t> to, ArrayRef<std::array<int64_t, 4>> groups) {
  if (operand.size() > to.size())
    return std::nullopt;
  // Numpy alignment: the operand's dims are the trailing dims of `to`.
  SmallVector<int64_t> aligned(to.size() - operand.size(), 1);
  aligned.append(operand.begin(), operand.end());
  SmallVector<int64_t> out;
  for (auto [a, b, c, d] : groups) {
    bool ones = true, full = true;
    for (int64_t k = c; k < d; ++k) {
      ones &= aligned[k] == 1;
      full &= aligned[k] == to[k];
    }
    if (!ones && !full)
      return std::nullopt;
    for (int64_t k = a; k < b; ++k)
      out.push_back(full ? from[k] : 1);
  }
  return out;
}

struct SinkReshape : RewritePattern {
  SinkReshape(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!op->hasTrait<Pointwise>() || op->getNumResults() != 1)
      return failure();
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    // Sink through a full-shaped reshape of a computed value when that
    // leaves more computed operands read directly than before (a tie would
    // only move the reshape to another operand, and back).
    // (A reshape of a reshape is left for the folder to merge first.)
    auto computed = [](Value v) {
      Operation *def = v.getDefiningOp();
      return def && !isa<ConstantOp, ReshapeOp>(def);
    };
    auto fullShaped = [&](Value v) {
      return cast<RankedTensorType>(v.getType()).getShape() ==
             resultType.getShape();
    };
    ReshapeOp reshape;
    for (Value v : op->getOperands())
      if (auto r = v.getDefiningOp<ReshapeOp>();
          r && fullShaped(v) && computed(r.getInput())) {
        reshape = r;
        break;
      }
    if (!reshape)
      return failure();
    Type source = reshape.getInput().getType();
    int64_t gained = 0;
    for (Value v : op->getOperands()) {
      if (!fullShaped(v) || !v.getDefiningOp() || v.getDefiningOp<ConstantOp>())
        continue;
      auto r = v.getDefiningOp<ReshapeOp>();
      if (r && computed(r.getInput()) && r.getInput().getType() == source)
        ++gained;
      else if (!r)
        --gained;
    }
    if (gained <= 0)
      return failure();
    auto fromType = cast<RankedTensorType>(reshape.getInput().getType());
    ArrayRef<int64_t> from = fromType.getShape(), to = resultType.getShape();
    auto groups = commonGroups(from, to);
    if (!groups)
      return failure();
    SmallVector<SmallVector<int64_t>> shapes;
    for (Value v : op->getOperands()) {
      auto shape = mapOperandShape(
          cast<RankedTensorType>(v.getType()).getShape(), from, to, *groups);
      if (!shape)
        return failure();
      shapes.push_back(std::move(*shape));
    }
    Location loc = op->getLoc();
    SmallVector<Value> operands;
    for (auto [v, shape] : llvm::zip(op->getOperands(), shapes)) {
      // Reshape the source of a reshape chain, not the chain.
      Value src = v;
      while (auto r = src.getDefiningOp<ReshapeOp>())
        src = r.getInput();
      if (cast<RankedTensorType>(src.getType()).getShape() == ArrayRef(shape))
        operands.push_back(src);
      else
        operands.push_back(rewriter.createOrFold<ReshapeOp>(
            loc, src, rewriter.getI64ArrayAttr(shape)));
    }
    OperationState state(
        loc, op->getName(), operands,
        TypeRange{RankedTensorType::get(from, resultType.getElementType())},
        op->getAttrs());
    Operation *moved = rewriter.create(state);
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, moved->getResult(0),
                                           rewriter.getI64ArrayAttr(to));
    return success();
  }
};

struct SinkReshapesPass : public impl::SinkReshapesBase<SinkReshapesPass> {
  void runOnOperation() override { sinkReshapes(getOperation()); }
};

} // namespace

void sinkReshapes(func::FuncOp func) {
  RewritePatternSet patterns(func.getContext());
  patterns.add<SinkReshape>(func.getContext());
  GreedyRewriteConfig config;
  // Only the ops the pattern touches change; constants stay where they are.
  config.enableRegionSimplification = GreedySimplifyRegionLevel::Disabled;
  (void)applyPatternsAndFoldGreedily(func, std::move(patterns), config);
}

} // namespace ign
