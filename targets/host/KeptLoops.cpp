//===- KeptLoops.cpp - loops LLVM must not unroll -------------------------===//

#include "KeptLoops.h"
#include "DirectConv.h"

#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;

namespace ign::host {
namespace {

/// An scf.for marked kKeepLoop as blocks (as MLIR's ForLowering builds
/// them: a condition block holding the induction variable and the carried
/// values, the body, a back edge), the back edge annotated with
/// llvm.loop.unroll.disable.
struct KeptForLowering : OpRewritePattern<scf::ForOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(scf::ForOp loop,
                                PatternRewriter &rewriter) const override {
    if (!loop->hasAttr(kKeepLoop) || !loop.getRegion().hasOneBlock())
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
    MLIRContext *ctx = rewriter.getContext();
    auto unroll = LLVM::LoopUnrollAttr::get(
        ctx, /*disable=*/rewriter.getBoolAttr(true), /*count=*/{},
        /*runtimeDisable=*/{}, /*full=*/{}, /*followupUnrolled=*/{},
        /*followupRemainder=*/{}, /*followupAll=*/{});
    // Named as llvm.br's own attribute: ControlFlowToLLVM forwards a
    // cf.br's attributes to the llvm.br it makes.
    back->setAttr("loop_annotation", LLVM::LoopAnnotationAttr::get(
                                         ctx, {}, {}, {}, unroll, {}, {}, {},
                                         {}, {}, {}, {}, {}, {}, {}, {}));
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

struct LowerSCFKeepingLoops
    : PassWrapper<LowerSCFKeepingLoops, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerSCFKeepingLoops)
  StringRef getArgument() const final { return "ign-lower-scf-keeping-loops"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<cf::ControlFlowDialect, LLVM::LLVMDialect>();
  }
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
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
