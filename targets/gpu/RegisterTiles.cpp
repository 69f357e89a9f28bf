//===- RegisterTiles.cpp - a GPU thread's outputs in registers ------------===//
//
// Unrolls register tiles' element loops and turns loop-invariant loads and
// stores into loop-carried values (RegisterTiles.h).
//
//===----------------------------------------------------------------------===//

#include "RegisterTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace ign::gpu {

namespace {

//===----------------------------------------------------------------------===//
// Register tiles
//===----------------------------------------------------------------------===//

bool isRegisterTileLoop(Operation *op) {
  return isa<scf::ForOp>(op) && op->hasAttr(kRegisterTileLoop);
}

/// Unrolls every loop inside `tile` (innermost first) when all have
/// constant trip counts and the unrolled body stays under kMaxUnrolledOps.
void unrollElementLoops(scf::ForOp tile) {
  SmallVector<scf::ForOp> loops;
  int64_t ops = 0, trips = 1;
  bool unrollable = true;
  tile.getBody()->walk([&](Operation *op) {
    ++ops;
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop)
      return;
    std::optional<int64_t> n = constantTripCount(
        loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    if (!n || *n < 1 || isRegisterTileLoop(loop)) {
      unrollable = false;
      return;
    }
    trips *= *n;
    loops.push_back(loop); // post-order: inner loops first
  });
  if (!unrollable || loops.empty() || ops * trips > kMaxUnrolledOps)
    return;
  for (scf::ForOp loop : loops) {
    std::optional<int64_t> n = constantTripCount(
        loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    (void)loopUnrollByFactor(loop, uint64_t(*n));
  }
}

//===----------------------------------------------------------------------===//
// Accumulators
//===----------------------------------------------------------------------===//

/// The buffer a memref value views (a kernel argument, an allocation, a
/// global), through view ops.
Value rootOf(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

/// `v` as a base value plus a constant (a constant alone: null base).
std::pair<Value, int64_t> baseAndOffset(Value v) {
  int64_t offset = 0;
  while (true) {
    if (std::optional<int64_t> c = getConstantIntValue(v))
      return {Value(), offset + *c};
    auto add = v.getDefiningOp<arith::AddIOp>();
    if (!add)
      return {v, offset};
    if (std::optional<int64_t> c = getConstantIntValue(add.getRhs())) {
      offset += *c;
      v = add.getLhs();
    } else if (std::optional<int64_t> c = getConstantIntValue(add.getLhs())) {
      offset += *c;
      v = add.getRhs();
    } else {
      return {v, offset};
    }
  }
}

/// Whether two index lists surely name different elements: in some
/// dimension they are the same value plus different constants.
bool provablyDistinct(ValueRange a, ValueRange b) {
  for (auto [x, y] : llvm::zip_equal(a, b)) {
    auto [baseX, offsetX] = baseAndOffset(x);
    auto [baseY, offsetY] = baseAndOffset(y);
    if (baseX == baseY && offsetX != offsetY)
      return true;
  }
  return false;
}

/// The accesses of one memory location in a loop's body.
struct Access {
  Value memref;
  SmallVector<Value> indices;
  SmallVector<memref::LoadOp> loads;
  memref::StoreOp store;
};

/// Per buffer (root), the locations a loop accesses at invariant
/// addresses, directly in its body; a buffer accessed any other way, and
/// every buffer when an op of unknown effect is in the loop, is absent.
struct LoopAccesses {
  llvm::MapVector<Value, SmallVector<Access>> byRoot;
  llvm::DenseSet<Value> unsafe;
  bool unknownEffects = false;
};

/// Records `op` (a load or a store) in `accesses`: a location of its own
/// when its address is invariant in `loop` and it is in the body itself.
template <typename AccessOp>
void record(AccessOp op, scf::ForOp loop, LoopAccesses &accesses) {
  Value root = rootOf(op.getMemRef());
  bool invariant = op->getBlock() == loop.getBody() &&
                   loop.isDefinedOutsideOfLoop(op.getMemRef()) &&
                   llvm::all_of(op.getIndices(), [&](Value v) {
                     return loop.isDefinedOutsideOfLoop(v);
                   });
  if (!invariant) {
    accesses.unsafe.insert(root);
    return;
  }
  SmallVector<Access> &locations = accesses.byRoot[root];
  Access *at = nullptr;
  for (Access &a : locations)
    if (a.memref == op.getMemRef() && ValueRange(a.indices) == op.getIndices())
      at = &a;
  if (!at) {
    locations.push_back({op.getMemRef(), llvm::to_vector(op.getIndices())});
    at = &locations.back();
  }
  if constexpr (std::is_same_v<AccessOp, memref::LoadOp>) {
    if (at->store) // read after the write: not an accumulator
      accesses.unsafe.insert(root);
    at->loads.push_back(op);
  } else {
    if (at->store)
      accesses.unsafe.insert(root);
    at->store = op;
  }
}

LoopAccesses collectAccesses(scf::ForOp loop) {
  LoopAccesses accesses;
  loop.getBody()->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      record(load, loop, accesses);
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      record(store, loop, accesses);
    else if (!op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
             !isMemoryEffectFree(op))
      accesses.unknownEffects = true;
  });
  return accesses;
}

/// The locations of `loop` that may be hoisted: every access of their
/// buffer in the loop is at an invariant address, and the addresses of a
/// buffer the loop writes surely differ from one another.
SmallVector<Access> hoistable(scf::ForOp loop) {
  LoopAccesses accesses = collectAccesses(loop);
  SmallVector<Access> out;
  if (accesses.unknownEffects)
    return out;
  for (auto &[root, locations] : accesses.byRoot) {
    if (accesses.unsafe.contains(root))
      continue;
    bool written = llvm::any_of(locations, [](Access &a) { return a.store; });
    Value first = locations.front().memref;
    bool oneView = llvm::all_of(
        locations, [first](Access &a) { return a.memref == first; });
    if (written && !oneView)
      continue;
    bool distinct = true;
    for (size_t i = 0; written && i < locations.size(); ++i)
      for (size_t j = i + 1; j < locations.size(); ++j)
        distinct &=
            provablyDistinct(locations[i].indices, locations[j].indices);
    if (distinct)
      llvm::append_range(out, locations);
  }
  return out;
}

/// Moves `loop`'s hoistable accesses out of it: a location only read is
/// loaded once before the loop; one read and written becomes an iter_arg,
/// loaded before and stored after the loop. Returns the loop (replaced
/// when it gained iter_args).
scf::ForOp hoistAccumulators(scf::ForOp loop, RewriterBase &rewriter) {
  std::optional<int64_t> trips = constantTripCount(
      loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
  if (!trips || *trips < 1)
    return loop; // a load before a loop that never runs could be invalid
  SmallVector<Access> locations = hoistable(loop);
  SmallVector<Access> carried;
  SmallVector<Value> inits;
  rewriter.setInsertionPoint(loop);
  for (Access &a : locations) {
    if (a.loads.empty() && a.store)
      continue; // only written: stays (the store's value may vary)
    Value value = rewriter.create<memref::LoadOp>(a.loads.front().getLoc(),
                                                  a.memref, a.indices);
    if (!a.store) {
      for (memref::LoadOp load : a.loads)
        rewriter.replaceOp(load, value);
      continue;
    }
    carried.push_back(a);
    inits.push_back(value);
  }
  if (carried.empty())
    return loop;
  auto newLoop = cast<scf::ForOp>(*loop.replaceWithAdditionalYields(
      rewriter, inits, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
        return llvm::to_vector(llvm::map_range(
            carried, [](Access &a) { return a.store.getValueToStore(); }));
      }));
  unsigned first = newLoop.getNumResults() - carried.size();
  rewriter.setInsertionPointAfter(newLoop);
  for (auto [i, a] : llvm::enumerate(carried)) {
    Value arg = newLoop.getRegionIterArgs()[first + i];
    for (memref::LoadOp load : a.loads)
      rewriter.replaceOp(load, arg);
    rewriter.create<memref::StoreOp>(
        a.store.getLoc(), newLoop.getResult(first + i), a.memref, a.indices);
    rewriter.eraseOp(a.store);
  }
  return newLoop;
}

struct RegisterTilesPass
    : public PassWrapper<RegisterTilesPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RegisterTilesPass)
  StringRef getArgument() const override { return "ign-gpu-register-tiles"; }
  StringRef getDescription() const override {
    return "Unroll GPU register tiles and keep accumulators in registers";
  }
  void runOnOperation() override {
    SmallVector<mlir::gpu::LaunchOp> launches;
    getOperation()->walk(
        [&](mlir::gpu::LaunchOp launch) { launches.push_back(launch); });
    for (mlir::gpu::LaunchOp launch : launches)
      if (!launch->hasAttr(kOwnLaunch))
        keepAccumulatorsInRegisters(launch);
  }
};

} // namespace

