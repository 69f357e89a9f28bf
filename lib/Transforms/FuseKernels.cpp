//===- FuseKernels.cpp - group the ops of @main into ign.kernel regions ---===//
//
// A kernel is what a target compiles, schedules and tunes, and what the
// runtime launches; every value passed between kernels goes through memory.
// Fusion groups ops so that intermediates stay inside a kernel:
//
//  - pointwise ops join the kernel of the producer whose full-shaped result
//    they consume (bias, activations, residual adds, clip, scale/shift), so
//    a matmul or convolution carries its epilogue and pointwise chains
//    become one kernel;
//  - contractions, softmax, pooling, reductions and normalizations absorb
//    producer kernels made only of pointwise ops and transposes (scales,
//    broadcasts, im2col columns) that feed nothing else;
//  - attention, as torch exports it (MatMul -> scale/mask -> Softmax ->
//    MatMul), becomes one kernel: the softmax joins the score matmul's
//    kernel and the second matmul joins on its left operand.
//
// Groups never form a cycle: two groups merge only when no third group lies
// on a path between them. Views (reshapes of buffers) and weights stay
// outside kernels.
//
//===----------------------------------------------------------------------===//

#include "KernelGrouping.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"

namespace ign {
#define GEN_PASS_DEF_FUSEKERNELS
#include "ign/Transforms/Passes.h.inc"
} // namespace ign

using namespace mlir;

namespace ign {

bool isWeight(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  return c && isa<DenseResourceElementsAttr>(c.getValue());
}

bool isInlineConstant(Value v) {
  return v.getDefiningOp<ConstantOp>() && !isWeight(v);
}

/// Whether a constant needs a buffer of its own: it is returned, or an
/// inline (non-weight) constant that an ign.if or ign.loop passes on to its
/// graphs.
static bool isReturned(Operation *op) {
  return llvm::any_of(op->getUsers(), [&](Operation *u) {
    return isa<func::ReturnOp>(u) ||
           (isa<IfOp, LoopOp>(u) && isInlineConstant(op->getResult(0)));
  });
}

bool needsKernel(Operation *op) {
  if (isa<ConstantOp>(op))
    return isReturned(op);
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return isInlineConstant(reshape.getInput());
  return !isa<func::ReturnOp, KernelOp, IfOp, LoopOp>(op);
}

namespace {

enum class Kind {
  Pointwise,
  Transpose,
  Columns,
  Contraction,
  Softmax,
  Reduction,
  Other
};

Kind kindOf(Operation *op) {
  // Inference batch norm is a per-channel scale and shift.
  if (op->hasTrait<Pointwise>() || isa<BatchNormOp>(op))
    return Kind::Pointwise;
  if (isa<TransposeOp>(op))
    return Kind::Transpose;
  if (isa<Im2ColOp>(op))
    return Kind::Columns;
  if (isa<MatMulOp, GemmOp, ConvOp, ConvTransposeOp, EinsumOp>(op))
    return Kind::Contraction;
  if (isa<SoftmaxOp>(op))
    return Kind::Softmax;
  if (isa<MaxPoolOp, AvgPoolOp, LpPoolOp, ReduceSumOp, ReduceMeanOp,
          ReduceMaxOp, ReduceMinOp, ReduceProdOp, ReduceL1Op, ReduceL2Op,
          ReduceLogSumOp, ReduceLogSumExpOp, ReduceSumSquareOp, LogSoftmaxOp,
          InstanceNormOp, LayerNormOp, GroupNormOp>(op))
    return Kind::Reduction;
  return Kind::Other;
}

/// Im2col columns with fewer than 32 vectors of 16 pixels, or pixels that
/// 16 does not divide. A convolution's matmul splits into workgroups by
/// pixels only when there are enough of them; otherwise its workgroups
/// split the output channels and each would recompute all the columns
/// (measured on ResNet-50's 14x14 and 7x7 layers: slower than computing
/// them once in a kernel of their own).
bool isThinColumns(Operation *op) {
  auto cols = dyn_cast<Im2ColOp>(op);
  if (!cols)
    return false;
  int64_t pixels = cast<RankedTensorType>(cols.getType()).getDimSize(2);
  return pixels % 16 != 0 || pixels / 16 < 32;
}

/// A convolution with one input channel per group (depthwise).
bool isDepthwise(ConvOp conv) {
  auto type = dyn_cast<RankedTensorType>(conv.getInput().getType());
  return type && type.getRank() >= 3 && conv.getGroup() > 1 &&
         type.getDimSize(1) == conv.getGroup();
}

/// Whether `input` is the input of `op`, a direct (not depthwise)
/// convolution: its register tiles broadcast each input pixel to a vector
/// of filters, so a pointwise producer fused in would run inside that inner
/// loop, once per tile of filters, and keep the broadcast from folding into
/// the FMA. EfficientNet-B0's squeeze-excitation scales fused into the 1x1
/// convolutions over 7x7 pixels after them ran those at 31 GFLOP/s (1152 ->
/// 192: 0.70 ms); without, 78 (0.28 ms, plus 6 us for the scale).
bool recomputesPerFilterTile(Operation *op, Value input) {
  auto conv = dyn_cast<ConvOp>(op);
  return conv && conv.getInput() == input && !isDepthwise(conv);
}

/// What a group may still take in.
struct GroupInfo {
  SmallVector<Operation *> members; // program order
  bool onlyMovement = true;         // pointwise, transposes, columns only
  bool takesConsumers = true;       // not an "Other" op
  bool matmul = false;              // holds an ign.matmul
  bool thinColumns = false;         // holds im2col columns with few pixels
  bool scores = false;              // a matmul followed by a softmax
  bool attention = false;           // ... and the matmul with its probabilities
};

class Grouping {
public:
  Grouping(ArrayRef<Operation *> ops, bool separateThinColumns) {
    for (auto [i, op] : llvm::enumerate(ops)) {
      index[op] = i;
      parent.push_back(i);
      GroupInfo info;
      info.members.push_back(op);
      Kind k = kindOf(op);
      info.onlyMovement =
          k == Kind::Pointwise || k == Kind::Transpose || k == Kind::Columns;
      info.takesConsumers = k != Kind::Other;
      info.matmul = isa<MatMulOp>(op);
      info.thinColumns = separateThinColumns && isThinColumns(op);
      groups.push_back(std::move(info));
    }
  }

