//===- CollapsedRows.cpp - one row loop for matmuls over N-d rows ---------===//

#include "CollapsedRows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace ign::host {
namespace {

/// Where the rows lie in a tensor: `count` consecutive dims from `first`
/// (none when count is 0).
struct Span {
  int64_t first = 0, count = 0;
  bool operator==(const Span &o) const {
    return first == o.first && count == o.count;
  }
};

/// The loops `map` reads at the dims of `span`: consecutive and in order.
std::optional<ReassociationIndices> loopsAt(AffineMap map, Span span) {
  ReassociationIndices loops;
  for (int64_t i = span.first; i < span.first + span.count; ++i) {
    auto d = dyn_cast<AffineDimExpr>(map.getResult(i));
    if (!d || (!loops.empty() && int64_t(d.getPosition()) != loops.back() + 1))
      return std::nullopt;
    loops.push_back(d.getPosition());
  }
  return loops;
}

/// The dims of `map`'s results that read `loops`: consecutive, in order,
/// or none of them; nullopt when the map reads some of them, or apart.
std::optional<Span> spanOf(AffineMap map, ArrayRef<int64_t> loops) {
  for (unsigned i = 0; i < map.getNumResults(); ++i) {
    auto d = dyn_cast<AffineDimExpr>(map.getResult(i));
    if (!d || int64_t(d.getPosition()) != loops.front())
      continue;
    Span span{i, int64_t(loops.size())};
    if (i + loops.size() > map.getNumResults() ||
        loopsAt(map, span) != ReassociationIndices(loops))
      return std::nullopt;
    return span;
  }
  for (int64_t loop : loops)
    if (map.isFunctionOfDim(loop))
      return std::nullopt;
  return Span{};
}

/// The non-unit row loops of contraction `op` (output loops besides its
/// columns that no input reads together with the columns), when there are
/// at least two, consecutive and in order in its output.
std::optional<ReassociationIndices> contractionRows(linalg::GenericOp op) {
  if (!linalg::isaContractionOpInterface(op) || op.getNumDpsInits() != 1)
    return std::nullopt;
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (out.getNumResults() == 0 || llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  auto columns = dyn_cast<AffineDimExpr>(out.getResults().back());
  if (!columns)
    return std::nullopt;
  ReassociationIndices rows;
  for (AffineExpr e : out.getResults().drop_back()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d)
      return std::nullopt;
    if (ranges[d.getPosition()] == 1)
      continue;
    for (OpOperand *in : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(in);
      if (map.isFunctionOfDim(columns.getPosition()) &&
          map.isFunctionOfDim(d.getPosition()))
        return std::nullopt;
    }
    rows.push_back(d.getPosition());
  }
  if (rows.size() < 2 || !spanOf(out, rows) || spanOf(out, rows)->count == 0)
    return std::nullopt;
  return rows;
}

/// The dims of `operand` that its map reads as a constant 0 and that are
/// unit (a scale of [C, 1, 1] broadcast over [N, C, H, W]).
SmallVector<int64_t> unitBroadcastDims(linalg::GenericOp op,
                                       OpOperand &operand) {
  auto type = dyn_cast<RankedTensorType>(operand.get().getType());
  AffineMap map = op.getMatchingIndexingMap(&operand);
  SmallVector<int64_t> dims;
  if (!type)
    return dims;
  for (auto [i, e] : llvm::enumerate(map.getResults()))
    if (auto c = dyn_cast<AffineConstantExpr>(e);
        c && c.getValue() == 0 && type.getDimSize(i) == 1)
      dims.push_back(i);
  return dims;
}

/// The type `operand` of `op` has without the unit dims its map
/// broadcasts (unitBroadcastDims), and the reassociation that collapses
/// them; nullopt when there are none or it would leave no dim.
std::optional<std::pair<RankedTensorType, SmallVector<ReassociationIndices>>>
withoutUnitBroadcasts(linalg::GenericOp op, OpOperand &operand) {
  SmallVector<int64_t> dims = unitBroadcastDims(op, operand);
  if (dims.empty())
    return std::nullopt;
  auto type = cast<RankedTensorType>(operand.get().getType());
  SmallVector<int64_t> shape;
  for (auto [i, size] : llvm::enumerate(type.getShape()))
    if (!llvm::is_contained(dims, int64_t(i)))
      shape.push_back(size);
  if (shape.empty())
    return std::nullopt;
  auto to = RankedTensorType::get(shape, type.getElementType());
  std::optional<SmallVector<ReassociationIndices>> groups =
      getReassociationIndicesForReshape(type, to);
  if (!groups)
    return std::nullopt;
  return std::make_pair(to, *groups);
}

/// Whether every map of `op` is a projected permutation once the unit dims
/// it broadcasts are dropped (what linalg's dimension collapsing takes).
/// Only operands the kernel does not compute drop them: a view of a
/// computed value between two ops would keep them apart when tiled.
bool collapsible(linalg::GenericOp op) {
  return llvm::all_of(op->getOpOperands(), [&](OpOperand &o) {
    AffineMap map = op.getMatchingIndexingMap(&o);
    if (withoutUnitBroadcasts(op, o)) {
      if (!op.isDpsInput(&o) ||
          isa_and_nonnull<linalg::LinalgOp>(o.get().getDefiningOp()))
        return false;
      map = map.dropResults(unitBroadcastDims(op, o));
    }
    return map.isProjectedPermutation();
  });
}

/// Reads the unit dims `op` broadcasts through collapse_shape views of
/// its operands without them.
void dropUnitBroadcasts(RewriterBase &rewriter, linalg::GenericOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (OpOperand *in : op.getDpsInputOperands()) {
    auto view = withoutUnitBroadcasts(op, *in);
    if (!view)
      continue;
    rewriter.setInsertionPoint(op);
    Value collapsed = rewriter.create<tensor::CollapseShapeOp>(
        op.getLoc(), view->first, in->get(), view->second);
    unsigned n = in->getOperandNumber();
    maps[n] = maps[n].dropResults(unitBroadcastDims(op, *in));
    rewriter.modifyOpInPlace(op, [&] { in->set(collapsed); });
  }
  rewriter.modifyOpInPlace(op, [&] {
    op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
  });
}

/// The rows followed through the kernel from a contraction's output: the
/// dims they are in each tensor, the loops that walk them in each op.
class RowTracking {
public:
  /// Follows the rows from `op`'s `rows` loops to every op that reads or
  /// writes them; false when one does not read them as consecutive dims in
  /// order (a transpose that splits them, a broadcast along some of them, a
  /// reduction over them) or reaches them from two places differently.
  bool follow(linalg::GenericOp op, ReassociationIndices rows) {
    if (!visit(op, std::move(rows)))
      return false;
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      if (!reachDefinition(v) || !reachUses(v))
        return false;
    }
    return true;
  }

