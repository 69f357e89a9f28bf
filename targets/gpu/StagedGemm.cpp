//===- StagedGemm.cpp - contractions staged in shared memory --------------===//
//
// The analysis of a contraction as a batch of GEMMs, the staged launch's
// emitter and its f32 form on a chip's plain cores (StagedGemm.h).
//
//===----------------------------------------------------------------------===//

#include "StagedGemm.h"

#include "GpuCompile.h"
#include "RegisterTiles.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace ign::gpu {

namespace {

/// The dims of `op`'s loops `map`'s results read.
void addLoopsOf(AffineMap map, ArrayRef<AffineExpr> results,
                llvm::SmallSetVector<unsigned, 4> &loops) {
  for (unsigned l = 0; l < map.getNumDims(); ++l)
    if (llvm::any_of(results,
                     [&](AffineExpr e) { return e.isFunctionOfDim(l); }))
      loops.insert(l);
}

/// Whether body op `op` may be part of a factor's computation: a
/// region-free pure op (a loop index, arithmetic) or a load.
bool sliceable(Operation *op) {
  return op->getNumRegions() == 0 && op->getNumResults() == 1 &&
         (isPure(op) || isa<memref::LoadOp>(op));
}

} // namespace

FailureOr<GemmSide> bodyValue(linalg::LinalgOp op, Value v, std::string &why) {
  Block &body = *op.getBlock();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  GemmSide side;
  side.value = v;
  llvm::SetVector<Operation *> ops;
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(x)) {
      if (arg.getOwner() != &body)
        continue;
      if (arg.getArgNumber() >= op.getNumDpsInputs()) {
        why = "a factor of its product reads the output";
        return failure();
      }
      side.inputs.insert(arg.getArgNumber());
      AffineMap map = maps[arg.getArgNumber()];
      addLoopsOf(map, map.getResults(), side.loops);
      continue;
    }
    Operation *def = x.getDefiningOp();
    if (def->getBlock() != &body || !ops.insert(def))
      continue;
    if (!sliceable(def)) {
      why = "a factor of its product needs '" +
            def->getName().getStringRef().str() + "'";
      return failure();
    }
    if (auto load = dyn_cast<memref::LoadOp>(def);
        load && load.getMemRef() == op.getDpsInitOperand(0)->get()) {
      why = "a factor of its product loads the output";
      return failure();
    }
    if (auto index = dyn_cast<linalg::IndexOp>(def))
      side.loops.insert(index.getDim());
    llvm::append_range(work, def->getOperands());
  }
  side.slice.assign(ops.begin(), ops.end());
  llvm::sort(side.slice,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return side;
}

namespace {

/// The loops `v` (a value of the body) depends on through loop indices and
/// the inputs' indexing maps.
llvm::SmallSetVector<unsigned, 4> loopsOfValue(linalg::LinalgOp op, Value v) {
  std::string ignored;
  FailureOr<GemmSide> s = bodyValue(op, v, ignored);
  return succeeded(s) ? s->loops : llvm::SmallSetVector<unsigned, 4>();
}

/// Whether the factor's contiguous dim (the last index of its input, or of
/// its first load) follows the rows of `rows`' innermost loop: then
/// consecutive threads stage consecutive rows, else consecutive k.
bool rowsAreContiguous(linalg::LinalgOp op, const GemmSide &side,
                       ArrayRef<unsigned> rows) {
  llvm::SmallSetVector<unsigned, 4> last;
  auto load = llvm::find_if(
      side.slice, [](Operation *o) { return isa<memref::LoadOp>(o); });
  if (load != side.slice.end()) {
    auto indices = cast<memref::LoadOp>(*load).getIndices();
    if (!indices.empty())
      last = loopsOfValue(op, indices.back());
  } else if (!side.inputs.empty()) {
    AffineMap map = op.getIndexingMapsArray()[side.inputs.front()];
    if (map.getNumResults())
      addLoopsOf(map, map.getResults().back(), last);
  }
  return last.contains(rows.back());
}

/// The body as yield(out + x * y); the two factors, or failure.
FailureOr<std::pair<Value, Value>> factorsOf(linalg::LinalgOp op) {
  Block &body = *op.getBlock();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield && yield.getNumOperands() == 1
                 ? yield.getOperand(0).getDefiningOp<arith::AddFOp>()
                 : nullptr;
  if (!add)
    return failure();
  Value acc = body.getArguments().back();
  Value other = add.getLhs() == acc   ? add.getRhs()
                : add.getRhs() == acc ? add.getLhs()
                                      : Value();
  auto mul = other ? other.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul || mul->getBlock() != &body || !other.hasOneUse())
    return failure();
  return std::make_pair(mul.getLhs(), mul.getRhs());
}

