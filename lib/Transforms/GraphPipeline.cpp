//===- GraphPipeline.cpp - an imported model into outlined kernels --------===//

#include "ign/Transforms/GraphPipeline.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/CSE.h"
#include "llvm/ADT/DenseSet.h"

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

/// The pipeline on one graph function (@main or a branch of an ign.if).
static LogicalResult formGraph(ModuleOp module, func::FuncOp graph,
                               const GraphPolicy &policy) {
  if (!graph.getBody().hasOneBlock())
    return graph.emitError("a graph function must have a single block");
  cleanUpGraph(graph);
  constantDivisions(graph);
  foldBatchNorm(graph);
  hoistRecurrentProjections(graph);
  if (policy.integerMatmuls != IntegerOperands::None ||
      policy.integerConvsInFloat)
    integerMatmuls(graph, policy.integerMatmuls);
  if (policy.untransposeWeights)
    untransposeConstantWeights(graph);
  // Ungrouped convolutions become matmuls with their padding in the
  // columns; the padding of the rest becomes a kernel of its own.
  if (policy.convToMatmul) {
    if (policy.directConvFilterBlock > 0) {
      convTransposeToConv(graph, policy.convChannelMultiple > 0);
      padChannels(graph, policy.convChannelMultiple);
      directConvolutions(graph, policy.directConvFilterBlock,
                         policy.padFiltersFirst);
    }
    convToMatmul(graph);
    convTransposeToMatmul(graph);
  }
  splitConvPadding(graph);
  sinkReshapes(graph);
  if (failed(formKernels(graph, policy.fuse, policy.separateThinColumns)) ||
      failed(outlineKernels(module, graph)))
    return failure();
  return success();
}

/// The graph functions `op` runs (an ign.if's branches, an ign.loop's body).
static SmallVector<FlatSymbolRefAttr> graphRefs(Operation *op) {
  if (auto i = dyn_cast<IfOp>(op)) {
    SmallVector<FlatSymbolRefAttr> refs;
    for (FlatSymbolRefAttr ref : {i.getThenGraphAttr(), i.getElseGraphAttr()})
      if (ref)
        refs.push_back(ref);
    return refs;
  }
  if (auto l = dyn_cast<LoopOp>(op))
    return {l.getBodyAttr()};
  return {};
}

/// The captures of a control-flow op and the argument each is in its graph
/// functions (an ign.loop's captures come last, after its loop state).
static MutableOperandRange capturesOf(Operation *op) {
  if (auto i = dyn_cast<IfOp>(op))
    return i.getCapturesMutable();
  return cast<LoopOp>(op).getCapturesMutable();
}

/// Moves the constants `op` passes to its graphs into them: a weight is
/// then a constant there (packed at compile time, shared in the bundle), an
/// inline constant folds into the kernels that read it.
static void inlineConstantCaptures(ModuleOp module, Operation *op) {
  SmallVector<func::FuncOp> graphs;
  for (FlatSymbolRefAttr ref : graphRefs(op))
    if (auto g = module.lookupSymbol<func::FuncOp>(ref);
        g && g->hasAttr(kGraphAttr) && !g.isExternal())
      graphs.push_back(g);
  if (graphs.empty())
    return;
  MutableOperandRange captures = capturesOf(op);
  for (unsigned i = captures.size(); i-- > 0;) {
    Operation *def = captures[i].get().getDefiningOp();
    if (!def || !isa<ConstantOp>(def))
      continue;
    for (func::FuncOp g : graphs) {
      unsigned arg = g.getNumArguments() - captures.size() + i;
      OpBuilder b = OpBuilder::atBlockBegin(&g.getBody().front());
      g.getArgument(arg).replaceAllUsesWith(b.clone(*def)->getResult(0));
      g.eraseArgument(arg);
    }
    captures.erase(i);
  }
}

FailureOr<func::FuncOp> runGraphPipeline(ModuleOp module,
                                         const GraphPolicy &policy) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return module.emitError("the module has no @main function");
  // @main first, then the graphs its ign.ifs and ign.loops still launch
  // (cleanups may have dropped some), and theirs.
  SmallVector<func::FuncOp> worklist = {main};
  llvm::DenseSet<Operation *> reached = {main};
  while (!worklist.empty()) {
    func::FuncOp graph = worklist.pop_back_val();
    graph.walk([&](Operation *op) {
      if (isa<IfOp, LoopOp>(op))
        inlineConstantCaptures(module, op);
    });
    if (failed(formGraph(module, graph, policy)))
      return failure();
    auto result = graph.walk([&](Operation *op) {
      for (FlatSymbolRefAttr ref : graphRefs(op)) {
        auto g = module.lookupSymbol<func::FuncOp>(ref);
        if (!g || !g->hasAttr(kGraphAttr)) {
          op->emitError("graph ") << ref << " is not a graph function";
          return WalkResult::interrupt();
        }
        if (reached.insert(g).second)
          worklist.push_back(g);
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
  }
  for (auto g : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (g->hasAttr(kGraphAttr) && !reached.count(g))
      g.erase();
  return main;
}

void eraseGraphs(ModuleOp module) {
  for (auto f : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (f->hasAttr(kGraphAttr) || f.getSymName() == "main")
      f.erase();
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