  unsigned find(unsigned i) {
    while (parent[i] != i)
      i = parent[i] = parent[parent[i]];
    return i;
  }
  std::optional<unsigned> groupOfOp(Operation *op) {
    auto it = index.find(op);
    if (it == index.end())
      return std::nullopt;
    return find(it->second);
  }
  /// The group computing `v`, looking through views (reshapes outside
  /// kernels) for dependencies.
  std::optional<unsigned> producerGroup(Value v) {
    while (Operation *def = v.getDefiningOp()) {
      if (auto g = groupOfOp(def))
        return g;
      if (auto reshape = dyn_cast<ReshapeOp>(def)) {
        v = reshape.getInput();
        continue;
      }
      return std::nullopt;
    }
    return std::nullopt;
  }
  GroupInfo &info(unsigned g) { return groups[find(g)]; }

  SmallVector<unsigned> deps(unsigned g) {
    SmallVector<unsigned> out;
    for (Operation *op : info(g).members)
      for (Value v : op->getOperands())
        if (auto p = producerGroup(v);
            p && *p != find(g) && !llvm::is_contained(out, *p))
          out.push_back(*p);
    return out;
  }

  /// Whether group `to` is reachable from `from` along dependencies.
  bool reaches(unsigned from, unsigned to) {
    llvm::DenseSet<unsigned> seen;
    SmallVector<unsigned> stack{find(from)};
    to = find(to);
    while (!stack.empty()) {
      unsigned g = stack.pop_back_val();
      if (g == to)
        return true;
      if (!seen.insert(g).second)
        continue;
      for (unsigned d : deps(g))
        stack.push_back(d);
    }
    return false;
  }