/// Sorts `op`'s loops into the view's groups; false with `why` for a
/// parallel loop that is not one of batch, m or n.
bool groupLoops(linalg::LinalgOp op, GemmView &g, std::string &why) {
  AffineMap c = op.getIndexingMapsArray().back();
  llvm::SmallSetVector<unsigned, 4> output;
  addLoopsOf(c, c.getResults(), output);
  for (auto [l, kind] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (kind == utils::IteratorType::reduction) {
      g.k.push_back(l);
      continue;
    }
    bool ra = g.x.loops.contains(l), rb = g.y.loops.contains(l);
    if (!output.contains(l) || (!ra && !rb)) {
      why = "parallel loop " + std::to_string(l) +
            " is not read by the output and a factor";
      return false;
    }
    (ra && rb ? g.batch : ra ? g.m : g.n).push_back(l);
  }
  return true;
}

} // namespace

int64_t GemmView::extent(ArrayRef<unsigned> group) const {
  int64_t n = 1;
  for (unsigned l : group)
    n *= ranges[l];
  return n;
}

MemRefType staticOutput(linalg::LinalgOp op) {
  auto out =
      op.getNumDpsInits() == 1
          ? dyn_cast<MemRefType>(op.getDpsInitOperand(0)->get().getType())
          : MemRefType();
  bool staticInputs = llvm::all_of(op.getDpsInputs(), [](Value v) {
    auto t = dyn_cast<MemRefType>(v.getType());
    return t && t.hasStaticShape();
  });
  return out && out.hasStaticShape() && staticInputs ? out : MemRefType();
}

std::optional<GemmView> analyzeGemm(linalg::LinalgOp op, std::string &why) {
  MemRefType out = staticOutput(op);
  if (!out || !out.getElementType().isF32()) {
    why = "not an f32 output and inputs in static buffers";
    return std::nullopt;
  }
  FailureOr<std::pair<Value, Value>> factors = factorsOf(op);
  if (failed(factors) || !factors->first.getType().isF32()) {
    why = "its body is not out + x * y in f32";
    return std::nullopt;
  }
  if (!op.getIndexingMapsArray().back().isProjectedPermutation()) {
    why = "its output is not indexed by its loops";
    return std::nullopt;
  }
  GemmView g;
  g.ranges = op.getStaticLoopRanges();
  FailureOr<GemmSide> x = bodyValue(op, factors->first, why);
  FailureOr<GemmSide> y = bodyValue(op, factors->second, why);
  if (failed(x) || failed(y))
    return std::nullopt;
  g.x = std::move(*x);
  g.y = std::move(*y);
  if (!groupLoops(op, g, why))
    return std::nullopt;
  for (auto [name, group] :
       {std::pair<const char *, ArrayRef<unsigned>>{"m", g.m},
        {"n", g.n},
        {"k", g.k}})
    if (int64_t e = g.extent(group); group.empty() || e < kMinGemmExtent) {
      why = llvm::formatv("its {0} is {1}, under {2}", name,
                          group.empty() ? 1 : e, kMinGemmExtent);
      return std::nullopt;
    }
  g.x.rowsContiguous = rowsAreContiguous(op, g.x, g.m);
  g.y.rowsContiguous = rowsAreContiguous(op, g.y, g.n);
  return g;
}

SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map,
                             ArrayRef<Value> loops) {
  SmallVector<Value> out;
  for (AffineExpr e : map.getResults())
    out.push_back(affine::expandAffineExpr(b, loc, e, loops, {}));
  return out;
}

