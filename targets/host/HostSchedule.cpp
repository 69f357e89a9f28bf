//===- HostSchedule.cpp - loop order and workgroups for the host ----------===//

#include "HostSchedule.h"
#include "AmxTiles.h"
#include "CollapsedRows.h"
#include "DirectConv.h"
#include "DotContraction.h"
#include "FilledAccumulators.h"
#include "GroupedDots.h"
#include "HostKnobs.h"
#include "PaddedWindows.h"
#include "PairCopies.h"
#include "PrepackedPanels.h"
#include "TileUtils.h"
#include "ign/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <tuple>

using namespace mlir;

namespace ign::host {

int64_t HostMachine::tileRows() const {
  // Past 8 rows GEMM 1024^3 gained nothing on an AVX-512 machine
  // (benchmarks/results/2026-12-01-native-tiles.md).
  constexpr int64_t kMaxDefaultRows = 8;
  int64_t vectors = 2;
  return std::clamp<int64_t>((vectorRegisters - vectors - 1) / vectors, 1,
                             kMaxDefaultRows);
}

std::string KernelSchedule::toJson() const {
  nlohmann::json j = {{"kind", kind},
                      {"workgroup_tile", workgroupTile},
                      {"workgroups", workgroups}};
  if (!serialReason.empty())
    j["serial"] = serialReason;
  if (!registerTile.empty())
    j["register_tile"] = registerTile;
  if (!knobs.empty())
    j["knobs"] = knobs;
  if (prepackedPanels)
    j["prepacked_panels"] = prepackedPanels;
  if (timeSteps > 1)
    j["steps"] = timeSteps;
  return j.dump();
}

namespace {

/// Kernels below this many loop iterations are not worth waking threads.
constexpr int64_t kMinParallelWork = 1 << 15;
/// Workgroups aimed for: enough to balance a few threads, each still big.
constexpr int64_t kTargetWorkgroups = 32;
/// Largest workgroup count the space offers.
constexpr int64_t kMaxWorkgroups = 256;
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

/// Reads through reshapes that only insert unit dims read as broadcasts
/// (index 0): the consumer indexes the reshape's source directly. The
/// reduction of a softmax or a layer norm then feeds its elementwise
/// consumer without a reshape in between, so tiling the consumer fuses the
/// reduction into the same workgroups.
void foldUnitReshapes(RewriterBase &rewriter, func::FuncOp kernel) {
  kernel.walk([&](linalg::GenericOp op) {
    // Elementwise consumers only (the broadcast after a reduction);
    // contractions keep their operands as the lowering built them.
    if (op.getNumReductionLoops() != 0)
      return;
    for (OpOperand *in : op.getDpsInputOperands()) {
      Operation *def = in->get().getDefiningOp();
      if (!isa_and_nonnull<tensor::ReshapeOp, tensor::ExpandShapeOp>(def))
        continue;
      auto from = dyn_cast<RankedTensorType>(def->getOperand(0).getType());
      auto to = cast<RankedTensorType>(in->get().getType());
      if (!from || !from.hasStaticShape() || !to.hasStaticShape())
        continue;
      AffineMap map = op.getMatchingIndexingMap(in);
      auto isBroadcast = [&](int64_t t) {
        auto c = dyn_cast<AffineConstantExpr>(map.getResult(t));
        return to.getDimSize(t) == 1 && c && c.getValue() == 0;
      };
      // Match the source's dims in order; every dim of the result left
      // over must be an inserted unit dim read at index 0.
      SmallVector<AffineExpr> results;
      int64_t t = 0;
      bool ok = true;
      for (int64_t f = 0; ok && f < from.getRank(); ++f) {
        while (t < to.getRank() && to.getDimSize(t) != from.getDimSize(f))
          ok &= isBroadcast(t++);
        if (t == to.getRank())
          ok = false;
        else
          results.push_back(map.getResult(t++));
      }
      for (; ok && t < to.getRank(); ++t)
        ok &= isBroadcast(t);
      if (!ok)
        continue;
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      maps[in->getOperandNumber()] = AffineMap::get(
          map.getNumDims(), map.getNumSymbols(), results, op.getContext());
      rewriter.modifyOpInPlace(op, [&] {
        op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
        in->set(def->getOperand(0));
      });
    }
  });
}

/// The op computing the kernel's first result, seen through reshapes.
linalg::LinalgOp findRoot(func::FuncOp kernel) {
  auto ret = cast<func::ReturnOp>(kernel.getBody().front().getTerminator());
  if (ret.getNumOperands() == 0)
    return {};
  Value v = ret.getOperand(0);
  while (Operation *def = v.getDefiningOp()) {
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::ReshapeOp>(
            def)) {
      v = def->getOperand(0);
      continue;
    }
    return dyn_cast<linalg::LinalgOp>(def);
  }
  return {};
}

/// The widest vector (16, 8 or 4 lanes) that divides a contiguous loop of
/// `range` iterations; 1 when none does. (A convolution over 14x14 pixels
/// gets 4 lanes; padded or masked tiles would do better.)
int64_t vectorLanes(int64_t range) {
  for (int64_t lanes : {16, 8, 4})
    if (range % lanes == 0)
      return lanes;
  return 1;
}

/// Bytes of a statically shaped tensor (0 otherwise).
int64_t bytesOf(Value v) {
  auto type = dyn_cast<ShapedType>(v.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

/// The linalg ops that the root's tiles compute: the root and, through
/// operands, its linalg producers (tiling fuses them into each tile).
SmallVector<linalg::LinalgOp> producerSlice(linalg::LinalgOp root) {
  SmallVector<linalg::LinalgOp> slice{root};
  llvm::SmallPtrSet<Operation *, 16> seen{root};
  for (size_t i = 0; i < slice.size(); ++i)
    for (Value v : slice[i]->getOperands())
      if (auto p = v.getDefiningOp<linalg::LinalgOp>();
          p && seen.insert(p).second)
        slice.push_back(p);
  return slice;
}

/// Tensors an op reads that no op of the slice computes: its operands
/// from outside the slice (not the empty tensors results start from) and
/// the tensors its body reads by index (tensor.extract, as im2col does).
SmallVector<Value> externalReads(linalg::LinalgOp op,
                                 const llvm::SmallPtrSetImpl<Operation *> &in) {
  SmallVector<Value> reads;
  for (OpOperand &o : op->getOpOperands()) {
    Operation *def = o.get().getDefiningOp();
    if (def && (in.contains(def) || isa<tensor::EmptyOp>(def)))
      continue;
    reads.push_back(o.get());
  }
  op->walk([&](tensor::ExtractOp e) {
    if (!op->isAncestor(e.getTensor().getParentRegion()->getParentOp()))
      reads.push_back(e.getTensor());
  });
  return reads;
}

/// What splitting the root's loop `d` into workgroups costs the kernel:
/// the bytes every workgroup reads again (inputs that the loop does not
/// index, and everything that producers not indexed by the loop read, as
/// they are recomputed in every workgroup), and whether a reduction would
/// be recomputed in every workgroup (never worth it). A recomputed
/// producer also counts kRecomputeWeight times the bytes it writes.
/// Computing an im2col column element (index arithmetic, a bounds check, a
/// gather) measured about 4x the cost of streaming one from memory.
constexpr int64_t kRecomputeWeight = 4;

struct SplitCost {
  int64_t rereadBytes = 0;
  bool recomputesReduction = false;
};

/// A constant this small stays in cache for every workgroup: re-reading it
/// costs nothing (an average pool's window counts, 28 x 28, made its
/// channels look dearer to split than its rows, whose pieces then padded
/// the whole input serially).
constexpr int64_t kFreeRereadBytes = 4096;

bool isSmallConstant(Value v) {
  return v.getDefiningOp<arith::ConstantOp>() && bytesOf(v) <= kFreeRereadBytes;
}

/// Bytes of `v` that each cut of the split loops reads twice: where a dim
/// of `v` is read at a split loop plus another (a window: oh + kh), the
/// pieces overlap by that loop's extent less one (a 3x3 pool split by rows
/// re-reads two rows of its input per cut).
int64_t haloBytes(linalg::LinalgOp op, AffineMap map, Value v,
                  const llvm::SmallDenseSet<unsigned> &loops) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t bytes = 0;
  for (auto [r, expr] : llvm::enumerate(map.getResults())) {
    if (isa<AffineDimExpr>(expr) || type.getDimSize(r) == 0 ||
        llvm::none_of(loops,
                      [e = expr](unsigned l) { return e.isFunctionOfDim(l); }))
      continue;
    int64_t overlap = 0;
    for (unsigned e = 0; e < ranges.size(); ++e)
      if (!loops.contains(e) && expr.isFunctionOfDim(e) &&
          !ShapedType::isDynamic(ranges[e]))
        overlap += ranges[e] - 1;
    bytes += bytesOf(v) / type.getDimSize(r) * overlap;
  }
  return bytes;
}

/// The loops of every op of `slice` that tiling the root's loop `d` tiles:
/// loop e of an op indexes dim r of an operand, which the producer's
/// result map gives as one of the producer's loops. Ops the loop does not
/// reach have no entry.
using TiledLoops = llvm::DenseMap<Operation *, llvm::SmallDenseSet<unsigned>>;

TiledLoops followLoop(linalg::LinalgOp root, unsigned d,
                      const llvm::SmallPtrSetImpl<Operation *> &in) {
  TiledLoops tiled;
  SmallVector<std::pair<linalg::LinalgOp, unsigned>> work{{root, d}};
  tiled[root].insert(d);
  while (!work.empty()) {
    auto [op, e] = work.pop_back_val();
    for (OpOperand &o : op->getOpOperands()) {
      auto producer = o.get().getDefiningOp<linalg::LinalgOp>();
      if (!producer || !in.contains(producer))
        continue;
      AffineMap map = op.getMatchingIndexingMap(&o);
      AffineMap out =
          producer.getIndexingMapMatchingResult(cast<OpResult>(o.get()));
      for (auto [r, expr] : llvm::enumerate(map.getResults())) {
        auto dim = dyn_cast<AffineDimExpr>(expr);
        if (!dim || dim.getPosition() != e)
          continue;
        if (auto f = dyn_cast<AffineDimExpr>(out.getResult(r));
            f && tiled[producer].insert(f.getPosition()).second)
          work.push_back({producer, f.getPosition()});
      }
    }
  }
  return tiled;
}

SplitCost splitCost(linalg::LinalgOp root, unsigned d,
                    ArrayRef<linalg::LinalgOp> slice) {
  llvm::SmallPtrSet<Operation *, 16> in;
  for (linalg::LinalgOp op : slice)
    in.insert(op);
  TiledLoops tiled = followLoop(root, d, in);
  SplitCost cost;
  for (linalg::LinalgOp op : slice) {
    const auto &loops = tiled[op];
    if (loops.empty()) {
      // Recomputed whole in every workgroup.
      if (op.getNumReductionLoops() != 0)
        cost.recomputesReduction = true;
      for (Value v : externalReads(op, in))
        cost.rereadBytes += bytesOf(v);
      for (Value r : op->getResults())
        cost.rereadBytes += kRecomputeWeight * bytesOf(r);
      continue;
    }
    for (OpOperand &o : op->getOpOperands()) {
      Operation *def = o.get().getDefiningOp();
      if (def && (in.contains(def) || isa<tensor::EmptyOp>(def)))
        continue;
      AffineMap map = op.getMatchingIndexingMap(&o);
      if (llvm::none_of(loops,
                        [&](unsigned l) { return map.isFunctionOfDim(l); })) {
        if (!isSmallConstant(o.get()))
          cost.rereadBytes += bytesOf(o.get());
      } else
        cost.rereadBytes += haloBytes(op, map, o.get(), loops);
    }
  }
  return cost;
}

/// The loop of `root` that walks dim `dim` of `value`, following its uses
/// through the ops of the kernel (elementwise epilogues, transposes) whose
/// maps read that dim with one loop and write it to one dim of their
/// result, up to the root.
std::optional<unsigned> rootLoopOfDim(linalg::LinalgOp root, Value value,
                                      unsigned dim, int depth = 0) {
  if (depth > 16)
    return std::nullopt;
  for (OpOperand &use : value.getUses()) {
    auto consumer = dyn_cast<linalg::LinalgOp>(use.getOwner());
    if (!consumer || !consumer.isDpsInput(&use) ||
        consumer->getNumResults() != 1)
      continue;
    AffineMap read = consumer.getMatchingIndexingMap(&use);
    if (dim >= read.getNumResults())
      continue;
    auto loop = dyn_cast<AffineDimExpr>(read.getResult(dim));
    if (!loop)
      continue;
    if (consumer == root)
      return loop.getPosition();
    AffineMap out =
        consumer.getIndexingMapMatchingResult(consumer->getResult(0));
    for (auto [r, e] : llvm::enumerate(out.getResults()))
      if (auto d = dyn_cast<AffineDimExpr>(e);
          d && d.getPosition() == loop.getPosition())
        if (auto found =
                rootLoopOfDim(root, consumer->getResult(0), r, depth + 1))
          return found;
  }
  return std::nullopt;
}

/// The loop of `root` that walks loop `d` of `op`, a producer of the
/// root's result (an epilogue's input, through transposes too) or the
/// root.
std::optional<unsigned> rootLoopOf(linalg::LinalgOp root, linalg::GenericOp op,
                                   unsigned d) {
  if (op == root)
    return d;
  AffineMap out = op.getIndexingMapMatchingResult(op->getResult(0));
  for (auto [r, e] : llvm::enumerate(out.getResults()))
    if (auto dim = dyn_cast<AffineDimExpr>(e); dim && dim.getPosition() == d)
      if (auto found = rootLoopOfDim(root, op->getResult(0), r))
        return found;
  // Else the root's result in the same shape (its elements' type may
  // differ: a byte convolution's i32 sums, rescaled into f32 or bytes).
  if (root->getNumResults() == 0 ||
      cast<ShapedType>(root->getResult(0).getType()).getShape() !=
          cast<ShapedType>(op->getResult(0).getType()).getShape())
    return std::nullopt;
  AffineMap rootOut = root.getIndexingMapMatchingResult(root->getResult(0));
  for (auto [r, e] : llvm::enumerate(out.getResults()))
    if (auto dim = dyn_cast<AffineDimExpr>(e); dim && dim.getPosition() == d)
      if (auto rd = dyn_cast<AffineDimExpr>(rootOut.getResult(r)))
        return rd.getPosition();
  return std::nullopt;
}

/// Knob `name` of `knobs`, or `fallback` when it is not set.
int64_t knobOr(const search::Schedule *knobs, const std::string &name,
               int64_t fallback) {
  if (!knobs)
    return fallback;
  auto it = knobs->find(name);
  return it == knobs->end() ? fallback : it->second;
}

/// The channel-wise (depthwise, grouped) convolutions of the kernel, in
/// order.
SmallVector<linalg::GenericOp> channelConvolutions(func::FuncOp kernel) {
  SmallVector<linalg::GenericOp> convs;
  kernel.walk([&](linalg::GenericOp op) {
    if (analyzeChannelConv(op))
      convs.push_back(op);
  });
  return convs;
}

/// The direct convolutions of the kernel, in order.
SmallVector<linalg::GenericOp> directConvolutions(func::FuncOp kernel);

/// The root's loops that may be split into workgroups, cheapest first.
/// Splitting a loop makes every workgroup read again what the loop does
/// not index (a matmul split by rows re-reads the whole right operand) and
/// recompute the producers it does not index (im2col columns when a
/// convolution is split by output channels): splitCost's bytes, outer loops
/// before inner ones on ties. A loop that another op of the kernel reduces
/// over (the row of a softmax or a layer norm) is never split: every piece
/// would recompute the reduction (splitCost follows the loop through the
/// producers' indexing maps; the reduction's own loops may be in any
/// order).
struct SplitAnalysis {
  SmallVector<int64_t> ranges;
  unsigned innermost = 0;
  SmallVector<unsigned> order;
  llvm::DenseMap<unsigned, int64_t> reread;
  /// Loops whose pieces must stay within, or be whole, blocks of this many
  /// (a direct convolution's filters: its weights are blocked).
  llvm::SmallDenseMap<unsigned, int64_t> blocks;
  /// A blocked filter loop that no root loop is known to walk: then no loop
  /// is split (a piece of the filters across blocks would read wrong
  /// weights).
  bool unmappedBlocks = false;

  /// Split counts of loop d that divide it evenly (so every workgroup has
  /// static shapes), the innermost loop's pieces staying multiples of a
  /// vector where it allows; ascending, 1 first.
  SmallVector<int64_t> legalCounts(unsigned d, int64_t max) const {
    int64_t quantum = d == innermost ? vectorLanes(ranges[d]) : 1;
    int64_t block = blocks.lookup(d);
    SmallVector<int64_t> counts;
    if (unmappedBlocks)
      return {1};
    for (int64_t c = 1; c <= std::min(ranges[d], max); ++c) {
      int64_t piece = ranges[d] / c;
      if (ranges[d] % c == 0 && piece % quantum == 0 &&
          (!block || piece % block == 0 || block % piece == 0))
        counts.push_back(c);
    }
    return counts;
  }
};

/// Whether loop `d` of `root` walks a padded dim of a tensor.pad that the
/// root or a producer of its slice reads (a pool's padded input; a
/// depthwise convolution's under a fused activation or transpose). Pieces
/// of such a loop start at offsets only the workgroup knows, which
/// slicePadsInWorkgroups cannot slice: the whole pad stayed beside the
/// workgroup loop and the kernel ran serially (ShuffleNet's max pool split
/// by channels and rows; MobileNetV3's and ConvNeXt's depthwise
/// convolutions under their epilogues).
bool splitsPadding(linalg::LinalgOp root, ArrayRef<linalg::LinalgOp> slice,
                   unsigned d) {
  auto walksD = [&](linalg::LinalgOp op, unsigned loop) {
    if (op == root)
      return loop == d;
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    return generic && rootLoopOf(root, generic, loop) == d;
  };
  for (linalg::LinalgOp op : slice)
    for (OpOperand *input : op.getDpsInputOperands()) {
      auto pad = input->get().getDefiningOp<tensor::PadOp>();
      if (!pad)
        continue;
      auto low = getConstantIntValues(pad.getMixedLowPad());
      auto high = getConstantIntValues(pad.getMixedHighPad());
      AffineMap map = op.getMatchingIndexingMap(input);
      for (auto [r, e] : llvm::enumerate(map.getResults())) {
        if (low && high && !(*low)[r] && !(*high)[r])
          continue;
        for (unsigned loop = 0; loop < op.getNumLoops(); ++loop)
          if (e.isFunctionOfDim(loop) && walksD(op, loop))
            return true;
      }
    }
  return false;
}

SplitAnalysis analyzeSplits(linalg::LinalgOp root) {
  SplitAnalysis a;
  a.ranges = root.getStaticLoopRanges();
  if (a.ranges.empty() || llvm::any_of(a.ranges, ShapedType::isDynamic))
    return a;
  auto iterators = root.getIteratorTypesArray();
  a.innermost = a.ranges.size() - 1;
  SmallVector<linalg::LinalgOp> slice = producerSlice(root);
  if (auto kernel = root->getParentOfType<func::FuncOp>())
    for (linalg::GenericOp op : directConvolutions(kernel)) {
      DirectConvLoops c = *analyzeDirectConv(op);
      if (auto f = rootLoopOf(root, op, c.filters))
        a.blocks[*f] = c.block;
      else if (c.block < c.ranges[c.filters])
        a.unmappedBlocks = true;
    }
  for (unsigned d = 0; d < a.ranges.size(); ++d) {
    if (iterators[d] != utils::IteratorType::parallel || a.ranges[d] <= 1)
      continue;
    SplitCost cost = splitCost(root, d, slice);
    if (cost.recomputesReduction || splitsPadding(root, slice, d))
      continue;
    a.reread[d] = cost.rereadBytes;
    a.order.push_back(d);
  }
  llvm::stable_sort(a.order, [&](unsigned x, unsigned y) {
    return std::make_tuple(a.reread[x], x == a.innermost) <
           std::make_tuple(a.reread[y], y == a.innermost);
  });
  return a;
}

/// What the default split aims for.
struct SplitGoal {
  /// About this many workgroups.
  int64_t workgroups = kTargetWorkgroups;
  /// Pieces of the innermost loop are multiples of this when it divides the
  /// loop (besides the vector lanes legalCounts keeps).
  int64_t innerQuantum = 1;
  /// Pieces of other loops likewise (a direct convolution's filters and
  /// pixels: whole register tiles).
  llvm::SmallDenseMap<unsigned, int64_t> quanta;
  /// Loops split until their pieces are at most this long, where a count
  /// allows it, whatever the workgroup goal (the columns of a packed
  /// panel chunk that should stay in L2).
  llvm::SmallDenseMap<unsigned, int64_t> widest;
  /// Pieces of these loops are at least this long (a contraction's rows:
  /// half its register tile's).
  llvm::SmallDenseMap<unsigned, int64_t> narrowest;
  /// The threads the workgroups run on (0: unknown): a count they do not
  /// divide leaves some idle at the end (5 workgroups on 2 threads take 3
  /// rounds).
  int64_t cores = 0;
  /// Every workgroup packs or re-streams operands (panels, weights): a
  /// split far past the goal is not taken even when no smaller one is left
  /// (257 rows, a prime, were 257 workgroups, each packing the same panels).
  /// Nor is one of a loop whose pieces re-read or recompute anything (ViT's
  /// attention over 197 queries, a prime: 1182 workgroups of one query,
  /// each transposing the head's keys and values again).
  bool repeatsPerWorkgroup = false;

  /// The quantum of loop `d` of range `range`: 1 when it does not divide.
  int64_t quantum(unsigned d, unsigned innermost, int64_t range) const {
    int64_t q = d == innermost ? innerQuantum : 1;
    if (auto it = quanta.find(d); it != quanta.end())
      q = std::max(q, it->second);
    return range % q == 0 ? q : 1;
  }
};

/// Pieces of a contiguous loop at least this long vectorize well whatever
/// their length.
constexpr int64_t kLongRow = 256;

/// Pieces of a register-tiled contraction's columns that its tile does not
/// divide are at least this wide: each piece peels its own rest.
/// EfficientNet's 672 x 112 x 196 matmul on AVX2 (tiles of 16 columns) in
/// 21 x 7 pieces of 28 columns (16 and a rest of 12 each) ran 0.51 ms, in
/// 32 pieces of whole rows 0.42. (AVX-512's tiles of 32 cut no narrower;
/// SSE's and NEON's tiles of 8 are held to 32 as AVX2's, unmeasured.)
constexpr int64_t kNarrowestUnevenColumns = 32;

/// How far past its goal a kernel that repeats work per workgroup (or a
/// loop whose pieces re-read) may be split.
constexpr int64_t kMaxOvershoot = 8;
/// How far past its goal a split goes to balance the workgroups over the
/// threads.
constexpr int64_t kBalanceReach = 4;
/// How many times cheaper a split past twice the goal must be than every
/// split within it to be taken first.
constexpr double kOvershootWorth = 2;

/// The default heuristic: about `goal.workgroups` pieces. Split counts grow
/// one divisor at a time, each step on the loop whose re-read bytes grow
/// least per unit of (logarithmic) growth in workgroups: free loops (batch,
/// heads) first, then a balance between loops that cost (a convolution
/// split both by channels and by pixels recomputes its columns fewer times
/// than one split 32 ways). A step past twice the target is taken only
/// when no other step is left or when it costs less than half of every
/// other, and never past kMaxOvershoot times the target when it repeats
/// work.
SmallVector<int64_t> chooseSplitCounts(const SplitAnalysis &a, int64_t work,
                                       const SplitGoal &goal) {
  SmallVector<int64_t> count(a.ranges.size(), 1);
  if (a.order.empty() || work < kMinParallelWork)
    return count;
  int64_t target = std::min(goal.workgroups,
                            std::max<int64_t>(1, work / kMinWorkPerWorkgroup));
  int64_t workgroups = 1;
  // Past the target, splits go on while the last round of workgroups
  // leaves more than a tenth of the threads' time idle (and the work
  // allows): SqueezeNet's 3x3 convolutions over 55 rows were 5 workgroups
  // on 2 threads, 3 rounds for 2.5 of work.
  int64_t reach = std::min(kBalanceReach * target,
                           std::max<int64_t>(1, work / kMinWorkPerWorkgroup));
  auto unbalanced = [&] {
    int64_t rounds =
        (workgroups + goal.cores - 1) / std::max<int64_t>(goal.cores, 1);
    return goal.cores > 1 && rounds * goal.cores * 9 > workgroups * 10 &&
           workgroups < reach;
  };
  auto nextCount = [&](unsigned d) -> int64_t {
    int64_t quantum = goal.quantum(d, a.innermost, a.ranges[d]);
    // A register-tiled contraction's columns are not cut narrower than
    // its tile (97 columns, a prime, were 97 workgroups of one scalar
    // column each).
    int64_t narrowest =
        d == a.innermost && goal.innerQuantum > 1 ? goal.innerQuantum : 1;
    if (narrowest > 1 && a.ranges[d] % goal.innerQuantum)
      narrowest = std::max(narrowest, kNarrowestUnevenColumns);
    narrowest = std::max(narrowest, goal.narrowest.lookup(d));
    for (int64_t c : a.legalCounts(d, a.ranges[d]))
      if (c > count[d] && (a.ranges[d] / c) % quantum == 0 &&
          (c == 1 || a.ranges[d] / c >= narrowest))
        return c;
    return 0;
  };
  struct Step {
    unsigned d;
    bool overshoots, shortRows;
    double cost;
  };
  for (auto [d, widest] : goal.widest)
    while (a.ranges[d] / count[d] > widest && llvm::is_contained(a.order, d)) {
      int64_t c = nextCount(d);
      if (!c || workgroups / count[d] * c > kMaxWorkgroups)
        break;
      workgroups = workgroups / count[d] * c;
      count[d] = c;
    }
  while (workgroups < target || unbalanced()) {
    SmallVector<Step> steps;
    for (unsigned d : a.order) {
      int64_t c = nextCount(d);
      if (!c)
        continue;
      bool overshoots = workgroups / count[d] * c > 2 * target;
      if ((goal.repeatsPerWorkgroup || a.reread.lookup(d) > 0) &&
          workgroups / count[d] * c > kMaxOvershoot * target)
        continue;
      // Short pieces of a contiguous loop that no vector divides leave LLVM
      // short rows to vectorize: split it last. Long ones are cheap.
      bool shortRows = d == a.innermost && vectorLanes(a.ranges[d]) == 1 &&
                       a.ranges[d] / c < kLongRow;
      double cost = double(a.reread.lookup(d)) * double(c - count[d]) /
                    std::log(double(c) / double(count[d]));
      steps.push_back({d, overshoots, shortRows, cost});
    }
    // A split past twice the goal is still taken when it costs far less
    // than any other (GPT-2's 50257 logits in 29 pieces re-read 0.4 MB; by
    // rows, each of 4 workgroups packed the whole 154 MB weight: 600 ms).
    double within = std::numeric_limits<double>::infinity();
    for (const Step &s : steps)
      if (!s.overshoots)
        within = std::min(within, s.cost);
    std::optional<unsigned> best;
    std::tuple<bool, bool, double> bestKey;
    for (const Step &s : steps) {
      bool overshoots = s.overshoots && s.cost * kOvershootWorth >= within;
      std::tuple<bool, bool, double> key{overshoots, s.shortRows, s.cost};
      if (!best || key < bestKey)
        best = s.d, bestKey = key;
    }
    if (!best)
      break;
    int64_t c = nextCount(*best);
    workgroups = workgroups / count[*best] * c;
    count[*best] = c;
  }
  return count;
}

/// Shortest reduction whose streamed operand the default schedule packs.
constexpr int64_t kMinPackedReduction = 256;
/// Fewest row tiles of a workgroup that read each panel of a streamed
/// operand computed at run time for the default schedule to pack it. The
/// copy is one more pass over the operand, made again by every workgroup
/// that splits the rows: one thread, Zen 4, 1x1 convolutions as matmuls
/// (filters x channels by pixels) ran 0.75-0.98 of their time unpacked
/// with 2-16 row tiles per workgroup (Inception-v1's 64 x 256 by 729
/// pixels in 4 workgroups of 16 rows 0.29 -> 0.22 ms; ResNet-50's 512 x
/// 1024 by 196 in 4 of 128 rows 1.95 -> 1.87), 0.98-0.99 with 32 and
/// GEMMs of 256-1024 rows by 1024 columns in 1.01-1.03 (32-64 row tiles
/// per workgroup), where the panels still pay for themselves.
constexpr int64_t kMinPackedRowTiles = 32;
/// Shortest reduction whose transposed broadcast operand it packs.
constexpr int64_t kMinPackedRowsReduction = 64;

/// The loops of a contraction (a generic whose body is out += a * b over
/// projected-permutation maps) that its register tile is made of.
struct ContractionLoops {
  SmallVector<int64_t> ranges;
  unsigned inner = 0;                // the output's contiguous loop (columns)
  SmallVector<unsigned> rowDims;     // candidate row loops, heuristic's first
  std::optional<unsigned> reduction; // its single reduction loop, if one
  /// The operand streamed along the columns (B of C += A * B, indexed
  /// (..., k, n)) is read from the kernel's arguments, not computed in it.
  bool streamsArgument = false;
  /// That argument is a constant weight at every launch (`ign.weight`):
  /// its panels can be packed at compile time (PrepackedPanels.h).
  bool streamsWeight = false;
  /// That operand is transposed (indexed (..., n, k), as Gemm's transB).
  bool streamsTransposed = false;
  /// The operand broadcast along the rows is transposed (indexed (..., k,
  /// m), as Gemm's transA): each reduction step reads its rows from another
  /// line, a row of it apart.
  bool broadcastsTransposed = false;

  /// Output rows of the contraction along its row loops: one register
  /// tile's worth or less reads each streamed element once.
  int64_t rows() const {
    int64_t r = 1;
    for (unsigned d : rowDims)
      r *= ranges[d];
    return r;
  }
};

/// Whether `map` ends in the loops (k, panel): false when it is indexed
/// (..., k, panel), true when (..., panel, k), nullopt otherwise. With
/// `panel` the tile's columns that is the operand it streams (B of
/// C += A * B; true for a transposed B, as Gemm with transB), with `panel`
/// its rows the operand it broadcasts (A; true for A as it usually is).
std::optional<bool> panelLayout(AffineMap map, unsigned panel,
                                std::optional<unsigned> reduction) {
  unsigned n = map.getNumResults();
  if (!reduction || n < 2)
    return std::nullopt;
  MLIRContext *ctx = map.getContext();
  AffineExpr p = getAffineDimExpr(panel, ctx);
  AffineExpr k = getAffineDimExpr(*reduction, ctx);
  if (map.getResult(n - 1) == p && map.getResult(n - 2) == k)
    return false;
  if (map.getResult(n - 1) == k && map.getResult(n - 2) == p)
    return true;
  return std::nullopt;
}
std::optional<bool> streamedLayout(AffineMap map, const ContractionLoops &c) {
  return panelLayout(map, c.inner, c.reduction);
}

/// The function argument `v` is a view or slice of, if it is one.
BlockArgument viewedArgument(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp, tensor::ReshapeOp>(def))
      return {};
    v = def->getOperand(0);
  }
  auto arg = cast<BlockArgument>(v);
  return isa<func::FuncOp>(arg.getOwner()->getParentOp()) ? arg
                                                          : BlockArgument();
}

