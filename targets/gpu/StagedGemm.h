//===- StagedGemm.h - contractions staged in shared memory ------*- C++ -*-===//
//
// The GPU layer's launch for large contractions (every backend's): a batch
// of GEMMs C[b][m][n] += A[b][m][k] * B[b][k][n] whose b, m, n and k are
// each a group of the op's loops (a matmul, a batched or transposed one, a
// convolution as an implicit GEMM: m its output pixels, k its input
// channels and window). Each workgroup computes a blockM x blockN tile of C
// over k in steps of blockK: its threads stage the step's A and B tiles in
// workgroup (shared) memory, each padded against bank conflicts, then
// multiply out of them; the next step's loads are issued before the
// multiplies, their values carried in registers.
//
// The staged launch (the kStagedGemm knob, GpuSchedule.h) is f32 on the chip's
// plain cores: the tiles k-major, kSimtBlockK x (rows + 4), and 16 x 16 threads
// each keep a (blockM / 16) x (blockN / 16) register tile whose rows and
// columns lie 16 apart, so that a subgroup's reads of the tiles are
// broadcasts or 16 consecutive words (no bank conflicts) and its stores of
// C coalesce. A backend with matrix units builds its own launch on the
// same analysis and emitter (StagedGemmEmitter's hooks: CUDA's tensor
// cores, targets/cuda/TensorCoreGemm.h).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_GPU_STAGEDGEMM_H
#define IGN_TARGETS_GPU_STAGEDGEMM_H

#include "GpuMapping.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include "llvm/ADT/SetVector.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ign::gpu {

struct GpuChip;

/// The smallest m, n and k a contraction needs to be seen as a GEMM.
inline constexpr int64_t kMinGemmExtent = 16;

/// One factor of a contraction's product (A's element or B's), as the
/// op's body computes it: an input's element, or a gather (the reference
/// lowering's convolutions load the image inside the body, at indices of
/// the loops, with selects for the padding).
struct GemmSide {
  mlir::Value value; // in the body
  /// The body ops computing it, in body order, from the inputs' elements,
  /// loop indices (linalg.index) and values defined outside the op.
  std::vector<mlir::Operation *> slice;
  llvm::SmallSetVector<unsigned, 4> inputs; // operand numbers read
  llvm::SmallSetVector<unsigned, 4> loops;  // loops it depends on
  /// Whether its contiguous dim follows its rows (m or n): consecutive
  /// threads then stage consecutive rows, else consecutive k.
  bool rowsContiguous = false;
};

/// A contraction's loops as a batch of GEMMs.
struct GemmView {
  llvm::SmallVector<int64_t> ranges; // every loop's
  /// The loops of each group, in loop order (the last fastest when a
  /// group's index is linearized).
  llvm::SmallVector<unsigned> batch, m, n, k;
  GemmSide x, y; // A's factor (reads m) and B's (reads n)

  int64_t extent(llvm::ArrayRef<unsigned> group) const;
};

/// `op`'s one output buffer where it and every input are memrefs of static
/// shape, else null.
mlir::MemRefType staticOutput(mlir::linalg::LinalgOp op);

/// `op`'s GEMM view, or nullopt with `why`: its body must be out + x * y in
/// f32 (x and y computed from inputs' elements, loop indices and loads,
/// not from out), on static buffers, its output indexed by its parallel
/// loops, each of which x or y reads, and m, n and k at least
/// kMinGemmExtent.
std::optional<GemmView> analyzeGemm(mlir::linalg::LinalgOp op,
                                    std::string &why);

/// A value `v` of `op`'s body as a GemmSide (the ops computing it from
/// inputs' elements, loop indices, loads and outer values), or failure with
/// `why` where it reads the output or needs an op with regions or side
/// effects.
mlir::FailureOr<GemmSide> bodyValue(mlir::linalg::LinalgOp op, mlir::Value v,
                                    std::string &why);

/// `map`'s results at `loops` (one value per loop of the op), as index
/// arithmetic at `b`'s insertion point.
llvm::SmallVector<mlir::Value> indicesAt(mlir::OpBuilder &b, mlir::Location loc,
                                         mlir::AffineMap map,
                                         llvm::ArrayRef<mlir::Value> loops);

