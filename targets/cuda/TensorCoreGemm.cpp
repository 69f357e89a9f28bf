//===- TensorCoreGemm.cpp - contractions on tensor cores ------------------===//
//
// The tensor-core form of the GPU layer's staged GEMM launch, its tile and
// note, and ldmatrix / mma.sync for the GPU interpreter (TensorCoreGemm.h).
//
//===----------------------------------------------------------------------===//

#include "TensorCoreGemm.h"

#include "MmaFragments.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstring>

using namespace mlir;

namespace ign::cuda {

namespace {

/// Tensor-core warps the model assumes an SM keeps resident.
constexpr int64_t kMmaWarpsPerSM = 8;

/// A tensor-core launch's note: its instruction and tiles, and the model's
/// time at the precision's peak.
gpu::DispatchNote noteOf(const gpu::GemmView &g, const MmaTile &tile,
                         const CudaChip &chip, MmaPrecision precision,
                         gpu::GemmBytes bytes) {
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
  gpu::predictGemm(note, g, tile, chip.gpu.numbers, peak, kBlockK, perSM,
                   bytes);
  if (note.bound == "matrix units")
    note.bound = "tensor cores";
  return note;
}

/// The GPU layer's staged launch with tiles of f16, bf16 or tf32 stored
/// rows x k, multiplied by warps with ldmatrix and mma.sync.
class TensorCoreEmitter : public gpu::StagedGemmEmitter {
public:
  TensorCoreEmitter(linalg::LinalgOp op, const gpu::GemmView &g,
                    const MmaTile &tile, MmaPrecision precision, Value fill)
      : StagedGemmEmitter(op, g, tile, tile.threads(), kBlockK, fill),
        mmaTile(tile), kind(precision.kind), bf16(precision.bf16) {}

private:
  Type tileElement() override {
    return kind == MmaKind::TF32_M16N8K8 ? Type(b.getF32Type())
           : bf16                        ? Type(b.getBF16Type())
                                         : Type(b.getF16Type());
  }
  Value toTileElement(Value f32) override;
  bool kMajorTiles() const override { return false; }
  void setUpLanes() override {
    Value warp = div(tx, 32);
    lane = rem(tx, 32);
    warpM = div(warp, mmaTile.warpsN());
    warpN = rem(warp, mmaTile.warpsN());
  }
  SmallVector<Value> zeroAccumulators() override {
    auto accType = VectorType::get({2, 2}, b.getF32Type());
    Value zero = b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.0f)));
    return SmallVector<Value>(tilesM * tilesN, zero);
  }
  SmallVector<Value> multiplyStaged(SmallVector<Value> accs) override {
    for (int64_t ks = 0; ks < blockK / mmaShape(kind).k; ++ks)
      accs = multiplyStep(accs, ks);
    return accs;
  }
  void addToOutput(ValueRange accs) override;

  Value laneValue(const LaneExpr &e);
  SmallVector<Value> ldmatrixFragments(int64_t ks, Operand operand);
  SmallVector<Value> loadedFragments(int64_t ks, Operand operand);
  Value bf16Mma(Value a, Value bFrag, Value acc);
  SmallVector<Value> multiplyStep(ValueRange accs, int64_t ks);

  MmaTile mmaTile;
  MmaKind kind;
  bool bf16;
  Value lane, warpM, warpN;
  int64_t tilesM = kWarpTile / 16, tilesN = kWarpTile / 8;
};

Value TensorCoreEmitter::laneValue(const LaneExpr &e) {
  Value v = c(e.offset);
  for (const LaneExpr::Term &t : e.terms)
    v = add(v, mul(rem(div(lane, t.divisor), t.modulus), t.scale));
  return v;
}

/// An f32 as the tile holds it: rounded to f16 or bf16, or to tf32 (10 bits of
/// mantissa, to nearest with ties away from zero, as cvt.rna.tf32.f32:
/// add half of the last kept bit, clear the 13 dropped ones).
Value TensorCoreEmitter::toTileElement(Value f32) {
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
SmallVector<Value> TensorCoreEmitter::ldmatrixFragments(int64_t ks,
                                                        Operand operand) {
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
SmallVector<Value> TensorCoreEmitter::loadedFragments(int64_t ks,
                                                      Operand operand) {
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
Value TensorCoreEmitter::bf16Mma(Value a, Value bFrag, Value acc) {
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
SmallVector<Value> TensorCoreEmitter::multiplyStep(ValueRange accs,
                                                   int64_t ks) {
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

/// C += the accumulators, at the positions the C fragment gives each lane.
void TensorCoreEmitter::addToOutput(ValueRange accs) {
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

} // namespace

MmaTile chooseMmaTile(const gpu::GemmView &g, const CudaChip &chip) {
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

gpu::OwnLaunches emitTensorCoreGemms(func::FuncOp kernel, const CudaChip &chip,
                                     MmaPrecision precision) {
  return gpu::emitGemmLaunches(
      kernel,
      [&](const gpu::GemmView &g) {
        return gpu::gemmGridFits(g, chip.gpu.limits);
      },
      [&](linalg::LinalgOp op, const gpu::GemmView &g, Value fill,
          gpu::GemmBytes bytes) {
        MmaTile tile = chooseMmaTile(g, chip);
        return std::make_pair(
            TensorCoreEmitter(op, g, tile, precision, fill).emit(),
            noteOf(g, tile, chip, precision, bytes));
      });
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
