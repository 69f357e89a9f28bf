//===- TensorCoreGemm.cpp - contractions on tensor cores ------------------===//
//
// The analysis of a contraction as a batch of GEMMs, the block tile, and
// the launch that computes it with ldmatrix and mma.sync (TensorCoreGemm.h).
//
//===----------------------------------------------------------------------===//

#include "TensorCoreGemm.h"

#include "MmaFragments.h"
#include "RegisterTiles.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>

using namespace mlir;

namespace ign::cuda {

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

/// One factor of the body's product: the value, the body ops computing it
/// (in body order) from inputs' elements (`inputs`: their operand numbers),
/// loop indices and outer values, and the loops it reads. Fails, with
/// `why`, for a factor that reads the output or needs an op with regions or
/// side effects.
FailureOr<GemmSide> sideOf(linalg::LinalgOp op, Value v, std::string &why) {
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

/// The loops `v` (a value of the body) depends on through loop indices and
/// the inputs' indexing maps.
llvm::SmallSetVector<unsigned, 4> loopsOfValue(linalg::LinalgOp op, Value v) {
  std::string ignored;
  FailureOr<GemmSide> s = sideOf(op, v, ignored);
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

/// The model's time of a GEMM launch: the larger of its arithmetic (blocks
/// in waves over the SMs, `perSM` blocks resident on each, each SM at
/// kGemmEfficiency of its share of `peakGflops`) and its memory traffic
/// (each buffer once from DRAM, A re-read per block column and B per block
/// row from the cache), plus a launch.
constexpr double kGemmEfficiency = 0.5;
constexpr int64_t kMmaWarpsPerSM = 8;
/// CUDA-core GEMM blocks (256 threads) the model assumes an SM keeps
/// resident. ptxas decides: 39, 64 and 165 registers a thread at 32, 64
/// and 128 square blocks (sm_90), so a 128x128 block runs alone, and
/// applyOccupancy then charges it (H200: GEMM 4096 predicted 8.5 ms, ran
/// 4.4).
constexpr int64_t kSimtBlocksPerSM = 2;

struct GemmCost {
  double peakGflops;
  int64_t blockK, perSM;
};

void predict(gpu::DispatchNote &note, const GemmView &g, const MmaTile &tile,
             const CudaChip &chip, GemmCost cost, int64_t bytesA,
             int64_t bytesB, int64_t bytesC) {
  const gpu::ChipNumbers &n = chip.gpu.numbers;
  if (!n.known() || cost.peakGflops <= 0)
    return;
  int64_t M = g.extent(g.m), N = g.extent(g.n), K = g.extent(g.k);
  int64_t gridM = (M + tile.blockM - 1) / tile.blockM;
  int64_t gridN = (N + tile.blockN - 1) / tile.blockN;
  int64_t blocks = gridM * gridN * g.extent(g.batch);
  double waves =
      std::ceil(double(blocks) / double(n.computeUnits * cost.perSM));
  double blockFlops = 2.0 * tile.blockM * tile.blockN *
                      double((K + cost.blockK - 1) / cost.blockK) * cost.blockK;
  double smFlopsPerS = cost.peakGflops * 1e9 / n.computeUnits * kGemmEfficiency;
  double computeS = waves * cost.perSM * blockFlops / smFlopsPerS;
  double dram = double(bytesA + bytesB + 2 * bytesC);
  double cache = double(bytesA) * gridN + double(bytesB) * gridM;
  double memoryS = dram / (n.bandwidthGBs * 1e9) +
                   cache / (n.bandwidthGBs * 1e9 * gpu::kCacheBandwidthRatio);
  note.predictedMs =
      std::max(computeS, memoryS) * 1e3 + gpu::kLaunchMicroseconds / 1e3;
  note.bound = computeS < memoryS         ? "memory"
               : note.matrixUnits.empty() ? "issue"
                                          : "tensor cores";
}

/// A tensor-core launch's note: its instruction and tiles, and the model's
/// time at the precision's peak.
gpu::DispatchNote noteOf(const GemmView &g, const MmaTile &tile,
                         const CudaChip &chip, MmaPrecision precision,
                         int64_t bytesA, int64_t bytesB, int64_t bytesC) {
  gpu::DispatchNote note;
  note.matrixUnits = llvm::formatv("mma.sync.m16n8k{0} {1}, {2}x{3}x{4} blocks",
                                   mmaShape(precision.kind).k, precision.name(),
                                   tile.blockM, tile.blockN, kBlockK)
                         .str();
  double peak = precision.kind == MmaKind::TF32_M16N8K8 ? chip.peakTf32
                : precision.bf16                        ? chip.peakBf16
                                                        : chip.peakFp16;
  int64_t perSM =
      std::max<int64_t>(1, kMmaWarpsPerSM / (tile.warpsM() * tile.warpsN()));
  predict(note, g, tile, chip, {peak, kBlockK, perSM}, bytesA, bytesB, bytesC);
  return note;
}

/// A CUDA-core GEMM launch's note: its outputs per thread, and the model's
/// time at the fp32 peak.
gpu::DispatchNote simtNoteOf(const GemmView &g, const MmaTile &tile,
                             const CudaChip &chip, int64_t bytesA,
                             int64_t bytesB, int64_t bytesC) {
  gpu::DispatchNote note;
  note.registerOutputs =
      tile.blockM * tile.blockN / (kSimtThreadsPerSide * kSimtThreadsPerSide);
  predict(note, g, tile, chip,
          {chip.gpu.numbers.peakGflops, kSimtBlockK, kSimtBlocksPerSM}, bytesA,
          bytesB, bytesC);
  return note;
}

int64_t bytesOf(Value buffer) {
  auto t = cast<MemRefType>(buffer.getType());
  return t.getNumElements() *
         std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
}

/// The bytes of the buffers a factor reads (its inputs and its loads').
int64_t bytesOf(linalg::LinalgOp op, const GemmSide &side) {
  llvm::SmallSetVector<Value, 4> buffers;
  for (unsigned i : side.inputs)
    buffers.insert(op.getDpsInputs()[i]);
  for (Operation *o : side.slice)
    if (auto load = dyn_cast<memref::LoadOp>(o))
      buffers.insert(load.getMemRef());
  int64_t n = 0;
  for (Value b : buffers)
    n += bytesOf(b);
  return n;
}

/// Builds one GEMM's launch in place of its op: on the tensor cores at
/// `precision`, or on the CUDA cores in f32 where there is none.
class GemmEmitter {
public:
  /// `fill`: C's every element before the op (a linalg.fill the launch
  /// takes over), or null for C as it is in memory.
  GemmEmitter(linalg::LinalgOp op, const GemmView &g, const MmaTile &tile,
              std::optional<MmaPrecision> precision, Value fill)
      : op(op), g(g), tile(tile), simt(!precision),
        kind(precision ? precision->kind : MmaKind::F16_M16N8K16),
        bf16(precision && precision->bf16), fill(fill), b(op), loc(op.getLoc()),
        maps(op.getIndexingMapsArray()),
        threads(simt ? kSimtThreadsPerSide * kSimtThreadsPerSide
                     : tile.threads()),
        blockK(simt ? kSimtBlockK : kBlockK) {}

  mlir::gpu::LaunchOp emit();

private:
  Value c(int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); }
  Value add(Value x, Value y) { return b.create<arith::AddIOp>(loc, x, y); }
  Value mul(Value x, int64_t y) {
    return b.create<arith::MulIOp>(loc, x, c(y));
  }
  Value div(Value x, int64_t y) {
    return b.create<arith::DivUIOp>(loc, x, c(y));
  }
  Value rem(Value x, int64_t y) {
    return b.create<arith::RemUIOp>(loc, x, c(y));
  }
  Value below(Value x, int64_t limit) {
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, x, c(limit));
  }
  /// Moves the emitter's builder to where a region builder `nb` is (the
  /// caller keeps an InsertionGuard).
  void moveTo(OpBuilder &nb) {
    b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
  }
  Value laneValue(const LaneExpr &e);
  void delinearize(ArrayRef<unsigned> group, Value linear,
                   SmallVector<Value> &loops);
  SmallVector<Value> indicesOf(AffineMap map, ArrayRef<Value> loops);
  SmallVector<Value> zeroLoops();
  Value factorAt(const GemmSide &side, ArrayRef<Value> loops);
  std::pair<Value, Value> tilePosition(const GemmSide &side, int64_t tileRows,
                                       int64_t e);
  SmallVector<Value> loadStep(const GemmSide &side, ArrayRef<unsigned> rows,
                              int64_t tileRows, Value origin, Value kt);
  void storeStep(const GemmSide &side, int64_t tileRows, ValueRange values,
                 Value tileBuffer);
  Type tileElement() {
    return simt || kind == MmaKind::TF32_M16N8K8 ? Type(b.getF32Type())
           : bf16                                ? Type(b.getBF16Type())
                                                 : Type(b.getF16Type());
  }
  Value toTileElement(Value f32);
  SmallVector<Value> ldmatrixFragments(int64_t ks, Operand operand);
  SmallVector<Value> loadedFragments(int64_t ks, Operand operand);
  Value bf16Mma(Value a, Value bFrag, Value acc);
  SmallVector<Value> multiplyStep(ValueRange accs, int64_t ks);
  SmallVector<Value> simtMultiplyStep(ValueRange accs, int64_t k);
  void addToOutput(ValueRange accs);
  void addToOutputAt(Value row, Value col, Value v);
  void simtAddToOutput(ValueRange accs);
  MemRefType tileType(int64_t rows);
  SmallVector<Value> zeroAccumulators();
  void setUpThreads(mlir::gpu::LaunchOp launch);

  linalg::LinalgOp op;
  const GemmView &g;
  MmaTile tile;
  bool simt;
  MmaKind kind;
  bool bf16;
  Value fill;
  OpBuilder b;
  Location loc;
  SmallVector<AffineMap> maps;
  int64_t threads, blockK;
  // Inside the launch:
  Value tx, lane, warpM, warpN, batchIndex, rowOrigin, colOrigin;
  Value simtRow, simtCol; // a CUDA-core thread's first row and column
  Value tileA, tileB;
  int64_t tilesM = kWarpTile / 16, tilesN = kWarpTile / 8;
  // A CUDA-core thread's register tile.
  int64_t simtM = tile.blockM / kSimtThreadsPerSide;
  int64_t simtN = tile.blockN / kSimtThreadsPerSide;
};

Value GemmEmitter::laneValue(const LaneExpr &e) {
  Value v = c(e.offset);
  for (const LaneExpr::Term &t : e.terms)
    v = add(v, mul(rem(div(lane, t.divisor), t.modulus), t.scale));
  return v;
}

void GemmEmitter::delinearize(ArrayRef<unsigned> group, Value linear,
                              SmallVector<Value> &loops) {
  int64_t stride = 1;
  for (unsigned l : llvm::reverse(group)) {
    Value q = stride == 1 ? linear : div(linear, stride);
    loops[l] = l == group.front() ? q : rem(q, g.ranges[l]);
    stride *= g.ranges[l];
  }
}

SmallVector<Value> GemmEmitter::indicesOf(AffineMap map,
                                          ArrayRef<Value> loops) {
  SmallVector<Value> out;
  for (AffineExpr e : map.getResults())
    out.push_back(affine::expandAffineExpr(b, loc, e, loops, {}));
  return out;
}

SmallVector<Value> GemmEmitter::zeroLoops() {
  SmallVector<Value> loops(g.ranges.size(), c(0));
  delinearize(g.batch, batchIndex, loops);
  return loops;
}

/// The factor's value at `loops`: its inputs' elements loaded at their
/// indexing maps, loop indices replaced by `loops`, its body ops cloned.
Value GemmEmitter::factorAt(const GemmSide &side, ArrayRef<Value> loops) {
  IRMapping mapping;
  Block &body = *op.getBlock();
  for (unsigned i : side.inputs)
    mapping.map(body.getArgument(i),
                b.create<memref::LoadOp>(loc, op.getDpsInputs()[i],
                                         indicesOf(maps[i], loops)));
  for (Operation *o : side.slice) {
    if (auto index = dyn_cast<linalg::IndexOp>(o))
      mapping.map(index.getResult(), loops[index.getDim()]);
    else
      b.clone(*o, mapping);
  }
  return mapping.lookupOrDefault(side.value);
}

/// Where element `e` of this thread's share of a tileRows x blockK tile
/// lies in it: consecutive threads take consecutive rows or k, whichever
/// the factor's loads walk contiguously (GemmSide::rowsContiguous).
std::pair<Value, Value> GemmEmitter::tilePosition(const GemmSide &side,
                                                  int64_t tileRows, int64_t e) {
  Value idx = add(c(e * threads), tx);
  if (side.rowsContiguous)
    return {rem(idx, tileRows), div(idx, tileRows)};
  return {div(idx, blockK), rem(idx, blockK)};
}

/// This thread's share of the block's tileRows x blockK piece of a factor
/// at step `kt`, in f32 (zero past the ends of its rows and of k: a step
/// past the last loads nothing).
SmallVector<Value> GemmEmitter::loadStep(const GemmSide &side,
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
          b.create<scf::YieldOp>(loc, factorAt(side, loops));
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
/// (a CUDA-core tile is k-major).
void GemmEmitter::storeStep(const GemmSide &side, int64_t tileRows,
                            ValueRange values, Value tileBuffer) {
  for (auto [e, v] : llvm::enumerate(values)) {
    auto [r, kk] = tilePosition(side, tileRows, int64_t(e));
    b.create<memref::StoreOp>(loc, toTileElement(v), tileBuffer,
                              simt ? ValueRange{kk, r} : ValueRange{r, kk});
  }
}

/// An f32 as the tile holds it: rounded to f16 or bf16, or to tf32 (10 bits of
/// mantissa, to nearest with ties away from zero, as cvt.rna.tf32.f32:
/// add half of the last kept bit, clear the 13 dropped ones).
Value GemmEmitter::toTileElement(Value f32) {
  if (simt)
    return f32;
  if (kind != MmaKind::TF32_M16N8K8)
    return b.create<arith::TruncFOp>(loc, tileElement(), f32);
  Type i32 = b.getI32Type();
  auto constant = [&](int64_t v) -> Value {
    return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(i32, v));
  };
  Value bits = b.create<arith::BitcastOp>(loc, i32, f32);
  Value rounded = b.create<arith::AndIOp>(
      loc, b.create<arith::AddIOp>(loc, bits, constant(0x1000)),
      constant(int64_t(0xffffe000)));
  return b.create<arith::BitcastOp>(loc, b.getF32Type(), rounded);
}

/// Step `ks` of the warp's A (each 16-row piece) or B (each 8-row piece)
/// fragments by ldmatrix (f16).
SmallVector<Value> GemmEmitter::ldmatrixFragments(int64_t ks, Operand operand) {
  bool isA = operand == Operand::A;
  LanePosition src = ldmatrixSource(operand);
  Value col = add(laneValue(src.col), c(ks * 16));
  Value row = add(mul(isA ? warpM : warpN, kWarpTile), laneValue(src.row));
  SmallVector<Value> frags;
  int64_t pieces = isA ? tilesM : tilesN, rows = isA ? 16 : 8;
  for (int64_t i = 0; i < pieces; ++i)
    frags.push_back(b.create<nvgpu::LdMatrixOp>(
        loc, VectorType::get({isA ? 4 : 2, 2}, tileElement()),
        isA ? tileA : tileB, ValueRange{add(row, c(i * rows)), col},
        /*transpose=*/false, /*numTiles=*/isA ? 4 : 2));
  return frags;
}

/// The same for tf32, an element at a time where the fragment table puts
/// it (B's tile is stored n x k: its (k, n) positions are transposed).
SmallVector<Value> GemmEmitter::loadedFragments(int64_t ks, Operand operand) {
  bool isA = operand == Operand::A;
  MmaShape shape = mmaShape(kind);
  int64_t elements = isA ? shape.elementsA : shape.elementsB;
  auto type = VectorType::get({elements, 1}, b.getF32Type());
  Value origin = mul(isA ? warpM : warpN, kWarpTile);
  SmallVector<Value> frags;
  int64_t pieces = isA ? tilesM : tilesN, rows = isA ? 16 : 8;
  for (int64_t i = 0; i < pieces; ++i) {
    Value frag = b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(type, b.getF32FloatAttr(0.0f)));
    for (int64_t e = 0; e < elements; ++e) {
      LanePosition p = fragmentLanes(kind, operand, int(e));
      Value row = laneValue(isA ? p.row : p.col);
      Value k = laneValue(isA ? p.col : p.row);
      Value v = b.create<memref::LoadOp>(
          loc, isA ? tileA : tileB,
          ValueRange{add(add(origin, c(i * rows)), row),
                     add(k, c(ks * shape.k))});
      frag = b.create<vector::InsertOp>(loc, v, frag, ArrayRef<int64_t>{e, 0});
    }
    frags.push_back(frag);
  }
  return frags;
}