Value bodyValueAt(OpBuilder &b, Location loc, linalg::LinalgOp op,
                  const GemmSide &side, ArrayRef<Value> loops) {
  IRMapping mapping;
  Block &body = *op.getBlock();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (unsigned i : side.inputs)
    mapping.map(body.getArgument(i),
                b.create<memref::LoadOp>(loc, op.getDpsInputs()[i],
                                         indicesAt(b, loc, maps[i], loops)));
  for (Operation *o : side.slice) {
    if (auto index = dyn_cast<linalg::IndexOp>(o))
      mapping.map(index.getResult(), loops[index.getDim()]);
    else
      b.clone(*o, mapping);
  }
  return mapping.lookupOrDefault(side.value);
}

int64_t bufferBytes(Value buffer) {
  auto t = cast<MemRefType>(buffer.getType());
  return t.getNumElements() *
         std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
}

int64_t bytesRead(linalg::LinalgOp op, const GemmSide &side) {
  llvm::SmallSetVector<Value, 4> buffers;
  for (unsigned i : side.inputs)
    buffers.insert(op.getDpsInputs()[i]);
  for (Operation *o : side.slice)
    if (auto load = dyn_cast<memref::LoadOp>(o))
      buffers.insert(load.getMemRef());
  int64_t n = 0;
  for (Value b : buffers)
    n += bufferBytes(b);
  return n;
}

linalg::FillOp fillBefore(linalg::LinalgOp op) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  Value out = op.getDpsInitOperand(0)->get();
  if (!fill || fill.getOutputs()[0] != out ||
      fill.getInputs()[0].getType() !=
          cast<MemRefType>(out.getType()).getElementType())
    return nullptr;
  return fill;
}

namespace {

/// Bytes of the two k-major f32 tiles of a staged launch's workgroup.
int64_t simtSharedBytes(GemmTile t) {
  int64_t pad = kRowPadBytes / 4;
  return 4 * kSimtBlockK * (t.blockM + pad + t.blockN + pad);
}

} // namespace

std::optional<GemmTile> chooseSimtTile(const GemmView &g, const GpuChip &chip) {
  const ChipLimits &l = chip.limits;
  if (kSimtThreads > l.maxInvocations || kSimtThreads > l.maxWorkgroupSize[0] ||
      simtSharedBytes({32, 32}) > l.sharedMemoryBytes)
    return std::nullopt;
  int64_t M = g.extent(g.m), N = g.extent(g.n), batch = g.extent(g.batch);
  GemmTile t;
  t.blockM = M >= 128 ? 128 : M >= 64 ? 64 : 32;
  t.blockN = N >= 128 ? 128 : N >= 64 ? 64 : 32;
  auto blocks = [&] {
    return ((M + t.blockM - 1) / t.blockM) * ((N + t.blockN - 1) / t.blockN) *
           batch;
  };
  while ((blocks() < chip.numbers.computeUnits ||
          simtSharedBytes(t) > l.sharedMemoryBytes) &&
         (t.blockM > 32 || t.blockN > 32))
    (t.blockM >= t.blockN ? t.blockM : t.blockN) /= 2;
  return t;
}

void predictGemm(DispatchNote &note, const GemmView &g, GemmTile tile,
                 const ChipNumbers &n, double peakGflops, int64_t blockK,
                 int64_t perUnit, GemmBytes bytes) {
  // Each compute unit at half its share of the peak.
  constexpr double kGemmEfficiency = 0.5;
  if (!n.known() || peakGflops <= 0)
    return;
  int64_t M = g.extent(g.m), N = g.extent(g.n), K = g.extent(g.k);
  int64_t gridM = (M + tile.blockM - 1) / tile.blockM;
  int64_t gridN = (N + tile.blockN - 1) / tile.blockN;
  int64_t blocks = gridM * gridN * g.extent(g.batch);
  double waves = std::ceil(double(blocks) / double(n.computeUnits * perUnit));
  double blockFlops = 2.0 * tile.blockM * tile.blockN *
                      double((K + blockK - 1) / blockK) * blockK;
  double unitFlopsPerS = peakGflops * 1e9 / n.computeUnits * kGemmEfficiency;
  double computeS = waves * perUnit * blockFlops / unitFlopsPerS;
  double dram = double(bytes.a + bytes.b + 2 * bytes.c);
  double cache = double(bytes.a) * gridN + double(bytes.b) * gridM;
  double memoryS = dram / (n.bandwidthGBs * 1e9) +
                   cache / (n.bandwidthGBs * 1e9 * kCacheBandwidthRatio);
  note.predictedMs =
      std::max(computeS, memoryS) * 1e3 + kLaunchMicroseconds / 1e3;
  note.bound = computeS < memoryS         ? "memory"
               : note.matrixUnits.empty() ? "issue"
                                          : "matrix units";
}