/// `side`'s value at `loops`: its inputs' elements loaded at their indexing
/// maps, loop indices replaced by `loops`, its body ops cloned at `b`.
mlir::Value bodyValueAt(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::linalg::LinalgOp op, const GemmSide &side,
                        llvm::ArrayRef<mlir::Value> loops);

/// Bytes of a static buffer, and of the buffers a body value reads (its
/// inputs and its loads'), for the model.
int64_t bufferBytes(mlir::Value buffer);
int64_t bytesRead(mlir::linalg::LinalgOp op, const GemmSide &side);

/// A linalg.fill of `op`'s output, of its element type, right before `op`
/// (an accumulator's start, which a launch may take over), or null.
mlir::linalg::FillOp fillBefore(mlir::linalg::LinalgOp op);

/// A workgroup's tile of C.
struct GemmTile {
  int64_t blockM = 64, blockN = 64;
};

/// The staged launch's k step, threads (a square of kSimtThreadsPerSide)
/// and the least m * n * k a contraction needs to take it (smaller ones
/// keep the mapping script's register tiles).
inline constexpr int64_t kSimtBlockK = 16;
inline constexpr int64_t kSimtThreadsPerSide = 16;
inline constexpr int64_t kSimtThreads =
    kSimtThreadsPerSide * kSimtThreadsPerSide;
inline constexpr int64_t kMinSimtWork = int64_t(1) << 18;
/// A staged row is padded by this many bytes against bank conflicts.
inline constexpr int64_t kRowPadBytes = 16;

/// The staged launch's tile: 128 x 128 (8 x 8 outputs a thread), the larger
/// side halved, down to 32, while the grid has fewer workgroups than the
/// chip has compute units or the two tiles need more than its shared
/// memory; nullopt where even 32 x 32 does not fit the chip (its threads
/// or shared memory).
std::optional<GemmTile> chooseSimtTile(const GemmView &g, const GpuChip &chip);

/// Bytes of the buffers a contraction reads and writes, for the model.
struct GemmBytes {
  int64_t a = 0, b = 0, c = 0;
};

/// The model's time of a GEMM launch (GpuCostModel.h's numbers) in `note`:
/// the larger of its arithmetic (workgroups in waves over the compute
/// units, `perUnit` resident on each, each unit at half its share of
/// `peakGflops`, k rounded up to `blockK`) and its memory traffic (each
/// buffer once from DRAM, A re-read per workgroup column and B per row
/// from the cache), plus a launch. Nothing where the chip has no numbers.
void predictGemm(DispatchNote &note, const GemmView &g, GemmTile tile,
                 const ChipNumbers &numbers, double peakGflops, int64_t blockK,
                 int64_t perUnit, GemmBytes bytes);

/// Builds one GEMM's launch in place of its op (before it; the caller
/// erases the op). The staging, the k loop, the barriers and C's epilogue
/// are this class's; what a thread multiplies out of the staged tiles, and
/// how it holds its accumulators, are a subclass's.
class StagedGemmEmitter {
public:
  /// `fill`: C's every element before the op (a linalg.fill the launch
  /// takes over), or null for C as it is in memory.
  StagedGemmEmitter(mlir::linalg::LinalgOp op, const GemmView &g, GemmTile tile,
                    int64_t threads, int64_t blockK, mlir::Value fill);
  virtual ~StagedGemmEmitter() = default;

  mlir::gpu::LaunchOp emit();

protected:
  /// The staged tiles' element type, and an f32 rounded to it.
  virtual mlir::Type tileElement() { return b.getF32Type(); }
  virtual mlir::Value toTileElement(mlir::Value f32) { return f32; }
  /// Whether a staged tile is blockK x rows (else rows x blockK).
  virtual bool kMajorTiles() const { return true; }
  /// The subclass's thread positions, after setUpThreads's.
  virtual void setUpLanes() {}
  virtual llvm::SmallVector<mlir::Value> zeroAccumulators() = 0;
  /// The accumulators after multiplying the staged step's blockK.
  virtual llvm::SmallVector<mlir::Value>
  multiplyStaged(llvm::SmallVector<mlir::Value> accs) = 0;
  /// C += the accumulators (addToOutputAt per element).
  virtual void addToOutput(mlir::ValueRange accs) = 0;