constexpr const char *kBf16MmaIntrinsic = "llvm.nvvm.mma.m16n8k16.row.col.bf16";

/// mma.sync m16n8k16 on bf16 fragments through its LLVM intrinsic: each row of
/// a fragment (two bf16) one i32 register, the accumulators four f32, the
/// result's four back into a vector<2x2xf32>.
Value GemmEmitter::bf16Mma(Value a, Value bFrag, Value acc) {
  auto registers = [&](Value frag, int64_t rows) {
    SmallVector<Value> out;
    for (int64_t r = 0; r < rows; ++r) {
      Value row = b.create<vector::ExtractOp>(loc, frag, ArrayRef<int64_t>{r});
      Value word = b.create<vector::BitCastOp>(
          loc, VectorType::get({1}, b.getI32Type()), row);
      out.push_back(
          b.create<vector::ExtractOp>(loc, word, ArrayRef<int64_t>{0}));
    }
    return out;
  };
  SmallVector<Value> c;
  for (int64_t e = 0; e < 4; ++e)
    c.push_back(
        b.create<vector::ExtractOp>(loc, acc, ArrayRef<int64_t>{e / 2, e % 2}));
  Type f32 = b.getF32Type();
  auto result =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  // MLIR 19's nvvm.mma.sync verifies bf16 operands as f16 ones and then
  // calls the bf16 intrinsic with them: call the intrinsic itself.
  SmallVector<Value> args = registers(a, 4);
  llvm::append_range(args, registers(bFrag, 2));
  llvm::append_range(args, c);
  auto mma =
      b.create<LLVM::CallIntrinsicOp>(loc, result, kBf16MmaIntrinsic, args);
  Value d = b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(cast<VectorType>(acc.getType()),
                                  b.getF32FloatAttr(0.0f)));
  for (int64_t e = 0; e < 4; ++e)
    d = b.create<vector::InsertOp>(
        loc,
        b.create<LLVM::ExtractValueOp>(loc, mma.getResult(0),
                                       ArrayRef<int64_t>{e}),
        d, ArrayRef<int64_t>{e / 2, e % 2});
  return d;
}