  /// Merging a and b closes a cycle iff a third group lies on a path
  /// between them.
  bool canMerge(unsigned a, unsigned b) {
    a = find(a), b = find(b);
    if (a == b)
      return false;
    for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}})
      for (unsigned d : deps(x))
        if (d != y && reaches(d, y))
          return false;
    return true;
  }

  void merge(unsigned into, unsigned from) {
    into = find(into), from = find(from);
    GroupInfo &a = groups[into], &b = groups[from];
    a.members.append(b.members.begin(), b.members.end());
    llvm::sort(a.members,
               [&](Operation *x, Operation *y) { return index[x] < index[y]; });
    a.onlyMovement &= b.onlyMovement;
    a.takesConsumers &= b.takesConsumers;
    a.matmul |= b.matmul;
    a.thinColumns |= b.thinColumns;
    a.scores |= b.scores;
    a.attention |= b.attention;
    b.members.clear();
    parent[from] = into;
  }

  /// Whether every use of a value of group g is in g or in op `user`.
  bool feedsOnly(unsigned g, Operation *user) {
    g = find(g);
    for (Operation *op : info(g).members)
      for (Operation *u : op->getUsers())
        if (u != user && groupOfOp(u) != g)
          return false;
    return true;
  }

  SmallVector<unsigned> roots() {
    SmallVector<unsigned> out;
    for (unsigned i = 0; i < parent.size(); ++i)
      if (find(i) == i)
        out.push_back(i);
    return out;
  }

private:
  llvm::DenseMap<Operation *, unsigned> index;
  SmallVector<unsigned> parent;
  SmallVector<GroupInfo> groups;
};

bool sameShapeIgnoringElementType(Value v, Operation *op) {
  auto a = dyn_cast<RankedTensorType>(v.getType());
  auto b = op->getNumResults() == 1
               ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
               : RankedTensorType();
  return a && b && a.getShape() == b.getShape();
}

/// Decides the groups of `ops` (compute ops of one block, program order).
void fuse(Grouping &g, ArrayRef<Operation *> ops) {
  for (Operation *x : ops) {
    unsigned self = *g.groupOfOp(x);
    Kind kind = kindOf(x);
    auto operandGroup = [&](Value v) -> std::optional<unsigned> {
      // Direct producers only: a view between two ops keeps them apart.
      Operation *def = v.getDefiningOp();
      return def ? g.groupOfOp(def) : std::nullopt;
    };

    // Attention: softmax after a matmul's kernel, then the matmul that
    // takes the probabilities.
    if (kind == Kind::Softmax)
      if (auto p = operandGroup(x->getOperand(0)); p && g.info(*p).matmul &&
                                                   !g.info(*p).scores &&
                                                   g.canMerge(*p, self)) {
        g.merge(*p, self);
        g.info(*p).scores = true;
        self = g.find(*p);
      }
    if (auto mm = dyn_cast<MatMulOp>(x))
      if (auto p = operandGroup(mm.getLhs()); p && g.info(*p).scores &&
                                              !g.info(*p).attention &&
                                              g.canMerge(*p, self)) {
        g.merge(*p, self);
        g.info(*p).attention = true;
        self = g.find(*p);
      }

    // Producers made of pointwise ops and transposes that feed only x.
    if (kind == Kind::Contraction || kind == Kind::Softmax ||
        kind == Kind::Reduction || kind == Kind::Pointwise)
      for (Value v : x->getOperands()) {
        auto p = operandGroup(v);
        if (!p || g.find(*p) == g.find(self) || !g.info(*p).onlyMovement ||
            g.info(*p).thinColumns || !g.feedsOnly(*p, x))
          continue;
        // A pointwise op would recompute a broadcast producer per element.
        if (kind == Kind::Pointwise && !sameShapeIgnoringElementType(v, x))
          continue;
        if (recomputesPerFilterTile(x, v))
          continue;
        if (g.canMerge(*p, self)) {
          g.merge(self, *p);
          self = g.find(self);
        }
      }

    // A depthwise convolution takes in the padding of its input when that
    // feeds nothing else: its workgroups split the channels (or rows) and
    // each pads its own slice, in cache, instead of a copy kernel writing
    // and reading the whole padded tensor (a tenth of MobileNetV3's time).
    if (auto conv = dyn_cast<ConvOp>(x); conv && isDepthwise(conv))
      if (auto p = operandGroup(conv.getInput());
          p && g.find(*p) != g.find(self) && g.info(*p).members.size() == 1 &&
          isa<PadOp>(g.info(*p).members.front()) && g.feedsOnly(*p, x) &&
          g.canMerge(*p, self)) {
        bool takesConsumers = g.info(self).takesConsumers;
        g.merge(self, *p);
        self = g.find(self);
        g.info(self).takesConsumers = takesConsumers;
      }

    // Consumers: a pointwise op or a transpose joins the kernel whose
    // full-shaped result it reads (one kernel; the others stay inputs).
    if (kind == Kind::Pointwise || kind == Kind::Transpose)
      for (Value v : x->getOperands()) {
        auto p = operandGroup(v);
        if (!p || g.find(*p) == g.find(self) || !g.info(*p).takesConsumers)
          continue;
        bool fullShape =
            kind == Kind::Transpose ? true : sameShapeIgnoringElementType(v, x);
        if (!fullShape || !g.canMerge(*p, self))
          continue;
        g.merge(*p, self);
        break;
      }
  }
}

