//===- GraphPipeline.cpp - an imported model into outlined kernels --------===//

#include "ign/Transforms/GraphPipeline.h"
#include "ign/Transforms/Passes.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/CSE.h"

using namespace mlir;

namespace ign {

#define GEN_PASS_DEF_GRAPHPIPELINE
#include "ign/Transforms/Passes.h.inc"

/// Identical ops once, dead ops gone. (Op folders, run by the reshape
/// sinking's driver, drop no-op transposes, slices, pads and casts and merge
/// reshape and transpose chains.)
static void cleanUpGraph(func::FuncOp main) {
  IRRewriter rewriter(main.getContext());
  DominanceInfo dominance(main);
  eliminateCommonSubExpressions(rewriter, dominance, main);
  for (Operation &op : llvm::make_early_inc_range(
           llvm::reverse(main.getBody().front().getOperations())))
    if (isOpTriviallyDead(&op))
      op.erase();
}

FailureOr<func::FuncOp> runGraphPipeline(ModuleOp module,
                                         const GraphPolicy &policy) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return module.emitError("the module has no @main function");
  cleanUpGraph(main);
  foldBatchNorm(main);
  if (policy.untransposeWeights)
    untransposeConstantWeights(main);
  // Ungrouped convolutions become matmuls with their padding in the
  // columns; the padding of the rest becomes a kernel of its own.
  if (policy.convToMatmul) {
    if (policy.directConvFilterBlock > 0)
      directConvolutions(main, policy.directConvFilterBlock);
    convToMatmul(main);
    convTransposeToMatmul(main);
  }
  splitConvPadding(main);
  sinkReshapes(main);
  if (failed(formKernels(main, policy.fuse, policy.separateThinColumns)) ||
      failed(outlineKernels(module, main)))
    return failure();
  return main;
}

namespace {
struct GraphPipelinePass : public impl::GraphPipelineBase<GraphPipelinePass> {
  using GraphPipelineBase::GraphPipelineBase;
  void runOnOperation() override {
    GraphPolicy policy;
    policy.fuse = fuse;
    policy.convToMatmul = convToMatmul;
    policy.directConvFilterBlock = directConvFilterBlock;
    policy.untransposeWeights = untransposeWeights;
    policy.separateThinColumns = separateThinColumns;
    if (failed(runGraphPipeline(getOperation(), policy)))
      signalPassFailure();
  }
};
} // namespace

} // namespace ign