/// One k step (16 for f16 and bf16, 8 for tf32) of the warp's tile: its A
/// and B fragments, an mma.sync per pair.
SmallVector<Value> GemmEmitter::multiplyStep(ValueRange accs, int64_t ks) {
  bool tf32 = kind == MmaKind::TF32_M16N8K8;
  SmallVector<Value> fragsA = tf32 ? loadedFragments(ks, Operand::A)
                                   : ldmatrixFragments(ks, Operand::A);
  SmallVector<Value> fragsB = tf32 ? loadedFragments(ks, Operand::B)
                                   : ldmatrixFragments(ks, Operand::B);
  MmaShape shape = mmaShape(kind);
  SmallVector<Value> out;
  for (int64_t i = 0; i < tilesM; ++i)
    for (int64_t j = 0; j < tilesN; ++j)
      out.push_back(bf16 ? bf16Mma(fragsA[i], fragsB[j], accs[i * tilesN + j])
                         : b.create<nvgpu::MmaSyncOp>(
                               loc, fragsA[i], fragsB[j], accs[i * tilesN + j],
                               ArrayRef<int64_t>{shape.m, shape.n, shape.k},
                               tf32));
  return out;
}

/// One k of a CUDA-core thread's register tile: its rows of A's tile and
/// columns of B's (each 16 apart), a multiply-add per output.
SmallVector<Value> GemmEmitter::simtMultiplyStep(ValueRange accs, int64_t k) {
  SmallVector<Value> a, bs, out;
  for (int64_t i = 0; i < simtM; ++i)
    a.push_back(b.create<memref::LoadOp>(
        loc, tileA,
        ValueRange{c(k), add(simtRow, c(i * kSimtThreadsPerSide))}));
  for (int64_t j = 0; j < simtN; ++j)
    bs.push_back(b.create<memref::LoadOp>(
        loc, tileB,
        ValueRange{c(k), add(simtCol, c(j * kSimtThreadsPerSide))}));
  for (int64_t i = 0; i < simtM; ++i)
    for (int64_t j = 0; j < simtN; ++j)
      out.push_back(b.create<arith::AddFOp>(
          loc, accs[i * simtN + j], b.create<arith::MulFOp>(loc, a[i], bs[j])));
  return out;
}