  llvm::MapVector<Operation *, ReassociationIndices> groups;

private:
  bool assign(Value v, Span span) {
    if (!isa<RankedTensorType>(v.getType()))
      return span.count == 0;
    auto [it, inserted] = spans.try_emplace(v, span);
    if (!inserted)
      return it->second == span;
    if (span.count)
      worklist.push_back(v);
    return true;
  }

  bool visit(linalg::GenericOp op, ReassociationIndices loops) {
    auto [it, inserted] = groups.insert({op, loops});
    if (!inserted)
      return it->second == loops;
    // spanOf checks what linalg::areDimSequencesPreserved would (which in
    // MLIR 19 takes only projected permutations, not a broadcast's 0).
    if (!collapsible(op))
      return false;
    for (OpOperand &o : op->getOpOperands()) {
      std::optional<Span> span = spanOf(op.getMatchingIndexingMap(&o), loops);
      if (!span || !assign(o.get(), *span))
        return false;
    }
    for (OpResult r : op->getResults()) {
      AffineMap out = op.getIndexingMapMatchingResult(r);
      std::optional<Span> span = spanOf(out, loops);
      if (!span || span->count == 0 || !assign(r, *span))
        return false;
    }
    return true;
  }

  /// The op computing `v`: a generic walks its rows with the loops its
  /// output map reads there; a fill's init holds them too.
  bool reachDefinition(Value v) {
    Span span = spans.lookup(v);
    Operation *def = v.getDefiningOp();
    if (auto generic = dyn_cast_or_null<linalg::GenericOp>(def)) {
      auto loops = loopsAt(
          generic.getIndexingMapMatchingResult(cast<OpResult>(v)), span);
      return loops && visit(generic, *loops);
    }
    if (auto fill = dyn_cast_or_null<linalg::FillOp>(def))
      return assign(fill.getOutputs()[0], span);
    return true;
  }