/// Whether `v` is a function argument seen through views and slices.
bool isArgumentView(Value v) { return bool(viewedArgument(v)); }

/// Whether `v` is a view of an argument bound to a constant weight.
bool isWeightView(Value v) {
  BlockArgument arg = viewedArgument(v);
  if (!arg)
    return false;
  auto kernel = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return bool(kernel.getArgAttr(arg.getArgNumber(), kWeightArgAttr));
}

std::optional<ContractionLoops> analyzeContraction(linalg::GenericOp op) {
  if (!linalg::isaContractionOpInterface(op) || op.getNumDpsInits() != 1)
    return std::nullopt;
  ContractionLoops c;
  c.ranges = op.getStaticLoopRanges();
  if (llvm::any_of(c.ranges, ShapedType::isDynamic))
    return std::nullopt;
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (out.getNumResults() == 0)
    return std::nullopt;
  c.inner = cast<AffineDimExpr>(out.getResults().back()).getPosition();
  // A row loop: an output dim that the input streamed along `inner` does
  // not use, so each vector loaded from that input serves every row.
  for (AffineExpr e : llvm::reverse(out.getResults().drop_back())) {
    unsigned d = cast<AffineDimExpr>(e).getPosition();
    bool shared = llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
      AffineMap m = op.getMatchingIndexingMap(in);
      return m.isFunctionOfDim(c.inner) && m.isFunctionOfDim(d);
    });
    if (!shared && c.ranges[d] > 1)
      c.rowDims.push_back(d);
  }
  auto iterators = op.getIteratorTypesArray();
  if (llvm::count(iterators, utils::IteratorType::reduction) == 1)
    c.reduction =
        unsigned(llvm::find(iterators, utils::IteratorType::reduction) -
                 iterators.begin());
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(in);
    if (auto t = streamedLayout(map, c)) {
      c.streamsArgument = isArgumentView(in->get());
      c.streamsWeight = isWeightView(in->get());
      c.streamsTransposed = *t;
    } else if (!c.rowDims.empty()) {
      c.broadcastsTransposed =
          panelLayout(map, c.rowDims.front(), c.reduction) == false;
    }
  }
  return c;
}

bool takesAmxBlocks(linalg::GenericOp op, const ContractionLoops &c,
                    const HostMachine &machine, int64_t minRows = kAmxTileRows,
                    int64_t minCols = kAmxTileRows);
bool keepsColumnsWhole(const ContractionLoops &c, const HostMachine &machine);
bool packsLessWhole(linalg::GenericOp op, const ContractionLoops &c);

/// The default split of a kernel. The column loop of a register-tiled
/// contraction is split only into whole register tiles. A contraction that
/// streams its columns from an argument with a long reduction reads them
/// (or packs them into panels: contractionKnobs) in every workgroup, so its
/// kernel is split into about two workgroups per core (when the cores are
/// known: the compiling machine's): a 256x2304x196 convolution matmul ran 4.5
/// ms in 8 x 7 workgroups and 1.6 ms in 2 x 2 at two threads, 7.0 ms and 2.2 ms
/// (one workgroup) at one; with chunks of 256 it ran 2.2, 2.4 and 3.6 ms in 1,
/// 2 and 8 workgroups. Others, as a convolution that computes its im2col
/// columns per workgroup, keep kTargetWorkgroups: its pieces' columns stay in
/// cache (a 3x3 convolution at 56x56 ran 10.3 ms in 7 workgroups, 8.1 in 49;
/// benchmarks/results/2026-12-01-native-tiles.md).
SplitGoal splitGoal(func::FuncOp kernel, const HostMachine &machine) {
  SplitGoal goal;
  goal.cores = machine.cores;
  linalg::LinalgOp root = findRoot(kernel);
  // A direct convolution is split into whole register tiles.
  if (root)
    for (linalg::GenericOp op : directConvolutions(kernel)) {
      DirectConvLoops c = *analyzeDirectConv(op);
      auto [filters, pixels] = defaultDirectConvTile(c, machine);
      // AMX blocks: whole rows of pixels, whole blocks of filters.
      if (takesAmxConv(op, machine)) {
        pixels = c.ranges[c.pixels];
        filters = c.ranges[c.filters] % 32 == 0 ? 32 : kAmxTileRows;
      }
      // Filters that the tile does not divide (48 by 32) are split into
      // whole vectors.
      int64_t f = c.ranges[c.filters];
      for (int64_t q : {filters, machine.lanes(), machine.lanes() / 2})
        if (q > 1 && f % q == 0) {
          if (auto loop = rootLoopOf(root, op, c.filters))
            goal.quanta[*loop] = q;
          break;
        }
      if (auto p = rootLoopOf(root, op, c.pixels))
        goal.quanta[*p] = pixels;
    }
  // A channel-wise convolution (or pool) keeps its tile's columns whole:
  // a row of 20 pixels cut in 5 pieces of 4 was tiled 4 lanes wide.
  if (root)
    for (linalg::GenericOp op : channelConvolutions(kernel)) {
      std::optional<ChannelConvLoops> c = analyzeChannelConv(op);
      ChannelConvTile tile = defaultChannelConvTile(*c, machine);
      int64_t columns = tile.columns;
      if (auto loop = rootLoopOf(root, op, c->columns))
        goal.quanta[*loop] = std::max<int64_t>(
            goal.quanta.lookup(*loop),
            c->ranges[c->columns] % columns ? c->ranges[c->columns] : columns);
      // With filters in the tile, pieces keep whole tiles of filters, and
      // rows in fours (56 rows in 28 pieces were tiles of 2 rows by 4
      // filters; within a piece the tile takes a divisor of its rows).
      if (!c->filters)
        continue;
      if (auto loop = rootLoopOf(root, op, *c->filters))
        goal.quanta[*loop] =
            std::max<int64_t>(goal.quanta.lookup(*loop), tile.filters);
      if (auto loop = c->rows ? rootLoopOf(root, op, *c->rows) : std::nullopt)
        goal.quanta[*loop] = std::max<int64_t>(goal.quanta.lookup(*loop),
                                               std::min<int64_t>(tile.rows, 4));
    }
  bool contracts = false, streamsArgument = false, computesStreamed = false;
  kernel.walk([&](linalg::GenericOp op) {
    std::optional<ContractionLoops> c = analyzeContraction(op);
    if (!c)
      return;
    contracts = true;
    // B computed in the kernel (attention's keys and values, transposed
    // from its inputs): each piece of the rows computes and packs all of it
    // again. Whisper's 1500 queries per head in 6 pieces transposed and
    // packed the head's 1500 keys and values 6 times (17% of the kernel).
    if (root && !c->streamsArgument && !c->rowDims.empty() &&
        rootLoopOf(root, op, c->rowDims.front()))
      computesStreamed = true;
    // Its rows are not cut shorter than half a register tile: SqueezeNet's
    // 32 x 128 weights over 729 pixels were 32 workgroups of one row (tiles
    // of one row, the pixels streamed once per row: 167 us; 8 pieces of 4
    // rows by 9 of the pixels, 86 us). Pieces of a whole tile (8 rows, 62
    // us) cut ShuffleNet's 68 rows into 8 + 8 + 1 (4% slower model), and the
    // 4 x 250 rows of SqueezeNet's classifier into 25 x 40 (each piece
    // packing the pixels again).
    if (root && !c->rowDims.empty())
      if (auto row = rootLoopOf(root, op, c->rowDims.front()))
        goal.narrowest[*row] = std::max<int64_t>(1, machine.tileRows() / 2);
    // AMX blocks: pieces of whole blocks (32 rows or columns, or 16 where
    // 32 does not divide), none shorter. Each piece of the rows packs its
    // columns of B again (unless a constant weight), each piece of the
    // columns rounds its rows of A again (likewise): the rows stay whole
    // where that packs less (ResNet-50's 256 x 1024 x 196 matmul packed its
    // 1024 x 196 input in each of 4 pieces of rows: 0.77 ms, 0.36 split by
    // columns; attention's P V over 1500 keys rounds 1500 x 1500 of P and
    // packs 1500 x 64 of V), the columns where B is a constant weight
    // that stays in L2 (keepsColumnsWhole).
    if (root && takesAmxBlocks(op, *c, machine))
      for (unsigned d : {c->rowDims.front(), c->inner})
        if (auto loop = rootLoopOf(root, op, d)) {
          int64_t q = c->ranges[d] % 32 == 0 ? 32 : kAmxTileRows;
          if (d != c->inner && packsLessWhole(op, *c))
            q = c->ranges[d];
          // Its rows then split in pieces of whole blocks of 32 (an uneven
          // split where they do not divide: ViT's 197 tokens as 6 x 32 and
          // 5, not 4 x 48 in blocks of 16 and 5).
          if (keepsColumnsWhole(*c, machine))
            q = d == c->inner ? c->ranges[d] : 32;
          goal.quanta[*loop] = std::max(goal.quanta.lookup(*loop), q);
          goal.narrowest[*loop] = std::max(goal.narrowest.lookup(*loop), q);
        }
    if (!c->streamsArgument || !c->reduction ||
        c->ranges[*c->reduction] < kMinPackedReduction)
      return;
    streamsArgument = true;
    // Each workgroup reads (or packs) a chunk of the reduction for all of
    // its columns once per row tile: it should stay in L2. A language
    // model's head (512 x 32000) in 4 workgroups packed 8 MB chunks: 67 ms;
    // in pieces of 640 columns 46-56 ms, of 256 43 (onnxruntime 34). Half
    // of L2 cut a transposed convolution's 256 x 1024 chunk (1 MB of a
    // 1.25 MB L2) in two: 51 -> 56 ms. The widths were measured with the
    // chunks of the whole L1: on a 48 KiB one, the head's chunks of 128 in
    // 8 workgroups of 4000 columns ran 42-44 ms, in 20 of 1600 32.7-33.4.
    int64_t k = c->ranges[*c->reduction];
    int64_t chunk = defaultReductionChunk(k, machine.tileColumns(), machine,
                                          machine.l1Bytes);
    int64_t columns = machine.l2Bytes / (4 * (chunk ? chunk : k));
    if (auto loop = root ? rootLoopOf(root, op, c->inner) : std::nullopt)
      goal.widest[*loop] = std::max<int64_t>(machine.tileColumns(), columns);
  });
  if (contracts)
    goal.innerQuantum = machine.tileColumns();
  // A direct convolution split further than the cores need re-streams its
  // weights for every piece of its pixels (ResNet-50's last 3x3, 9.4 MB of
  // weights over 7x7 pixels, in 112 workgroups of one row each).
  bool directConv = !directConvolutions(kernel).empty();
  if (streamsArgument || directConv || computesStreamed) {
    goal.repeatsPerWorkgroup = true;
    if (machine.cores > 0)
      goal.workgroups = std::min(kTargetWorkgroups, 2 * machine.cores);
  }
  return goal;
}

/// A register tile of at least this many rows whose loop leaves a rest of
/// fewer than kMinEvenedRest rows gives the rest one of its tiles, split
/// evenly (vectorizeContraction).
constexpr int64_t kMinEvenedRows = 5;
constexpr int64_t kMinEvenedRest = 4;

/// The knobs of contraction `index` (cJ.rows, ...) with the heuristic's
/// values for those missing from `knobs`.
struct ContractionKnobs {
  int64_t rows = 1, cols = 0, rowDim = 0, kTile = 0, order = 0, pack = 0,
          packRows = 0;
};

/// Register tile widths the schedule uses, widest first.
constexpr int64_t kTileWidths[] = {64, 32, 16, 8, 4};

/// The widest tile width that is at most `cols` (and divides `range` when
/// given); 1 when none.
int64_t tileWidth(int64_t cols, std::optional<int64_t> range = std::nullopt) {
  for (int64_t v : kTileWidths)
    if (v <= cols && (!range || *range % v == 0))
      return v;
  return 1;
}

/// The lanes of the one masked register tile that covers `range` columns
/// no unmasked tile divides and one vector holds (9 of 169 columns left
/// after peeling, or 3; a single column only when it is a `leftover` of
/// peeling), else 0. The 9 were a tile of 8 and a scalar column that read
/// B lane by lane: a fifth of a 1000x512x169 classifier's time.
int64_t maskedWidth(int64_t range, const HostMachine &machine, bool leftover) {
  if (range < (leftover ? 1 : 2) || range > machine.lanes() ||
      machine.lanes() < 4 || (range >= 4 && llvm::isPowerOf2_64(range)))
    return 0;
  return std::max<int64_t>(4, int64_t(llvm::PowerOf2Ceil(range)));
}

} // namespace

/// The default reduction chunk (HostSchedule.h): in one workgroup GEMM 1024^3
/// ran 32.0 -> 21.3 ms and a 256x2304x196 convolution matmul 2.85 -> 2.21 ms in
/// chunks of 256 on a 48 KiB L1
/// (benchmarks/results/2026-12-01-native-tiles.md). With bf16 tiles (an
/// even reduction on a machine computing in bf16) a panel's element is 2
/// bytes: 128 x 384 x 1536 with GELU in chunks of 128 1.09-1.12 ms, whole
/// (384) 0.98-1.06 ms on a 32 KiB L1. An L1 above 32 KiB counts as 32: on a
/// 48 KiB one (Emerald Rapids, AVX-512 tiles of 32 columns) panels of 256
/// steps (32 KiB) ran LLaMA's 128 x 512 x 32000 head in 36.3-37.9 ms, chunks
/// of 128 in 32.7-33.4 (benchmarks/results/2026-12-06-session39.md).
int64_t defaultReductionChunk(int64_t reduction, int64_t cols,
                              const HostMachine &machine, int64_t maxL1Bytes) {
  int64_t element = machine.bf16Pairs() && reduction % 2 == 0 ? 2 : 4;
  int64_t rowBytes = std::max<int64_t>(1, cols) * element;
  int64_t l1 = std::min<int64_t>(machine.l1Bytes, maxL1Bytes);
  if (reduction * rowBytes <= l1)
    return 0;
  for (int64_t t = std::min<int64_t>(512, reduction / 2); t >= 64; --t)
    if (reduction % t == 0 && t * rowBytes * 3 <= l1 * 2)
      return t;
  return 0;
}

namespace {

/// `rows`, or the largest divisor of `range` down to three quarters of
/// it (8 rows: 7 or 6; 6 rows: 5): 98 rows are
/// 14 tiles of 7 instead of 12 of 8 and one of 2 (a 196x1024x256 matmul in
/// two workgroups of 98 rows: 1.06 -> 0.92 ms).
int64_t nearDivisor(int64_t range, int64_t rows) {
  if (range <= rows || range % rows == 0)
    return rows;
  for (int64_t r = rows - 1; r >= std::max<int64_t>(2, (3 * rows + 3) / 4); --r)
    if (range % r == 0)
      return r;
  return rows;
}

ContractionKnobs contractionKnobs(const search::Schedule *knobs, unsigned index,
                                  const ContractionLoops &c,
                                  const HostMachine &machine) {
  ContractionKnobs k;
  // Two vectors of the machine when the loop is that long (the rest peeled
  // off, vectorizeContraction), one when it is shorter; else the widest
  // vector dividing it. Rows as many as the registers hold.
  int64_t range = c.ranges[c.inner];
  k.cols = range >= machine.tileColumns() ? machine.tileColumns()
           : range >= machine.lanes()     ? machine.lanes()
                                          : vectorLanes(range);
  k.rows = machine.tileRows();
  // Up to four vectors that the tile's vectors do not divide: one tile
  // over all of them, a power of two wide with the last vector masked,
  // rows as many as keep the accumulators (7x7 pixels: 4 vectors of 16 by
  // 4 rows instead of tiles of 32, 16 and 1 columns that broadcast each row
  // three times). Not with fewer than 4 rows: AVX2's 3 rows of 4 vectors
  // over 28 columns ran EfficientNet's 672 x 112 x 196 matmul (in pieces of
  // 28 columns) in 0.82 ms, 6 rows of 2 vectors and the rest peeled in 0.51.
  int64_t lanes = machine.lanes(), wide = int64_t(llvm::PowerOf2Ceil(range));
  int64_t wideRows = 2 * k.rows * lanes / wide;
  if (lanes >= 4 && range > lanes && range < 4 * lanes && range % lanes &&
      wide < range + lanes && wideRows >= 4) {
    k.cols = wide;
    k.rows = wideRows;
  }
  if (!c.rowDims.empty())
    k.rows = nearDivisor(c.ranges[c.rowDims.front()], k.rows);
  if (c.reduction)
    k.kTile = defaultReductionChunk(c.ranges[*c.reduction], k.cols, machine);
  // Panels pay off when B comes from memory (weights, inputs) with a long
  // reduction: measured 11.8 -> 7.8 ms on a 128x768x3072 matmul, 45.7 ->
  // 31.7 ms on GEMM 1024^3 with the same tiles; not for im2col columns
  // computed in the kernel. A constant weight's panels are packed at
  // compile time, costing nothing per run, whatever the reduction: read
  // as stored, PP-OCRv4's 40 x 120 x 6625 head (under a softmax, 10
  // workgroups) fetched 128 bytes from each of 120 rows 26 KB apart per
  // tile, 1.5-2.8 ms in the model; from panels 0.85-0.94.
  // One computed at run time is packed by each workgroup for its own rows,
  // so only where enough row tiles read each panel (kMinPackedRowTiles) or
  // it is transposed (its columns would be gathered lane by lane).
  k.pack = c.streamsArgument && c.reduction &&
                   (c.streamsWeight ||
                    (c.ranges[*c.reduction] >= kMinPackedReduction &&
                     (c.streamsTransposed ||
                      c.rows() >= kMinPackedRowTiles * k.rows)))
               ? 1
               : 0;
  int64_t heuristicPack = k.pack;
  // A transposed broadcast operand read a row of it apart per reduction
  // step, a new page each (4096 rows: 16 KiB): packed into panels of the
  // tile's rows, a ConvTranspose's 4096x256x1024 Gemm with transA ran
  // 39-47 -> 26-30 ms.
  k.packRows = c.broadcastsTransposed && c.reduction &&
                       c.ranges[*c.reduction] >= kMinPackedRowsReduction &&
                       c.rows() > k.rows
                   ? 1
                   : 0;
  if (!knobs)
    return k;
  std::string prefix = knobs::contraction(index);
  auto get = [&](const char *name, int64_t &value) {
    if (auto it = knobs->find(prefix + name); it != knobs->end())
      value = it->second;
  };
  get(knobs::kRows, k.rows);
  get(knobs::kCols, k.cols);
  get(knobs::kRowDim, k.rowDim);
  get(knobs::kKTile, k.kTile);
  get(knobs::kPack, k.pack);
  if (k.pack == knobs::kHeuristicPack)
    k.pack = heuristicPack;
  get(knobs::kPackRows, k.packRows);
  get(knobs::kOrder, k.order);
  return k;
}

/// Vectorizes the copy `pack` into panels of `cols` lanes: one vector per
/// panel row (the source's row is contiguous along them unless
/// `transposed`), or with a `group` of reduction steps (> 1) one
/// (cols x group) block per group of rows, interleaved. Left scalar, LLVM
/// copied panels one float at a time. Returns the panels.
Value vectorizePanelCopy(RewriterBase &rewriter, linalg::GenericOp pack,
                         bool transposed, int64_t cols, int64_t group) {
  if (transposed)
    return pack.getResult(0);
  SmallVector<int64_t> tile(pack.getNumLoops(), 1);
  if (group > 1) {
    tile.back() = group;
    tile[tile.size() - 2] = cols;
  } else {
    tile.back() = cols;
  }
  SmallVector<int64_t> order;
  for (int64_t d = 0; d < int64_t(pack.getNumLoops()); ++d)
    order.push_back(d);
  auto tiled = tileInPlace(rewriter, pack, tile, order);
  if (failed(tiled))
    return pack.getResult(0);
  (void)linalg::vectorize(rewriter, tiled->tiledOps.back());
  return tiled->replacements.front();
}

/// Whether `v` is defined outside the loops `outer` (a value defined in the
/// kernel before them, or one of its arguments).
bool isDefinedOutside(Value v, Operation *outer) {
  Operation *where = v.getDefiningOp();
  if (!where)
    where = cast<BlockArgument>(v).getOwner()->getParentOp();
  return !outer->isAncestor(where);
}

/// Moves the chain of slices that makes `v` in loop `loop` before it when
/// each slice takes the same part on every iteration (its offsets and
/// sizes defined outside the loop): the slice that splitting off a rest of
/// columns takes of a block's B (attention's keys, 1488 of 1500) then no
/// longer makes every block pack B again. Returns whether `v` is then
/// defined outside the loop; changes nothing otherwise.
bool hoistSlices(Value v, Operation *loop) {
  SmallVector<tensor::ExtractSliceOp> chain;
  while (!isDefinedOutside(v, loop)) {
    auto slice = v.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice)
      return false;
    for (Value operand : slice->getOperands().drop_front())
      if (!isDefinedOutside(operand, loop))
        return false;
    chain.push_back(slice);
    v = slice.getSource();
  }
  for (tensor::ExtractSliceOp slice : llvm::reverse(chain))
    slice->moveBefore(loop);
  return true;
}