/// C[row][col] += v (C = fill + v where a fill was taken over), skipped
/// past C's ends; row and col relative to the block's tile.
void GemmEmitter::addToOutputAt(Value row, Value col, Value v) {
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
    SmallVector<Value> at = indicesOf(maps.back(), loops);
    Value old = fill ? fill : b.create<memref::LoadOp>(loc, out, at);
    b.create<memref::StoreOp>(loc, b.create<arith::AddFOp>(loc, old, v), out,
                              at);
    b.create<scf::YieldOp>(loc);
  });
}

/// C += the accumulators, at the positions the C fragment gives each lane.
void GemmEmitter::addToOutput(ValueRange accs) {
  for (int64_t e = 0; e < 4; ++e) {
    LanePosition pos = fragmentLanes(MmaKind::F16_M16N8K16, Operand::C, e);
    Value laneRow = laneValue(pos.row), laneCol = laneValue(pos.col);
    for (int64_t i = 0; i < tilesM; ++i)
      for (int64_t j = 0; j < tilesN; ++j) {
        Value row = add(mul(warpM, kWarpTile), add(laneRow, c(i * 16)));
        Value col = add(mul(warpN, kWarpTile), add(laneCol, c(j * 8)));
        Value v = b.create<vector::ExtractOp>(loc, accs[i * tilesN + j],
                                              ArrayRef<int64_t>{e / 2, e % 2});
        addToOutputAt(row, col, v);
      }
  }
}