StagedGemmEmitter::StagedGemmEmitter(linalg::LinalgOp op, const GemmView &g,
                                     GemmTile tile, int64_t threads,
                                     int64_t blockK, Value fill)
    : op(op), g(g), tile(tile), fill(fill), b(op), loc(op.getLoc()),
      maps(op.getIndexingMapsArray()), threads(threads), blockK(blockK) {}

Value StagedGemmEmitter::c(int64_t v) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}
Value StagedGemmEmitter::add(Value x, Value y) {
  return b.create<arith::AddIOp>(loc, x, y);
}
Value StagedGemmEmitter::mul(Value x, int64_t y) {
  return b.create<arith::MulIOp>(loc, x, c(y));
}
Value StagedGemmEmitter::div(Value x, int64_t y) {
  return b.create<arith::DivUIOp>(loc, x, c(y));
}
Value StagedGemmEmitter::rem(Value x, int64_t y) {
  return b.create<arith::RemUIOp>(loc, x, c(y));
}
Value StagedGemmEmitter::below(Value x, int64_t limit) {
  return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, x, c(limit));
}

void StagedGemmEmitter::moveTo(OpBuilder &nb) {
  b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
}

void StagedGemmEmitter::delinearize(ArrayRef<unsigned> group, Value linear,
                                    SmallVector<Value> &loops) {
  int64_t stride = 1;
  for (unsigned l : llvm::reverse(group)) {
    Value q = stride == 1 ? linear : div(linear, stride);
    loops[l] = l == group.front() ? q : rem(q, g.ranges[l]);
    stride *= g.ranges[l];
  }
}

SmallVector<Value> StagedGemmEmitter::zeroLoops() {
  SmallVector<Value> loops(g.ranges.size(), c(0));
  delinearize(g.batch, batchIndex, loops);
  return loops;
}

/// Where element `e` of this thread's share of a tileRows x blockK tile
/// lies in it: consecutive threads take consecutive rows or k, whichever
/// the factor's loads walk contiguously (GemmSide::rowsContiguous).
std::pair<Value, Value> StagedGemmEmitter::tilePosition(const GemmSide &side,
                                                        int64_t tileRows,
                                                        int64_t e) {
  Value idx = add(c(e * threads), tx);
  if (side.rowsContiguous)
    return {rem(idx, tileRows), div(idx, tileRows)};
  return {div(idx, blockK), rem(idx, blockK)};
}

/// This thread's share of the block's tileRows x blockK piece of a factor
/// at step `kt`, in f32 (zero past the ends of its rows and of k: a step
/// past the last loads nothing).
SmallVector<Value> StagedGemmEmitter::loadStep(const GemmSide &side,
                                               ArrayRef<unsigned> rows,
                                               int64_t tileRows, Value origin,
                                               Value kt) {
  int64_t rowLimit = g.extent(rows), kLimit = g.extent(g.k);
  SmallVector<Value> values;
  for (int64_t e = 0; e < tileRows * blockK / threads; ++e) {
    auto [r, kk] = tilePosition(side, tileRows, e);
    Value row = add(origin, r), k = add(kt, kk);
    Value inside =
        b.create<arith::AndIOp>(loc, below(row, rowLimit), below(k, kLimit));
    auto load = b.create<scf::IfOp>(
        loc, inside,
        [&](OpBuilder &nb, Location) {
          OpBuilder::InsertionGuard inner(b);
          moveTo(nb);
          SmallVector<Value> loops = zeroLoops();
          delinearize(rows, row, loops);
          delinearize(g.k, k, loops);
          b.create<scf::YieldOp>(loc, bodyValueAt(b, loc, op, side, loops));
        },
        [&](OpBuilder &nb, Location) {
          OpBuilder::InsertionGuard inner(b);
          moveTo(nb);
          Value zero =
              b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0.0f));
          b.create<scf::YieldOp>(loc, zero);
        });
    values.push_back(load.getResult(0));
  }
  return values;
}