/// The outermost of the loops around `op` (itself when none) that `v` does
/// not change in, its slices moved before them (hoistSlices): where
/// panels of `v` are packed once per workgroup instead of per iteration
/// (attention's K and V, per block of 50 queries otherwise).
Operation *outermostInvariantLoop(Value v, Operation *op) {
  Operation *before = op;
  while (auto loop = before->getParentOfType<scf::ForOp>()) {
    if (!isDefinedOutside(v, loop) && !hoistSlices(v, loop))
      break;
    before = loop;
  }
  return before;
}

/// The tensor whose panels a tile's operand (`slice`, in loops around
/// `outer`) is read from: the slice's source, or a tensor (`packable`) that
/// source is a unit-stride slice of, where the source changes in a loop
/// around `outer` and that tensor does not (a reduction chunk of
/// attention's V): packed once before that loop instead of on each of its
/// iterations (whisper's P V in chunks of 300 keys).
Value panelSource(tensor::ExtractSliceOp slice, Operation *outer,
                  function_ref<bool(RankedTensorType)> packable) {
  Value from = slice.getSource();
  for (auto loop = outer->getParentOfType<scf::ForOp>(); loop;
       loop = loop->getParentOfType<scf::ForOp>()) {
    if (isDefinedOutside(from, loop))
      continue;
    auto s = from.getDefiningOp<tensor::ExtractSliceOp>();
    if (!s || !s.hasUnitStride() ||
        s.getSourceType().getRank() != s.getType().getRank() ||
        !isDefinedOutside(s.getSource(), loop) || !packable(s.getSourceType()))
      break;
    from = s.getSource();
  }
  return from;
}

/// A tensor of `shape` (element `type`) extended to `padded` (no dim
/// shorter), zero past the original sizes: its zero parts filled (one slab
/// per extended dim), and the slice of the original shape that a copy
/// writes before it is inserted back (`whole`, `part`).
struct ZeroPadded {
  Value whole, part;
};
ZeroPadded zeroPadded(RewriterBase &rewriter, Location loc,
                      ArrayRef<int64_t> shape, Type type,
                      ArrayRef<int64_t> padded) {
  size_t rank = shape.size();
  Value whole = rewriter.create<tensor::EmptyOp>(loc, padded, type);
  SmallVector<OpFoldResult> ones(rank, rewriter.getIndexAttr(1));
  Value zero =
      rewriter.create<arith::ConstantOp>(loc, type, rewriter.getZeroAttr(type));
  // Slab d: dims before d within the original sizes, d past them, the
  // dims after it whole.
  for (size_t d = 0; d < rank; ++d) {
    if (padded[d] == shape[d])
      continue;
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0)), sizes;
    for (size_t e = 0; e < rank; ++e)
      sizes.push_back(rewriter.getIndexAttr(e < d ? shape[e] : padded[e]));
    offsets[d] = rewriter.getIndexAttr(shape[d]);
    sizes[d] = rewriter.getIndexAttr(padded[d] - shape[d]);
    Value slab = rewriter.create<tensor::ExtractSliceOp>(loc, whole, offsets,
                                                         sizes, ones);
    Value zeros = rewriter.create<linalg::FillOp>(loc, zero, slab).getResult(0);
    whole = rewriter.create<tensor::InsertSliceOp>(loc, zeros, whole, offsets,
                                                   sizes, ones);
  }
  SmallVector<OpFoldResult> sizes;
  for (int64_t size : shape)
    sizes.push_back(rewriter.getIndexAttr(size));
  Value part = rewriter.create<tensor::ExtractSliceOp>(
      loc, whole, SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(0)),
      sizes, ones);
  return {whole, part};
}

/// `copy`'s result (written into `padded.part`) inserted back into the
/// whole of `padded`.
Value insertPart(RewriterBase &rewriter, Location loc, Value copy,
                 ZeroPadded padded) {
  auto slice = padded.part.getDefiningOp<tensor::ExtractSliceOp>();
  return rewriter.create<tensor::InsertSliceOp>(
      loc, copy, padded.whole, slice.getMixedOffsets(), slice.getMixedSizes(),
      slice.getMixedStrides());
}

/// `from` copied before `before` into zeros of `cols` along its dim
/// `nDim` (static, shorter).
Value zeroPaddedColumns(RewriterBase &rewriter, Location loc, Value from,
                        int64_t nDim, int64_t cols, Operation *before) {
  auto type = cast<RankedTensorType>(from.getType());
  SmallVector<int64_t> wide(type.getShape());
  wide[nDim] = cols;
  rewriter.setInsertionPoint(before);
  ZeroPadded padded =
      zeroPadded(rewriter, loc, type.getShape(), type.getElementType(), wide);
  Value copy =
      rewriter.create<linalg::CopyOp>(loc, from, padded.part).getResult(0);
  return insertPart(rewriter, loc, copy, padded);
}

/// The copy of `from` (the tensor a tile's slice is of) into panels
/// (buildPanels), computed before `outer` on every run.
Value copyIntoPanels(RewriterBase &rewriter, linalg::GenericOp op, Value from,
                     bool transposed, int64_t cols, Operation *outer,
                     int64_t group) {
  auto source = cast<RankedTensorType>(from.getType());
  int64_t rank = source.getRank();
  int64_t nDim = transposed ? rank - 2 : rank - 1;
  int64_t kDim = transposed ? rank - 1 : rank - 2;
  int64_t n = source.getDimSize(nDim), kk = source.getDimSize(kDim);
  bool grouped = group > 1;
  // The panels, computed once before the tile loops.
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(outer);
  Type element = panelElement(source.getElementType(), group);
  SmallVector<int64_t> packedShape(source.getShape().drop_back(2));
  packedShape.append({n / cols, kk / group, cols});
  if (grouped)
    packedShape.push_back(group);
  // The source with its n dim split in (n / cols, cols) (and when grouped
  // its k dim in (k / group, group)), so the copy is a permutation (and
  // vectorizes): loops (lead..., j, k, c[, p]) read source[lead..., k, j, c]
  // (or [lead..., j, c, k] when transposed; k is (k, p) when grouped).
  unsigned loops = unsigned(rank + (grouped ? 2 : 1));
  auto dim = [&](int64_t d) { return getAffineDimExpr(unsigned(d), ctx); };
  AffineExpr j = dim(rank - 2), kExpr = dim(rank - 1), c = dim(rank);
  SmallVector<int64_t> expandedShape;
  SmallVector<ReassociationIndices> groups;
  SmallVector<AffineExpr> read;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t e = int64_t(expandedShape.size());
    if (d == nDim) {
      expandedShape.append({n / cols, cols});
      groups.push_back({e, e + 1});
      read.append({j, c});
    } else if (d == kDim && grouped) {
      expandedShape.append({kk / group, group});
      groups.push_back({e, e + 1});
      read.append({kExpr, dim(rank + 1)});
    } else {
      expandedShape.push_back(source.getDimSize(d));
      groups.push_back({e});
      read.push_back(d == kDim ? kExpr : dim(d));
    }
  }
  Value expanded = rewriter.create<tensor::ExpandShapeOp>(
      loc, RankedTensorType::get(expandedShape, source.getElementType()), from,
      groups);
  linalg::GenericOp pack =
      copyThrough(rewriter, loc, expanded, packedShape,
                  AffineMap::get(loops, 0, read, ctx), element);
  Value panels = vectorizePairCopy(rewriter, pack);
  if (!panels && grouped)
    panels = vectorizeGroupCopy(rewriter, pack);
  if (!panels)
    panels = vectorizePanelCopy(rewriter, pack, transposed, cols, group);
  if (grouped) {
    // [..., P / cols, K / group, cols * group]: a tile's step reads one
    // row.
    SmallVector<ReassociationIndices> merge;
    for (int64_t d = 0; d < rank; ++d)
      merge.push_back({d});
    merge.push_back({rank, rank + 1});
    SmallVector<int64_t> merged(packedShape.begin(), packedShape.end() - 2);
    merged.push_back(cols * group);
    rewriter.setInsertionPoint(outer); // the copy's tiling moved it
    panels = rewriter.create<tensor::CollapseShapeOp>(
        loc, RankedTensorType::get(merged, element), panels, merge);
  }

  return panels;
}

/// Copies operand `b` of a register tile `op` (indexed (..., k, p), or
/// (..., p, k) when `transposed`, where the tile spans `cols` of p) into
/// panels [P / cols, K, cols] before the tile loops `outer`: each tile then
/// walks one contiguous panel through the reduction instead of rows that
/// are a whole page apart (and so all in the same few L1 sets). With a
/// `group` of G reduction steps (a tile of grouped dot products: bfloat16
/// pairs of f32, or quads of bytes) the panels are [P / cols, K / G, cols *
/// G], element (k, p) at [k / G, G p + k % G], as AVX512-BF16's and VNNI's
/// dot products read them. A constant weight's panels are
/// packed at compile time instead (PrepackedPanels.h). Returns the
/// tile's view of its panels: the slice of `b`'s shape (its last two dims (k,
/// p)), or when grouped a vector of cols * G; null, changing nothing,
/// unless `b` is indexed so, with unit tiles on its leading dims, statically
/// shaped, and read through a slice of a tensor defined outside the tile
/// loops; null too when the panels are not packed at compile time and
/// `copy` is false. A tile of fewer columns than `cols` (all of them: an
/// integer dot tile of whole vectors over 49 pixels) reads panels of
/// `cols` whose columns past its own are zeros, copied per run.
Value buildPanels(RewriterBase &rewriter, linalg::GenericOp op, OpOperand *b,
                  bool transposed, int64_t cols, Operation *outer,
                  int64_t group, bool copy = true) {
  auto slice = b->get().getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || cols < (group > 1 ? 1 : 2) ||
      !isDefinedOutside(slice.getSource(), outer))
    return {};
  auto source = dyn_cast<RankedTensorType>(slice.getSource().getType());
  if (!source || !source.hasStaticShape() || source.getRank() < 2 ||
      !slice.hasUnitStride() || !panelElement(source.getElementType(), group))
    return {};
  int64_t rank = source.getRank();
  // Source dims of n and k: (..., k, n), or (..., n, k) when transposed.
  int64_t nDim = transposed ? rank - 2 : rank - 1;
  int64_t kDim = transposed ? rank - 1 : rank - 2;
  int64_t n = source.getDimSize(nDim), kk = source.getDimSize(kDim);
  bool padCols = n < cols;
  if ((n % cols != 0 && !padCols) || kk % group != 0)
    return {};
  SmallVector<int64_t> sizes(slice.getStaticSizes());
  for (int64_t d = 0; d < rank; ++d)
    if (sizes[d] != (d == nDim ? std::min(n, cols) : d == kDim ? group : 1))
      return {};

  Location loc = op.getLoc();
  Type element = panelElement(source.getElementType(), group);
  // Constant weights were packed at compile time; the rest is copied into
  // panels before the tile loops.
  Value panels = padCols ? Value()
                         : prepackedPanels(rewriter, slice.getSource(),
                                           transposed, cols, outer, group);
  if (!panels && !copy)
    return {};
  SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
  if (!panels) {
    auto packable = [&](RankedTensorType t) {
      return t.hasStaticShape() &&
             (padCols ? t.getDimSize(nDim) == n
                      : t.getDimSize(nDim) % cols == 0) &&
             t.getDimSize(kDim) % group == 0;
    };
    Value from = panelSource(slice, outer, packable);
    rewriter.setInsertionPoint(slice);
    if (from != slice.getSource()) {
      auto within = offsetsWithin(rewriter, loc, slice.getResult(), from);
      if (within)
        offsets = *within;
      else
        from = slice.getSource();
    }
    Operation *before = outermostInvariantLoop(from, outer);
    if (padCols)
      from = zeroPaddedColumns(rewriter, loc, from, nDim, cols, before);
    panels =
        copyIntoPanels(rewriter, op, from, transposed, cols, before, group);
  }

  // The tile's slice of B: the same elements of the panels.
  rewriter.setInsertionPoint(slice);
  auto divide = [&](OpFoldResult v, int64_t by) -> OpFoldResult {
    if (by == 1)
      return v;
    return rewriter
        .create<arith::DivUIOp>(
            loc, getValueOrCreateConstantIndexOp(rewriter, loc, v),
            rewriter.create<arith::ConstantIndexOp>(loc, by))
        .getResult();
  };
  SmallVector<OpFoldResult> packedOffsets(offsets.begin(), offsets.end() - 2);
  packedOffsets.append({divide(offsets[nDim], cols),
                        divide(offsets[kDim], group),
                        rewriter.getIndexAttr(0)});
  SmallVector<OpFoldResult> packedSizes(rank + 1, rewriter.getIndexAttr(1));
  packedSizes.back() = rewriter.getIndexAttr(cols * group);
  SmallVector<OpFoldResult> strides(rank + 1, rewriter.getIndexAttr(1));
  RankedTensorType viewType;
  if (group > 1) {
    viewType = RankedTensorType::get({cols * group}, element);
  } else {
    // The tile reads (..., k, n) from the panels.
    auto sliceType = cast<RankedTensorType>(slice.getType());
    SmallVector<int64_t> shape(sliceType.getShape());
    if (transposed)
      std::swap(shape[rank - 2], shape[rank - 1]);
    viewType = RankedTensorType::get(shape, element);
  }
  return rewriter.create<tensor::ExtractSliceOp>(
      loc, viewType, panels, packedOffsets, packedSizes, strides);
}

/// `copy` (a rounding copy of a slice) with the elementwise producer of the
/// sliced tensor computed inside it, when that producer is a linalg op of
/// the kernel read only through slices (attention's P, the softmax's
/// division by the row sums): one pass then writes bfloat16 where two
/// wrote f32 and read it back. `copy` itself otherwise.
linalg::GenericOp fuseRoundedProducer(RewriterBase &rewriter,
                                      linalg::GenericOp copy) {
  OpOperand *in = copy.getDpsInputOperand(0);
  auto slice = in->get().getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice)
    return copy;
  auto producer = slice.getSource().getDefiningOp<linalg::GenericOp>();
  if (!producer || producer->getNumResults() != 1 ||
      producer.getNumReductionLoops() != 0 ||
      !llvm::all_of(producer->getUsers(), [](Operation *user) {
        return isa<tensor::ExtractSliceOp>(user);
      }))
    return copy;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(copy);
  FailureOr<TilingResult> tiled = tensor::replaceExtractSliceWithTiledProducer(
      rewriter, slice, cast<OpResult>(slice.getSource()));
  if (failed(tiled) || tiled->tiledValues.size() != 1)
    return copy;
  rewriter.modifyOpInPlace(copy, [&] { in->set(tiled->tiledValues.front()); });
  if (!linalg::areElementwiseOpsFusable(in))
    return copy;
  FailureOr<linalg::ElementwiseOpFusionResult> fused =
      linalg::fuseElementwiseOps(rewriter, in);
  if (failed(fused))
    return copy;
  auto fusedOp = cast<linalg::GenericOp>(fused->fusedOp);
  Operation *tiledProducer = tiled->tiledOps.front();
  rewriter.replaceOp(copy, fused->replacements.lookup(copy.getResult(0)));
  if (tiledProducer->use_empty())
    rewriter.eraseOp(tiledProducer);
  return fusedOp;
}

/// Rounds the tensor that operand `a` of register tile `op` slices (before
/// the tile loops `outer`) to bfloat16 in its own layout, and returns the
/// tile's slice of it: for an operand contiguous along the reduction (A as
/// usual, (..., m, k)), whose pairs are already adjacent. An elementwise
/// loop, which LLVM vectorizes; null, changing nothing, unless `a` is a
/// slice of a static f32 tensor defined outside the tile loops. With
/// `padded` [rows, k] beyond its last two dims (an AMX block's reduction of
/// no whole tile steps: attention's P over 1500 keys; a rest of rows short
/// of a tile), the copy is that large, zero past the source, and the tile's
/// slice, whole along those dims, spans it.
Value roundToBf16(RewriterBase &rewriter, OpOperand *a, Operation *outer,
                  std::array<int64_t, 2> padded = {0, 0}) {
  auto slice = a->get().getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || !isDefinedOutside(slice.getSource(), outer))
    return {};
  Value from = slice.getSource();
  auto source = dyn_cast<RankedTensorType>(from.getType());
  if (!source || !source.hasStaticShape() || !source.getElementType().isF32())
    return {};
  int64_t rank = source.getRank();
  SmallVector<int64_t> wide(source.getShape());
  ArrayRef<int64_t> sliceSizes = slice.getStaticSizes();
  for (int64_t i = 0; i < 2; ++i) {
    int64_t d = rank - 2 + i;
    if (padded[i] <= wide[d])
      continue;
    // The tile must span the padded dim, in a slice of the source's rank.
    if (sliceSizes[d] != wide[d] || slice.getType().getRank() != rank)
      return {};
    wide[d] = padded[i];
  }
  Location loc = slice.getLoc();
  rewriter.setInsertionPoint(outer);
  Type bf16 = rewriter.getBF16Type();
  AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
  bool pad = ArrayRef<int64_t>(wide) != source.getShape();
  ZeroPadded zeros;
  if (pad)
    zeros = zeroPadded(rewriter, loc, source.getShape(), bf16, wide);
  else
    zeros.part = rewriter.create<tensor::EmptyOp>(loc, source.getShape(), bf16);
  auto copy = rewriter.create<linalg::GenericOp>(
      loc, zeros.part.getType(), ValueRange{from}, ValueRange{zeros.part},
      SmallVector<AffineMap>{identity, identity},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &b, Location l, ValueRange args) {
        b.create<linalg::YieldOp>(
            l, b.create<arith::TruncFOp>(l, bf16, args[0]).getResult());
      });
  linalg::GenericOp fused = fuseRoundedProducer(rewriter, copy);
  Value round = fused->getResults().back();
  if (fused == copy)
    if (Value rows = vectorizeRoundedCopy(rewriter, copy))
      round = rows;
  if (pad)
    round = insertPart(rewriter, loc, round, zeros);
  rewriter.setInsertionPoint(slice);
  SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
  SmallVector<int64_t> shape(slice.getType().getShape());
  for (int64_t d = rank - 2; d < rank; ++d)
    if (wide[d] != source.getDimSize(d)) {
      sizes[d] = rewriter.getIndexAttr(wide[d]);
      shape[d] = wide[d];
    }
  return rewriter.create<tensor::ExtractSliceOp>(
      loc, RankedTensorType::get(shape, bf16), round, slice.getMixedOffsets(),
      sizes, slice.getMixedStrides());
}

/// Makes register tile `op` read its operand `b` from f32 panels
/// (buildPanels); a transposed B's map gets its last two results swapped
/// to match. Returns false, changing nothing, when b cannot be packed.
bool packPanels(RewriterBase &rewriter, linalg::GenericOp op, OpOperand *b,
                bool transposed, int64_t cols, Operation *outer,
                bool copy = true) {
  auto slice = b->get().getDefiningOp<tensor::ExtractSliceOp>();
  Value packed = buildPanels(rewriter, op, b, transposed, cols, outer,
                             /*group=*/1, copy);
  if (!packed)
    return false;
  SmallVector<AffineMap> opMaps = op.getIndexingMapsArray();
  if (transposed) {
    AffineMap m = opMaps[b->getOperandNumber()];
    SmallVector<AffineExpr> results(m.getResults());
    unsigned rank = m.getNumResults();
    std::swap(results[rank - 2], results[rank - 1]);
    opMaps[b->getOperandNumber()] = AffineMap::get(
        m.getNumDims(), m.getNumSymbols(), results, op.getContext());
  }
  rewriter.modifyOpInPlace(op, [&] {
    op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(opMaps));
    b->set(packed);
  });
  if (slice->use_empty())
    rewriter.eraseOp(slice);
  return true;
}

/// Packs the operand a register tile streams along its columns (B of
/// C[m, n] += A[m, k] * B[k, n]) into panels [N / cols, K, cols]; a
/// transposed B (..., n, k), as Gemm with transB reads its weights, is
/// transposed into the same panels. Unless `copy`, only panels packed at
/// compile time are read (false, changing nothing, without them).
bool packStreamedOperand(RewriterBase &rewriter,
                         const scf::SCFTilingResult &tiled,
                         const ContractionLoops &c, int64_t cols, bool copy) {
  auto op = dyn_cast<linalg::GenericOp>(tiled.tiledOps.back());
  if (!op || tiled.loops.empty())
    return false;
  for (OpOperand *in : op.getDpsInputOperands())
    if (auto t = streamedLayout(op.getMatchingIndexingMap(in), c))
      return packPanels(rewriter, op, in, *t, cols, tiled.loops.front(), copy);
  return false;
}

/// Packs the operand a register tile broadcasts along its rows (A of
/// C[m, n] += A[m, k] * B[k, n], rows along m) into panels [M / rows, K,
/// rows]: each step of the reduction then broadcasts its rows from one
/// cache line instead of `rows` lines a row of A apart.
bool packBroadcastOperand(RewriterBase &rewriter,
                          const scf::SCFTilingResult &tiled,
                          const ContractionLoops &c, unsigned row,
                          int64_t rows) {
  auto op = dyn_cast<linalg::GenericOp>(tiled.tiledOps.back());
  if (!op || tiled.loops.empty())
    return false;
  for (OpOperand *in : op.getDpsInputOperands())
    if (!streamedLayout(op.getMatchingIndexingMap(in), c))
      if (auto t = panelLayout(op.getMatchingIndexingMap(in), row, c.reduction))
        return packPanels(rewriter, op, in, *t, rows, tiled.loops.front());
  return false;
}

/// Whether contraction `c` (a workgroup's) is at most one register tile
/// of rows, so it reads each element of B once (a matrix-vector product: a
/// classifier at batch 1), with no panels or chunks asked for: copying B
/// into panels then costs more than it saves (1x1280 x 1280x1000: 0.24 ms
/// streamed, 0.4-0.6 ms packed). A transposed B is still packed (its
/// columns would be gathered lane by lane).
bool streamsOnce(const ContractionLoops &c, const search::Schedule *knobs,
                 unsigned index, const HostMachine &machine) {
  ContractionKnobs k = contractionKnobs(knobs, index, c, machine);
  std::string prefix = knobs::contraction(index);
  bool asked = false;
  if (knobs) {
    auto pack = knobs->find(prefix + knobs::kPack);
    asked = (pack != knobs->end() && pack->second != knobs::kHeuristicPack) ||
            knobs->count(prefix + knobs::kKTile);
  }
  return !asked && c.rows() <= k.rows && !c.streamsTransposed;
}

/// The operands of a contraction tile: the one streamed along the columns
/// and the one broadcast along the rows (loop `row`), each with whether it
/// is transposed (panelLayout); null when the op has no such operand.
struct TileOperands {
  OpOperand *streamed = nullptr, *broadcast = nullptr;
  bool streamedT = false, broadcastT = false;
};
TileOperands tileOperands(linalg::GenericOp op, const ContractionLoops &c,
                          unsigned row) {
  TileOperands t;
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(in);
    if (auto s = streamedLayout(map, c)) {
      t.streamed = in;
      t.streamedT = *s;
    } else if (auto b = panelLayout(map, row, c.reduction)) {
      t.broadcast = in;
      t.broadcastT = *b;
    }
  }
  return t;
}

/// Which operands of contraction `op` its body extends from integers of
/// `bits` (bytes or words) unsigned (arith.extui) or signed (extsi), by
/// input position: the integer contractions of quantized matmuls
/// (IntegerMatmuls.cpp).
SmallVector<std::optional<bool>> extendedIntegers(linalg::GenericOp op,
                                                  unsigned bits) {
  SmallVector<std::optional<bool>> how(op.getNumDpsInputs());
  Block *body = op.getBody();
  for (unsigned i = 0; i < how.size(); ++i) {
    BlockArgument arg = body->getArgument(i);
    if (!arg.getType().isInteger(bits) || !arg.hasOneUse())
      continue;
    Operation *user = *arg.getUsers().begin();
    if (isa<arith::ExtUIOp>(user))
      how[i] = true;
    else if (isa<arith::ExtSIOp>(user))
      how[i] = false;
  }
  return how;
}

/// The grouped dot products register tiles of contraction `op` (its loops
/// `c`, tiled `cols` wide along its columns, `row` its row loop) take, if
/// any: the machine has them, the tile is whole vectors (of a 512-bit
/// register but for word pairs, which take the machine's own), the
/// reduction (or its chunk `kTile`) is whole groups, and one
/// operand streams the columns and the other broadcasts the rows.
/// - bfloat16 pairs (--precision=bf16) of an f32 contraction with more
///   rows than one tile (a matrix-vector product reads each weight once:
///   converting it into pairs first would cost more);
/// - byte quads (VNNI) of an i32 contraction of an unsigned by a signed
///   byte operand;
/// - word pairs (vpmaddwd, in the machine's own vectors) of an i32
///   contraction of two signed word operands.
std::optional<DotKind> dotKind(linalg::GenericOp op, const ContractionLoops &c,
                               std::optional<unsigned> row, bool masked,
                               int64_t cols, int64_t kTile,
                               const HostMachine &machine) {
  auto out =
      dyn_cast<RankedTensorType>(op.getDpsInitOperand(0)->get().getType());
  if (!out || !c.reduction || !row || masked || cols % machine.lanes() != 0)
    return std::nullopt;
  std::optional<DotKind> kind;
  if (machine.bf16Pairs() && out.getElementType().isF32() &&
      c.rows() > machine.tileRows())
    kind = DotKind::Bf16Pairs;
  SmallVector<std::optional<bool>> bytes = extendedIntegers(op, 8);
  if (machine.hasVnniDot && out.getElementType().isInteger(32) &&
      bytes.size() == 2 && bytes[0] && bytes[1] && *bytes[0] != *bytes[1])
    kind = DotKind::Int8Quads;
  SmallVector<std::optional<bool>> words = extendedIntegers(op, 16);
  if (machine.hasWordDot && out.getElementType().isInteger(32) &&
      words.size() == 2 && words[0] == false && words[1] == false)
    kind = DotKind::Int16Pairs;
  if (!kind || (kind != DotKind::Int16Pairs && machine.lanes() != kDotLanes))
    return std::nullopt;
  int64_t steps = kTile ? kTile : c.ranges[*c.reduction];
  if (steps % groupSteps(*kind) != 0)
    return std::nullopt;
  TileOperands t = tileOperands(op, c, *row);
  if (!t.streamed || !t.broadcast)
    return std::nullopt;
  return kind;
}