/// C += a CUDA-core thread's register tile (consecutive threads on
/// consecutive columns: the stores coalesce).
void GemmEmitter::simtAddToOutput(ValueRange accs) {
  for (int64_t i = 0; i < simtM; ++i)
    for (int64_t j = 0; j < simtN; ++j)
      addToOutputAt(add(simtRow, c(i * kSimtThreadsPerSide)),
                    add(simtCol, c(j * kSimtThreadsPerSide)),
                    accs[i * simtN + j]);
}

/// A staged tile in shared memory: rows x blockK for the tensor cores,
/// blockK x rows (k-major) on the CUDA cores, each row padded by
/// kRowPadBytes against bank conflicts.
MemRefType GemmEmitter::tileType(int64_t rows) {
  auto shared = mlir::gpu::AddressSpaceAttr::get(
      op.getContext(), mlir::gpu::AddressSpace::Workgroup);
  int64_t pad = kRowPadBytes / (tileElement().getIntOrFloatBitWidth() / 8);
  SmallVector<int64_t> shape = simt ? SmallVector<int64_t>{blockK, rows + pad}
                                    : SmallVector<int64_t>{rows, blockK + pad};
  return MemRefType::get(shape, tileElement(), MemRefLayoutAttrInterface(),
                         shared);
}

SmallVector<Value> GemmEmitter::zeroAccumulators() {
  if (simt) {
    Value zero = b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0.0f));
    return SmallVector<Value>(simtM * simtN, zero);
  }
  auto accType = VectorType::get({2, 2}, b.getF32Type());
  Value zero = b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.0f)));
  return SmallVector<Value>(tilesM * tilesN, zero);
}

/// The launch's thread and block positions, and its tiles.
void GemmEmitter::setUpThreads(mlir::gpu::LaunchOp launch) {
  tx = launch.getThreadIds().x;
  Value warp = div(tx, 32);
  lane = rem(tx, 32);
  warpM = div(warp, tile.warpsN());
  warpN = rem(warp, tile.warpsN());
  simtRow = div(tx, kSimtThreadsPerSide);
  simtCol = rem(tx, kSimtThreadsPerSide);
  batchIndex = launch.getBlockIds().z;
  rowOrigin = mul(launch.getBlockIds().y, tile.blockM);
  colOrigin = mul(launch.getBlockIds().x, tile.blockN);
  tileA = launch.getWorkgroupAttributions()[0];
  tileB = launch.getWorkgroupAttributions()[1];
}