/// Stores loadStep's values into the shared tile, rounded as it holds them
/// (k-major or row-major as kMajorTiles says).
void StagedGemmEmitter::storeStep(const GemmSide &side, int64_t tileRows,
                                  ValueRange values, Value tileBuffer) {
  for (auto [e, v] : llvm::enumerate(values)) {
    auto [r, kk] = tilePosition(side, tileRows, int64_t(e));
    b.create<memref::StoreOp>(loc, toTileElement(v), tileBuffer,
                              kMajorTiles() ? ValueRange{kk, r}
                                            : ValueRange{r, kk});
  }
}

void StagedGemmEmitter::addToOutputAt(Value row, Value col, Value v) {
  Value out = op.getDpsInitOperand(0)->get();
  row = add(rowOrigin, row);
  col = add(colOrigin, col);
  Value inside = b.create<arith::AndIOp>(loc, below(row, g.extent(g.m)),
                                         below(col, g.extent(g.n)));
  b.create<scf::IfOp>(loc, inside, [&](OpBuilder &nb, Location) {
    OpBuilder::InsertionGuard inner(b);
    moveTo(nb);
    SmallVector<Value> loops = zeroLoops();
    delinearize(g.m, row, loops);
    delinearize(g.n, col, loops);
    SmallVector<Value> at = indicesAt(b, loc, maps.back(), loops);
    Value old = fill ? fill : b.create<memref::LoadOp>(loc, out, at);
    b.create<memref::StoreOp>(loc, b.create<arith::AddFOp>(loc, old, v), out,
                              at);
    b.create<scf::YieldOp>(loc);
  });
}

/// A staged tile in workgroup memory, blockK x rows or rows x blockK, each
/// row padded by kRowPadBytes against bank conflicts.
MemRefType StagedGemmEmitter::tileType(int64_t rows) {
  auto shared = mlir::gpu::AddressSpaceAttr::get(
      op.getContext(), mlir::gpu::AddressSpace::Workgroup);
  int64_t pad = kRowPadBytes / (tileElement().getIntOrFloatBitWidth() / 8);
  SmallVector<int64_t> shape = kMajorTiles()
                                   ? SmallVector<int64_t>{blockK, rows + pad}
                                   : SmallVector<int64_t>{rows, blockK + pad};
  return MemRefType::get(shape, tileElement(), MemRefLayoutAttrInterface(),
                         shared);
}

/// The launch's thread and workgroup positions, and its tiles.
void StagedGemmEmitter::setUpThreads(mlir::gpu::LaunchOp launch) {
  tx = launch.getThreadIds().x;
  batchIndex = launch.getBlockIds().z;
  rowOrigin = mul(launch.getBlockIds().y, tile.blockM);
  colOrigin = mul(launch.getBlockIds().x, tile.blockN);
  tileA = launch.getWorkgroupAttributions()[0];
  tileB = launch.getWorkgroupAttributions()[1];
  setUpLanes();
}

