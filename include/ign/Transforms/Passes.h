//===- Passes.h - graph-level passes on the ign dialect ---------*- C++ -*-===//
//
// Passes that reshape the ign graph before lowering: convolutions as
// matmuls, fusion into kernels, kernel outlining.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TRANSFORMS_PASSES_H
#define IGN_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace ign {

/// The attribute marking an outlined kernel function; its value lists the
/// names of the ops the kernel computes.
constexpr llvm::StringLiteral kKernelAttr = "ign.kernel";

/// Groups the compute ops of `main` into ign.kernel regions: fused (see
/// FuseKernels.cpp) when `fuse`, else one op per kernel. Ops already in
/// kernels stay there. `separateThinColumns`: im2col columns with few
/// pixels stay a kernel of their own (the host's threads split a
/// convolution by pixels); an accelerator that reads windows itself wants
/// them fused into their matmul.
mlir::LogicalResult formKernels(mlir::func::FuncOp main, bool fuse,
                                bool separateThinColumns = true);

/// Outlines every ign.kernel of `main`, and every compute op outside one,
/// into a kernel function (see the pass description). Fails, with a
/// diagnostic, on a @main it cannot split.
mlir::LogicalResult outlineKernels(mlir::ModuleOp module,
                                   mlir::func::FuncOp main);

/// Folds ign.batch_norm of `func` into the ign.conv or ign.gemm before it
/// where their weights and parameters are constants.
void foldBatchNorm(mlir::func::FuncOp func);

/// Rewrites `func`'s f32 divisions by constants as products with their
/// reciprocals (ConstantDivisions.cpp).
void constantDivisions(mlir::func::FuncOp func);

/// The operands integerMatmuls gives quantized matmuls: none (they stay
/// f32 as written), their bytes (a CPU with VNNI's byte quads), or the
/// same integers as 16-bit words (a CPU with vpmaddwd's pairs: AVX2).
enum class IntegerOperands { None, Bytes, Words };

/// Rewrites `func`'s quantized contractions (IntegerMatmuls.cpp): unless
/// `operands` is None, matmuls, gemms and 1x1 convolutions of dequantized
/// (or zero-point-centered) bytes by int8 weights into integer matmuls of
/// `operands` accumulating in i32, and with Bytes spatial convolutions
/// (channels in groups of 4) into byte convolutions accumulating in i32;
/// always, i32 convolutions of centered bytes whose sums f32 holds exactly
/// into f32 convolutions.
void integerMatmuls(mlir::func::FuncOp func, IntegerOperands operands);

/// Transposes the constant f32 weights of `func`'s ign.gemm with trans_b
/// into [K, N] at compile time (the gemm then has no trans_b): the host's
/// register tiles copy a [K, N] weight into panels a vector at a time.
void untransposeConstantWeights(mlir::func::FuncOp func);

/// Moves pointwise ops of `func` above the reshapes they read.
void sinkReshapes(mlir::func::FuncOp func);

/// Rewrites every padded ign.conv in `func` as ign.pad + unpadded ign.conv.
void splitConvPadding(mlir::func::FuncOp func);

/// Gives the ungrouped convolutions of `func` (at least 16 filters, 1x1 ones
/// too) blocked filters-last weights [F / T, C, k..., T]
/// (ign.conv filter_block; reordered at compile time when constant), T
/// `filterBlock` or half of it, whichever divides F first (else the
/// convolution is left to convToMatmul), and 1x1 unit-stride ones only
/// over at most 128 pixels: the host
/// computes them directly, without im2col columns. Spatial ones left without
/// a block (fewer than 16 filters, or no block divides them) that have
/// unit-stride rows of at least 16 pixels are marked `ign.pixel_tiled` and
/// kept as they are (the host tiles them by pixels), unless
/// `padFiltersFirst` > 0 and the input channels are a multiple of it (where
/// the padded convolution computes faster than pixel tiles: AMX's blocks,
/// bf16 pair tiles), which pads such filters to a multiple of half the
/// block first. convToMatmul leaves both alone.
void directConvolutions(mlir::func::FuncOp func, int64_t filterBlock,
                        int64_t padFiltersFirst = 0);

/// Appends zero input channels (an ign.pad of the input, zero weights) to
/// the ungrouped convolutions of `func` whose channels are no multiple of
/// `multiple` (a matrix unit's steps: 32 for AMX's bfloat16 tiles), when
/// that adds at most half their multiplies; nothing for a `multiple` of 0.
/// Stems of too few channels (RGB) first fold their window's columns into
/// the channels (a kh x 1 convolution of their im2col over one row).
void padChannels(mlir::func::FuncOp func, int64_t multiple);

/// Rewrites ungrouped ign.conv in `func` as an ign.matmul of the weight
/// with the input (1x1 unit stride, unpadded) or its ign.im2col columns.
void convToMatmul(mlir::func::FuncOp func);

/// Moves the input projections of `func`'s recurrent ops (LSTM, GRU, RNN
/// with static shapes and more than one step) out of the loop over time:
/// one ign.gemm per direction over all steps, read by the op as
/// `projected_input`; the input projections of cells unrolled in the graph
/// (one Gemm of gather(x, t) per step) likewise as one Gemm over x.
void hoistRecurrentProjections(mlir::func::FuncOp func);

/// Transposed convolutions (one group, no dilation, constant weight) as an
/// ign.conv with a filter per output channel and stride phase over the
/// input, followed by a pixel shuffle (reshape, transpose, reshape, slice);
/// only those whose convolution adds at most 40% more multiplies. With
/// `evenRows` (a matrix unit whose tiles divide a row evenly: the host's AMX
/// blocks), rows of a prime count between 16 and 32 pixels get one more
/// (cropped) pixel.
void convTransposeToConv(mlir::func::FuncOp func, bool evenRows = false);

/// Transposed convolutions (one group, batch 1) as a Gemm of the transposed
/// weight with the input and an ign.col2im of its columns.
void convTransposeToMatmul(mlir::func::FuncOp func);

#define GEN_PASS_DECL
#include "ign/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ign/Transforms/Passes.h.inc"

} // namespace ign

#endif // IGN_TRANSFORMS_PASSES_H