mlir::gpu::LaunchOp GemmEmitter::emit() {
  int64_t M = g.extent(g.m), N = g.extent(g.n), K = g.extent(g.k);
  auto launch = b.create<mlir::gpu::LaunchOp>(
      loc, c((N + tile.blockN - 1) / tile.blockN),
      c((M + tile.blockM - 1) / tile.blockM), c(g.extent(g.batch)), c(threads),
      c(1), c(1), /*dynamicSharedMemorySize=*/nullptr,
      /*asyncTokenType=*/nullptr, /*asyncDependencies=*/ValueRange(),
      TypeRange{tileType(tile.blockM), tileType(tile.blockN)});
  launch->setAttr(gpu::kOwnLaunch, UnitAttr::get(op.getContext()));
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
    SmallVector<Value> sums(carried.take_front(accs));
    if (simt)
      for (int64_t k = 0; k < blockK; ++k)
        sums = simtMultiplyStep(sums, k);
    else
      for (int64_t ks = 0; ks < blockK / mmaShape(kind).k; ++ks)
        sums = multiplyStep(sums, ks);
    // The next step overwrites the tiles.
    b.create<mlir::gpu::BarrierOp>(loc);
    out.insert(out.begin(), sums.begin(), sums.end());
    llvm::append_range(out, nextB);
    b.create<scf::YieldOp>(loc, out);
  }
  if (simt)
    simtAddToOutput(steps.getResults().take_front(accs));
  else
    addToOutput(steps.getResults().take_front(accs));
  return launch;
}

} // namespace

int64_t GemmView::extent(ArrayRef<unsigned> group) const {
  int64_t n = 1;
  for (unsigned l : group)
    n *= ranges[l];
  return n;
}