/// Packs the operands of register tile `tiled` (one group of reduction
/// steps, `rows` x `cols`) into groups before its loops and computes it
/// with grouped dot products of `kind`. False, leaving the tile a linalg
/// op, when an operand cannot be packed.
bool vectorizeDotTile(RewriterBase &rewriter, const scf::SCFTilingResult &tiled,
                      const ContractionLoops &c, DotKind kind, unsigned row,
                      int64_t rows, int64_t cols, int64_t lanes) {
  auto op = dyn_cast<linalg::GenericOp>(tiled.tiledOps.back());
  if (!op || tiled.loops.empty())
    return false;
  TileOperands t = tileOperands(op, c, row);
  if (!t.streamed || !t.broadcast)
    return false;
  int64_t group = groupSteps(kind);
  Operation *outer = tiled.loops.front();
  Value bGroups =
      buildPanels(rewriter, op, t.streamed, t.streamedT, cols, outer, group);
  if (!bGroups)
    return false;
  // A as usual (..., m, k) holds its groups adjacent already: f32 rounded
  // in place (packed, it was a scatter of 4-byte pieces), integers read as
  // they are; transposed, packed.
  AffineMap aMap = op.getMatchingIndexingMap(t.broadcast);
  Value aGroups;
  if (!t.broadcastT)
    aGroups = buildPanels(rewriter, op, t.broadcast, t.broadcastT, rows, outer,
                          group);
  else if (kind == DotKind::Int8Quads)
    // A constant weight's rows packed at compile time, [M / rows, K / 4,
    // rows * 4]: a tile streams through one panel where in place it read
    // 4 bytes from each of its rows 512 bytes apart (quantized ResNet-50's
    // 2048 x 512 x 49 matmul waited on those loads, its weights in memory).
    aGroups = buildPanels(rewriter, op, t.broadcast, /*transposed=*/true, rows,
                          outer, group, /*copy=*/false);
  if (aGroups)
    aMap = AffineMap();
  else if (!t.broadcastT)
    return false;
  else if (kind == DotKind::Bf16Pairs)
    aGroups = roundToBf16(rewriter, t.broadcast, outer);
  else
    aGroups = t.broadcast->get();
  if (!aGroups)
    return false;
  bool aUnsigned = false;
  if (kind == DotKind::Int8Quads)
    aUnsigned = *extendedIntegers(op, 8)[t.broadcast->getOperandNumber()];
  emitDotTile(rewriter, op, kind, aGroups, aMap, bGroups, row, c.inner, rows,
              cols, lanes, aUnsigned);
  return true;
}

/// The loop order of a contraction's register tiles: the parallel loops (the
/// row loop and the inner one swapped when `rowFirst`), then the reductions.
SmallVector<int64_t> registerTileOrder(linalg::GenericOp op,
                                       const ContractionLoops &c,
                                       std::optional<unsigned> row,
                                       bool rowFirst) {
  auto iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> order;
  for (unsigned d = 0; d < c.ranges.size(); ++d)
    if (iterators[d] == utils::IteratorType::parallel)
      order.push_back(d);
  if (rowFirst) {
    auto r = llvm::find(order, int64_t(*row));
    auto i = llvm::find(order, int64_t(c.inner));
    std::iter_swap(r, i);
  }
  for (unsigned d = 0; d < c.ranges.size(); ++d)
    if (iterators[d] != utils::IteratorType::parallel)
      order.push_back(d);
  return order;
}

/// Tiles the reduction of `op` into chunks of `kTile` when that divides it:
/// the op left to tile into registers, and the chunk applied (0: none).
std::pair<linalg::GenericOp, int64_t> chunkReduction(RewriterBase &rewriter,
                                                     linalg::GenericOp op,
                                                     const ContractionLoops &c,
                                                     int64_t kTile) {
  if (c.reduction && kTile > 0 && kTile < c.ranges[*c.reduction] &&
      c.ranges[*c.reduction] % kTile == 0)
    if (auto inner = dyn_cast_or_null<linalg::GenericOp>(
            chunkLoop(rewriter, op, c.ranges.size(), *c.reduction, kTile)))
      return {inner, kTile};
  return {op, 0};
}

/// The fewest rows of a contraction's workgroup whose integer dot tiles
/// pad the columns (vectorizeContraction).
constexpr int64_t kMinPaddedDotRows = 32;

/// Register tiles of a contraction (defined below).
std::vector<int64_t>
vectorizeContraction(RewriterBase &rewriter, linalg::GenericOp op,
                     unsigned index, const HostMachine &machine,
                     const search::Schedule *knobs, search::Schedule &applied,
                     bool peel = true, bool peelRows = true,
                     bool leftover = false);

/// The pair panels [..., N / cols, K / 2, 2 cols] of `b`, operand B of AMX
/// contraction `op` (indexed (..., k, n), or (..., n, k) when `transposed`;
/// a static f32 tensor), as buildPanels packs them: at compile time for a
/// constant weight, else once per run before the outermost loop of the
/// workgroup that `b` does not change in (attention's P V in blocks of 50
/// queries and chunks of 64 keys packed V for each: whisper's encoder 208
/// -> 250 ms). With `paddedK` past K (a reduction of no whole tile steps;
/// never a constant), and for fewer than `cols` columns (the rest of a
/// contraction's columns: amxSplitCols), B is copied with zeros up to them
/// first. Null when `b` is no such tensor.
Value amxPanels(RewriterBase &rewriter, linalg::GenericOp op, Value b,
                bool transposed, int64_t cols, int64_t paddedK = 0) {
  auto source = dyn_cast<RankedTensorType>(b.getType());
  if (!source || !source.hasStaticShape() || source.getRank() < 2 ||
      !source.getElementType().isF32())
    return {};
  int64_t rank = source.getRank();
  int64_t kDim = transposed ? rank - 1 : rank - 2;
  int64_t nDim = transposed ? rank - 2 : rank - 1;
  int64_t n = source.getDimSize(nDim);
  int64_t kk = source.getDimSize(kDim);
  bool padCols = n < cols;
  bool pad = paddedK > kk || padCols;
  if ((n % cols != 0 && !padCols) || (kk % 2 != 0 && paddedK <= kk))
    return {};
  if (!pad)
    if (Value panels =
            prepackedPanels(rewriter, b, transposed, cols, op, /*group=*/2))
      return panels;
  Operation *before = outermostInvariantLoop(b, op);
  if (pad) {
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(before);
    SmallVector<int64_t> wide(source.getShape());
    wide[kDim] = std::max(kk, paddedK);
    wide[nDim] = std::max(n, cols);
    ZeroPadded padded = zeroPadded(rewriter, loc, source.getShape(),
                                   source.getElementType(), wide);
    Value copy =
        rewriter.create<linalg::CopyOp>(loc, b, padded.part).getResult(0);
    b = insertPart(rewriter, loc, copy, padded);
  }
  return copyIntoPanels(rewriter, op, b, transposed, cols, before,
                        /*group=*/2);
}

/// Block `block`'s panel [K / 2, 2 cols] of `panels` (amxPanels of `bRoot`,
/// the contraction's B before its chunks and blocks were taken: the block
/// reads a chain of slices of it, `b`; [paddedK / 2, 2 cols] with
/// `paddedK`, the whole reduction padded; a block of fewer than `cols`
/// columns reads a panel padded with zero columns: amxPanels); null unless
/// `b` is such a chain.
Value blockPanel(RewriterBase &rewriter, linalg::GenericOp block, Value b,
                 Value bRoot, Value panels, bool transposed, int64_t cols,
                 int64_t paddedK = 0) {
  Location loc = block.getLoc();
  rewriter.setInsertionPoint(block);
  std::optional<SmallVector<OpFoldResult>> at =
      offsetsWithin(rewriter, loc, b, bRoot);
  auto type = cast<RankedTensorType>(b.getType());
  int64_t rank = type.getRank();
  int64_t nDim = transposed ? rank - 2 : rank - 1;
  int64_t kDim = transposed ? rank - 1 : rank - 2;
  int64_t kk = type.getDimSize(kDim);
  if (paddedK > kk)
    kk = paddedK; // the block reads the whole reduction, zeros past it
  if (!at || type.getDimSize(nDim) > cols || kk % 2 != 0)
    return {};
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (type.getDimSize(d) != 1)
      return {};
  auto divide = [&](OpFoldResult v, int64_t by) -> OpFoldResult {
    return rewriter
        .create<arith::DivUIOp>(
            loc, getValueOrCreateConstantIndexOp(rewriter, loc, v),
            rewriter.create<arith::ConstantIndexOp>(loc, by))
        .getResult();
  };
  // [..., N / cols, K / 2, 2 cols]
  SmallVector<OpFoldResult> offsets(at->begin(), at->end() - 2);
  offsets.append({divide((*at)[nDim], cols), divide((*at)[kDim], 2),
                  rewriter.getIndexAttr(0)});
  SmallVector<OpFoldResult> sizes(rank - 1, rewriter.getIndexAttr(1));
  sizes.append(
      {rewriter.getIndexAttr(kk / 2), rewriter.getIndexAttr(2 * cols)});
  auto panelsType = cast<RankedTensorType>(panels.getType());
  return rewriter.create<tensor::ExtractSliceOp>(
      loc,
      RankedTensorType::get({kk / 2, 2 * cols}, panelsType.getElementType()),
      panels, offsets, sizes,
      SmallVector<OpFoldResult>(rank + 1, rewriter.getIndexAttr(1)));
}

/// The slices that make `v` of `from` (a chain of extract_slice ops,
/// unit strides) taken the same way of `to` (of `from`'s shape, another
/// element type); null unless `v` is such a chain.
Value sliceLikewise(RewriterBase &rewriter, Value v, Value from, Value to) {
  SmallVector<tensor::ExtractSliceOp> chain;
  while (v != from) {
    auto slice = v.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || !slice.hasUnitStride())
      return {};
    chain.push_back(slice);
    v = slice.getSource();
  }
  Type element = cast<RankedTensorType>(to.getType()).getElementType();
  for (tensor::ExtractSliceOp slice : llvm::reverse(chain)) {
    rewriter.setInsertionPoint(slice);
    RankedTensorType type = slice.getType();
    to = rewriter.create<tensor::ExtractSliceOp>(
        slice.getLoc(), RankedTensorType::get(type.getShape(), element), to,
        slice.getMixedOffsets(), slice.getMixedSizes(),
        slice.getMixedStrides());
  }
  return to;
}

/// `v` (a tensor whose dims but the last two are 1) as a 2-D tensor.
Value lastTwoDims(RewriterBase &rewriter, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t rank = type.getRank();
  if (rank == 2)
    return v;
  SmallVector<OpFoldResult> sizes;
  for (int64_t s : type.getShape())
    sizes.push_back(rewriter.getIndexAttr(s));
  return rewriter.create<tensor::ExtractSliceOp>(
      loc,
      RankedTensorType::get(type.getShape().take_back(2),
                            type.getElementType()),
      v, SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(0)), sizes,
      SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(1)));
}

/// The shortest reduction of no whole tile steps that AMX blocks take,
/// padded: shorter ones lose more to the padding than the tiles gain (40 x
/// 70 x 32: 1.2 us in fp32 register tiles, 2.1 padded to 96).
constexpr int64_t kMinPaddedReduction = 4 * kAmxSteps;

/// Whether contraction `op` (its loops `c`) can compute in blocks on AMX
/// tiles (amxContraction): --precision=bf16 on a CPU with AMX, an f32
/// output whose last two dims are the row loop and the columns, a
/// reduction of at least one tile step (kAmxSteps), at least `minRows` rows
/// and `minCols` columns (fewer than a tile: a rest split off a contraction
/// that has more, computed in padded tiles), B streamed and A
/// broadcast as (..., m, k), both static f32, neither a constant when the
/// reduction is no whole tile steps (their copies are padded per run; a
/// constant's are made at compile time, unpadded) and then at least
/// kMinPaddedReduction. (Those steps as register tiles
/// accumulating after the blocks made attention's P V slower than its fp32
/// tiles reading P in place: whisper's encoder 199 -> 216 ms, DINOv2 40.1
/// -> 45.0, ViT-S/16 37.8 -> 35.4.)
bool takesAmxBlocks(linalg::GenericOp op, const ContractionLoops &c,
                    const HostMachine &machine, int64_t minRows,
                    int64_t minCols) {
  if (!machine.amx() || !c.reduction || c.rowDims.empty() ||
      c.ranges[*c.reduction] < kAmxSteps)
    return false;
  unsigned row = c.rowDims.front();
  auto out = cast<RankedTensorType>(op.getDpsInitOperand(0)->get().getType());
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  unsigned outRank = outMap.getNumResults();
  TileOperands t = tileOperands(op, c, row);
  if (!out.getElementType().isF32() || outRank < 2 ||
      outMap.getResult(outRank - 2) != getAffineDimExpr(row, op.getContext()) ||
      !t.streamed || !t.broadcast || !t.broadcastT)
    return false;
  for (OpOperand *in : {t.streamed, t.broadcast}) {
    auto type = dyn_cast<RankedTensorType>(in->get().getType());
    if (!type || !type.hasStaticShape() || !type.getElementType().isF32())
      return false;
  }
  if (c.ranges[*c.reduction] % kAmxSteps != 0 &&
      (c.ranges[*c.reduction] < kMinPaddedReduction || c.streamsWeight ||
       isWeightView(t.broadcast->get())))
    return false;
  return c.ranges[row] >= minRows && c.ranges[c.inner] >= minCols;
}

/// Rows an AMX contraction needs for its workgroups to keep the columns
/// whole (keepsColumnsWhole): pieces of 64 rows (two blocks) for 4
/// workgroups. ViT's 197 tokens in 6 pieces of 32 and a rest of 5 ran
/// its 197 x 384 x 384 matmuls at 0.17 ms, in 4 pieces of 96 columns 0.12.
constexpr int64_t kMinWholeColumnsRows = 256;

/// Whether the workgroups of an AMX contraction (loops `c`) keep its
/// columns whole: B is a constant weight (its panels packed at compile
/// time) of at most half of L2, so that each piece of the rows re-reads
/// it from cache, where each piece of the columns would round its rows of
/// A again, and there are kMinWholeColumnsRows rows (256 x 1536 x 384 and
/// 256 x 384 x 1536, DINOv2's MLP matmuls: 0.43 -> 0.36 ms at one thread
/// split by rows than by columns; a language model's head of 32000
/// columns still splits them).
bool keepsColumnsWhole(const ContractionLoops &c, const HostMachine &machine) {
  if (!c.streamsWeight || !c.reduction || c.rowDims.empty() ||
      c.ranges[c.rowDims.front()] < kMinWholeColumnsRows)
    return false;
  int64_t panelBytes = 2 * c.ranges[*c.reduction] * c.ranges[c.inner];
  return panelBytes <= machine.l2Bytes / 2;
}

/// Whether AMX contraction `op` (its loops `c`) packs less per run with
/// its rows whole than with its columns whole: B is packed per run (no
/// constant weight) and A is a constant weight or B's columns are at least
/// A's rows (each of the same reduction).
bool packsLessWhole(linalg::GenericOp op, const ContractionLoops &c) {
  if (c.streamsWeight)
    return false;
  TileOperands t = tileOperands(op, c, c.rowDims.front());
  return isWeightView(t.broadcast->get()) ||
         c.ranges[c.inner] >= c.ranges[c.rowDims.front()];
}

/// The A operand of AMX block `block` (of contraction loops `c`) in
/// bfloat16: a constant weight's slices of its copy rounded at compile
/// time, else the slices of A rounded before the tile loops `outer` (rows
/// `paddedRows` and `paddedK` long when set: roundToBf16). Null when
/// neither applies.
Value amxBlockRows(RewriterBase &rewriter, linalg::GenericOp block,
                   const ContractionLoops &c, Operation *outer,
                   int64_t paddedRows, int64_t paddedK) {
  TileOperands bt = tileOperands(block, c, c.rowDims.front());
  Value weight = bt.broadcast->get();
  while (auto slice = weight.getDefiningOp<tensor::ExtractSliceOp>())
    weight = slice.getSource();
  auto wType = cast<RankedTensorType>(weight.getType());
  if (!paddedK && !paddedRows)
    if (Value rounded = prepackedPermutation(
            rewriter, weight,
            llvm::to_vector(llvm::seq<int64_t>(0, wType.getRank()))))
      return sliceLikewise(rewriter, bt.broadcast->get(), weight, rounded);
  return roundToBf16(rewriter, bt.broadcast, outer, {paddedRows, paddedK});
}

/// The reduction chunk of AMX contraction `op` (its loops `c`): knob
/// "k_tile" when it divides into tile steps, else at most kAmxChunk; none
/// for a reduction of no whole tile steps (padded: chunks would each hold
/// a part step).
int64_t amxChunk(const ContractionLoops &c, const search::Schedule *knobs,
                 const std::string &prefix) {
  int64_t reduction = c.ranges[*c.reduction];
  if (reduction % kAmxSteps != 0)
    return 0;
  int64_t chunk = knobOr(knobs, prefix + knobs::kKTile, 0);
  if (chunk > 0 && chunk % kAmxSteps == 0 && reduction % chunk == 0)
    return chunk;
  chunk = std::min<int64_t>(reduction, kAmxChunk);
  while (reduction % chunk != 0)
    chunk -= kAmxSteps;
  return chunk;
}

/// Columns of an AMX contraction's blocks over `cols` columns (a multiple
/// of 16, or fewer: a rest padded to one tile): 32 where they divide, else
/// 16.
int64_t amxBlockCols(int64_t cols) {
  return cols % 32 == 0 ? 32 : kAmxTileRows;
}

/// The reduction an AMX contraction's copies are padded to: the next whole
/// tile step, or 0 where it is whole already.
int64_t amxPaddedReduction(int64_t reduction) {
  return reduction % kAmxSteps == 0 ? 0 : llvm::alignTo(reduction, kAmxSteps);
}

/// Which part of a split AMX contraction amxContraction tiles. `panels`:
/// B's pair panels (amxPanels of `root`, the B of a contraction before its
/// rows were split), which the main part's blocks and the rest's padded
/// block slice instead of each packing B. `colsRest`: the columns past a
/// contraction's last 16 (amxSplitCols), in blocks padded to 16 columns.
struct SharedPanels {
  Value root, panels;
  bool colsRest = false;
};

std::optional<std::vector<int64_t>>
amxContraction(RewriterBase &rewriter, linalg::GenericOp op, unsigned index,
               const HostMachine &machine, const search::Schedule *knobs,
               search::Schedule &applied, SharedPanels shared = {});

/// Splits AMX contraction `op` (loops `c`) where its columns' multiples of
/// 16 end: the main part in blocks, the rest (1-15 columns: 4 of a 14 x 14
/// feature map's 196 pixels, 5 of ViT's 197 keys) in blocks of one tile
/// padded to 16 columns, B's rest copied with zero columns (amxPanels), or
/// the usual register tiles should those fail (those took a quarter of
/// ResNet-50's 1 x 1 convolutions over 196 pixels). Returns what
/// amxContraction returns for the main part.
std::optional<std::vector<int64_t>>
amxSplitCols(RewriterBase &rewriter, linalg::GenericOp op,
             const ContractionLoops &c, unsigned index,
             const HostMachine &machine, const search::Schedule *knobs,
             search::Schedule &applied) {
  int64_t cols = c.ranges[c.inner];
  auto parts = splitAt(rewriter, op, c.inner, cols - cols % kAmxTileRows);
  if (!parts)
    return std::nullopt;
  auto [mainOp, restOp] = *parts;
  search::Schedule ignored;
  SharedPanels rest;
  rest.colsRest = true;
  if (!amxContraction(rewriter, restOp, index, machine, knobs, ignored, rest))
    vectorizeContraction(rewriter, restOp, index, machine, knobs, ignored);
  // `op` is gone: the main part gets blocks or, failing those, no tile.
  return amxContraction(rewriter, mainOp, index, machine, knobs, applied)
      .value_or(std::vector<int64_t>{});
}

/// Splits AMX contraction `op` (loops `c`, its columns whole tiles) where
/// its rows' multiples of 16 end: both parts slice B's panels packed once,
/// the main part in blocks, the rest (1-15 rows: 2 of a block of 50
/// queries, 5 of ViT's 197 tokens) in blocks of one tile padded to 16 rows
/// (buildAmxBlock), or the usual register tiles should those fail;
/// `colsRest` as SharedPanels says. Returns what amxContraction returns for
/// the main part.
std::optional<std::vector<int64_t>>
amxSplitRows(RewriterBase &rewriter, linalg::GenericOp op,
             const ContractionLoops &c, unsigned index,
             const HostMachine &machine, const search::Schedule *knobs,
             search::Schedule &applied, bool colsRest) {
  unsigned row = c.rowDims.front();
  int64_t rows = c.ranges[row], cols = c.ranges[c.inner];
  int64_t reduction = c.ranges[*c.reduction];
  TileOperands ot = tileOperands(op, c, row);
  SharedPanels shared{ot.streamed->get(), Value(), colsRest};
  shared.panels = amxPanels(rewriter, op, shared.root, ot.streamedT,
                            amxBlockCols(cols), amxPaddedReduction(reduction));
  auto parts = splitAt(rewriter, op, row, rows - rows % kAmxTileRows);
  if (!parts)
    return std::nullopt;
  auto [mainOp, restOp] = *parts;
  search::Schedule ignored;
  std::optional<std::vector<int64_t>> restTile;
  if (shared.panels)
    restTile = amxContraction(rewriter, restOp, index, machine, knobs, ignored,
                              shared);
  if (!restTile)
    vectorizeContraction(rewriter, restOp, index, machine, knobs, ignored);
  // `op` is gone: the main part gets blocks or, failing those, no tile.
  return amxContraction(rewriter, mainOp, index, machine, knobs, applied,
                        shared)
      .value_or(std::vector<int64_t>{});
}

/// Loops `c` of a rest of one row split off an AMX contraction (a part
/// with shared panels): analyzeContraction takes no loop of one iteration
/// for a row, so the output's row dim is taken back when no input reads it
/// with the columns (DINOv2's 257 tokens: the last one multiplied in fp32,
/// 8% of its 257 x 1536 x 384 MLP matmul).
void takeUnitRow(linalg::GenericOp op, ContractionLoops &c) {
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!c.rowDims.empty() || out.getNumResults() < 2)
    return;
  auto row = dyn_cast<AffineDimExpr>(out.getResult(out.getNumResults() - 2));
  if (!row || c.ranges[row.getPosition()] != 1 ||
      llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
        AffineMap m = op.getMatchingIndexingMap(in);
        return m.isFunctionOfDim(c.inner) &&
               m.isFunctionOfDim(row.getPosition());
      }))
    return;
  c.rowDims.push_back(row.getPosition());
}

/// Tiles contraction `op` (takesAmxBlocks, unless knob "amx" is 0) into
/// blocks of 16 or 32 rows by 16 or 32 columns over chunks of its
/// reduction (amxChunk), computed on the tile registers (AmxTiles.h) from
/// B's pair panels and A rounded in its own layout; columns past the last
/// multiple of 16 get the usual register tiles, rows past it blocks of
/// padded tiles (amxSplitRows). A reduction of no whole tile steps
/// (attention's P V over 1500 keys) is padded with zeros in both copies to
/// the next. With `shared` panels, `op` is such a part of a contraction
/// (its rows may be fewer than 16) whose blocks slice them. The block
/// applied, or nullopt, changing nothing.
std::optional<std::vector<int64_t>>
amxContraction(RewriterBase &rewriter, linalg::GenericOp op, unsigned index,
               const HostMachine &machine, const search::Schedule *knobs,
               search::Schedule &applied, SharedPanels shared) {
  std::optional<ContractionLoops> c = analyzeContraction(op);
  if (c && shared.panels)
    takeUnitRow(op, *c);
  std::string prefix = knobs::contraction(index);
  if (!c ||
      !takesAmxBlocks(op, *c, machine, shared.panels ? 1 : kAmxTileRows,
                      shared.colsRest ? 1 : kAmxTileRows) ||
      knobOr(knobs, prefix + knobs::kAmx, 1) == 0)
    return std::nullopt;
  unsigned row = c->rowDims.front();
  int64_t rows = c->ranges[row], cols = c->ranges[c->inner];
  if (cols > kAmxTileRows && cols % kAmxTileRows != 0)
    return amxSplitCols(rewriter, op, *c, index, machine, knobs, applied);
  if (rows > kAmxTileRows && rows % kAmxTileRows != 0)
    return amxSplitRows(rewriter, op, *c, index, machine, knobs, applied,
                        shared.colsRest);
  bool padRows = rows < kAmxTileRows, padCols = cols < kAmxTileRows;
  std::vector<int64_t> tile(c->ranges.size(), 1);
  tile[row] = rows % 32 == 0 ? 32 : std::min(rows, kAmxTileRows);
  int64_t blockCols = amxBlockCols(cols);
  tile[c->inner] = std::min(cols, blockCols);
  tile[*c->reduction] = 0;
  int64_t reduction = c->ranges[*c->reduction];
  int64_t paddedK = amxPaddedReduction(reduction);
  TileOperands ot = tileOperands(op, *c, row);
  Value bRoot = shared.panels ? shared.root : ot.streamed->get();
  Value allPanels = shared.panels ? shared.panels
                                  : amxPanels(rewriter, op, bRoot, ot.streamedT,
                                              blockCols, paddedK);
  auto [target, kTile] =
      chunkReduction(rewriter, op, *c, amxChunk(*c, knobs, prefix));
  op = target;
  auto tiled =
      tileInPlace(rewriter, op, tile, registerTileOrder(op, *c, row, false));
  if (failed(tiled))
    return std::vector<int64_t>{}; // `op` may be chunked: left to LLVM
  auto block = cast<linalg::GenericOp>(tiled->tiledOps.back());
  Operation *outer = tiled->loops.empty() ? block : tiled->loops.front();
  TileOperands bt = tileOperands(block, *c, row);
  Value panels = allPanels
                     ? blockPanel(rewriter, block, bt.streamed->get(), bRoot,
                                  allPanels, bt.streamedT, blockCols, paddedK)
                     : Value();
  Value a = panels ? amxBlockRows(rewriter, block, *c, outer,
                                  padRows ? kAmxTileRows : 0, paddedK)
                   : Value();
  // (Checked above: the block stays a correct loop nest should this fail.)
  if (!a || !buildAmxBlock(rewriter, block,
                           lastTwoDims(rewriter, block.getLoc(), a), panels))
    return tile;
  // (No chunk loop: each block sums the whole reduction.)
  if (kTile == 0 && !padRows && !padCols && zeroInitBlocks(rewriter, outer))
    fuseEpilogue(
        rewriter, outer,
        cast<RankedTensorType>(outer->getResult(0).getType()).getRank() - 2);
  applied[prefix + knobs::kAmx] = 1;
  applied[prefix + knobs::kRows] = tile[row];
  applied[prefix + knobs::kCols] = tile[c->inner];
  applied[prefix + knobs::kKTile] = kTile;
  applied[prefix + knobs::kPack] = 1;
  return tile;
}

