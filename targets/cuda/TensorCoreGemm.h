//===- TensorCoreGemm.h - contractions on tensor cores ----------*- C++ -*-===//
//
// At --precision=fp16, bf16 or tf32, each contraction of a kernel that the
// GPU layer sees as a batch of GEMMs (targets/gpu/StagedGemm.h) runs on the
// tensor cores as a launch ignc builds itself (the layer's OwnLaunches),
// not through the mapping script: the layer's staged launch, with tiles of
// kBlockK stored rows x k in f16, bf16 or tf32, from which each warp loads
// its operands with ldmatrix and accumulates 32x32 outputs with mma.sync
// (f32 accumulators); the epilogue adds them to C. The lanes' addresses
// come from MmaFragments.h's tables. At fp32 the layer's own staged launch
// runs on the CUDA cores.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_CUDA_TENSORCOREGEMM_H
#define IGN_TARGETS_CUDA_TENSORCOREGEMM_H

#include "CudaChips.h"
#include "MmaFragments.h"

#include "GpuInterpreter.h"
#include "StagedGemm.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>
#include <string>
#include <vector>

namespace ign::cuda {

/// k per block step.
inline constexpr int64_t kBlockK = 32;
/// Outputs of one warp (rows and columns).
inline constexpr int64_t kWarpTile = 32;

/// The block tile of a GEMM: blockM x blockN outputs (32 or 64 each),
/// warps of kWarpTile x kWarpTile.
struct MmaTile : gpu::GemmTile {
  int64_t warpsM() const { return blockM / kWarpTile; }
  int64_t warpsN() const { return blockN / kWarpTile; }
  int64_t threads() const { return 32 * warpsM() * warpsN(); }
};

/// 64x64 blocks, halved (the larger side first) while the grid has fewer
/// blocks than `chip` has SMs.
MmaTile chooseMmaTile(const gpu::GemmView &g, const CudaChip &chip);

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

/// Replaces each contraction of `kernel` (bufferized) that gpu::analyzeGemm
/// accepts by a tensor-core launch computing at `precision`, each with its
/// note (the tile, the model's time where the chip has numbers).
gpu::OwnLaunches emitTensorCoreGemms(mlir::func::FuncOp kernel,
                                     const CudaChip &chip,
                                     MmaPrecision precision);

/// nvgpu.ldmatrix, nvgpu.mma.sync (m16n8k16 f16, m16n8k8 tf32) and the
/// bf16 mma intrinsic (m16n8k16) for the GPU
/// interpreter (GpuInterpreter.h's WarpOps), from MmaFragments.h's tables:
/// tensor-core launches checked without a GPU. Every lane of a warp must
/// take part.
std::optional<mlir::LogicalResult>
interpretMmaOp(mlir::Operation *op, gpu::SimtBlock &block, std::string &why);

} // namespace ign::cuda

#endif // IGN_TARGETS_CUDA_TENSORCOREGEMM_H