std::optional<GemmView> analyzeGemm(linalg::LinalgOp op, std::string &why) {
  auto out =
      op.getNumDpsInits() == 1
          ? dyn_cast<MemRefType>(op.getDpsInitOperand(0)->get().getType())
          : MemRefType();
  bool staticInputs = llvm::all_of(op.getDpsInputs(), [](Value v) {
    auto t = dyn_cast<MemRefType>(v.getType());
    return t && t.hasStaticShape();
  });
  if (!out || !out.hasStaticShape() || !out.getElementType().isF32() ||
      !staticInputs) {
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
  FailureOr<GemmSide> x = sideOf(op, factors->first, why);
  FailureOr<GemmSide> y = sideOf(op, factors->second, why);
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
    if (int64_t e = g.extent(group); group.empty() || e < kMinMmaExtent) {
      why = llvm::formatv("its {0} is {1}, under {2}", name,
                          group.empty() ? 1 : e, kMinMmaExtent);
      return std::nullopt;
    }
  g.x.rowsContiguous = rowsAreContiguous(op, g.x, g.m);
  g.y.rowsContiguous = rowsAreContiguous(op, g.y, g.n);
  return g;
}

MmaTile chooseMmaTile(const GemmView &g, const CudaChip &chip) {
  int64_t M = g.extent(g.m), N = g.extent(g.n), batch = g.extent(g.batch);
  MmaTile t;
  t.blockM = M >= 64 ? 64 : 32;
  t.blockN = N >= 64 ? 64 : 32;
  auto blocks = [&] {
    return ((M + t.blockM - 1) / t.blockM) * ((N + t.blockN - 1) / t.blockN) *
           batch;
  };
  while (blocks() < chip.gpu.numbers.computeUnits &&
         (t.blockM > kWarpTile || t.blockN > kWarpTile))
    (t.blockM >= t.blockN ? t.blockM : t.blockN) /= 2;
  return t;
}

std::string MmaPrecision::name() const {
  return kind == MmaKind::TF32_M16N8K8 ? "tf32" : bf16 ? "bf16" : "f16";
}

std::optional<MmaPrecision> mmaPrecisionFor(const std::string &precision) {
  if (precision == "fp16")
    return MmaPrecision{MmaKind::F16_M16N8K16, false};
  if (precision == "bf16")
    return MmaPrecision{MmaKind::F16_M16N8K16, true};
  if (precision == "tf32")
    return MmaPrecision{MmaKind::TF32_M16N8K8, false};
  return std::nullopt;
}

MmaTile chooseSimtTile(const GemmView &g, const CudaChip &chip) {
  int64_t M = g.extent(g.m), N = g.extent(g.n), batch = g.extent(g.batch);
  MmaTile t;
  t.blockM = M >= 128 ? 128 : M >= 64 ? 64 : 32;
  t.blockN = N >= 128 ? 128 : N >= 64 ? 64 : 32;
  auto blocks = [&] {
    return ((M + t.blockM - 1) / t.blockM) * ((N + t.blockN - 1) / t.blockN) *
           batch;
  };
  while (blocks() < chip.gpu.numbers.computeUnits &&
         (t.blockM > 32 || t.blockN > 32))
    (t.blockM >= t.blockN ? t.blockM : t.blockN) /= 2;
  return t;
}

namespace {

/// Whether a contraction takes a GEMM launch: on the tensor cores any
/// analyzeGemm accepts, on the CUDA cores those with m and n of at least
/// 32 and enough work; the grid's y and z (block rows, the batch) within
/// the chip's limits.
bool takesGemmLaunch(const GemmView &g, const CudaChip &chip, bool simt) {
  int64_t M = g.extent(g.m), N = g.extent(g.n), K = g.extent(g.k);
  if (simt && (M < 32 || N < 32 || M * N * K < kMinSimtWork))
    return false;
  return g.extent(g.batch) <= chip.gpu.limits.maxWorkgroupCount[2] &&
         (M + 31) / 32 <= chip.gpu.limits.maxWorkgroupCount[1];
}

/// Replaces the contractions of `kernel` that take a GEMM launch: on the
/// tensor cores at `precision`, or on the CUDA cores without one.
gpu::OwnLaunches emitGemms(func::FuncOp kernel, const CudaChip &chip,
                           std::optional<MmaPrecision> precision) {
  gpu::OwnLaunches out;
  std::vector<std::pair<linalg::LinalgOp, GemmView>> found;
  for (Operation &any : kernel.getBody().front()) {
    auto op = dyn_cast<linalg::LinalgOp>(&any);
    std::string why;
    if (!op)
      continue;
    std::optional<GemmView> g = analyzeGemm(op, why);
    if (g && takesGemmLaunch(*g, chip, !precision))
      found.emplace_back(op, std::move(*g));
  }
  for (auto &[op, g] : found) {
    MmaTile tile = precision ? chooseMmaTile(g, chip) : chooseSimtTile(g, chip);
    // C filled right before (an accumulator's zeros, say): the launch
    // starts from the fill's value, one dispatch instead of two.
    auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
    Value c = op.getDpsInitOperand(0)->get();
    if (fill &&
        (fill.getOutputs()[0] != c || !fill.getInputs()[0].getType().isF32()))
      fill = nullptr;
    mlir::gpu::LaunchOp launch =
        GemmEmitter(op, g, tile, precision,
                    fill ? fill.getInputs()[0] : Value())
            .emit();
    if (fill)
      fill->erase();
    int64_t bytesA = bytesOf(op, g.x), bytesB = bytesOf(op, g.y),
            bytesC = bytesOf(op.getDpsInitOperand(0)->get());
    gpu::DispatchNote &note = out[launch];
    note = precision ? noteOf(g, tile, chip, *precision, bytesA, bytesB, bytesC)
                     : simtNoteOf(g, tile, chip, bytesA, bytesB, bytesC);
    for (Value tile : launch.getWorkgroupAttributions()) {
      auto type = cast<MemRefType>(tile.getType());
      note.sharedBytes +=
          type.getNumElements() * type.getElementTypeBitWidth() / 8;
    }
    op->erase();
  }
  return out;
}

} // namespace

gpu::OwnLaunches emitTensorCoreGemms(func::FuncOp kernel, const CudaChip &chip,
                                     MmaPrecision precision) {
  return emitGemms(kernel, chip, precision);
}

gpu::OwnLaunches emitSimtGemms(func::FuncOp kernel, const CudaChip &chip) {
  return emitGemms(kernel, chip, std::nullopt);
}

namespace {

/// Whether every lane of every warp of the block is active.
bool wholeWarps(gpu::SimtBlock &block, std::string &why) {
  if (block.threads() % 32 != 0) {
    why = "a block of " + std::to_string(block.threads()) +
          " threads, not whole warps";
    return false;
  }
  for (int64_t t = 0; t < block.threads(); ++t)
    if (!block.active(t)) {
      why = "lane " + std::to_string(t % 32) + " of warp " +
            std::to_string(t / 32) + " does not take part";
      return false;
    }
  return true;
}

LogicalResult interpretLdmatrix(nvgpu::LdMatrixOp op, gpu::SimtBlock &block,
                                std::string &why) {
  int64_t matrices = op.getNumTiles();
  for (int64_t warp = 0; warp < block.threads() / 32; ++warp)
    for (int lane = 0; lane < 32; ++lane) {
      gpu::Elems out;
      for (int64_t j = 0; j < matrices; ++j)
        for (int e = 0; e < 2; ++e) {
          Position p = ldmatrixPosition(op.getTranspose(), lane, e);
          // Row p.row of matrix j starts where lane 8j + p.row points.
          int64_t source = warp * 32 + 8 * j + p.row;
          SmallVector<int64_t> at;
          for (Value i : op.getIndices())
            at.push_back(block.value(i, source)[0].i);
          at.back() += p.col;
          FailureOr<gpu::Elem> x =
              block.load(op.getSrcMemref(), at, source, why);
          if (failed(x))
            return failure();
          out.push_back(*x);
        }
      block.set(op.getResult(), warp * 32 + lane, std::move(out));
    }
  return success();
}

/// An f32 as a tensor core reads it as tf32: the low 13 bits of its
/// mantissa ignored.
double asTf32(double x) {
  float f = float(x);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits &= 0xffffe000u;
  std::memcpy(&f, &bits, 4);
  return f;
}

LogicalResult interpretMmaSync(nvgpu::MmaSyncOp op, gpu::SimtBlock &block,
                               std::string &why) {
  auto shape = op.getMmaShapeAsArray();
  Type element = op.getMatrixA().getType().getElementType();
  bool tf32 = op.getTf32Enabled().has_value();
  MmaKind kind;
  if (shape == std::array<int64_t, 3>{16, 8, 16} && element.isF16())
    kind = MmaKind::F16_M16N8K16;
  else if (shape == std::array<int64_t, 3>{16, 8, 8} && element.isF32() && tf32)
    kind = MmaKind::TF32_M16N8K8;
  else {
    why = "an mma.sync other than m16n8k16 f16 or m16n8k8 tf32";
    return failure();
  }
  MmaShape s = mmaShape(kind);
  auto input = [&](double x) { return tf32 ? asTf32(x) : x; };
  for (int64_t warp = 0; warp < block.threads() / 32; ++warp) {
    double a[16][16], b[16][8], c[16][8];
    for (int lane = 0; lane < 32; ++lane) {
      int64_t t = warp * 32 + lane;
      const gpu::Elems &fa = block.value(op.getMatrixA(), t);
      const gpu::Elems &fb = block.value(op.getMatrixB(), t);
      const gpu::Elems &fc = block.value(op.getMatrixC(), t);
      for (int i = 0; i < s.elementsA; ++i) {
        Position p = fragmentPosition(kind, Operand::A, lane, i);
        a[p.row][p.col] = input(fa[i].f);
      }
      for (int i = 0; i < s.elementsB; ++i) {
        Position p = fragmentPosition(kind, Operand::B, lane, i);
        b[p.row][p.col] = input(fb[i].f);
      }
      for (int i = 0; i < s.elementsC; ++i) {
        Position q = fragmentPosition(kind, Operand::C, lane, i);
        c[q.row][q.col] = fc[i].f;
      }
    }
    for (int lane = 0; lane < 32; ++lane) {
      gpu::Elems d(s.elementsC);
      for (int i = 0; i < s.elementsC; ++i) {
        Position p = fragmentPosition(kind, Operand::C, lane, i);
        double sum = c[p.row][p.col];
        for (int k = 0; k < s.k; ++k)
          sum += a[p.row][k] * b[k][p.col];
        d[i].f = double(float(sum));
      }
      block.set(op.getRes(), warp * 32 + lane, std::move(d));
    }
  }
  return success();
}

/// The bf16 in the low (`high` false) or high half of a 32-bit register.
double bf16Half(int64_t word, bool high) {
  uint32_t bits = uint32_t(uint64_t(word) >> (high ? 16 : 0)) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// llvm.nvvm.mma.m16n8k16.row.col.bf16: A's four and B's two registers
/// each hold two elements of the fragment (the lower half first), then C's
/// four f32; the result is four f32.
LogicalResult interpretBf16Mma(LLVM::CallIntrinsicOp op, gpu::SimtBlock &block,
                               std::string &why) {
  if (op.getArgs().size() != 10 || op.getNumResults() != 1) {
    why = "an mma intrinsic without 10 arguments and a result";
    return failure();
  }
  ValueRange args = op.getArgs();
  const MmaKind kind = MmaKind::F16_M16N8K16;
  for (int64_t warp = 0; warp < block.threads() / 32; ++warp) {
    double a[16][16], b[16][8], c[16][8];
    for (int lane = 0; lane < 32; ++lane) {
      int64_t t = warp * 32 + lane;
      auto unpack = [&](Value reg, int index, Operand operand, auto &tileOf) {
        int64_t word = block.value(reg, t)[0].i;
        for (int e = 0; e < 2; ++e) {
          Position p = fragmentPosition(kind, operand, lane, 2 * index + e);
          tileOf[p.row][p.col] = bf16Half(word, e == 1);
        }
      };
      for (auto [i, reg] : llvm::enumerate(args.take_front(4)))
        unpack(reg, int(i), Operand::A, a);
      for (auto [i, reg] : llvm::enumerate(args.slice(4, 2)))
        unpack(reg, int(i), Operand::B, b);
      for (auto [i, reg] : llvm::enumerate(args.drop_front(6))) {
        Position q = fragmentPosition(kind, Operand::C, lane, int(i));
        c[q.row][q.col] = block.value(reg, t)[0].f;
      }
    }
    for (int lane = 0; lane < 32; ++lane) {
      gpu::Elems d(4);
      for (int i = 0; i < 4; ++i) {
        Position p = fragmentPosition(kind, Operand::C, lane, i);
        double sum = c[p.row][p.col];
        for (int k = 0; k < 16; ++k)
          sum += a[p.row][k] * b[k][p.col];
        d[i].f = double(float(sum));
      }
      block.set(op.getResult(0), warp * 32 + lane, std::move(d));
    }
  }
  return success();
}

} // namespace

std::optional<LogicalResult>
interpretMmaOp(Operation *op, gpu::SimtBlock &block, std::string &why) {
  auto intrinsic = dyn_cast<LLVM::CallIntrinsicOp>(op);
  if (!isa<nvgpu::LdMatrixOp, nvgpu::MmaSyncOp>(op) &&
      !(intrinsic && intrinsic.getIntrin() == kBf16MmaIntrinsic))
    return std::nullopt;
  if (!wholeWarps(block, why))
    return failure();
  if (auto ld = dyn_cast<nvgpu::LdMatrixOp>(op))
    return interpretLdmatrix(ld, block, why);
  if (intrinsic)
    return interpretBf16Mma(intrinsic, block, why);
  return interpretMmaSync(cast<nvgpu::MmaSyncOp>(op), block, why);
}

} // namespace ign::cuda