/// Rows of contraction `op`'s register tiles that do not divide their loop
/// (`c`, knobs `k`): the largest multiple of the tile's rows, and the rest
/// as one tile of what is left. 197 tokens (a prime) are 49 tiles of 4 rows
/// and one of 1, instead of 197 tiles of 1 row. Behind tiles of at least
/// kMinEvenedRows, a rest of 1-3 rows takes one tile from the main part
/// and the two split it evenly (98 rows: 15 tiles of 6, then 4 + 4, not 16
/// of 6 and 2; 8 rows 4 + 4, the whole loop retiled): under 4 rows of two
/// vectors the tile's few accumulators wait on each other's FMAs, 2 rows as
/// long as 4. Returns the tile vectorizeContraction applied (the main
/// part's), or nullopt when the rows divide (or the split failed): the
/// caller tiles `op` as it is.
std::optional<std::vector<int64_t>>
peelRowsOff(RewriterBase &rewriter, linalg::GenericOp op, unsigned index,
            const HostMachine &machine, const search::Schedule *knobs,
            search::Schedule &applied, const ContractionLoops &c,
            const ContractionKnobs &k, bool peel, bool leftover) {
  if (c.rowDims.empty())
    return std::nullopt;
  unsigned rowLoop = k.rowDim >= 0 && size_t(k.rowDim) < c.rowDims.size()
                         ? c.rowDims[k.rowDim]
                         : c.rowDims.front();
  int64_t rowRange = c.ranges[rowLoop], rows = k.rows;
  if (rows <= 1 || rows >= rowRange || rowRange % rows == 0)
    return std::nullopt;
  int64_t restRows = rowRange % rows;
  bool even = rows >= kMinEvenedRows && restRows < kMinEvenedRest;
  if (even)
    restRows += rows;
  std::string prefix = knobs::contraction(index);
  search::Schedule restKnobs = knobs ? *knobs : search::Schedule{};
  restKnobs[prefix + knobs::kRows] =
      even ? llvm::divideCeil(restRows, 2) : restRows;
  if (restRows == rowRange)
    return vectorizeContraction(rewriter, op, index, machine, &restKnobs,
                                applied, peel, /*peelRows=*/true, leftover);
  auto parts = splitAt(rewriter, op, rowLoop, rowRange - restRows);
  if (!parts)
    return std::nullopt;
  auto [mainOp, restOp] = *parts;
  search::Schedule ignored;
  vectorizeContraction(rewriter, restOp, index, machine, &restKnobs, ignored,
                       peel, /*peelRows=*/even, leftover);
  return vectorizeContraction(rewriter, mainOp, index, machine, knobs, applied,
                              peel, /*peelRows=*/false, leftover);
}

/// Tiles a contraction into register tiles of `rows` output rows by `cols`
/// contiguous lanes, reduction loops innermost (within chunks of `kTile`
/// when set), and vectorizes the tile. Columns and rows that do not divide
/// their loops are peeled (see below); what is left is clamped: columns to
/// the largest power of two (>= 4) dividing the loop, or one masked tile
/// (maskedWidth; `leftover`: `op` is what peeling columns left), rows to
/// the largest divisor, the chunk to none. Returns the register tile and
/// records the knobs applied, or {} when the contraction does not divide
/// into such tiles (LLVM's loop vectorizer then handles it).
std::vector<int64_t> vectorizeContraction(RewriterBase &rewriter,
                                          linalg::GenericOp op, unsigned index,
                                          const HostMachine &machine,
                                          const search::Schedule *knobs,
                                          search::Schedule &applied, bool peel,
                                          bool peelRows, bool leftover) {
  if (std::optional<std::vector<int64_t>> block =
          amxContraction(rewriter, op, index, machine, knobs, applied))
    return *block;
  std::optional<ContractionLoops> c = analyzeContraction(op);
  if (!c)
    return {};
  std::string prefix = knobs::contraction(index);
  search::Schedule single;
  bool once = peel && peelRows && streamsOnce(*c, knobs, index, machine);
  // A constant weight's panels made at compile time cost nothing per run:
  // they are read even where copies would cost more than they save (a
  // short reduction, B read once), but never copied there.
  bool copy =
      !c->streamsWeight || (!once && c->reduction &&
                            c->ranges[*c->reduction] >= kMinPackedReduction);
  if (once && !c->streamsWeight) {
    // Decided for the whole tile before any part is peeled off.
    single = knobs ? *knobs : search::Schedule{};
    single[prefix + knobs::kPack] = 0;
    single[prefix + knobs::kKTile] = 0;
    knobs = &single;
  }
  ContractionKnobs k = contractionKnobs(knobs, index, *c, machine);
  // Columns that do not divide the loop: the largest multiple of the tile
  // is tiled as asked and the rest (peeled off with linalg::splitOp) gets
  // the widest tile that divides it. 196 pixels become 12 tiles of 16 and
  // one of 4 instead of 49 tiles of 4; 49 become 32 + 16 and a masked one.
  int64_t range = c->ranges[c->inner];
  int64_t want = tileWidth(k.cols);
  // A tile as wide as the loop, a power of two of whole vectors, the last
  // one masked. LLVM splits a masked load of 3 vectors lane by lane: 40
  // columns as 48 ran a 40x240x120 matmul 13 times slower than 32 + 8.
  int64_t lanes = machine.lanes();
  bool covers = lanes >= 4 && k.cols % lanes == 0 && k.cols >= range &&
                k.cols < range + lanes && llvm::isPowerOf2_64(k.cols);
  int64_t masked = covers ? k.cols : maskedWidth(range, machine, leftover);
  if (peel && !masked && want >= 4 && want < range && range % want != 0) {
    if (auto parts = splitAt(rewriter, op, c->inner, range - range % want)) {
      auto [mainOp, restOp] = *parts;
      // The rest: the widest power of two that fits, peeled again (12
      // columns are 8 + 4: a vector<12xf32> would be shuffled lane by lane).
      search::Schedule restKnobs = knobs ? *knobs : search::Schedule{};
      restKnobs[prefix + knobs::kCols] = tileWidth(range % want);
      search::Schedule ignored;
      vectorizeContraction(rewriter, restOp, index, machine, &restKnobs,
                           ignored, /*peel=*/true, peelRows, /*leftover=*/true);
      return vectorizeContraction(rewriter, mainOp, index, machine, knobs,
                                  applied, /*peel=*/false, peelRows);
    }
  }
  // Rows likewise (peelRowsOff).
  if (peelRows)
    if (std::optional<std::vector<int64_t>> tile =
            peelRowsOff(rewriter, op, index, machine, knobs, applied, *c, k,
                        peel, leftover))
      return *tile;
  int64_t cols = masked ? range : tileWidth(k.cols, range);
  applied[prefix + knobs::kCols] = masked ? masked : cols;
  if (cols == 1 && !masked)
    return {};
  std::optional<unsigned> row;
  if (k.rowDim >= 0 && size_t(k.rowDim) < c->rowDims.size())
    row = c->rowDims[k.rowDim];
  else if (!c->rowDims.empty())
    row = c->rowDims.front();
  std::vector<int64_t> tile(c->ranges.size(), 1);
  tile[c->inner] = cols;
  if (row) {
    for (int64_t r = std::max<int64_t>(1, k.rows); r >= 1; --r)
      if (c->ranges[*row] % r == 0) {
        tile[*row] = r;
        break;
      }
    applied[prefix + knobs::kRows] = tile[*row];
    applied[prefix + knobs::kRowDim] =
        llvm::find(c->rowDims, *row) - c->rowDims.begin();
  }
  SmallVector<int64_t> order =
      registerTileOrder(op, *c, row, /*rowFirst=*/row && k.order == 1);
  applied[prefix + knobs::kOrder] = row && k.order == 1 ? 1 : 0;

  // The reduction in chunks first: each chunk's operand panels are reused
  // by every register tile while they are still in cache.
  auto [target, kTile] = chunkReduction(rewriter, op, *c, k.kTile);
  if (c->reduction)
    applied[prefix + knobs::kKTile] = kTile;

  // (A covering tile as wide as the loop masks nothing.) Integer dot
  // tiles mask no lanes: over all of columns that are no whole vectors
  // (49 pixels, or the 4 past 192 of 196) they compute whole vectors of
  // zero-padded panels of the streamed activations (a constant's are
  // packed at compile time, unpadded). Quantized ResNet-50's 2048 x 512 x
  // 49 matmul ran 1.96 ms as a masked i32 linalg tile, 0.41 padded. Each
  // workgroup pads and packs the columns: not for fewer than
  // kMinPaddedDotRows rows (24 x 512 x 49: 18 us masked, 57 padded).
  bool padsCols = cols == range && cols % machine.lanes() != 0 &&
                  !c->streamsWeight && row &&
                  c->ranges[*row] >= kMinPaddedDotRows;
  int64_t dotCols = padsCols ? llvm::alignTo(range, machine.lanes()) : cols;
  std::optional<DotKind> dot =
      dotKind(target, *c, row, !padsCols && masked && masked != cols, dotCols,
              kTile, machine);
  if (dot && dotCols != cols && *dot == DotKind::Bf16Pairs)
    dot.reset();
  if (dot)
    tile[*c->reduction] = groupSteps(*dot);
  // An output filled with a constant, its reduction in one pass (a chunk
  // loop's tiles read what the chunk before left): the tiles'
  // accumulators start as the constant, not read from the fill.
  TypedAttr filled = fillValueOf(target.getDpsInits()[0]);
  SmallVector<utils::IteratorType> iterators = target.getIteratorTypesArray();
  auto tiled = tileInPlace(rewriter, target, tile, order);
  if (failed(tiled))
    return {};
  markFilledAccumulators(filled, iterators, *tiled);
  if (dot && vectorizeDotTile(rewriter, *tiled, *c, *dot, *row, tile[*row],
                              dotCols, machine.lanes())) {
    applied[prefix + knobs::kPack] = 1;
    applied[prefix + knobs::kPackRows] = 1;
    return tile;
  }
  if (c->reduction) {
    applied[prefix + knobs::kPack] =
        k.pack == 1 && packStreamedOperand(rewriter, *tiled, *c, cols, copy);
    if (row)
      applied[prefix + knobs::kPackRows] =
          k.packRows == 1 &&
          packBroadcastOperand(rewriter, *tiled, *c, *row, tile[*row]);
  }
  // A tile that does not vectorize stays a correct scalar loop nest.
  Operation *registerTile = tiled->tiledOps.back();
  SmallVector<int64_t> sizes;
  if (masked)
    for (unsigned d = 0; d < tile.size(); ++d)
      sizes.push_back(d == c->inner ? masked : tile[d]);
  SmallVector<bool> scalable(sizes.size(), false);
  if (failed(linalg::vectorize(rewriter, registerTile, sizes, scalable)))
    return {};
  return tile;
}

/// The direct convolutions of the kernel, in order.
SmallVector<linalg::GenericOp> directConvolutions(func::FuncOp kernel) {
  SmallVector<linalg::GenericOp> convs;
  kernel.walk([&](linalg::GenericOp op) {
    if (analyzeDirectConv(op))
      convs.push_back(op);
  });
  return convs;
}

/// Tiles `op` (a linalg op over `rank` loops, the last its rows' pixels)
/// into single rows; returns the row's op, or null when tiling failed.
Operation *tileIntoRows(RewriterBase &rewriter, Operation *op, int64_t rank) {
  if (rank < 2)
    return op;
  SmallVector<int64_t> tile(rank, 1), order;
  tile.back() = 0;
  for (int64_t d = 0; d < rank; ++d)
    order.push_back(d);
  auto tiled = tileInPlace(rewriter, op, tile, order);
  return failed(tiled) ? nullptr : tiled->tiledOps.back();
}

/// Fills `fill` (a window reduction's initial value) a row at a time with
/// vector stores. Left to LLVM, the rows of a pool's -inf fill were
/// unrolled and the loop over them vectorized as strided scatters.
void vectorizeFill(RewriterBase &rewriter, linalg::FillOp fill) {
  auto type = dyn_cast<RankedTensorType>(fill.getResult(0).getType());
  if (!type || !type.hasStaticShape() || type.getRank() < 1 ||
      type.getShape().back() < 4)
    return;
  if (auto rowFill = dyn_cast_or_null<linalg::FillOp>(
          tileIntoRows(rewriter, fill, type.getRank())))
    (void)linalg::vectorize(rewriter, rowFill);
}

/// Copies the source of `insert` (the unpadded piece of a pad) a row at a
/// time with vector loads and stores. Left to LLVM, the copy of a border's
/// rows of 17 pixels was vectorized across the rows, as gathers and
/// scatters.
void vectorizeInsertedCopy(RewriterBase &rewriter,
                           tensor::InsertSliceOp insert) {
  RankedTensorType type = insert.getSourceType();
  if (!type.hasStaticShape() || type.getRank() < 1 ||
      type.getRank() != insert.getDestType().getRank() ||
      type.getShape().back() < 4 || !insert.hasUnitStride())
    return;
  Location loc = insert.getLoc();
  rewriter.setInsertionPoint(insert);
  auto place = rewriter.create<tensor::ExtractSliceOp>(
      loc, type, insert.getDest(), insert.getMixedOffsets(),
      insert.getMixedSizes(), insert.getMixedStrides());
  auto copy = rewriter.create<linalg::CopyOp>(loc, insert.getSource(),
                                              place.getResult());
  rewriter.modifyOpInPlace(
      insert, [&] { insert.getSourceMutable().assign(copy.getResult(0)); });
  Operation *row = tileIntoRows(rewriter, copy, type.getRank());
  // Whole vectors, the lanes past the row masked: canonicalization folds
  // an unmasked row's read and write back into a slice copy, which LLVM
  // then vectorized across the rows again.
  SmallVector<int64_t> lanes(type.getRank(), 1);
  lanes.back() = int64_t(llvm::PowerOf2Ceil(type.getShape().back()));
  if (auto rowCopy = dyn_cast<linalg::CopyOp>(row))
    (void)linalg::vectorize(rewriter, rowCopy, lanes,
                            SmallVector<bool>(lanes.size(), false));
}

/// Pads `input` (a channel-wise convolution's operand, the pad of a
/// workgroup's slice) as a fill of the padded tile and a copy of the
/// source into it, the fill a row at a time with vector stores (the pad's
/// own fill was LLVM's strided scatters).
void vectorizePaddingFill(RewriterBase &rewriter, OpOperand &operand) {
  // The operand, or the slice of it the op reads.
  auto padded = [&]() -> Value {
    Value input = operand.get();
    if (auto slice = input.getDefiningOp<tensor::ExtractSliceOp>())
      return slice.getSource();
    return input;
  };
  auto pad = padded().getDefiningOp<tensor::PadOp>();
  if (!pad || !pad.getConstantPaddingValue() ||
      !pad.getResultType().hasStaticShape())
    return;
  RewritePatternSet patterns(rewriter.getContext());
  patterns.add<linalg::GeneralizePadOpPattern>(rewriter.getContext());
  GreedyRewriteConfig config;
  config.strictMode = GreedyRewriteStrictness::ExistingOps;
  if (failed(applyOpPatternsAndFold({pad.getOperation()}, std::move(patterns),
                                    config)))
    return;
  auto insert = padded().getDefiningOp<tensor::InsertSliceOp>();
  if (!insert)
    return;
  if (auto fill = insert.getDest().getDefiningOp<linalg::FillOp>()) {
    // A buffer of its own: CSE merges equal empty tensors and their fills,
    // and two borders' pads of one shape then shared one, copied for each.
    if (auto empty = fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>()) {
      rewriter.setInsertionPoint(empty);
      rewriter.replaceOpWithNewOp<bufferization::AllocTensorOp>(
          empty, empty.getType(), ValueRange{});
    }
    vectorizeFill(rewriter, fill);
  }
  vectorizeInsertedCopy(rewriter, insert);
}

/// Register-tiles and vectorizes every contraction of the kernel.
void vectorizeContractions(RewriterBase &rewriter, func::FuncOp kernel,
                           const HostMachine &machine,
                           const search::Schedule *knobs,
                           KernelSchedule &schedule) {
  SmallVector<linalg::GenericOp> contractions;
  kernel.walk([&](linalg::GenericOp op) {
    if (linalg::isaContractionOpInterface(op))
      contractions.push_back(op);
  });
  for (auto [index, op] : llvm::enumerate(contractions)) {
    if (std::optional<DotLoops> d = analyzeDotContraction(op, machine)) {
      std::string name = knobs::contraction(index) + knobs::kDot;
      int64_t cols = vectorizeDotContraction(
          rewriter, op, *d, knobOr(knobs, name, defaultDotColumns(*d, machine)),
          machine);
      schedule.knobs[name] = cols;
      if (cols)
        continue;
    }
    std::vector<int64_t> tile = vectorizeContraction(
        rewriter, op, index, machine, knobs, schedule.knobs);
    if (!tile.empty() && schedule.registerTile.empty())
      schedule.registerTile = tile;
  }
  for (auto [index, op] : llvm::enumerate(directConvolutions(kernel))) {
    auto [filters, pixels] =
        defaultDirectConvTile(*analyzeDirectConv(op), machine);
    std::string prefix = knobs::directConv(index);
    filters = knobOr(knobs, prefix + knobs::kFilters, filters);
    pixels = knobOr(knobs, prefix + knobs::kPixels, pixels);
    bool amx = takesAmxConv(op, machine) &&
               knobOr(knobs, prefix + knobs::kAmx, 1) != 0;
    // (AMX blocks chunk the channels themselves: amxChannelPairs.)
    int64_t channels =
        knobOr(knobs, prefix + knobs::kKTile, knobs::kHeuristicChannelChunk);
    if (channels == knobs::kHeuristicChannelChunk)
      channels = amx ? 0
                     : defaultChannelChunk(op, *analyzeDirectConv(op), filters,
                                           machine);
    if (amx)
      schedule.knobs[prefix + knobs::kAmx] = 1;
    std::vector<int64_t> tile = vectorizeDirectConv(
        rewriter, op, filters, pixels, machine, channels, amx);
    // Recorded when applied or asked for (a tuned 0 replays as 0).
    if (channels || (knobs && knobs->count(prefix + knobs::kKTile)))
      schedule.knobs[prefix + knobs::kKTile] = channels;
    schedule.knobs[prefix + knobs::kFilters] = tile.empty() ? 1 : filters;
    schedule.knobs[prefix + knobs::kPixels] = tile.empty() ? 1 : pixels;
    if (!tile.empty() && schedule.registerTile.empty())
      schedule.registerTile = tile;
  }
  for (auto [index, op] : llvm::enumerate(channelConvolutions(kernel))) {
    std::optional<ChannelConvLoops> c = analyzeChannelConv(op);
    ChannelConvTile shape = defaultChannelConvTile(*c, machine);
    std::string prefix = knobs::channelConv(index);
    shape.columns = knobOr(knobs, prefix + knobs::kCols, shape.columns);
    shape.rows = knobOr(knobs, prefix + knobs::kRows, shape.rows);
    shape.filters = knobOr(knobs, prefix + knobs::kFilters, shape.filters);
    if (auto fill =
            op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>())
      vectorizeFill(rewriter, fill);
    // The outputs whose windows lie inside a padded input read it in
    // place; the borders pad what they read (PaddedWindows.h).
    std::vector<int64_t> tile;
    for (linalg::GenericOp part :
         splitPaddedBorders(rewriter, op, c->input, c->columns, shape.columns,
                            machine.l2Bytes / 4)) {
      vectorizePaddingFill(rewriter, part->getOpOperand(c->input));
      std::vector<int64_t> applied =
          vectorizeChannelConv(rewriter, part, shape);
      if (tile.empty())
        tile = applied;
    }
    schedule.knobs[prefix + knobs::kCols] = tile.empty() ? 1 : shape.columns;
    if (c->rows)
      schedule.knobs[prefix + knobs::kRows] = tile.empty() ? 1 : shape.rows;
    if (c->filters)
      schedule.knobs[prefix + knobs::kFilters] =
          tile.empty() ? 1 : shape.filters;
    if (!tile.empty() && schedule.registerTile.empty())
      schedule.registerTile = tile;
  }
}

/// Erases the originals of the producers that tile-and-fuse cloned into
/// the workgroup loop and left without users, and merges the copies it made
/// of one producer. Otherwise a fused matmul is
/// found twice, and the knobs the space offers for contraction 0 (found
/// before workgroup tiling) would tile the dead original while the one in
/// the workgroups took the defaults.
void eraseDeadProducers(RewriterBase &rewriter, func::FuncOp kernel) {
  // A producer read by two consumers in the tile (GELU reads its input
  // twice) is fused once per read: the copies compute the same slice, and
  // CSE keeps one (the matmul of a feed-forward layer with GELU was computed
  // twice per workgroup).
  DominanceInfo dominance(kernel);
  eliminateCommonSubExpressions(rewriter, dominance, kernel);
  // Fusion also leaves slices of the originals in the loop: erase until
  // nothing dead is left.
  for (bool erased = true; erased;) {
    SmallVector<Operation *> dead;
    kernel.walk([&](Operation *op) {
      if (op != kernel && isOpTriviallyDead(op))
        dead.push_back(op);
    });
    erased = !dead.empty();
    for (Operation *op : llvm::reverse(dead))
      if (op->use_empty())
        rewriter.eraseOp(op);
  }
}

/// The value that replaces `slice` of a linalg op's result: that piece
/// computed by a tiled copy of the op, its own operands' slices likewise
/// (LRN's squares under the padding of its channel window were computed
/// whole beside the workgroup loop, and the kernel ran serially). `slice`
/// itself where its source is no linalg op.
Value fuseProducersOfSlice(RewriterBase &rewriter, tensor::ExtractSliceOp slice,
                           int depth = 0) {
  // A slice of an empty tensor is an empty tensor of its own (the slice
  // would keep the whole one alive beside the workgroup loop; bufferization
  // eliminates it where its result is inserted into another).
  if (slice.getSource().getDefiningOp<tensor::EmptyOp>() &&
      slice.getResultType().hasStaticShape()) {
    rewriter.setInsertionPoint(slice);
    Value empty = rewriter.create<tensor::EmptyOp>(
        slice.getLoc(), slice.getResultType().getShape(),
        slice.getResultType().getElementType());
    rewriter.replaceOp(slice, empty);
    return empty;
  }
  auto producer = slice.getSource().getDefiningOp<linalg::LinalgOp>();
  if (!producer || producer->getParentOfType<scf::ForallOp>() || depth > 8)
    return slice.getResult();
  rewriter.setInsertionPoint(slice);
  FailureOr<TilingResult> tiled = tensor::replaceExtractSliceWithTiledProducer(
      rewriter, slice, cast<OpResult>(slice.getSource()));
  if (failed(tiled) || tiled->tiledValues.size() != 1)
    return slice.getResult();
  rewriter.replaceOp(slice, tiled->tiledValues.front());
  for (Operation *op : tiled->tiledOps)
    for (Value operand : op->getOperands())
      if (auto inner = operand.getDefiningOp<tensor::ExtractSliceOp>())
        fuseProducersOfSlice(rewriter, inner, depth + 1);
  return tiled->tiledValues.front();
}

/// Pads the slice a workgroup reads instead of the whole tensor: fusing a
/// tensor.pad into the workgroup loop clones the whole pad there (a pool's
/// padded input), which CSE then hoists, so every workgroup waited for one
/// serial fill and copy of the whole input. A slice with static bounds along
/// the padded dims is the pad of a slice of the source, with the padding
/// that falls inside it.
void slicePadsInWorkgroups(RewriterBase &rewriter, func::FuncOp kernel) {
  SmallVector<tensor::ExtractSliceOp> slices;
  kernel.walk([&](tensor::ExtractSliceOp slice) {
    if (slice.getSource().getDefiningOp<tensor::PadOp>() &&
        slice->getParentOfType<scf::ForallOp>())
      slices.push_back(slice);
  });
  for (tensor::ExtractSliceOp slice : slices)
    (void)padOfSlice(rewriter, slice, [&](tensor::ExtractSliceOp part) {
      return fuseProducersOfSlice(rewriter, part);
    });
}

/// Whether a linalg.generic multiplies inside a reduction (a matmul, a
/// convolution): its body must stay `out += a * b` for the register tiles,
/// so no producer is fused into it.
bool multipliesInReduction(linalg::GenericOp op) {
  return op.getNumReductionLoops() != 0 &&
         llvm::any_of(op.getBody()->getOperations(), [](Operation &o) {
           return isa<arith::MulFOp, arith::MulIOp>(o);
         });
}

/// Whether a linalg.generic's body calls a math function (exp, erf, ...).
bool callsMathFunction(linalg::GenericOp op) {
  return llvm::any_of(op.getBody()->getOperations(), [](Operation &o) {
    return isa<math::MathDialect>(o.getDialect());
  });
}