void keepAccumulatorsInRegisters(mlir::gpu::LaunchOp launch) {
  // Register tiles: the innermost annotated loop of each nest.
  SmallVector<scf::ForOp> tiles;
  launch.walk([&](scf::ForOp loop) {
    if (isRegisterTileLoop(loop) && !loop.getBody()
                                         ->walk([](Operation *op) {
                                           return isRegisterTileLoop(op)
                                                      ? WalkResult::interrupt()
                                                      : WalkResult::advance();
                                         })
                                         .wasInterrupted())
      tiles.push_back(loop);
  });
  for (scf::ForOp tile : tiles)
    unrollElementLoops(tile);
  // The unrolled copies' addresses folded and merged: one value per
  // address, each a base plus a constant where it is one.
  IRRewriter rewriter(launch.getContext());
  (void)applyPatternsAndFoldGreedily(launch.getOperation(),
                                     FrozenRewritePatternSet());
  DominanceInfo dominance;
  eliminateCommonSubExpressions(rewriter, dominance, launch);
  // Innermost loops first: what leaves an inner loop may leave its parent.
  SmallVector<scf::ForOp> loops;
  launch.walk([&](scf::ForOp loop) { loops.push_back(loop); });
  for (scf::ForOp loop : loops) {
    // Addresses computed in the loop but invariant move out first.
    moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
    hoistAccumulators(loop, rewriter);
  }
}

std::unique_ptr<Pass> createRegisterTilesPass() {
  return std::make_unique<RegisterTilesPass>();
}

void registerRegisterTilesPass() { PassRegistration<RegisterTilesPass>(); }

} // namespace ign::gpu