  bool reachUses(Value v) {
    Span span = spans.lookup(v);
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto generic = dyn_cast<linalg::GenericOp>(user)) {
        auto loops = loopsAt(generic.getMatchingIndexingMap(&use), span);
        if (!loops || !visit(generic, *loops))
          return false;
      } else if (auto fill = dyn_cast<linalg::FillOp>(user)) {
        if (!assign(fill.getResult(0), span))
          return false;
      } else if (!isa<func::ReturnOp>(user)) {
        return false;
      }
    }
    return true;
  }

  llvm::DenseMap<Value, Span> spans;
  SmallVector<Value> worklist;
};

/// Folds the reshapes that collapsing left between the ops (an op's
/// expanded result collapsed again by its consumer), and makes the inits
/// the ops collapse (empty tensors, fills of them: one fill per collapsed
/// use) of the collapsed shape.
/// (tensor's own empty-reshape pattern needs the shape reification
/// interfaces, which the host target does not register.)
void foldReshapes(RewriterBase &rewriter, func::FuncOp kernel) {
  SmallVector<tensor::CollapseShapeOp> ofInits;
  kernel.walk([&](tensor::CollapseShapeOp op) {
    Operation *def = op.getSrc().getDefiningOp();
    auto fill = dyn_cast_or_null<linalg::FillOp>(def);
    if (op.getResultType().hasStaticShape() &&
        (isa_and_nonnull<tensor::EmptyOp>(def) ||
         (fill && fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())))
      ofInits.push_back(op);
  });
  for (tensor::CollapseShapeOp op : ofInits) {
    rewriter.setInsertionPoint(op);
    RankedTensorType type = op.getResultType();
    Value empty = rewriter.create<tensor::EmptyOp>(op.getLoc(), type.getShape(),
                                                   type.getElementType());
    if (auto fill = op.getSrc().getDefiningOp<linalg::FillOp>())
      empty =
          rewriter
              .create<linalg::FillOp>(op.getLoc(), fill.getInputs()[0], empty)
              .getResult(0);
    rewriter.replaceOp(op, empty);
  }
  // The uncollapsed fills and empty tensors left unused.
  Block &body = kernel.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isa<linalg::FillOp, tensor::EmptyOp>(op) && isOpTriviallyDead(&op))
      rewriter.eraseOp(&op);
  MLIRContext *ctx = kernel.getContext();
  RewritePatternSet patterns(ctx);
  tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
  tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
  SmallVector<Operation *> ops;
  kernel.walk([&](Operation *op) {
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp, tensor::EmptyOp>(
            op))
      ops.push_back(op);
  });
  GreedyRewriteConfig config;
  config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
  (void)applyOpPatternsAndFold(ops, std::move(patterns), config);
}

} // namespace

bool collapseRowLoops(RewriterBase &rewriter, func::FuncOp kernel) {
  if (!kernel.getBody().hasOneBlock())
    return false;
  SmallVector<linalg::GenericOp> generics;
  for (Operation &op : kernel.getBody().front()) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op))
      generics.push_back(generic);
    else if (!isa<linalg::FillOp, tensor::EmptyOp, arith::ConstantOp,
                  func::ReturnOp>(op))
      return false;
  }
  // The rows of the first contraction that has several, followed through
  // every op of the kernel.
  RowTracking rows;
  auto first = llvm::find_if(generics, [](linalg::GenericOp op) {
    return contractionRows(op).has_value();
  });
  if (first == generics.end() || !rows.follow(*first, *contractionRows(*first)))
    return false;
  if (rows.groups.size() != generics.size())
    return false;
  for (auto &[op, group] : rows.groups) {
    auto generic = cast<linalg::GenericOp>(op);
    dropUnitBroadcasts(rewriter, generic);
    rewriter.setInsertionPoint(generic);
    FailureOr<linalg::CollapseResult> collapsed =
        linalg::collapseOpIterationDims(generic, {group}, rewriter);
    // Its conditions hold (tensors, a group of consecutive loops that every
    // map reads in order, checked above). Were it to fail, the op would
    // stay uncollapsed between views: slower, still right.
    if (failed(collapsed))
      continue;
    rewriter.replaceOp(generic, collapsed->results);
  }
  foldReshapes(rewriter, kernel);
  return true;
}

} // namespace ign::host