/// Fuses chains of elementwise generics into their consumers, so a GELU or
/// layer-norm epilogue is one loop over its tile instead of one buffer per
/// op (a matmul's GELU epilogue was six generics, each writing a
/// workgroup-sized temporary). Contractions keep their operands (the
/// im2col columns, a transposed or scaled operand): their body is matched
/// as `out += a * b`.
void fuseElementwiseChains(func::FuncOp kernel) {
  RewritePatternSet patterns(kernel.getContext());
  linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand *fused) {
    auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
    if (!consumer || multipliesInReduction(consumer))
      return false;
    // Nor into a window's reduction (a pool reading it through overlapping
    // windows): each element would be computed again per window, and the
    // body would no longer be the plain max or sum the window tiles take
    // (isWindowReduction). SqueezeNet int8's pools of requantized concats
    // ran at 10-22 GOP/s on one thread, 0.2 ms each.
    if (consumer.getNumReductionLoops() != 0 &&
        !consumer.getMatchingIndexingMap(fused).isProjectedPermutation())
      return false;
    // A math function (exp, erf) is computed once: not again in each of
    // several consumers, nor inside a reduction, which LLVM keeps scalar (a
    // softmax's exp inside its sum made BERT's attention 30% slower).
    auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
    return !producer || !callsMathFunction(producer) ||
           (consumer.getNumReductionLoops() == 0 && fused->get().hasOneUse());
  });
  GreedyRewriteConfig config;
  config.enableRegionSimplification = GreedySimplifyRegionLevel::Disabled;
  (void)applyPatternsAndFoldGreedily(kernel, std::move(patterns), config);
}

/// Loop order and reshapes, before anything is chosen.
/// A static tensor.reshape of the kernel's result that only expands or
/// collapses dims becomes tensor.expand_shape / collapse_shape: a view, so
/// the workgroups write the result in place (through tensor.reshape it was
/// a buffer the kernel then copied, and the copy sat beside the workgroup
/// loop: a squeeze-and-excitation block's mean ran on one thread).
void resultReshapesAsViews(RewriterBase &rewriter, func::FuncOp kernel) {
  auto ret = cast<func::ReturnOp>(kernel.getBody().front().getTerminator());
  for (Value v : ret.getOperands()) {
    auto reshape = v.getDefiningOp<tensor::ReshapeOp>();
    if (!reshape)
      continue;
    auto from = dyn_cast<RankedTensorType>(reshape.getSource().getType());
    auto to = dyn_cast<RankedTensorType>(reshape.getType());
    if (!from || !to || !from.hasStaticShape() || !to.hasStaticShape() ||
        from.getRank() == to.getRank())
      continue;
    bool expands = to.getRank() > from.getRank();
    auto reassociation = expands ? getReassociationIndicesForReshape(to, from)
                                 : getReassociationIndicesForReshape(from, to);
    if (!reassociation)
      continue;
    rewriter.setInsertionPoint(reshape);
    if (expands)
      rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
          reshape, to, reshape.getSource(), *reassociation);
    else
      rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
          reshape, to, reshape.getSource(), *reassociation);
  }
}

/// An elementwise generic that computes only results of the kernel: all
/// loops parallel, statically shaped, identity output maps, every result
/// used by the return alone.
bool isElementwiseResult(linalg::GenericOp op, func::ReturnOp ret) {
  if (op.getNumReductionLoops() != 0 || !op.hasPureTensorSemantics() ||
      llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return false;
  for (OpOperand &out : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&out).isIdentity())
      return false;
  return llvm::all_of(op->getUsers(),
                      [&](Operation *user) { return user == ret; });
}

/// One generic computing both `a` and `b` (isElementwiseResult, the same
/// loops): inputs once each, both bodies, both results.
linalg::GenericOp mergeGenerics(RewriterBase &rewriter, linalg::GenericOp a,
                                linalg::GenericOp b) {
  linalg::GenericOp later = a->isBeforeInBlock(b) ? b : a;
  SmallVector<Value> inputs, inits;
  SmallVector<AffineMap> maps;
  auto inputIndex = [&](Value v, AffineMap m) {
    for (auto [i, in] : llvm::enumerate(inputs))
      if (in == v && maps[i] == m)
        return unsigned(i);
    inputs.push_back(v);
    maps.push_back(m);
    return unsigned(inputs.size() - 1);
  };
  SmallVector<SmallVector<unsigned>> argOf(2);
  for (auto [k, op] : llvm::enumerate(SmallVector<linalg::GenericOp>{a, b}))
    for (OpOperand *in : op.getDpsInputOperands())
      argOf[k].push_back(inputIndex(in->get(), op.getMatchingIndexingMap(in)));
  SmallVector<AffineMap> outMaps;
  for (linalg::GenericOp op : {a, b})
    for (OpOperand &out : op.getDpsInitsMutable()) {
      inits.push_back(out.get());
      outMaps.push_back(op.getMatchingIndexingMap(&out));
    }
  maps.append(outMaps);
  rewriter.setInsertionPoint(later);
  auto merged = rewriter.create<linalg::GenericOp>(
      later.getLoc(), TypeRange(ValueRange(inits)), inputs, inits, maps,
      a.getIteratorTypesArray(),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        SmallVector<Value> yields;
        unsigned outBase = unsigned(inputs.size());
        for (auto [k, op] :
             llvm::enumerate(SmallVector<linalg::GenericOp>{a, b})) {
          IRMapping map;
          Block &body = op.getRegion().front();
          for (auto [i, arg] : llvm::enumerate(
                   body.getArguments().take_front(op.getNumDpsInputs())))
            map.map(arg, args[argOf[k][i]]);
          for (auto [i, arg] : llvm::enumerate(
                   body.getArguments().drop_front(op.getNumDpsInputs())))
            map.map(arg, args[outBase + i]);
          outBase += op.getNumDpsInits();
          for (Operation &inner : body.without_terminator())
            nb.clone(inner, map);
          for (Value y : body.getTerminator()->getOperands())
            yields.push_back(map.lookupOrDefault(y));
        }
        nb.create<linalg::YieldOp>(loc, yields);
      });
  // Counted before `a` is replaced (erased): reading it after was a
  // use-after-free (AddressSanitizer, scripts/sanitize.sh).
  unsigned aResults = a.getNumResults();
  rewriter.replaceOp(a, merged.getResults().take_front(aResults));
  rewriter.replaceOp(b, merged.getResults().drop_front(aResults));
  return merged;
}

/// Elementwise generics over the same loops that read the same tensor and
/// compute only kernel results become one generic with several results,
/// so one workgroup loop computes them all: a residual add and its square
/// (RMSNorm's next input) had become two generics, each recomputing the sum
/// from the matmul before them, and the kernel ran that matmul twice, on
/// one thread (LLaMA's 1376 x 512 projection 4.0 ms at one and two threads,
/// the matmul alone 2.4 and 1.25).
void mergeElementwiseResults(RewriterBase &rewriter, func::FuncOp kernel) {
  auto ret = cast<func::ReturnOp>(kernel.getBody().front().getTerminator());
  bool merged = true;
  while (merged) {
    merged = false;
    SmallVector<linalg::GenericOp> candidates;
    for (Value v : ret.getOperands())
      if (auto op = v.getDefiningOp<linalg::GenericOp>())
        if (isElementwiseResult(op, ret) && !llvm::is_contained(candidates, op))
          candidates.push_back(op);
    for (size_t i = 0; i < candidates.size() && !merged; ++i)
      for (size_t j = i + 1; j < candidates.size() && !merged; ++j) {
        linalg::GenericOp a = candidates[i], b = candidates[j];
        bool shares = llvm::any_of(a.getDpsInputs(), [&](Value v) {
          return llvm::is_contained(b.getDpsInputs(), v);
        });
        if (!shares || a.getStaticLoopRanges() != b.getStaticLoopRanges() ||
            a.getIteratorTypesArray() != b.getIteratorTypesArray())
          continue;
        mergeGenerics(rewriter, a, b);
        merged = true;
      }
  }
}

linalg::LinalgOp prepareKernel(RewriterBase &rewriter, func::FuncOp kernel) {
  resultReshapesAsViews(rewriter, kernel);
  foldUnitReshapes(rewriter, kernel);
  fuseElementwiseChains(kernel);
  mergeElementwiseResults(rewriter, kernel);
  orderLoopsForContiguity(rewriter, kernel);
  collapseRowLoops(rewriter, kernel);
  return findRoot(kernel);
}

} // namespace

/// Whether `ops` hold a contraction and, besides it, a reduction that is no
/// convolution or pool (a softmax's or a norm's row, a second contraction):
/// the kernels whose temporaries row blocks keep in cache (attention).
bool reducesAfterContraction(ArrayRef<linalg::LinalgOp> ops) {
  int contractions = 0;
  bool rowReduction = false;
  for (linalg::LinalgOp op : ops) {
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic || op.getNumReductionLoops() == 0)
      continue;
    if (linalg::isaContractionOpInterface(op))
      ++contractions;
    else if (!analyzeDirectConv(generic) && !analyzeChannelConv(generic))
      rowReduction = true;
  }
  return contractions >= 2 || (contractions == 1 && rowReduction);
}

namespace {

/// The knobs of a register tile: its rows, its columns (lanes) and, where
/// it has them, filters that share its input vectors (a knob name or "").
/// Tiles past the machine's vector registers are illegal.
struct TileKnob {
  std::string rows, cols, filters;
};
using TileKnobs = std::vector<TileKnob>;

/// A knob per loop the kernel's root can be split along into workgroups;
/// returns their names.
std::vector<std::string> addSplitKnobs(search::ScheduleSpace &space,
                                       func::FuncOp kernel,
                                       linalg::LinalgOp root,
                                       const HostMachine &machine) {
  std::vector<std::string> splitKnobs;
  SplitAnalysis a = analyzeSplits(root);
  SmallVector<int64_t> defaults =
      chooseSplitCounts(a, kernelWork(kernel), splitGoal(kernel, machine));
  SmallVector<unsigned> loops(a.order);
  llvm::sort(loops);
  for (unsigned d : loops) {
    search::Knob knob{knobs::split(d), {}};
    for (int64_t c : a.legalCounts(d, kMaxWorkgroups))
      knob.values.push_back(c);
    if (knob.values.size() < 2)
      continue;
    space.defaults[knob.name] = defaults[d];
    splitKnobs.push_back(knob.name);
    space.knobs.push_back(std::move(knob));
  }
  return splitKnobs;
}

/// The register tile, reduction chunk and packing knobs of each contraction
/// (and its dot-product tile when it has one).
void addContractionKnobs(search::ScheduleSpace &space, func::FuncOp kernel,
                         const HostMachine &machine, TileKnobs &tiles) {
  SmallVector<linalg::GenericOp> contractions;
  kernel.walk([&](linalg::GenericOp op) {
    if (linalg::isaContractionOpInterface(op))
      contractions.push_back(op);
  });
  int64_t lanes = machine.lanes();
  for (auto [index, op] : llvm::enumerate(contractions)) {
    std::optional<ContractionLoops> c = analyzeContraction(op);
    if (!c)
      continue;
    std::string prefix = knobs::contraction(index);
    if (std::optional<DotLoops> d = analyzeDotContraction(op, machine)) {
      std::vector<int64_t> dots{0, 1, 2, 4, 8};
      int64_t cols = defaultDotColumns(*d, machine);
      if (!llvm::is_contained(dots, cols))
        dots.push_back(cols);
      llvm::sort(dots);
      space.defaults[prefix + knobs::kDot] = cols;
      space.knobs.push_back({prefix + knobs::kDot, dots});
    }
    ContractionKnobs k = contractionKnobs(nullptr, index, *c, machine);
    auto add = [&](const std::string &name, std::vector<int64_t> values,
                   int64_t value) {
      if (values.size() < 2)
        return;
      space.defaults[prefix + name] = value;
      space.knobs.push_back({prefix + name, std::move(values)});
    };
    // AMX blocks (their chunk "k_tile"), or the register tiles below.
    if (takesAmxBlocks(op, *c, machine))
      add(knobs::kAmx, {0, 1}, 1);
    // The defaults among the values: a masked tile over the whole loop (64
    // lanes over 49 columns), rows dividing near the default (7 of 98).
    auto withDefault = [](std::vector<int64_t> values, int64_t value) {
      if (!llvm::is_contained(values, value))
        values.insert(llvm::upper_bound(values, value), value);
      return values;
    };
    std::vector<int64_t> cols{1};
    for (int64_t v : llvm::reverse(kTileWidths))
      if (v <= c->ranges[c->inner] && v <= 4 * lanes)
        cols.push_back(v);
    add(knobs::kCols, withDefault(cols, k.cols), k.cols);
    if (!c->rowDims.empty()) {
      std::vector<int64_t> rows;
      int64_t range = c->ranges[c->rowDims.front()];
      for (int64_t r : {1, 2, 3, 4, 5, 6, 8, 10, 12, 14})
        if (r <= range)
          rows.push_back(r);
      int64_t defaultRows = std::min(k.rows, range);
      add(knobs::kRows, withDefault(rows, defaultRows), defaultRows);
      std::vector<int64_t> dims;
      for (size_t i = 0; i < c->rowDims.size(); ++i)
        dims.push_back(int64_t(i));
      add(knobs::kRowDim, dims, 0);
      add(knobs::kOrder, {0, 1}, 0);
      tiles.push_back({prefix + knobs::kRows, prefix + knobs::kCols});
    }
    if (c->reduction) {
      int64_t range = c->ranges[*c->reduction];
      std::vector<int64_t> chunks{0};
      for (int64_t t : {32, 64, 128, 256, 512})
        if (t < range && range % t == 0)
          chunks.push_back(t);
      if (!llvm::is_contained(chunks, k.kTile)) {
        chunks.push_back(k.kTile);
        llvm::sort(chunks);
      }
      add(knobs::kKTile, chunks, k.kTile);
      // Decided on the workgroup's rows (kHeuristicPack).
      add(knobs::kPack, {knobs::kHeuristicPack, 0, 1}, knobs::kHeuristicPack);
      if (!c->rowDims.empty())
        add(knobs::kPackRows, {0, 1}, k.packRows);
    }
  }
}

/// The register tiles of the direct and the channel (depthwise, pool)
/// convolutions.
void addConvolutionKnobs(search::ScheduleSpace &space, func::FuncOp kernel,
                         const HostMachine &machine, TileKnobs &tiles) {
  int64_t lanes = machine.lanes();
  for (auto [index, op] : llvm::enumerate(directConvolutions(kernel))) {
    std::optional<DirectConvLoops> c = analyzeDirectConv(op);
    auto [filters, pixels] = defaultDirectConvTile(*c, machine);
    std::string prefix = knobs::directConv(index);
    std::vector<int64_t> widths, rows;
    for (int64_t v : {lanes / 2, lanes, 2 * lanes, 4 * lanes})
      if (v >= 4 && v <= c->ranges[c->filters])
        widths.push_back(v);
    for (int64_t r = 1; r <= std::min<int64_t>(14, c->ranges[c->pixels]); ++r)
      rows.push_back(r);
    if (widths.size() > 1) {
      space.defaults[prefix + knobs::kFilters] = filters;
      space.knobs.push_back({prefix + knobs::kFilters, widths});
    }
    if (rows.size() > 1) {
      space.defaults[prefix + knobs::kPixels] = pixels;
      space.knobs.push_back({prefix + knobs::kPixels, rows});
    }
    std::vector<int64_t> chunks = channelChunkChoices(op, *c);
    if (chunks.size() > 1) {
      chunks.insert(chunks.begin(), knobs::kHeuristicChannelChunk);
      space.defaults[prefix + knobs::kKTile] = knobs::kHeuristicChannelChunk;
      space.knobs.push_back({prefix + knobs::kKTile, chunks});
    }
    tiles.push_back({prefix + knobs::kPixels, prefix + knobs::kFilters});
    // AMX blocks, or the register tiles above.
    if (takesAmxConv(op, machine)) {
      space.defaults[prefix + knobs::kAmx] = 1;
      space.knobs.push_back({prefix + knobs::kAmx, {0, 1}});
    }
  }
  for (auto [index, op] : llvm::enumerate(channelConvolutions(kernel))) {
    std::optional<ChannelConvLoops> c = analyzeChannelConv(op);
    auto [columns, rows, filters] = defaultChannelConvTile(*c, machine);
    std::string prefix = knobs::channelConv(index);
    std::vector<int64_t> widths{1}, heights;
    for (int64_t v : {4, 8, 16, 32, 64})
      if (v <= std::min(c->ranges[c->columns], 4 * lanes))
        widths.push_back(v);
    if (!llvm::is_contained(widths, columns))
      widths.push_back(columns);
    llvm::sort(widths);
    space.defaults[prefix + knobs::kCols] = columns;
    space.knobs.push_back({prefix + knobs::kCols, widths});
    int64_t range = c->rows ? c->ranges[*c->rows] : 1;
    for (int64_t r = 1; r <= std::min<int64_t>(14, range); ++r)
      heights.push_back(r);
    if (heights.size() > 1) {
      space.defaults[prefix + knobs::kRows] = rows;
      space.knobs.push_back({prefix + knobs::kRows, heights});
    }
    std::vector<int64_t> counts;
    for (int64_t f : {1, 2, 4, 8})
      if (c->filters && f <= c->ranges[*c->filters])
        counts.push_back(f);
    if (counts.size() > 1) {
      space.defaults[prefix + knobs::kFilters] = filters;
      space.knobs.push_back({prefix + knobs::kFilters, counts});
    }
    tiles.push_back({prefix + knobs::kRows, prefix + knobs::kCols,
                     prefix + knobs::kFilters});
  }
}

} // namespace

search::ScheduleSpace describeScheduleSpace(func::FuncOp kernel,
                                            const HostMachine &machine) {
  search::ScheduleSpace space;
  IRRewriter rewriter(kernel.getContext());
  linalg::LinalgOp root = prepareKernel(rewriter, kernel);
  std::vector<std::string> splitKnobs;
  if (root)
    splitKnobs = addSplitKnobs(space, kernel, root, machine);
  // Registers hold rows x (cols / lanes) accumulators, a row of the
  // streamed operand and a broadcast; past the machine's vector registers
  // they spill.
  int64_t lanes = machine.lanes(), registers = machine.vectorRegisters;
  TileKnobs tiles;
  addContractionKnobs(space, kernel, machine, tiles);
  SmallVector<linalg::LinalgOp> generics;
  kernel.walk([&](linalg::GenericOp op) { generics.push_back(op); });
  if (reducesAfterContraction(generics)) {
    space.defaults[knobs::kBlockRows] = knobs::kHeuristicBlockRows;
    space.knobs.push_back(
        {knobs::kBlockRows, {knobs::kHeuristicBlockRows, 0, 8, 16, 32, 64}});
  }
  addConvolutionKnobs(space, kernel, machine, tiles);
  space.legal = [splitKnobs, tiles, lanes,
                 registers](const search::Schedule &s) {
    auto value = [&](const std::string &name, int64_t fallback) {
      auto it = s.find(name);
      return it == s.end() ? fallback : it->second;
    };
    int64_t workgroups = 1;
    for (const std::string &k : splitKnobs)
      workgroups *= value(k, 1);
    if (workgroups > kMaxWorkgroups)
      return false;
    for (const TileKnob &t : tiles) {
      int64_t vectors = (value(t.cols, 1) + lanes - 1) / lanes;
      int64_t filters = value(t.filters, 1);
      if (value(t.rows, 1) * vectors * filters + vectors + filters > registers)
        return false;
    }
    return true;
  };
  return space;
}

/// A kernel that only pads (a depthwise convolution's input) is split by
/// its outermost loop without padding, channels: each workgroup pads its
/// slice (one thread filled and copied MobileNetV3's 64 x 112 x 112 input
/// while the other waited).
bool splitPadKernel(RewriterBase &rewriter, func::FuncOp kernel,
                    KernelSchedule &schedule) {
  auto ret = cast<func::ReturnOp>(kernel.getBody().front().getTerminator());
  auto pad = ret.getNumOperands() == 1
                 ? ret.getOperand(0).getDefiningOp<tensor::PadOp>()
                 : tensor::PadOp();
  // Its work: the elements it writes.
  if (!pad || !pad.getResultType().hasStaticShape() ||
      pad.getResultType().getNumElements() < kMinParallelWork)
    return false;
  auto low = getConstantIntValues(pad.getMixedLowPad());
  auto high = getConstantIntValues(pad.getMixedHighPad());
  if (!low || !high || !pad.getConstantPaddingValue() ||
      !pad.getSourceType().hasStaticShape())
    return false;
  ArrayRef<int64_t> shape = pad.getResultType().getShape();
  std::optional<unsigned> dim;
  for (unsigned d = 0; d < shape.size() && !dim; ++d)
    if (!(*low)[d] && !(*high)[d] && shape[d] > 1)
      dim = d;
  if (!dim)
    return false;
  int64_t most =
      std::min(kTargetWorkgroups,
               pad.getResultType().getNumElements() / kMinWorkPerWorkgroup);
  int64_t count = 1;
  for (int64_t c = 2; c <= std::min(shape[*dim], most); ++c)
    if (shape[*dim] % c == 0)
      count = c;
  if (count < 2)
    return false;
  std::vector<int64_t> tile(shape.size(), 0);
  int64_t chunk = shape[*dim] / count;
  tile[*dim] = chunk;
  // forall %w in (count): pad source[.., w * chunk : chunk, ..] into the
  // same slice of the result.
  Location loc = pad.getLoc();
  rewriter.setInsertionPoint(pad);
  Value empty = rewriter.create<tensor::EmptyOp>(
      loc, shape, pad.getResultType().getElementType());
  auto forall = rewriter.create<scf::ForallOp>(
      loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(count)},
      ValueRange{empty}, std::nullopt);
  rewriter.setInsertionPointToStart(forall.getBody());
  Value offset = rewriter.create<arith::MulIOp>(
      loc, forall.getInductionVar(0),
      rewriter.create<arith::ConstantIndexOp>(loc, chunk));
  ArrayRef<int64_t> sourceShape = pad.getSourceType().getShape();
  SmallVector<OpFoldResult> at(shape.size(), rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> from, to,
      ones(shape.size(), rewriter.getIndexAttr(1));
  at[*dim] = offset;
  for (unsigned d = 0; d < shape.size(); ++d) {
    from.push_back(rewriter.getIndexAttr(d == *dim ? chunk : sourceShape[d]));
    to.push_back(rewriter.getIndexAttr(d == *dim ? chunk : shape[d]));
  }
  Value part = rewriter.create<tensor::ExtractSliceOp>(loc, pad.getSource(), at,
                                                       from, ones);
  // The workgroup's slice of the result, filled, the source's slice
  // inside: both in place.
  Value slice = rewriter.create<tensor::ExtractSliceOp>(
      loc, forall.getRegionIterArgs()[0], at, to, ones);
  Value filled =
      rewriter.create<linalg::FillOp>(loc, pad.getConstantPaddingValue(), slice)
          .getResult(0);
  Value padded = rewriter.create<tensor::InsertSliceOp>(
      loc, part, filled, pad.getMixedLowPad(), from, ones);
  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  rewriter.create<tensor::ParallelInsertSliceOp>(
      loc, padded, forall.getRegionIterArgs()[0], at, to, ones);
  rewriter.replaceOp(pad, forall.getResults());
  schedule.workgroupTile = tile;
  schedule.workgroups = count;
  schedule.knobs[knobs::split(*dim)] = count;
  return true;
}

/// The op computing what a workgroup writes: the source of the forall's
/// one parallel insert.
linalg::LinalgOp tiledRootOf(scf::ForallOp forall) {
  auto inserts = forall.getTerminator().getYieldingOps();
  if (!llvm::hasSingleElement(inserts))
    return nullptr;
  auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(*inserts.begin());
  return insert ? insert.getSource().getDefiningOp<linalg::LinalgOp>()
                : nullptr;
}

/// Where a workgroup's rows are computed in blocks: the loop, and the rows
/// per block (the loop's range when it is not blocked).
struct RowBlocks {
  unsigned loop = 0;
  int64_t rows = 0;
  int64_t range = 0;
};

/// The bytes a block of rows (the ops `tiled` reaches) reads whole: the
/// inputs of those ops that none of them computes and that no loop of the
/// block indexes.
int64_t streamedPerBlock(const TiledLoops &tiled) {
  llvm::SmallPtrSet<Value, 8> seen;
  int64_t bytes = 0;
  for (auto &[op, loops] : tiled) {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    for (OpOperand *o : linalgOp.getDpsInputOperands()) {
      Operation *def = o->get().getDefiningOp();
      AffineMap map = linalgOp.getMatchingIndexingMap(o);
      if ((def && tiled.count(def)) ||
          llvm::any_of(loops,
                       [&](unsigned d) { return map.isFunctionOfDim(d); }) ||
          !seen.insert(o->get()).second)
        continue;
      bytes += bytesOf(o->get());
    }
  }
  return bytes;
}

/// Chooses the row blocks of `root`'s workgroup: the parallel loop whose
/// tiling shrinks the most temporary bytes (the results of the producers it
/// reaches; none re-reading a halo), in blocks whose temporaries fit in half
/// of L2 (the ones the loop does not reach are computed once per workgroup
/// and streamed past them). `rowsKnob` (rows per block) overrides the
/// block; a block divides the loop.
std::optional<RowBlocks> chooseRowBlocks(linalg::LinalgOp root,
                                         ArrayRef<linalg::LinalgOp> slice,
                                         const HostMachine &machine,
                                         std::optional<int64_t> rowsKnob) {
  llvm::SmallPtrSet<Operation *, 16> in;
  int64_t total = 0;
  for (linalg::LinalgOp op : slice) {
    in.insert(op);
    if (op != root)
      for (Value r : op->getResults())
        total += bytesOf(r);
  }
  int64_t budget = machine.l2Bytes / 2;
  if (!reducesAfterContraction(slice) || (!rowsKnob && total <= budget))
    return std::nullopt;
  // Only loops a workgroup split may take, in pieces it allows (a direct
  // convolution's filters stay within their weight blocks: blocks of 24
  // over blocks of 16 read wrong weights).
  SplitAnalysis splits = analyzeSplits(root);
  SmallVector<int64_t> ranges = root.getStaticLoopRanges();
  auto iterators = root.getIteratorTypesArray();
  std::optional<RowBlocks> best;
  int64_t bestBytes = 0;
  TiledLoops bestTiled;
  for (unsigned d = 0; d < ranges.size(); ++d) {
    if (iterators[d] != utils::IteratorType::parallel || ranges[d] <= 1 ||
        ShapedType::isDynamic(ranges[d]) ||
        !llvm::is_contained(splits.order, d))
      continue;
    TiledLoops tiled = followLoop(root, d, in);
    int64_t shrinking = 0;
    bool halo = false;
    for (auto &[op, loops] : tiled) {
      auto linalgOp = cast<linalg::LinalgOp>(op);
      for (OpOperand &o : op->getOpOperands())
        halo |= haloBytes(linalgOp, linalgOp.getMatchingIndexingMap(&o),
                          o.get(), loops) != 0;
      if (op != root.getOperation())
        for (Value r : op->getResults())
          shrinking += bytesOf(r);
    }
    if (!halo && shrinking > bestBytes) {
      bestBytes = shrinking;
      bestTiled = std::move(tiled);
      best = RowBlocks{d, ranges[d], ranges[d]};
    }
  }
  if (!best || 2 * bestBytes < total)
    return std::nullopt;
  // The blocks' temporaries stay in cache while the unblocked operands
  // stream past them. A block shorter than a register tile's rows is not
  // worth its loop unless asked for (197 queries, a prime, stay whole).
  int64_t perRow = std::max<int64_t>(1, bestBytes / best->range);
  int64_t limit = rowsKnob ? *rowsKnob : budget / perRow;
  SmallVector<int64_t> counts = splits.legalCounts(best->loop, best->range);
  auto legal = [&](int64_t b) {
    return best->range % b == 0 && llvm::is_contained(counts, best->range / b);
  };
  for (int64_t b = std::min(limit, best->range); b >= 1; --b)
    if (legal(b)) {
      best->rows = b;
      break;
    }
  if (best->rows == 0 || (!rowsKnob && best->rows < machine.tileRows()))
    return std::nullopt;
  // Every block streams the operands its rows do not index (an attention
  // block's keys and values) once: where that costs more per row than the
  // temporaries, the block grows until it does not, its temporaries past
  // L2 but within 4 L2s, and blocked still. Whisper's attention over 1500
  // keys (768 KB of keys and values, 25 KB of temporaries per query) ran
  // 269 ms in blocks of 10 queries, 257 in 25, 250 in 50 and 254 in 125
  // (its four layers, one thread, Zen 3).
  int64_t streamed = streamedPerBlock(bestTiled);
  if (!rowsKnob && streamed > perRow * best->rows)
    for (int64_t b = best->rows + 1;
         b < best->range && b * perRow <= 4 * machine.l2Bytes; ++b) {
      if (!legal(b))
        continue;
      best->rows = b;
      if (b * perRow >= streamed)
        break;
    }
  return best;
}