mlir::gpu::LaunchOp StagedGemmEmitter::emit() {
  int64_t M = g.extent(g.m), N = g.extent(g.n), K = g.extent(g.k);
  auto launch = b.create<mlir::gpu::LaunchOp>(
      loc, c((N + tile.blockN - 1) / tile.blockN),
      c((M + tile.blockM - 1) / tile.blockM), c(g.extent(g.batch)), c(threads),
      c(1), c(1), /*dynamicSharedMemorySize=*/nullptr,
      /*asyncTokenType=*/nullptr, /*asyncDependencies=*/ValueRange(),
      TypeRange{tileType(tile.blockM), tileType(tile.blockN)});
  launch->setAttr(kOwnLaunch, UnitAttr::get(op.getContext()));
  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  b.create<mlir::gpu::TerminatorOp>(loc);
  b.setInsertionPointToStart(&body);
  setUpThreads(launch);
  // Each step's loads are issued before the previous step's multiplies
  // (its values carried in registers): their latency hides behind them.
  SmallVector<Value> inits = zeroAccumulators();
  SmallVector<Value> firstA = loadStep(g.x, g.m, tile.blockM, rowOrigin, c(0));
  SmallVector<Value> firstB = loadStep(g.y, g.n, tile.blockN, colOrigin, c(0));
  size_t accs = inits.size(), countA = firstA.size();
  llvm::append_range(inits, firstA);
  llvm::append_range(inits, firstB);
  auto steps = b.create<scf::ForOp>(loc, c(0), c(K), c(blockK), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(steps.getBody());
    ValueRange carried = steps.getRegionIterArgs();
    storeStep(g.x, tile.blockM, carried.slice(accs, countA), tileA);
    storeStep(g.y, tile.blockN, carried.drop_front(accs + countA), tileB);
    b.create<mlir::gpu::BarrierOp>(loc);
    Value next = add(steps.getInductionVar(), c(blockK));
    SmallVector<Value> out = loadStep(g.x, g.m, tile.blockM, rowOrigin, next);
    SmallVector<Value> nextB = loadStep(g.y, g.n, tile.blockN, colOrigin, next);
    SmallVector<Value> sums =
        multiplyStaged(SmallVector<Value>(carried.take_front(accs)));
    // The next step overwrites the tiles.
    b.create<mlir::gpu::BarrierOp>(loc);
    out.insert(out.begin(), sums.begin(), sums.end());
    llvm::append_range(out, nextB);
    b.create<scf::YieldOp>(loc, out);
  }
  addToOutput(steps.getResults().take_front(accs));
  return launch;
}

namespace {

/// The staged launch in f32 on a chip's plain cores: 16 x 16 threads, each
/// a register tile of outputs 16 apart.
class SimtGemmEmitter : public StagedGemmEmitter {
public:
  SimtGemmEmitter(linalg::LinalgOp op, const GemmView &g, GemmTile tile,
                  Value fill)
      : StagedGemmEmitter(op, g, tile, kSimtThreads, kSimtBlockK, fill) {}

private:
  void setUpLanes() override {
    row = div(tx, kSimtThreadsPerSide);
    col = rem(tx, kSimtThreadsPerSide);
  }

  SmallVector<Value> zeroAccumulators() override {
    Value zero = b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0.0f));
    return SmallVector<Value>(tileM * tileN, zero);
  }

  /// Per k, the thread's rows of A's tile and columns of B's (each 16
  /// apart), a multiply-add per output.
  SmallVector<Value> multiplyStaged(SmallVector<Value> accs) override {
    for (int64_t k = 0; k < blockK; ++k) {
      SmallVector<Value> as, bs;
      for (int64_t i = 0; i < tileM; ++i)
        as.push_back(b.create<memref::LoadOp>(
            loc, tileA,
            ValueRange{c(k), add(row, c(i * kSimtThreadsPerSide))}));
      for (int64_t j = 0; j < tileN; ++j)
        bs.push_back(b.create<memref::LoadOp>(
            loc, tileB,
            ValueRange{c(k), add(col, c(j * kSimtThreadsPerSide))}));
      for (int64_t i = 0; i < tileM; ++i)
        for (int64_t j = 0; j < tileN; ++j)
          accs[i * tileN + j] = b.create<arith::AddFOp>(
              loc, accs[i * tileN + j],
              b.create<arith::MulFOp>(loc, as[i], bs[j]));
    }
    return accs;
  }

  /// Consecutive threads on consecutive columns: the stores coalesce.
  void addToOutput(ValueRange accs) override {
    for (int64_t i = 0; i < tileM; ++i)
      for (int64_t j = 0; j < tileN; ++j)
        addToOutputAt(add(row, c(i * kSimtThreadsPerSide)),
                      add(col, c(j * kSimtThreadsPerSide)),
                      accs[i * tileN + j]);
  }

  Value row, col; // the thread's first row and column
  int64_t tileM = tile.blockM / kSimtThreadsPerSide;
  int64_t tileN = tile.blockN / kSimtThreadsPerSide;
};

