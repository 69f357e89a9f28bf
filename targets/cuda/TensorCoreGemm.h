//===- TensorCoreGemm.h - contractions on tensor cores ----------*- C++ -*-===//
//
// At --precision=fp16, each contraction of a kernel large enough for them
// runs on the tensor cores as a launch ignc builds itself (the GPU layer's
// OwnLaunches), not through the mapping script: a batch of GEMMs
// C[b][m][n] += A[b][m][k] * B[b][k][n] whose b, m, n and k are each a
// group of the op's loops (a matmul, a batched or transposed one, a
// convolution as an implicit GEMM: m its output pixels, k its input
// channels and window). Each block computes a blockM x blockN tile of C
// over k in steps of kBlockK: its threads stage the step's A and B tiles
// in shared memory as f16 (rows of k, padded against bank conflicts),
// then each warp loads its operands with ldmatrix and accumulates 32x32
// outputs with mma.sync.m16n8k16 (f32 accumulators); the epilogue adds
// them to C. The lanes' addresses come from MmaFragments.h's tables.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_CUDA_TENSORCOREGEMM_H
#define IGN_TARGETS_CUDA_TENSORCOREGEMM_H

#include "CudaChips.h"
#include "MmaFragments.h"

#include "GpuInterpreter.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include "llvm/ADT/SetVector.h"

#include <optional>
#include <string>
#include <vector>

namespace ign::cuda {

/// k per block step; a staged row is padded by 16 bytes (8 halves, 4
/// floats) against bank conflicts.
inline constexpr int64_t kBlockK = 32;
inline constexpr int64_t kRowPadBytes = 16;
/// Outputs of one warp (rows and columns).
inline constexpr int64_t kWarpTile = 32;
/// The smallest m, n and k a contraction needs to go to the tensor cores.
inline constexpr int64_t kMinMmaExtent = 16;

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

/// `op`'s GEMM view, or nullopt with `why`: its body must be out + x * y in
/// f32 (x and y computed from inputs' elements, loop indices and loads,
/// not from out), on static buffers, its output indexed by its parallel
/// loops, each of which x or y reads, and m, n and k at least
/// kMinMmaExtent.
std::optional<GemmView> analyzeGemm(mlir::linalg::LinalgOp op,
                                    std::string &why);

/// The block tile of a GEMM: blockM x blockN outputs (32 or 64 each),
/// warps of kWarpTile x kWarpTile.
struct MmaTile {
  int64_t blockM = 64, blockN = 64;

  int64_t warpsM() const { return blockM / kWarpTile; }
  int64_t warpsN() const { return blockN / kWarpTile; }
  int64_t threads() const { return 32 * warpsM() * warpsN(); }
};

/// 64x64 blocks, halved (the larger side first) while the grid has fewer
/// blocks than `chip` has SMs.
MmaTile chooseMmaTile(const GemmView &g, const CudaChip &chip);

/// At fp32 the same contractions run on the CUDA cores as a launch built
/// the same way (CUDA-core GEMMs): the staged tiles are f32 and k-major,
/// kSimtBlockK x (rows + 4), and 16 x 16 threads each keep a
/// (blockM / 16) x (blockN / 16) register tile whose rows and columns lie
/// 16 apart, so that a warp's reads of the tiles are broadcasts or 16
/// consecutive words (no bank conflicts) and its stores of C coalesce.
inline constexpr int64_t kSimtBlockK = 16;
inline constexpr int64_t kSimtThreadsPerSide = 16;
/// The least m * n * k a contraction needs to take a CUDA-core GEMM launch
/// (smaller ones keep the mapping script's register tiles).
inline constexpr int64_t kMinSimtWork = int64_t(1) << 18;

/// The block tile of a CUDA-core GEMM: 128 x 128 (8 x 8 outputs a thread),
/// the larger side halved, down to 32, while the grid has fewer blocks
/// than `chip` has SMs.
MmaTile chooseSimtTile(const GemmView &g, const CudaChip &chip);

/// The mma.sync a --precision computes with: fp16 or bf16 (m16n8k16 on
/// 16-bit tiles loaded by ldmatrix; bf16 through its LLVM intrinsic, as
/// MLIR 19's nvgpu.mma.sync has no bf16 and its nvvm.mma.sync miscompiles
/// it) or tf32 (m16n8k8 on f32 tiles rounded
/// to tf32, fragments loaded element by element: ldmatrix moves 16-bit
/// elements).
struct MmaPrecision {
  MmaKind kind = MmaKind::F16_M16N8K16;
  bool bf16 = false;

  std::string name() const; // "f16", "bf16" or "tf32"
};
std::optional<MmaPrecision> mmaPrecisionFor(const std::string &precision);

/// Replaces each contraction of `kernel` (bufferized) that analyzeGemm
/// accepts by a tensor-core launch computing at `precision`, each with its
/// note (the tile, the model's time where the chip has numbers).
gpu::OwnLaunches emitTensorCoreGemms(mlir::func::FuncOp kernel,
                                     const CudaChip &chip,
                                     MmaPrecision precision);

/// Replaces each contraction of `kernel` (bufferized) that analyzeGemm
/// accepts, with m and n of at least 32 and m * n * k of at least
/// kMinSimtWork, by a CUDA-core GEMM launch (fp32), each with its note.
gpu::OwnLaunches emitSimtGemms(mlir::func::FuncOp kernel, const CudaChip &chip);

/// nvgpu.ldmatrix, nvgpu.mma.sync (m16n8k16 f16, m16n8k8 tf32) and the
/// bf16 mma intrinsic (m16n8k16) for the GPU
/// interpreter (GpuInterpreter.h's WarpOps), from MmaFragments.h's tables:
/// tensor-core launches checked without a GPU. Every lane of a warp must
/// take part.
std::optional<mlir::LogicalResult>
interpretMmaOp(mlir::Operation *op, gpu::SimtBlock &block, std::string &why);

} // namespace ign::cuda

#endif // IGN_TARGETS_CUDA_TENSORCOREGEMM_H
