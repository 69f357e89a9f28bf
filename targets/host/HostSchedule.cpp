//===- HostSchedule.cpp - loop order and workgroups for the host ----------===//

#include "HostSchedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

#include <nlohmann/json.hpp>

using namespace mlir;

namespace ign::host {

std::string KernelSchedule::toJson() const {
  nlohmann::json j = {{"kind", "default"},
                      {"workgroup_tile", workgroupTile},
                      {"workgroups", workgroups}};
  if (!serialReason.empty())
    j["serial"] = serialReason;
  return j.dump();
}

namespace {

/// Kernels below this many loop iterations are not worth waking threads.
constexpr int64_t kMinParallelWork = 1 << 15;
/// Workgroups aimed for: enough to balance a few threads, each still big.
constexpr int64_t kTargetWorkgroups = 32;
constexpr int64_t kMinWorkPerWorkgroup = 1 << 13;

/// The coefficient of loop `d` in an affine expression (0 if absent or not
/// linear in it).
int64_t coefficient(AffineExpr e, unsigned d) {
  if (auto dim = dyn_cast<AffineDimExpr>(e))
    return dim.getPosition() == d ? 1 : 0;
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return 0;
  if (e.getKind() == AffineExprKind::Add)
    return coefficient(bin.getLHS(), d) + coefficient(bin.getRHS(), d);
  if (e.getKind() == AffineExprKind::Mul) {
    if (auto c = dyn_cast<AffineConstantExpr>(bin.getRHS()))
      return coefficient(bin.getLHS(), d) * c.getValue();
    if (auto c = dyn_cast<AffineConstantExpr>(bin.getLHS()))
      return coefficient(bin.getRHS(), d) * c.getValue();
  }
  return 0;
}

/// +1 when the operand is contiguous along loop d (its last index moves by
/// one), -1 when loop d strides through it, 0 when d does not touch it.
int contiguity(AffineMap map, unsigned d) {
  if (map.getNumResults() == 0)
    return 0;
  if (coefficient(map.getResults().back(), d) == 1)
    return 1;
  for (AffineExpr r : map.getResults())
    if (coefficient(r, d) != 0)
      return -1;
  return 0;
}

/// Moves the loop that walks the most operands contiguously (the output
/// counting double) innermost, so the innermost loop streams memory and
/// LLVM can vectorize it. Ties keep the current order.
void orderLoopsForContiguity(RewriterBase &rewriter, func::FuncOp kernel) {
  SmallVector<linalg::LinalgOp> named;
  kernel.walk([&](linalg::LinalgOp op) {
    if (!isa<linalg::GenericOp, linalg::FillOp, linalg::CopyOp>(op))
      named.push_back(op);
  });
  for (linalg::LinalgOp op : named) {
    rewriter.setInsertionPoint(op);
    (void)linalg::generalizeNamedOp(rewriter, op);
  }
  SmallVector<linalg::GenericOp> generics;
  kernel.walk([&](linalg::GenericOp op) { generics.push_back(op); });
  for (linalg::GenericOp op : generics) {
    unsigned loops = op.getNumLoops();
    if (loops < 2)
      continue;
    auto iterators = op.getIteratorTypesArray();
    auto score = [&](unsigned d) {
      int s = 0;
      for (OpOperand *in : op.getDpsInputOperands())
        s += contiguity(op.getMatchingIndexingMap(in), d);
      for (OpOperand &out : op.getDpsInitsMutable())
        s += (iterators[d] == utils::IteratorType::parallel ? 2 : 1) *
             contiguity(op.getMatchingIndexingMap(&out), d);
      return s;
    };
    unsigned best = loops - 1;
    int bestScore = score(best);
    for (unsigned d = 0; d + 1 < loops; ++d)
      if (int s = score(d); s > bestScore)
        best = d, bestScore = s;
    if (best == loops - 1)
      continue;
    SmallVector<unsigned> order;
    for (unsigned d = 0; d < loops; ++d)
      if (d != best)
        order.push_back(d);
    order.push_back(best);
    rewriter.setInsertionPoint(op);
    (void)linalg::interchangeGenericOp(rewriter, op, order);
  }
}

/// Loop iterations of all linalg ops of the kernel: the work that the
/// root's tiles share (its producers are fused into them).
int64_t kernelWork(func::FuncOp kernel) {
  int64_t work = 0;
  kernel.walk([&](linalg::LinalgOp op) {
    int64_t n = 1;
    for (int64_t r : op.getStaticLoopRanges())
      n = ShapedType::isDynamic(r) ? n : n * r;
    work += n;
  });
  return work;
}

/// The op computing the kernel's first result, seen through reshapes.
linalg::LinalgOp findRoot(func::FuncOp kernel) {
  auto ret = cast<func::ReturnOp>(kernel.getBody().front().getTerminator());
  if (ret.getNumOperands() == 0)
    return {};
  Value v = ret.getOperand(0);
  while (Operation *def = v.getDefiningOp()) {
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    return dyn_cast<linalg::LinalgOp>(def);
  }
  return {};
}

/// Splits the root's parallel loops, outermost first, into about
/// kTargetWorkgroups pieces that divide the loop evenly (so every
/// workgroup has static shapes). The innermost loop is split last: it is
/// the one that streams memory.
std::vector<int64_t> chooseWorkgroupTile(linalg::LinalgOp root, int64_t work,
                                         int64_t &workgroups) {
  SmallVector<int64_t> ranges = root.getStaticLoopRanges();
  auto iterators = root.getIteratorTypesArray();
  std::vector<int64_t> tile(ranges.size(), 0);
  workgroups = 1;
  if (llvm::any_of(ranges, ShapedType::isDynamic) || work < kMinParallelWork)
    return tile;
  int64_t target = std::min(kTargetWorkgroups,
                            std::max<int64_t>(1, work / kMinWorkPerWorkgroup));
  auto split = [&](unsigned d) {
    if (workgroups >= target || iterators[d] != utils::IteratorType::parallel ||
        ranges[d] < 2 || tile[d] != 0)
      return;
    int64_t want = (target + workgroups - 1) / workgroups;
    int64_t count = ranges[d];
    for (int64_t c = want; c < ranges[d]; ++c)
      if (ranges[d] % c == 0) {
        count = c;
        break;
      }
    tile[d] = ranges[d] / count;
    workgroups *= count;
  };
  for (unsigned d = 0; d + 1 < ranges.size(); ++d)
    split(d);
  if (!ranges.empty() && workgroups < 2)
    split(ranges.size() - 1);
  return tile;
}

} // namespace

KernelSchedule applyDefaultSchedule(func::FuncOp kernel) {
  KernelSchedule schedule;
  IRRewriter rewriter(kernel.getContext());
  orderLoopsForContiguity(rewriter, kernel);

  linalg::LinalgOp root = findRoot(kernel);
  if (!root) {
    schedule.serialReason = "no tileable root op";
    return schedule;
  }
  int64_t workgroups = 1;
  std::vector<int64_t> tile =
      chooseWorkgroupTile(root, kernelWork(kernel), workgroups);
  schedule.workgroupTile = tile;
  if (workgroups < 2) {
    schedule.serialReason = "too little work to split";
    return schedule;
  }
  SmallVector<OpFoldResult> sizes;
  for (int64_t t : tile)
    sizes.push_back(rewriter.getIndexAttr(t));
  scf::SCFTilingOptions tiling;
  tiling.setTileSizes(sizes);
  tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  rewriter.setInsertionPoint(root);
  auto result = scf::tileConsumerAndFuseProducersUsingSCF(
      rewriter, cast<TilingInterface>(root.getOperation()), options);
  if (failed(result)) {
    schedule.serialReason = "tiling failed";
    return schedule;
  }
  for (auto [original, replacement] : result->replacements)
    rewriter.replaceAllUsesWith(original, replacement);
  if (root->use_empty())
    rewriter.eraseOp(root);
  schedule.workgroups = workgroups;
  return schedule;
}

namespace {

/// Ops that may sit beside the workgroup loop: each workgroup evaluates
/// them, so they must be free of side effects and cheap (constants, views).
bool isFreeTopLevelOp(Operation *op) {
  return isa<arith::ConstantOp, memref::GetGlobalOp, memref::SubViewOp,
             memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp,
             memref::ReshapeOp, memref::ReinterpretCastOp, func::ReturnOp,
             scf::ForallOp>(op);
}

} // namespace

void distributeWorkgroups(func::FuncOp kernel, KernelSchedule &schedule) {
  MLIRContext *ctx = kernel.getContext();
  Location loc = kernel.getLoc();
  unsigned n = kernel.getNumArguments();
  IndexType index = IndexType::get(ctx);
  (void)kernel.insertArgument(n, index, {}, loc);
  (void)kernel.insertArgument(n + 1, index, {}, loc);
  Value begin = kernel.getArgument(n), end = kernel.getArgument(n + 1);
  if (schedule.workgroups < 2)
    return;

  auto serial = [&](const char *why) {
    schedule.workgroups = 1;
    schedule.serialReason = why;
  };
  Block &body = kernel.getBody().front();
  SmallVector<scf::ForallOp> foralls;
  for (Operation &op : body) {
    if (!isFreeTopLevelOp(&op))
      return serial("work outside the workgroup loop");
    if (auto f = dyn_cast<scf::ForallOp>(op))
      foralls.push_back(f);
  }
  if (foralls.size() != 1)
    return serial("not exactly one workgroup loop");
  scf::ForallOp forall = foralls.front();
  auto lbs = getConstantIntValues(forall.getMixedLowerBound());
  auto ubs = getConstantIntValues(forall.getMixedUpperBound());
  auto steps = getConstantIntValues(forall.getMixedStep());
  if (!lbs || !ubs || !steps || forall.getNumResults() != 0)
    return serial("dynamic workgroup loop");
  SmallVector<int64_t> trips;
  int64_t total = 1;
  for (auto [lb, ub, step] : llvm::zip(*lbs, *ubs, *steps)) {
    trips.push_back((ub - lb + step - 1) / step);
    total *= trips.back();
  }
  if (total != schedule.workgroups)
    return serial("workgroup count changed while tiling");

  // for %w = begin to end: delinearize %w into the tile indices, then run
  // the forall body for that tile.
  OpBuilder b(forall);
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  auto loop = b.create<scf::ForOp>(loc, begin, end, one);
  b.setInsertionPointToStart(loop.getBody());
  IRMapping map;
  Value rest = loop.getInductionVar();
  for (int d = int(trips.size()) - 1; d >= 0; --d) {
    Value trip = b.create<arith::ConstantIndexOp>(loc, trips[d]);
    Value tileIndex = d == 0 ? rest : b.create<arith::RemUIOp>(loc, rest, trip);
    if (d != 0)
      rest = b.create<arith::DivUIOp>(loc, rest, trip);
    Value iv = b.create<arith::AddIOp>(
        loc, b.create<arith::ConstantIndexOp>(loc, (*lbs)[d]),
        b.create<arith::MulIOp>(
            loc, tileIndex,
            b.create<arith::ConstantIndexOp>(loc, (*steps)[d])));
    map.map(forall.getInductionVar(d), iv);
  }
  for (Operation &op : forall.getBody()->without_terminator())
    b.clone(op, map);
  forall.erase();
}

} // namespace ign::host