/// Computes the workgroup of `root` in blocks of rows (RowBlocks): a loop
/// in the workgroup into which the producers the block's rows reach are
/// fused; the others (an attention kernel's transposed keys and values)
/// stay outside it, computed once per workgroup. An attention workgroup of
/// 250 queries over 1500 keys held 4.5 MB of scores, past L2, each pass of
/// its softmax streaming them from memory.
void blockRows(RewriterBase &rewriter, linalg::LinalgOp root,
               const search::Schedule *knobs, const HostMachine &machine,
               KernelSchedule &schedule) {
  SmallVector<linalg::LinalgOp> slice;
  for (linalg::LinalgOp op : producerSlice(root))
    if (op->getBlock() == root->getBlock())
      slice.push_back(op);
  std::optional<int64_t> rowsKnob;
  if (knobs)
    if (auto it = knobs->find(knobs::kBlockRows);
        it != knobs->end() && it->second != knobs::kHeuristicBlockRows)
      rowsKnob = it->second;
  if (rowsKnob && *rowsKnob == 0)
    return;
  std::optional<RowBlocks> blocks =
      chooseRowBlocks(root, slice, machine, rowsKnob);
  if (!blocks || blocks->rows == blocks->range)
    return;
  llvm::SmallPtrSet<Operation *, 16> in;
  for (linalg::LinalgOp op : slice)
    in.insert(op);
  TiledLoops reached = followLoop(root, blocks->loop, in);
  SmallVector<OpFoldResult> sizes(root.getNumLoops(), rewriter.getIndexAttr(0));
  sizes[blocks->loop] = rewriter.getIndexAttr(blocks->rows);
  scf::SCFTilingOptions tiling;
  tiling.setTileSizes(sizes);
  tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  options.setFusionControlFn(
      [&](tensor::ExtractSliceOp, OpResult producer, bool) {
        return std::make_tuple(reached.contains(producer.getOwner()), false);
      });
  auto kernel = root->getParentOfType<func::FuncOp>();
  rewriter.setInsertionPoint(root);
  auto result = scf::tileConsumerAndFuseProducersUsingSCF(
      rewriter, cast<TilingInterface>(root.getOperation()), options);
  if (failed(result))
    return;
  for (auto [original, replacement] : result->replacements)
    rewriter.replaceAllUsesWith(original, replacement);
  if (root->use_empty())
    rewriter.eraseOp(root);
  eraseDeadProducers(rewriter, kernel);
  schedule.knobs[knobs::kBlockRows] = blocks->rows;
}

/// A recurrent layer in its stepped form (kTimeStepsAttr: an scf.forall
/// over (time step, part) at the top of the kernel) runs as one workgroup
/// per iteration, in steps of the parts.
static bool scheduleTimeSteps(func::FuncOp kernel, KernelSchedule &schedule) {
  auto steps = kernel->getAttrOfType<IntegerAttr>(kTimeStepsAttr);
  auto foralls = kernel.getBody().front().getOps<scf::ForallOp>();
  if (!steps || !llvm::hasSingleElement(foralls))
    return false;
  scf::ForallOp forall = *foralls.begin();
  auto ubs = getConstantIntValues(forall.getMixedUpperBound());
  if (!ubs || ubs->size() != 2 || (*ubs)[0] != steps.getInt() ||
      !forall.isNormalized())
    return false;
  schedule.workgroups = (*ubs)[0] * (*ubs)[1];
  schedule.timeSteps = (*ubs)[0];
  return true;
}

/// A split of root loop `loop` that no count divides evenly: `parts`
/// pieces of `piece` iterations, then the rest. From three pieces on, the
/// last piece takes the rest (its own workgroup: 257 rows as 64, 64, 64
/// and 65, not 4 x 64 and a workgroup of one row, which in an AMX
/// contraction streamed the weight in f32 for that row alone); the others
/// are a workgroup loop.
struct UnevenSplit {
  unsigned loop = 0;
  int64_t piece = 0, parts = 0;
  /// The pieces of the workgroup loop.
  int64_t looped() const { return parts >= 3 ? parts - 1 : parts; }
  /// The workgroups: the loop's and the one of the rest.
  int64_t workgroups() const { return looped() + 1; }
};

/// The uneven split the default takes when no even split is left (257
/// rows, a prime: openWakeWord's STFT matmul ran on one thread): the
/// cheapest loop that is not the contiguous one (a narrow rest of columns
/// would not vectorize) nor blocked, in about the goal's pieces, whole
/// quanta each.
std::optional<UnevenSplit>
chooseUnevenSplit(const SplitAnalysis &a, int64_t work, const SplitGoal &goal) {
  if (a.unmappedBlocks || work < kMinParallelWork)
    return std::nullopt;
  int64_t target = std::min(goal.workgroups,
                            std::max<int64_t>(1, work / kMinWorkPerWorkgroup));
  if (target < 2)
    return std::nullopt;
  for (unsigned d : a.order) {
    if (d == a.innermost || a.blocks.count(d))
      continue;
    int64_t range = a.ranges[d];
    int64_t quantum = std::max<int64_t>(1, goal.quanta.lookup(d));
    int64_t piece = std::max(quantum, range / target / quantum * quantum);
    if (range % piece == 0 || range / piece < 2)
      continue;
    return UnevenSplit{d, piece, range / piece};
  }
  return std::nullopt;
}

/// The tensor.empty that `root`'s result starts from, through the inits
/// of the ops that fill it (a matmul's zeros), or null.
Value emptyInit(linalg::LinalgOp root) {
  Value v = root.getNumDpsInits() == 1 ? root.getDpsInits()[0] : Value();
  for (int depth = 0; v && depth < 8; ++depth) {
    if (v.getDefiningOp<tensor::EmptyOp>())
      return v;
    auto op = v.getDefiningOp<linalg::LinalgOp>();
    v = op && op.getNumDpsInits() == 1 ? op.getDpsInits()[0] : Value();
  }
  return {};
}

/// Whether splitUnevenly takes `root`: one static result that starts from
/// a tensor.empty (the parts' results are inserted into it, so that
/// bufferization writes them where the root's would have gone).
bool splitsUnevenly(linalg::LinalgOp root) {
  auto type = root->getNumResults() == 1
                  ? dyn_cast<RankedTensorType>(root->getResult(0).getType())
                  : RankedTensorType();
  return isa<TilingInterface>(root.getOperation()) && type &&
         type.hasStaticShape() && emptyInit(root);
}

/// Piece `[offset, offset + size)` of `root` along `loop`: a tiled copy of
/// the root on static slices, its operands' producers sliced along
/// (fuseProducersOfSlice), inserted into `dest` at `root`. Returns the
/// insert, or null when a step fails.
tensor::InsertSliceOp slicePiece(RewriterBase &rewriter, linalg::LinalgOp root,
                                 unsigned loop, int64_t offset, int64_t size,
                                 Value dest) {
  auto tiling = cast<TilingInterface>(root.getOperation());
  SmallVector<int64_t> ranges = root.getStaticLoopRanges();
  SmallVector<OpFoldResult> offsets(ranges.size(), rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes;
  for (int64_t r : ranges)
    sizes.push_back(rewriter.getIndexAttr(r));
  offsets[loop] = rewriter.getIndexAttr(offset);
  sizes[loop] = rewriter.getIndexAttr(size);
  rewriter.setInsertionPoint(root);
  FailureOr<TilingResult> piece =
      tiling.getTiledImplementation(rewriter, offsets, sizes);
  SmallVector<OpFoldResult> at, extent;
  if (failed(piece) || piece->tiledOps.size() != 1 ||
      failed(tiling.getResultTilePosition(rewriter, 0, offsets, sizes, at,
                                          extent)))
    return {};
  Operation *tiled = piece->tiledOps.front();
  for (Value operand : SmallVector<Value>(tiled->getOperands()))
    if (auto slice = operand.getDefiningOp<tensor::ExtractSliceOp>())
      fuseProducersOfSlice(rewriter, slice);
  rewriter.setInsertionPoint(root);
  SmallVector<OpFoldResult> strides(at.size(), rewriter.getIndexAttr(1));
  return rewriter.create<tensor::InsertSliceOp>(
      root.getLoc(), tiled->getResult(0), dest, at, extent, strides);
}

/// Moves the ops between `after` and `insert` (a piece's computation)
/// into a workgroup loop of one iteration whose output is the insert's
/// destination: tiling a piece by its whole size leaves no slices to fuse
/// its producers through.
scf::ForallOp wrapInWorkgroup(RewriterBase &rewriter, Operation *after,
                              tensor::InsertSliceOp insert) {
  Value dest = insert.getDest();
  rewriter.setInsertionPoint(insert);
  // Mapped (to a GPU block; nothing on the host reads the mapping), so
  // that canonicalization keeps the single iteration a loop: it inlines
  // unmapped ones.
  MLIRContext *ctx = rewriter.getContext();
  ctx->getOrLoadDialect<gpu::GPUDialect>();
  auto mapping = rewriter.getArrayAttr(
      {gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX)});
  auto forall = rewriter.create<scf::ForallOp>(
      insert.getLoc(), ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)},
      ValueRange{dest}, mapping);
  Value out = forall.getRegionIterArgs().front();
  SmallVector<Operation *> piece;
  for (Operation *op = after->getNextNode(); op != forall;
       op = op->getNextNode())
    piece.push_back(op);
  for (Operation *op : piece) {
    rewriter.moveOpBefore(op, forall.getTerminator());
    for (OpOperand &operand : op->getOpOperands())
      if (operand.get() == dest)
        rewriter.modifyOpInPlace(op, [&] { operand.set(out); });
  }
  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  rewriter.create<tensor::ParallelInsertSliceOp>(
      insert.getLoc(), insert.getSource(), out, insert.getMixedOffsets(),
      insert.getMixedSizes(), insert.getMixedStrides());
  rewriter.replaceOp(insert, forall.getResults());
  return forall;
}

/// Splits `root` (splitsUnevenly) along `split.loop` into its even pieces
/// and the rest, each on static slices with its producers, inserted into
/// the tensor.empty the root's result starts from: the even part tiled
/// into a workgroup loop of `split.looped()` pieces, the rest (with the
/// last piece, from three on) a workgroup loop of its own. Returns the
/// workgroup loops, or nothing when a step fails: the kernel then computes the
/// same values, in ops no workgroup loop holds.
SmallVector<scf::ForallOp> splitUnevenly(RewriterBase &rewriter,
                                         linalg::LinalgOp root,
                                         const UnevenSplit &split) {
  int64_t range = root.getStaticLoopRanges()[split.loop];
  int64_t even = split.piece * split.looped();
  Value empty = emptyInit(root);
  tensor::InsertSliceOp first =
      slicePiece(rewriter, root, split.loop, 0, even, empty);
  if (!first)
    return {};
  tensor::InsertSliceOp rest = slicePiece(rewriter, root, split.loop, even,
                                          range - even, first.getResult());
  if (!rest)
    return {};
  rewriter.replaceOp(root, rest.getResult());
  scf::ForallOp restLoop = wrapInWorkgroup(rewriter, first, rest);

  auto part = cast<TilingInterface>(first.getSource().getDefiningOp());
  SmallVector<OpFoldResult> sizes(part.getLoopIteratorTypes().size(),
                                  rewriter.getIndexAttr(0));
  sizes[split.loop] = rewriter.getIndexAttr(split.piece);
  scf::SCFTilingOptions tilingOptions;
  tilingOptions.setTileSizes(sizes);
  tilingOptions.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tilingOptions);
  rewriter.setInsertionPoint(part);
  auto result =
      scf::tileConsumerAndFuseProducersUsingSCF(rewriter, part, options);
  if (failed(result) || result->loops.empty())
    return {};
  for (auto [original, replacement] : result->replacements)
    rewriter.replaceAllUsesWith(original, replacement);
  if (part->use_empty())
    rewriter.eraseOp(part);
  return {cast<scf::ForallOp>(result->loops.front().getOperation()), restLoop};
}

