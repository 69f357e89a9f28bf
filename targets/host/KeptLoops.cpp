//===- KeptLoops.cpp - loops to keep rolled or interleave -----------------===//

#include "KeptLoops.h"
#include "DirectConv.h"

#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;

namespace ign::host {
namespace {

/// The loop annotation of an scf.for marked kKeepLoop (unroll disabled) or
/// kInterleaveLoop (its interleave count); null for other loops.
LLVM::LoopAnnotationAttr annotationOf(scf::ForOp loop) {
  MLIRContext *ctx = loop.getContext();
  LLVM::LoopUnrollAttr unroll;
  if (loop->hasAttr(kKeepLoop))
    unroll = LLVM::LoopUnrollAttr::get(
        ctx, /*disable=*/BoolAttr::get(ctx, true), /*count=*/{},
        /*runtimeDisable=*/{}, /*full=*/{}, /*followupUnrolled=*/{},
        /*followupRemainder=*/{}, /*followupAll=*/{});
  LLVM::LoopInterleaveAttr interleave;
  if (auto count = loop->getAttrOfType<IntegerAttr>(kInterleaveLoop))
    interleave = LLVM::LoopInterleaveAttr::get(ctx, count);
  if (!unroll && !interleave)
    return {};
  return LLVM::LoopAnnotationAttr::get(ctx, {}, {}, interleave, unroll, {}, {},
                                       {}, {}, {}, {}, {}, {}, {}, {}, {});
}

/// An scf.for with a loop annotation (annotationOf) as blocks (as MLIR's
/// ForLowering builds them: a condition block holding the induction
/// variable and the carried values, the body, a back edge), the back edge
/// annotated.
struct KeptForLowering : OpRewritePattern<scf::ForOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(scf::ForOp loop,
                                PatternRewriter &rewriter) const override {
    LLVM::LoopAnnotationAttr annotation = annotationOf(loop);
    if (!annotation || !loop.getRegion().hasOneBlock())
      return failure();
    Location loc = loop.getLoc();
    Block *init = rewriter.getInsertionBlock();
    Block *end = rewriter.splitBlock(init, rewriter.getInsertionPoint());
    Block *condition = &loop.getRegion().front();
    Block *body = rewriter.splitBlock(condition, condition->begin());
    Block *last = &loop.getRegion().back();
    rewriter.inlineRegionBefore(loop.getRegion(), end);
    Value iv = condition->getArgument(0);

    Operation *yield = last->getTerminator();
    rewriter.setInsertionPointToEnd(last);
    SmallVector<Value> next{
        rewriter.create<arith::AddIOp>(loc, iv, loop.getStep())};
    next.append(yield->operand_begin(), yield->operand_end());
    auto back = rewriter.create<cf::BranchOp>(loc, condition, next);
    // Named as llvm.br's own attribute: ControlFlowToLLVM forwards a
    // cf.br's attributes to the llvm.br it makes.
    back->setAttr("loop_annotation", annotation);
    rewriter.eraseOp(yield);

    rewriter.setInsertionPointToEnd(init);
    SmallVector<Value> first{loop.getLowerBound()};
    llvm::append_range(first, loop.getInitArgs());
    rewriter.create<cf::BranchOp>(loc, condition, first);
    rewriter.setInsertionPointToEnd(condition);
    Value more = rewriter.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt,
                                                iv, loop.getUpperBound());
    rewriter.create<cf::CondBranchOp>(loc, more, body, ValueRange(), end,
                                      ValueRange());
    rewriter.replaceOp(loop, condition->getArguments().drop_front());
    return success();
  }
};

/// Float arithmetic a scalar loop body needs at least for kInterleaveLoop.
constexpr int64_t kLongBodyOps = 16;
/// The interleave count of such a loop.
constexpr int64_t kLongBodyInterleave = 4;

/// Marks kInterleaveLoop on innermost scalar loops whose body is a long
/// chain of float arithmetic: an exp, erf or tanh polynomial, a sigmoid's
/// rational function. LLVM vectorizes them one vector per iteration, as
/// their many constants leave it too few registers by its count; each
/// vector's chain is then latency-bound. Interleaved four times, the chains
/// overlap (exp over 1.2M floats on a Zen 1 core 1.78 -> 1.10 ms).
void markLongScalarBodies(ModuleOp module) {
  module.walk([](scf::ForOp loop) {
    if (loop->hasAttr(kKeepLoop) || loop->hasAttr(kInterleaveLoop))
      return;
    int64_t floatOps = 0;
    WalkResult nested = loop.getBody()->walk([&](Operation *op) {
      if (isa<LoopLikeOpInterface>(op))
        return WalkResult::interrupt();
      for (Type t : op->getResultTypes())
        if (isa<VectorType>(t))
          return WalkResult::interrupt();
      if (op->getNumResults() == 1 &&
          isa<FloatType>(op->getResult(0).getType()) &&
          !isa<arith::ConstantOp>(op) &&
          (isa<arith::ArithDialect>(op->getDialect()) ||
           isa<math::MathDialect>(op->getDialect())))
        ++floatOps;
      return WalkResult::advance();
    });
    if (!nested.wasInterrupted() && floatOps >= kLongBodyOps)
      loop->setAttr(kInterleaveLoop,
                    IntegerAttr::get(IntegerType::get(loop.getContext(), 32),
                                     kLongBodyInterleave));
  });
}

struct LowerSCFKeepingLoops
    : PassWrapper<LowerSCFKeepingLoops, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerSCFKeepingLoops)
  StringRef getArgument() const final { return "ign-lower-scf-keeping-loops"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<cf::ControlFlowDialect, LLVM::LLVMDialect>();
  }
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    markLongScalarBodies(getOperation());
    RewritePatternSet patterns(ctx);
    patterns.add<KeptForLowering>(ctx, /*benefit=*/2);
    populateSCFToControlFlowConversionPatterns(patterns);
    ConversionTarget target(*ctx);
    target
        .addIllegalOp<scf::ForallOp, scf::ForOp, scf::IfOp, scf::IndexSwitchOp,
                      scf::ParallelOp, scf::WhileOp, scf::ExecuteRegionOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createLowerSCFKeepingLoopsPass() {
  return std::make_unique<LowerSCFKeepingLoops>();
}

} // namespace ign::host