/// Moves `members` (program order) into one ign.kernel placed at the last
/// member; values used outside become its results.
void buildKernel(ArrayRef<Operation *> members) {
  llvm::SmallPtrSet<Operation *, 16> inside(members.begin(), members.end());
  SmallVector<Value> inputs, results;
  for (Operation *op : members) {
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if ((def && inside.contains(def)) || isInlineConstant(v) ||
          llvm::is_contained(inputs, v))
        continue;
      inputs.push_back(v);
    }
    // A recurrent layer's Y and states are results even when unused: run
    // in steps (kTimeStepsAttr), its kernel reads the previous step's
    // hidden and cell states back from them.
    bool keepAll = isa<LSTMOp, GRUOp, RNNOp>(op);
    for (Value r : op->getResults())
      if (keepAll || llvm::any_of(r.getUsers(), [&](Operation *u) {
            return !inside.contains(u);
          }))
        results.push_back(r);
  }
  Operation *last = members.back();
  OpBuilder b(last);
  auto kernel = b.create<KernelOp>(last->getLoc(),
                                   ValueRange(results).getTypes(), inputs);
  Block *body = b.createBlock(&kernel.getBody());
  IRMapping map;
  for (Value v : inputs)
    map.map(v, body->addArgument(v.getType(), v.getLoc()));
  b.setInsertionPointToStart(body);
  for (Operation *op : members) {
    for (Value v : op->getOperands())
      if (isInlineConstant(v) && !map.contains(v))
        map.map(v, b.clone(*v.getDefiningOp())->getResult(0));
    b.clone(*op, map);
  }
  SmallVector<Value> yielded;
  for (Value r : results)
    yielded.push_back(map.lookup(r));
  b.create<YieldOp>(last->getLoc(), yielded);
  for (auto [r, k] : llvm::zip(results, kernel.getResults()))
    r.replaceUsesWithIf(
        k, [&](OpOperand &use) { return !inside.contains(use.getOwner()); });
  for (Operation *op : llvm::reverse(members)) {
    op->dropAllUses();
    op->erase();
  }
}

struct FuseKernelsPass : public impl::FuseKernelsBase<FuseKernelsPass> {
  using FuseKernelsBase::FuseKernelsBase;
  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main) {
      getOperation().emitError("the module has no @main function");
      return signalPassFailure();
    }
    if (failed(formKernels(main, fuse)))
      signalPassFailure();
  }
};

} // namespace

Operation *kernelAnchor(Block &body) {
  Operation *first = nullptr;
  for (Operation &op : body) {
    if (isa<ConstantOp, ReshapeOp, YieldOp, func::ReturnOp>(op))
      continue;
    Kind k = kindOf(&op);
    if (k != Kind::Pointwise && k != Kind::Transpose && k != Kind::Columns &&
        !isa<PadOp>(op))
      return &op;
    if (!first)
      first = &op;
  }
  return first ? first : &body.front();
}

LogicalResult formKernels(func::FuncOp main, bool fuse,
                          bool separateThinColumns) {
  if (!main.getBody().hasOneBlock())
    return main.emitError("@main must have a single block to form kernels");
  Block &block = main.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    if (needsKernel(&op)) {
      if (op.getNumRegions() != 0)
        return op.emitError("cannot put an op with regions into a kernel");
      ops.push_back(&op);
    }
  Grouping grouping(ops, separateThinColumns);
  if (fuse)
    ::ign::fuse(grouping, ops);
  for (unsigned root : grouping.roots())
    buildKernel(grouping.info(root).members);
  if (!sortTopologically(&block))
    return main.emitError("kernels form a cycle (a fusion bug)");
  // Inline constants now live in the kernels that use them.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (isa<ConstantOp>(op) && op.use_empty())
      op.erase();
  return success();
}

} // namespace ign