KernelSchedule applySchedule(func::FuncOp kernel, const HostMachine &machine,
                             const search::Schedule *knobs) {
  KernelSchedule schedule;
  if (knobs) {
    schedule.kind = "tuned";
  }
  IRRewriter rewriter(kernel.getContext());
  linalg::LinalgOp root = prepareKernel(rewriter, kernel);
  if (!root && splitPadKernel(rewriter, kernel, schedule))
    return schedule;
  if (!root && scheduleTimeSteps(kernel, schedule)) {
    vectorizeContractions(rewriter, kernel, machine, knobs, schedule);
    return schedule;
  }
  if (!root) {
    // A kernel that is a loop (a recurrent cell over time) still gets
    // register tiles for the contractions in it.
    schedule.serialReason = "no tileable root op";
    vectorizeContractions(rewriter, kernel, machine, knobs, schedule);
    return schedule;
  }
  SplitAnalysis a = analyzeSplits(root);
  SmallVector<int64_t> counts =
      chooseSplitCounts(a, kernelWork(kernel), splitGoal(kernel, machine));
  if (knobs) {
    // Knobs override the heuristic's counts; a count the loop does not
    // allow (or a loop that may not be split) leaves the loop whole.
    for (unsigned d : a.order)
      if (auto it = knobs->find(knobs::split(d)); it != knobs->end())
        counts[d] =
            llvm::is_contained(a.legalCounts(d, kMaxWorkgroups), it->second)
                ? it->second
                : 1;
  }
  int64_t workgroups = 1;
  std::vector<int64_t> tile(a.ranges.size(), 0);
  for (unsigned d = 0; d < a.ranges.size(); ++d) {
    if (counts[d] > 1)
      tile[d] = a.ranges[d] / counts[d];
    workgroups *= counts[d];
  }
  for (unsigned d : a.order)
    schedule.knobs[knobs::split(d)] = counts[d];
  schedule.workgroupTile = tile;
  std::optional<UnevenSplit> uneven;
  if (workgroups < 2 && splitsUnevenly(root))
    uneven =
        chooseUnevenSplit(a, kernelWork(kernel), splitGoal(kernel, machine));
  // Knobs replay it by its count (the default a tuning run measures).
  if (uneven && knobs &&
      knobOr(knobs, knobs::split(uneven->loop), 1) != uneven->workgroups())
    uneven.reset();
  if (uneven) {
    if (splitUnevenly(rewriter, root, *uneven).empty()) {
      schedule.serialReason = "uneven split failed";
    } else {
      schedule.workgroups = uneven->workgroups();
      schedule.workgroupTile[uneven->loop] = uneven->piece;
      schedule.knobs[knobs::split(uneven->loop)] = uneven->workgroups();
    }
    eraseDeadProducers(rewriter, kernel);
    vectorizeContractions(rewriter, kernel, machine, knobs, schedule);
    return schedule;
  }
  if (workgroups < 2) {
    schedule.serialReason = "too little work to split";
    blockRows(rewriter, root, knobs, machine, schedule);
    vectorizeContractions(rewriter, kernel, machine, knobs, schedule);
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
  slicePadsInWorkgroups(rewriter, kernel);
  eraseDeadProducers(rewriter, kernel);
  schedule.workgroups = workgroups;
  if (auto forall =
          dyn_cast<scf::ForallOp>(result->loops.front().getOperation()))
    if (linalg::LinalgOp tiled = tiledRootOf(forall))
      blockRows(rewriter, tiled, knobs, machine, schedule);
  vectorizeContractions(rewriter, kernel, machine, knobs, schedule);
  return schedule;
}

namespace {

/// A buffer only there for its shape: every user is a linalg op that reads
/// it without using the values (a pooling window's extent).
bool isShapeOnlyBuffer(Operation *op) {
  auto alloc = dyn_cast<memref::AllocOp>(op);
  return alloc && alloc.getType().hasStaticShape() &&
         llvm::all_of(alloc->getUses(), [](OpOperand &use) {
           auto linalgOp = dyn_cast<linalg::LinalgOp>(use.getOwner());
           return linalgOp && linalgOp.isDpsInput(&use) &&
                  !linalgOp.payloadUsesValueFromOperand(&use);
         });
}

/// Ops that may sit beside the workgroup loop: each workgroup evaluates
/// them, so they must be free of side effects and cheap (constants, views,
/// buffers nobody reads).
bool isFreeTopLevelOp(Operation *op) {
  return isa<arith::ConstantOp, memref::GetGlobalOp, memref::SubViewOp,
             memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp,
             memref::ReshapeOp, memref::ReinterpretCastOp, func::ReturnOp,
             scf::ForallOp>(op) ||
         isShapeOnlyBuffer(op);
}

} // namespace

namespace {

/// The trip counts of a workgroup loop's dims, when its bounds are
/// constants and it has no results.
std::optional<SmallVector<int64_t>> workgroupTrips(scf::ForallOp forall) {
  auto lbs = getConstantIntValues(forall.getMixedLowerBound());
  auto ubs = getConstantIntValues(forall.getMixedUpperBound());
  auto steps = getConstantIntValues(forall.getMixedStep());
  if (!lbs || !ubs || !steps || forall.getNumResults() != 0)
    return std::nullopt;
  SmallVector<int64_t> trips;
  for (auto [lb, ub, step] : llvm::zip(*lbs, *ubs, *steps))
    trips.push_back((ub - lb + step - 1) / step);
  return trips;
}

/// The body of `forall` (of `trips` per dim) for the tile of flat index
/// `index`, at `b`'s insertion point.
void cloneWorkgroup(OpBuilder &b, scf::ForallOp forall, ArrayRef<int64_t> trips,
                    Value index) {
  Location loc = forall.getLoc();
  auto lbs = *getConstantIntValues(forall.getMixedLowerBound());
  auto steps = *getConstantIntValues(forall.getMixedStep());
  IRMapping map;
  Value rest = index;
  for (int d = int(trips.size()) - 1; d >= 0; --d) {
    Value trip = b.create<arith::ConstantIndexOp>(loc, trips[d]);
    Value tileIndex = d == 0 ? rest : b.create<arith::RemUIOp>(loc, rest, trip);
    if (d != 0)
      rest = b.create<arith::DivUIOp>(loc, rest, trip);
    Value iv = b.create<arith::AddIOp>(
        loc, b.create<arith::ConstantIndexOp>(loc, lbs[d]),
        b.create<arith::MulIOp>(
            loc, tileIndex, b.create<arith::ConstantIndexOp>(loc, steps[d])));
    map.map(forall.getInductionVar(d), iv);
  }
  for (Operation &op : forall.getBody()->without_terminator())
    b.clone(op, map);
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
    schedule.timeSteps = 1;
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
  if (foralls.empty())
    return serial("no workgroup loop");
  SmallVector<SmallVector<int64_t>> trips;
  int64_t total = 0;
  for (scf::ForallOp forall : foralls) {
    std::optional<SmallVector<int64_t>> t = workgroupTrips(forall);
    if (!t)
      return serial("dynamic workgroup loop");
    trips.push_back(*t);
    total += computeProduct(*t);
  }
  if (total != schedule.workgroups)
    return serial("workgroup count changed while tiling");

  // for %w = begin to end: the workgroup loop whose range holds %w (an
  // uneven split has two, one after the other) runs its body for tile
  // %w - first. At the last loop: the views its body reads are above it.
  OpBuilder b(foralls.back());
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  auto loop = b.create<scf::ForOp>(loc, begin, end, one);
  b.setInsertionPointToStart(loop.getBody());
  Value w = loop.getInductionVar();
  int64_t first = 0;
  for (auto [forall, t] : llvm::zip(foralls, trips)) {
    int64_t count = computeProduct(t);
    if (foralls.size() == 1) {
      cloneWorkgroup(b, forall, t, w);
    } else {
      Value lo = b.create<arith::ConstantIndexOp>(loc, first);
      Value hi = b.create<arith::ConstantIndexOp>(loc, first + count);
      Value in = b.create<arith::AndIOp>(
          loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge, w, lo),
          b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, w, hi));
      auto branch = b.create<scf::IfOp>(loc, in, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      cloneWorkgroup(b, forall, t, b.create<arith::SubIOp>(loc, w, lo));
    }
    first += count;
  }
  for (scf::ForallOp forall : foralls)
    forall.erase();
}

namespace {

/// The buffer a chain of views looks into.
Value baseBuffer(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// Turns a vector read at the top of `loop` and the write of the same
/// vector slot at its bottom into a value carried by the loop, when nothing
/// else in the loop touches that buffer. Returns the rewritten loop.
FailureOr<scf::ForOp> carryAccumulator(RewriterBase &rewriter,
                                       scf::ForOp loop) {
  for (auto read : loop.getBody()->getOps<vector::TransferReadOp>()) {
    Value source = read.getSource();
    if (!loop.isDefinedOutsideOfLoop(source) ||
        !llvm::all_of(
            read.getIndices(),
            [&](Value i) { return loop.isDefinedOutsideOfLoop(i); }) ||
        (read.getMask() && !loop.isDefinedOutsideOfLoop(read.getMask())))
      continue;
    // A masked tile (a row of 14 pixels in 16 lanes) is carried whole: the
    // write stores the lanes the read loaded.
    vector::TransferWriteOp write;
    for (auto w : loop.getBody()->getOps<vector::TransferWriteOp>())
      if (w.getSource() == source && w.getIndices() == read.getIndices() &&
          w.getVectorType() == read.getVectorType() &&
          w.getPermutationMap() == read.getPermutationMap() &&
          w.getMask() == read.getMask() && read->isBeforeInBlock(w))
        write = w;
    if (!write)
      continue;
    Value base = baseBuffer(source);
    bool clash = false;
    loop.getBody()->walk([&](Operation *op) {
      if (op == read.getOperation() || op == write.getOperation())
        return;
      for (Value operand : op->getOperands())
        if (isa<BaseMemRefType>(operand.getType()) &&
            baseBuffer(operand) == base)
          clash = true;
    });
    if (clash)
      continue;
    rewriter.moveOpBefore(read, loop);
    auto carried = cast<LoopLikeOpInterface>(loop.getOperation())
                       .replaceWithAdditionalYields(
                           rewriter, read.getResult(),
                           /*replaceInitOperandUsesInLoop=*/true,
                           [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
                             return SmallVector<Value>{write.getVector()};
                           });
    if (failed(carried))
      return failure();
    auto newLoop = cast<scf::ForOp>(carried->getOperation());
    rewriter.moveOpAfter(write, newLoop);
    rewriter.modifyOpInPlace(write, [&] {
      write.getVectorMutable().assign(newLoop.getResults().back());
    });
    return newLoop;
  }
  return failure();
}

/// The first of the trailing loops of generic `op` (on buffers), all
/// parallel or all reductions, that every operand reads either not at all
/// or as its last, contiguous dims in order, so they may be one loop;
/// nullopt when fewer than two loops qualify.
std::optional<unsigned> collapsibleSuffix(linalg::GenericOp op) {
  unsigned loops = op.getNumLoops();
  auto iterators = op.getIteratorTypesArray();
  auto usable = [&](unsigned first) {
    // One kind of loop: all parallel, or all reduction.
    if (iterators[first] != iterators[loops - 1])
      return false;
    for (OpOperand &o : op->getOpOperands()) {
      AffineMap map = op.getMatchingIndexingMap(&o);
      auto type = dyn_cast<MemRefType>(o.get().getType());
      unsigned used = 0;
      for (unsigned d = first; d < loops; ++d)
        used += map.isFunctionOfDim(d);
      if (used == 0)
        continue;
      unsigned n = loops - first, rank = map.getNumResults();
      SmallVector<int64_t> strides;
      int64_t offset;
      if (!type || used != n || rank < n ||
          failed(getStridesAndOffset(type, strides, offset)))
        return false;
      for (unsigned i = 0; i < n; ++i) {
        auto dim = dyn_cast<AffineDimExpr>(map.getResult(rank - n + i));
        if (!dim || dim.getPosition() != first + i)
          return false;
      }
      for (unsigned r = rank - n; r + 1 < rank; ++r)
        if (ShapedType::isDynamic(strides[r]) ||
            strides[r] != strides[r + 1] * type.getDimSize(r + 1))
          return false;
    }
    return true;
  };
  std::optional<unsigned> best;
  for (unsigned first = loops - 1; first-- > 0;) {
    if (!usable(first))
      break;
    best = first;
  }
  return best;
}

/// Lets LLVM reassociate the sums of reductions left to its loops (a mean,
/// a layer norm's moments, a softmax's denominator): in source order each
/// add waits for the one before (4 cycles), so a mean over 784 pixels ran
/// at one element per 4 cycles; reassociated, LLVM's vectorizer keeps
/// several vector partial sums, as onnxruntime's reductions do. The
/// reference schedule keeps source order.
void reassociateSums(func::FuncOp kernel) {
  kernel.walk([](linalg::GenericOp op) {
    // The reduction innermost (a mean, a norm's moments), where LLVM
    // vectorizes it; a col2im's sum sits between its parallel loops.
    auto iterators = op.getIteratorTypesArray();
    if (op.getNumReductionLoops() == 0 || op.getNumDpsInits() != 1 ||
        iterators.back() != utils::IteratorType::reduction)
      return;
    Block &body = *op.getBody();
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    auto add = yield.getNumOperands() == 1
                   ? yield.getOperand(0).getDefiningOp<arith::AddFOp>()
                   : arith::AddFOp();
    Value acc = body.getArguments().back();
    if (!add || (add.getLhs() != acc && add.getRhs() != acc))
      return;
    add.setFastmath(arith::FastMathFlags::contract |
                    arith::FastMathFlags::reassoc);
  });
}

/// Divisions by a value the innermost loop does not change (a softmax's row
/// sum, a norm's deviation) become multiplies by its reciprocal, which LLVM
/// then computes once per row, as onnxruntime's softmax does (within an
/// ulp): a division per element cost more than the exponentials. Not where
/// the body rounds (QuantizeLinear's round(x / scale): an ulp moves a tie).
/// The reference schedule keeps IEEE divisions.
void multiplyByReciprocals(func::FuncOp kernel) {
  kernel.walk([](linalg::GenericOp op) {
    if (op.getNumLoops() == 0)
      return;
    bool rounds = false;
    op.getBody()->walk([&](Operation *inner) {
      rounds |=
          isa<math::RoundEvenOp, math::RoundOp, math::FloorOp, math::CeilOp,
              math::TruncOp, arith::FPToSIOp, arith::FPToUIOp>(inner);
    });
    if (rounds)
      return;
    unsigned innermost = op.getNumLoops() - 1;
    SmallVector<arith::DivFOp> divs;
    op.getBody()->walk([&](arith::DivFOp div) {
      auto arg = dyn_cast<BlockArgument>(div.getRhs());
      if (arg && arg.getOwner() == op.getBody() &&
          !op.getMatchingIndexingMap(op.getMatchingOpOperand(arg))
               .isFunctionOfDim(innermost))
        divs.push_back(div);
    });
    for (arith::DivFOp div : divs) {
      OpBuilder b(div);
      auto flags = arith::FastMathFlagsAttr::get(
          op.getContext(), arith::FastMathFlags::contract);
      Value one = b.create<arith::ConstantOp>(
          div.getLoc(), b.getFloatAttr(div.getType(), 1.0));
      Value recip =
          b.create<arith::DivFOp>(div.getLoc(), one, div.getRhs(), flags);
      div.replaceAllUsesWith(
          b.create<arith::MulFOp>(div.getLoc(), div.getLhs(), recip, flags)
              .getResult());
      div.erase();
    }
  });
}

/// Collapses the trailing loops of generics on buffers that every operand
/// walks contiguously (collapsibleSuffix) into one, so LLVM vectorizes one
/// long loop: an epilogue over rows of 7 or 14 pixels was mostly its scalar
/// remainder, and a mean over 28 x 28 pixels is one reduction of 784.
/// Contractions keep their loops (register tiles).
void collapseElementwiseLoops(RewriterBase &rewriter, func::FuncOp kernel) {
  SmallVector<linalg::GenericOp> ops;
  kernel.walk([&](linalg::GenericOp op) {
    if (op.hasPureBufferSemantics() && op.getNumLoops() >= 2 &&
        !linalg::isaContractionOpInterface(op) &&
        op.getBody()->getOps<linalg::IndexOp>().empty() &&
        llvm::none_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
      ops.push_back(op);
  });
  for (linalg::GenericOp op : ops) {
    std::optional<unsigned> first = collapsibleSuffix(op);
    if (!first)
      continue;
    unsigned loops = op.getNumLoops();
    MLIRContext *ctx = op.getContext();
    rewriter.setInsertionPoint(op);
    SmallVector<Value> operands;
    SmallVector<AffineMap> maps;
    for (OpOperand &o : op->getOpOperands()) {
      AffineMap map = op.getMatchingIndexingMap(&o);
      SmallVector<AffineExpr> results;
      for (AffineExpr e : map.getResults())
        if (!llvm::any_of(llvm::seq(*first + 1, loops),
                          [&](unsigned d) { return e.isFunctionOfDim(d); }))
          results.push_back(e);
      maps.push_back(AffineMap::get(*first + 1, 0, results, ctx));
      Value v = o.get();
      unsigned rank = map.getNumResults();
      if (results.size() < rank) {
        SmallVector<ReassociationIndices> groups;
        for (unsigned r = 0; r < results.size(); ++r)
          groups.push_back({int64_t(r)});
        for (unsigned r = unsigned(results.size()); r < rank; ++r)
          groups.back().push_back(int64_t(r));
        v = rewriter.create<memref::CollapseShapeOp>(op.getLoc(), v, groups);
      }
      operands.push_back(v);
    }
    auto all = op.getIteratorTypesArray();
    SmallVector<utils::IteratorType> iterators(all.begin(),
                                               all.begin() + *first + 1);
    unsigned inputs = op.getNumDpsInputs();
    auto collapsed = rewriter.create<linalg::GenericOp>(
        op.getLoc(), TypeRange{}, ArrayRef(operands).take_front(inputs),
        ArrayRef(operands).drop_front(inputs), maps, iterators);
    rewriter.inlineRegionBefore(op.getRegion(), collapsed.getRegion(),
                                collapsed.getRegion().begin());
    rewriter.eraseOp(op);
  }
}

/// Rows at most this long are vectorized by vectorizeShortRows; longer ones
/// LLVM's loop vectorizer handles well.
constexpr int64_t kShortRow = 128;
/// Rows of whole vectors up to this long too: LLVM unrolled a row of 32
/// fully and vectorized the loop around it with gathers and scatters (a
/// 1x1 convolution's bias and residual over workgroups of 48 x 32 pixels:
/// 0.50 ms, in vectors 0.2).
constexpr int64_t kShortWholeRow = 32;

/// Whether `op` (on static buffers, its loops parallel but perhaps the
/// innermost) walks every operand contiguously along its innermost loop or
/// not at all, and that loop runs 4 to kShortRow times, not a multiple of
/// 16 unless at most kShortWholeRow, inside other loops. (Longer rows of
/// whole vectors LLVM vectorizes well: rows of 64 or 112 pixels ran 8%
/// slower in masked vectors of 16 lanes.)
bool hasShortContiguousRows(linalg::GenericOp op) {
  unsigned loops = op.getNumLoops();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // All loops parallel, or the innermost a reduction (a mean over 7 x 7).
  auto iterators = op.getIteratorTypesArray();
  if (loops < 2 || op.getNumParallelLoops() + 1 < loops ||
      (op.getNumParallelLoops() + 1 == loops &&
       iterators.back() != utils::IteratorType::reduction) ||
      llvm::any_of(ranges, ShapedType::isDynamic) || ranges.back() < 4 ||
      ranges.back() > kShortRow ||
      (ranges.back() % 16 == 0 && ranges.back() > kShortWholeRow) ||
      !op.getBody()->getOps<linalg::IndexOp>().empty() ||
      llvm::all_of(ArrayRef(ranges).drop_back(),
                   [](int64_t r) { return r == 1; }))
    return false;
  // Only arithmetic in the body: a load through computed indices (Det's
  // pivot rows, GridSample) would be read for one lane.
  for (Operation &inner : op.getBody()->without_terminator())
    if (!inner.hasTrait<OpTrait::Elementwise>() &&
        !isa<arith::ConstantOp>(inner))
      return false;
  // Vectors read a row before writing it: no input may be another view of
  // an output's buffer.
  for (OpOperand *in : op.getDpsInputOperands())
    for (OpOperand &out : op.getDpsInitsMutable())
      if (baseBuffer(in->get()) == baseBuffer(out.get()) &&
          (in->get() != out.get() ||
           op.getMatchingIndexingMap(in) != op.getMatchingIndexingMap(&out)))
        return false;
  for (OpOperand &o : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&o);
    auto type = dyn_cast<MemRefType>(o.get().getType());
    // A vector of i1 is loaded as packed bits; memory holds one per byte.
    if (!type || !type.getElementType().isIntOrFloat() ||
        type.getElementTypeBitWidth() < 8)
      return false;
    if (!map.isFunctionOfDim(loops - 1))
      continue;
    SmallVector<int64_t> strides;
    int64_t offset;
    auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
    if (!last || last.getPosition() != loops - 1 ||
        failed(getStridesAndOffset(type, strides, offset)) ||
        strides.back() != 1)
      return false;
    for (AffineExpr e : map.getResults().drop_back())
      if (e.isFunctionOfDim(loops - 1))
        return false;
  }
  return true;
}

/// The offsets, sizes and strides of a view of all of `type` (static).
struct WholeView {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};
WholeView wholeView(OpBuilder &b, MemRefType type) {
  WholeView w;
  for (int64_t d : type.getShape()) {
    w.offsets.push_back(b.getIndexAttr(0));
    w.sizes.push_back(b.getIndexAttr(d));
    w.strides.push_back(b.getIndexAttr(1));
  }
  return w;
}

/// A generic like `op` (on buffers) over `operands` read through `maps`,
/// its body cloned.
linalg::GenericOp cloneGeneric(OpBuilder &b, linalg::GenericOp op,
                               ArrayRef<Value> operands,
                               ArrayRef<AffineMap> maps) {
  unsigned inputs = op.getNumDpsInputs();
  auto copy = b.create<linalg::GenericOp>(
      op.getLoc(), TypeRange{}, operands.take_front(inputs),
      operands.drop_front(inputs), maps, op.getIteratorTypesArray());
  IRMapping mapping;
  op.getRegion().cloneInto(&copy.getRegion(), mapping);
  return copy;
}

/// `op` with each input read as a broadcast of unit dims ((d0, d1, 0, 0) of
/// a [1, C, 1, 1] buffer) read through a view without them ((d0, d1) of
/// [1, C]): the vectorizer takes projected permutations only.
linalg::GenericOp dropBroadcastUnitDims(RewriterBase &rewriter,
                                        linalg::GenericOp op) {
  MLIRContext *ctx = op.getContext();
  bool changed = false;
  SmallVector<Value> operands;
  SmallVector<AffineMap> maps;
  rewriter.setInsertionPoint(op);
  for (OpOperand &o : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&o);
    Value v = o.get();
    auto type = cast<MemRefType>(v.getType());
    SmallVector<AffineExpr> kept;
    SmallVector<int64_t> shape;
    for (auto [r, e] : llvm::enumerate(map.getResults())) {
      auto c = dyn_cast<AffineConstantExpr>(e);
      if (c && c.getValue() == 0 && type.getDimSize(r) == 1)
        continue;
      kept.push_back(e);
      shape.push_back(type.getDimSize(r));
    }
    if (kept.size() < map.getNumResults()) {
      WholeView w = wholeView(rewriter, type);
      auto reduced =
          cast<MemRefType>(memref::SubViewOp::inferRankReducedResultType(
              shape, type, w.offsets, w.sizes, w.strides));
      v = rewriter.create<memref::SubViewOp>(op.getLoc(), reduced, v, w.offsets,
                                             w.sizes, w.strides);
      map = AffineMap::get(map.getNumDims(), 0, kept, ctx);
      changed = true;
    }
    operands.push_back(v);
    maps.push_back(map);
  }
  if (!changed)
    return op;
  linalg::GenericOp copy = cloneGeneric(rewriter, op, operands, maps);
  rewriter.eraseOp(op);
  return copy;
}

/// A copy of `op` (a generic on buffers whose operands index its innermost
/// loop last) over pixels [offset, offset + size) of its rows.
linalg::GenericOp sliceRows(RewriterBase &rewriter, linalg::GenericOp op,
                            int64_t offset, int64_t size) {
  unsigned last = op.getNumLoops() - 1;
  SmallVector<Value> operands;
  for (OpOperand &o : op->getOpOperands()) {
    Value v = o.get();
    if (op.getMatchingIndexingMap(&o).isFunctionOfDim(last)) {
      WholeView w = wholeView(rewriter, cast<MemRefType>(v.getType()));
      w.offsets.back() = rewriter.getIndexAttr(offset);
      w.sizes.back() = rewriter.getIndexAttr(size);
      v = rewriter.create<memref::SubViewOp>(op.getLoc(), v, w.offsets, w.sizes,
                                             w.strides);
    }
    operands.push_back(v);
  }
  return cloneGeneric(rewriter, op, operands, op.getIndexingMapsArray());
}

/// Tiles `op` (static) along loops where `tiles` is not 0 and, when that
/// succeeds, returns the op of one tile.
std::optional<linalg::GenericOp> tileGeneric(RewriterBase &rewriter,
                                             linalg::GenericOp op,
                                             ArrayRef<int64_t> tiles) {
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::TiledLinalgOp> tiled = linalg::tileLinalgOp(
      rewriter, op, linalg::LinalgTilingOptions().setTileSizes(tiles));
  if (failed(tiled))
    return std::nullopt;
  rewriter.eraseOp(op);
  return cast<linalg::GenericOp>(tiled->op.getOperation());
}

/// The loop along which `op` reads its input contiguously, when `op` (on
/// static buffers, both contiguous along their last dim) copies its one
/// 32-bit input into its output through a permutation whose innermost
/// loop, the output's contiguous one, is another loop, both some multiple
/// of `lanes` long: a transpose.
std::optional<unsigned> transposedCopyLoop(linalg::GenericOp op,
                                           int64_t lanes) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0 ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  if (yield.getNumOperands() != 1 ||
      yield.getOperand(0) != op.getBody()->getArgument(0))
    return std::nullopt;
  OpOperand *in = op.getDpsInputOperand(0);
  OpOperand *out = op.getDpsInitOperand(0);
  AffineMap inMap = op.getMatchingIndexingMap(in);
  if (!inMap.isPermutation() || !op.getMatchingIndexingMap(out).isIdentity())
    return std::nullopt;
  for (OpOperand *o : {in, out}) {
    auto type = dyn_cast<MemRefType>(o->get().getType());
    if (!type || !type.hasStaticShape() ||
        !type.getElementType().isIntOrFloat() ||
        type.getElementType().getIntOrFloatBitWidth() != 32 ||
        !isLastMemrefDimUnitStride(type))
      return std::nullopt;
  }
  unsigned inner = op.getNumLoops() - 1;
  unsigned read = cast<AffineDimExpr>(inMap.getResults().back()).getPosition();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (read == inner || ranges[read] < lanes || ranges[inner] < lanes)
    return std::nullopt;
  return read;
}

/// Splits copy `op` (transposedCopyLoop's: buffers, permutation maps) along
/// loop `loop` at `point`: `op` keeps the part before it and a copy of it
/// on subviews the part from it on. Returns `op` on the first part.
linalg::GenericOp splitCopyAt(RewriterBase &rewriter, linalg::GenericOp op,
                              unsigned loop, int64_t point) {
  int64_t range = op.getStaticLoopRanges()[loop];
  rewriter.setInsertionPoint(op);
  IRMapping rest;
  SmallVector<Value> firsts;
  for (OpOperand &o : op->getOpOperands()) {
    auto type = cast<MemRefType>(o.get().getType());
    unsigned dim = *op.getMatchingIndexingMap(&o).getResultPosition(
        rewriter.getAffineDimExpr(loop));
    auto part = [&](int64_t offset, int64_t size) -> Value {
      SmallVector<OpFoldResult> offsets(type.getRank(),
                                        rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes,
          strides(type.getRank(), rewriter.getIndexAttr(1));
      for (int64_t d : type.getShape())
        sizes.push_back(rewriter.getIndexAttr(d));
      offsets[dim] = rewriter.getIndexAttr(offset);
      sizes[dim] = rewriter.getIndexAttr(size);
      return rewriter.create<memref::SubViewOp>(op.getLoc(), o.get(), offsets,
                                                sizes, strides);
    };
    firsts.push_back(part(0, point));
    rest.map(o.get(), part(point, range - point));
  }
  rewriter.clone(*op, rest);
  rewriter.modifyOpInPlace(op, [&] { op->setOperands(firsts); });
  return op;
}

/// Transposing copies (an attention kernel's keys, transposed once per
/// workgroup; a Transpose kernel) in blocks of lanes x lanes: each block
/// read as `lanes` vectors and transposed in registers (TransposeShuffles.h),
/// the rest of rows or columns no whole block fills split off.
/// Left to LLVM, the loop along the output's rows was vectorized with a
/// gather per vector: 43% of BERT's attention over 128 tokens.
void vectorizeTransposes(RewriterBase &rewriter, func::FuncOp kernel,
                         int64_t lanes) {
  SmallVector<std::pair<linalg::GenericOp, unsigned>> ops;
  kernel.walk([&](linalg::GenericOp op) {
    if (auto read = transposedCopyLoop(op, lanes))
      ops.push_back({op, *read});
  });
  for (auto [op, read] : ops) {
    unsigned loops = op.getNumLoops();
    // Rows and columns past the last whole block stay LLVM's (whisper's
    // 1500 keys: 1488 in blocks, 12 gathered).
    for (unsigned loop : {loops - 1, read}) {
      int64_t range = op.getStaticLoopRanges()[loop];
      if (range % lanes)
        op = splitCopyAt(rewriter, op, loop, range - range % lanes);
    }
    SmallVector<int64_t> sizes(loops, 1);
    sizes[read] = lanes;
    sizes.back() = lanes;
    std::optional<linalg::GenericOp> block = tileGeneric(rewriter, op, sizes);
    if (!block)
      continue;
    rewriter.setInsertionPoint(*block);
    SmallVector<bool> scalable(loops, false);
    if (succeeded(linalg::vectorizeOpPrecondition(*block, sizes, scalable)))
      (void)linalg::vectorize(rewriter, *block, sizes, scalable);
  }
}

/// Vectorizes `op` (static, its loops but the last of one iteration) in a
/// vector of `lanes`, masked past its row.
void vectorizeRow(RewriterBase &rewriter, linalg::GenericOp op, int64_t lanes) {
  unsigned loops = op.getNumLoops();
  SmallVector<int64_t> sizes(loops, 1);
  sizes.back() = lanes;
  SmallVector<bool> scalable(loops, false);
  if (succeeded(linalg::vectorizeOpPrecondition(op, sizes, scalable)))
    (void)linalg::vectorize(rewriter, op, sizes, scalable);
}

/// Vectorizes elementwise generics whose innermost loop is short (rows of
/// 7 x 7 pixels after collapseElementwiseLoops): one row at a time, in
/// vectors of 16 lanes and one masked vector of the rest. Left to LLVM, it
/// unrolled the short loop fully and vectorized the loop outside it with
/// gathers and scatters: EfficientNet-B0's squeeze-excitation scale of 1152
/// x 49 pixels ran 46 us, 5 so. The rest stays in the loop over rows (on
/// its own, LLVM vectorized that loop around its one lane with gathers
/// again), and a whole row is not one vector (a sigmoid over rows of 112 in
/// vectors of 112 lanes spilled: 13x slower). A reduction along the row (a
/// mean over 7 x 7 pixels) is one vector of the row's whole vectors and one
/// of the rest: EfficientNet-B0's squeeze-excitation means over 1152 x 49,
/// 19.5 -> 15.2 us.
void vectorizeShortRows(RewriterBase &rewriter, func::FuncOp kernel) {
  SmallVector<linalg::GenericOp> ops;
  kernel.walk([&](linalg::GenericOp op) {
    if (op.hasPureBufferSemantics() && hasShortContiguousRows(op))
      ops.push_back(op);
  });
  for (linalg::GenericOp op : ops) {
    // What the vectorizer does not take stays LLVM's: tiled into scalar
    // rows, MobileNetV3's hard-swish epilogues over 7 x 7 pixels ran
    // 1.2-1.7x slower than its vectors.
    op = dropBroadcastUnitDims(rewriter, op);
    if (failed(linalg::vectorizeOpPrecondition(op)))
      continue;
    unsigned loops = op.getNumLoops();
    int64_t row = op.getStaticLoopRanges().back();
    int64_t whole = row - row % 16;
    SmallVector<int64_t> rows(loops, 1);
    rows.back() = 0;
    std::optional<linalg::GenericOp> oneRow = tileGeneric(rewriter, op, rows);
    if (!oneRow)
      continue;
    rewriter.setInsertionPoint(*oneRow);
    if (oneRow->getNumReductionLoops()) {
      // A row's reduction as one vector of its whole vectors (at most 7 of
      // 16 lanes, one chain of adds) and one of the rest, both unmasked
      // (MLIR 19 lowers no masked multi_reduction).
      if (whole > 0)
        vectorizeRow(rewriter, sliceRows(rewriter, *oneRow, 0, whole), whole);
      if (row % 16)
        vectorizeRow(rewriter, sliceRows(rewriter, *oneRow, whole, row % 16),
                     row % 16);
      rewriter.eraseOp(*oneRow);
      continue;
    }
    if (whole > 0) {
      SmallVector<int64_t> vectors(loops, 0);
      vectors.back() = 16;
      if (auto v = tileGeneric(rewriter, sliceRows(rewriter, *oneRow, 0, whole),
                               vectors))
        vectorizeRow(rewriter, *v, 16);
      rewriter.setInsertionPoint(*oneRow);
    }
    if (row % 16)
      vectorizeRow(rewriter, sliceRows(rewriter, *oneRow, whole, row % 16), 16);
    rewriter.eraseOp(*oneRow);
  }
}

/// The loops of `kernel` marked with attribute `name`, innermost first.
SmallVector<scf::ForOp> loopsMarked(func::FuncOp kernel, StringRef name) {
  SmallVector<scf::ForOp> marked;
  kernel.walk([&](scf::ForOp loop) {
    if (loop->hasAttr(name))
      marked.push_back(loop);
  });
  return marked;
}

/// Unrolls the loops marked kUnrollWindow, innermost first.
void unrollWindows(RewriterBase &rewriter, func::FuncOp kernel) {
  for (scf::ForOp loop : loopsMarked(kernel, kUnrollWindow)) {
    loop->removeAttr(kUnrollWindow);
    std::optional<int64_t> trips = constantTripCount(
        loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    // Unrolled by its trip count, the loop is promoted away.
    if (!trips || *trips < 1)
      continue;
    if (*trips == 1)
      (void)loop.promoteIfSingleIteration(rewriter);
    else
      (void)loopUnrollByFactor(loop, *trips);
  }
}

/// A register tile's accumulators carried into its outermost reduction loop
/// marked kFilledAccumulators (FilledAccumulators.h: DirectConv's and
/// contractions' tiles of an output filled with a constant) start as that
/// constant: the read before the loop loads a
/// tile nothing has written yet (each tile is read once, before its own
/// reductions, and the tiles are disjoint). The read was transposed
/// (filters as lanes, an NCHW output): SqueezeNet's first convolution, 27
/// multiply-adds per output, spent as long reading its zeros.
void initAccumulatorsFromFills(RewriterBase &rewriter, func::FuncOp kernel) {
  for (scf::ForOp loop : loopsMarked(kernel, kFilledAccumulators)) {
    auto value = loop->getAttrOfType<TypedAttr>(kFilledAccumulators);
    loop->removeAttr(kFilledAccumulators);
    for (OpOperand &init : loop.getInitArgsMutable()) {
      auto read = init.get().getDefiningOp<vector::TransferReadOp>();
      if (!value || !read || read->getBlock() != loop->getBlock() ||
          read.getVectorType().getElementType() != value.getType())
        continue;
      rewriter.setInsertionPoint(read);
      Value start = rewriter.create<arith::ConstantOp>(
          read.getLoc(), DenseElementsAttr::get(read.getVectorType(), value));
      init.set(start);
      if (read->use_empty())
        rewriter.eraseOp(read);
    }
  }
}

} // namespace

void finishSchedule(func::FuncOp kernel, int64_t lanes) {
  // The output tile of a vectorized contraction is read before and written
  // after each reduction step; carried through the reduction loop instead,
  // it stays in registers. Inner loops first (the walk is post-order); a
  // carried tile then sits in the next loop out and may move further.
  IRRewriter rewriter(kernel.getContext());
  {
    // Masked transfers (vector.mask regions) become transfers with a mask
    // operand, which the carrying below can move.
    RewritePatternSet patterns(kernel.getContext());
    vector::populateVectorMaskLoweringPatternsForSideEffectingOps(patterns);
    (void)applyPatternsAndFoldGreedily(kernel, std::move(patterns));
  }
  vectorizeTransposes(rewriter, kernel, lanes);
  collapseElementwiseLoops(rewriter, kernel);
  vectorizeShortRows(rewriter, kernel);
  SmallVector<scf::ForOp> loops;
  kernel.walk([&](scf::ForOp loop) { loops.push_back(loop); });
  for (scf::ForOp loop : loops) {
    moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
    while (true) {
      auto carried = carryAccumulator(rewriter, loop);
      if (failed(carried))
        break;
      loop = *carried;
    }
  }
  initAccumulatorsFromFills(rewriter, kernel);
  unrollWindows(rewriter, kernel);
  // Let LLVM fuse multiplies and adds into FMAs, as every peer does (the
  // reference schedule keeps separate IEEE roundings). A max or min may
  // return either zero of equal -0 and +0 (a NaN still propagates): x86's
  // max needed a sign fix-up besides its NaN blend, five instructions per
  // step of a max pool's window instead of three.
  kernel.walk([](arith::ArithFastMathInterface op) {
    arith::FastMathFlags flags = arith::FastMathFlags::contract;
    if (isa<arith::MaximumFOp, arith::MinimumFOp>(op.getOperation()))
      flags = flags | arith::FastMathFlags::nsz;
    op->setAttr(op.getFastMathAttrName(),
                arith::FastMathFlagsAttr::get(op->getContext(), flags));
  });
  reassociateSums(kernel);
  multiplyByReciprocals(kernel);
  lowerGroupedDots(kernel);
  lowerAmxBlocks(kernel);
}

} // namespace ign::host