  mlir::Value c(int64_t v);
  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, int64_t y);
  mlir::Value div(mlir::Value x, int64_t y);
  mlir::Value rem(mlir::Value x, int64_t y);
  mlir::Value below(mlir::Value x, int64_t limit);
  /// C[row][col] += v (C = fill + v where a fill was taken over), skipped
  /// past C's ends; row and col relative to the workgroup's tile.
  void addToOutputAt(mlir::Value row, mlir::Value col, mlir::Value v);

  mlir::linalg::LinalgOp op;
  const GemmView &g;
  GemmTile tile;
  mlir::Value fill;
  mlir::OpBuilder b;
  mlir::Location loc;
  llvm::SmallVector<mlir::AffineMap> maps;
  int64_t threads, blockK;
  // Inside the launch: the thread's linear id, its workgroup's batch index
  // and tile origin, and the staged tiles.
  mlir::Value tx, batchIndex, rowOrigin, colOrigin, tileA, tileB;

private:
  /// Moves the builder to where a region builder `nb` is (the caller keeps
  /// an InsertionGuard).
  void moveTo(mlir::OpBuilder &nb);
  void delinearize(llvm::ArrayRef<unsigned> group, mlir::Value linear,
                   llvm::SmallVector<mlir::Value> &loops);
  llvm::SmallVector<mlir::Value> zeroLoops();
  std::pair<mlir::Value, mlir::Value> tilePosition(const GemmSide &side,
                                                   int64_t tileRows, int64_t e);
  llvm::SmallVector<mlir::Value> loadStep(const GemmSide &side,
                                          llvm::ArrayRef<unsigned> rows,
                                          int64_t tileRows, mlir::Value origin,
                                          mlir::Value kt);
  void storeStep(const GemmSide &side, int64_t tileRows,
                 mlir::ValueRange values, mlir::Value tileBuffer);
  mlir::MemRefType tileType(int64_t rows);
  void setUpThreads(mlir::gpu::LaunchOp launch);
};

/// Builds an accepted contraction's launch (`fill`: as the emitter takes
/// it) and its note.
using GemmLaunchBuilder =
    std::function<std::pair<mlir::gpu::LaunchOp, DispatchNote>(
        mlir::linalg::LinalgOp, const GemmView &, mlir::Value fill, GemmBytes)>;

/// Replaces each contraction of `kernel` (bufferized) that analyzeGemm
/// accepts and `takes` wants by `build`'s launch (a linalg.fill of C right
/// before it taken over: one dispatch instead of two), marked kOwnLaunch,
/// its note's sharedBytes those of its workgroup attributions.
OwnLaunches emitGemmLaunches(mlir::func::FuncOp kernel,
                             const std::function<bool(const GemmView &)> &takes,
                             const GemmLaunchBuilder &build);

/// Whether a GEMM's grid (workgroup columns, rows of at least 32 and the
/// batch) fits the chip's workgroup counts.
bool gemmGridFits(const GemmView &g, const ChipLimits &limits);

/// Whether a contraction takes the staged launch on `chip`: m and n of at
/// least 32, m * n * k of at least kMinSimtWork, a tile that fits.
bool takesStagedGemm(const GemmView &g, const GpuChip &chip);

/// The staged launches of `kernel`'s contractions that take them (f32),
/// each with its note (outputs per thread, the model's time).
OwnLaunches emitStagedGemms(mlir::func::FuncOp kernel, const GpuChip &chip);

/// Whether some contraction of `kernel` (bufferized) would take the staged
/// launch: then its knobs have kStagedGemm.
bool hasStagedGemms(mlir::func::FuncOp kernel, const GpuChip &chip);

} // namespace ign::gpu

#endif // IGN_TARGETS_GPU_STAGEDGEMM_H