/// Staged GEMM workgroups (256 threads) the model assumes a compute unit
/// keeps resident. CUDA's ptxas decides on NVIDIA GPUs: 39, 64 and 165
/// registers a thread at 32, 64 and 128 square tiles (sm_90), so a
/// 128x128 tile runs alone, and CUDA's occupancy then charges it (H200:
/// GEMM 4096 predicted 8.5 ms, ran 4.4).
constexpr int64_t kSimtBlocksPerUnit = 2;

/// The contractions of `kernel` analyzeGemm accepts and `takes` wants.
std::vector<std::pair<linalg::LinalgOp, GemmView>>
gemmsOf(func::FuncOp kernel,
        const std::function<bool(const GemmView &)> &takes) {
  std::vector<std::pair<linalg::LinalgOp, GemmView>> found;
  for (Operation &any : kernel.getBody().front()) {
    auto op = dyn_cast<linalg::LinalgOp>(&any);
    std::string why;
    if (!op)
      continue;
    std::optional<GemmView> g = analyzeGemm(op, why);
    if (g && takes(*g))
      found.emplace_back(op, std::move(*g));
  }
  return found;
}

} // namespace

OwnLaunches emitGemmLaunches(func::FuncOp kernel,
                             const std::function<bool(const GemmView &)> &takes,
                             const GemmLaunchBuilder &build) {
  OwnLaunches out;
  for (auto &[op, g] : gemmsOf(kernel, takes)) {
    // C filled right before (an accumulator's zeros, say): the launch
    // starts from the fill's value, one dispatch instead of two.
    linalg::FillOp fill = fillBefore(op);
    Value c = op.getDpsInitOperand(0)->get();
    GemmBytes bytes{bytesRead(op, g.x), bytesRead(op, g.y), bufferBytes(c)};
    auto [launch, note] =
        build(op, g, fill ? fill.getInputs()[0] : Value(), bytes);
    if (fill)
      fill->erase();
    for (Value tile : launch.getWorkgroupAttributions()) {
      auto type = cast<MemRefType>(tile.getType());
      note.sharedBytes +=
          type.getNumElements() * type.getElementTypeBitWidth() / 8;
    }
    out[launch] = std::move(note);
    op->erase();
  }
  return out;
}

bool gemmGridFits(const GemmView &g, const ChipLimits &limits) {
  int64_t M = g.extent(g.m), N = g.extent(g.n);
  return g.extent(g.batch) <= limits.maxWorkgroupCount[2] &&
         (M + 31) / 32 <= limits.maxWorkgroupCount[1] &&
         (N + 31) / 32 <= limits.maxWorkgroupCount[0];
}

bool takesStagedGemm(const GemmView &g, const GpuChip &chip) {
  int64_t M = g.extent(g.m), N = g.extent(g.n), K = g.extent(g.k);
  return M >= 32 && N >= 32 && M * N * K >= kMinSimtWork &&
         gemmGridFits(g, chip.limits) && chooseSimtTile(g, chip);
}

OwnLaunches emitStagedGemms(func::FuncOp kernel, const GpuChip &chip) {
  return emitGemmLaunches(
      kernel, [&](const GemmView &g) { return takesStagedGemm(g, chip); },
      [&](linalg::LinalgOp op, const GemmView &g, Value fill, GemmBytes bytes) {
        GemmTile tile = *chooseSimtTile(g, chip);
        DispatchNote note;
        note.registerOutputs = tile.blockM * tile.blockN / kSimtThreads;
        predictGemm(note, g, tile, chip.numbers, chip.numbers.peakGflops,
                    kSimtBlockK, kSimtBlocksPerUnit, bytes);
        return std::make_pair(SimtGemmEmitter(op, g, tile, fill).emit(),
                              std::move(note));
      });
}

bool hasStagedGemms(func::FuncOp kernel, const GpuChip &chip) {
  return !gemmsOf(kernel, [&](const GemmView &g) {
            return takesStagedGemm(g, chip);
          }).empty();
}

} // namespace ign::gpu
