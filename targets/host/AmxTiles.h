//===- AmxTiles.h - contraction blocks on AMX tiles -------------*- C++ -*-===//
//
// --precision=bf16 on a CPU with AMX (amx-tile, amx-bf16): a contraction's
// blocks of 16 or 32 rows by 16 or 32 columns are computed on the tile
// registers, each tdpbf16ps summing a 16 x 16 f32 tile's products of 32
// reduction steps of bfloat16 (16 pairs) at once: 16 times a vdpbf16ps's
// work.
//
// A block is built on tensors as a marker: a linalg.generic `ign.amx_block`
// over (m, n, kk, p) reading A [rows, K] (bfloat16, rows contiguous along
// the reduction) at (m, 2 kk + p) and B's pair panel [K / 2, 2 cols] (as
// HostSchedule's buildPanels packs them: pair kk of column n at (kk, 2 n +
// p)) at (kk, 2 n + p), accumulating C [rows, cols] in f32: the same sum,
// should anything lower it as loops. After bufferization lowerAmxBlocks
// replaces it by the tile loads, the loop of tdpbf16ps over the reduction
// (the C tiles carried in tile registers) and the stores.
//
// The operating system grants a process the tile registers' state only on
// request: libignrt asks for it when it loads a bundle built for a CPU with
// amx-tile (ignrt's checkTarget).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_AMXTILES_H
#define IGN_TARGETS_HOST_AMXTILES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace ign::host {

/// Rows of one tile (and of an A or C tile), and the reduction steps of
/// one tdpbf16ps (16 bfloat16 pairs: a 64-byte row of A).
constexpr int64_t kAmxTileRows = 16;
constexpr int64_t kAmxSteps = 32;
/// The reduction chunk of a contraction's blocks at most: 16 KiB of a
/// block's A rows, which stay in L1 while the block's row sweeps B's
/// panels.
constexpr int64_t kAmxChunk = 256;

/// The marker's attribute name.
constexpr llvm::StringLiteral kAmxBlockAttr = "ign.amx_block";

/// Whether a block of `rows` x `cols` fits the eight tile registers with its
/// A and B tiles: 16 or 32 of each.
bool isAmxBlock(int64_t rows, int64_t cols);

/// Replaces the result of `tile` (a register block of a contraction, its
/// output's last two dims the block's rows and columns, unit elsewhere) by
/// the marker summing `a` [rows, K] (bf16) times `bPairs` [K / 2, 2 cols]
/// (bf16) onto its output. A block of fewer rows or columns than one tile
/// (the rest of a contraction's rows or columns) reads `a` padded to 16
/// rows or `bPairs` padded to 16 columns and sums onto a scratch tile
/// holding its output's rows and columns first, copied back after.
/// Returns false, changing nothing, when the shapes do not match or the
/// block does not fit (isAmxBlock).
bool buildAmxBlock(mlir::RewriterBase &rewriter, mlir::linalg::GenericOp tile,
                   mlir::Value a, mlir::Value bPairs);

/// The marker of a direct convolution's block (`ign.amx_conv`, its value
/// the row's stride s): a linalg.generic over (f, x, c, ky, kx, p) reading
/// the weights [kh, kw, F, C / 2, 2] at (ky, kx, f, c, p) and the input's
/// channel pairs in phases of the stride [C / 2, kh, s, X, 2] at (c, ky, kx
/// mod s, x + kx floordiv s, p) (one output row's window rows), accumulating
/// C [F, P]: F (16 or 32) filters of P (up to 32) pixels of one output row.
constexpr llvm::StringLiteral kAmxConvAttr = "ign.amx_conv";

/// Replaces the result of `tile` (a block of a direct convolution, its
/// output [1, F, (1,) P]) by the convolution marker summing `weights` [kh,
/// kw, F, C / 2, 2] times `input` [C / 2, kh, s', X, 2] (both bf16; s' of
/// the phases of `stride` the window reads) onto its output. Returns false,
/// changing nothing, when the shapes do not match (F 16 or 32, P at most
/// 32 in tiles of one width, C a multiple of kAmxSteps).
bool buildAmxConvBlock(mlir::RewriterBase &rewriter,
                       mlir::linalg::GenericOp tile, mlir::Value weights,
                       mlir::Value input, int64_t stride);

/// The attribute of a marker whose output starts at zero (zeroInitBlocks):
/// its C tiles start as zero tiles, not loaded.
constexpr llvm::StringLiteral kAmxZeroInitAttr = "ign.amx_zero_init";

/// Makes the markers in tile loop `outer` (each output element in exactly
/// one marker, every reduction step in it: no chunk loop) start from zero
/// tiles when the loops' output is (a slice of) a zero fill: the loops then
/// write an empty tensor, which nothing fills (a memset of every
/// workgroup's output, 10% of a 1x1 convolution's time on AMX). Returns
/// whether it did; changes nothing otherwise.
bool zeroInitBlocks(mlir::RewriterBase &rewriter, mlir::Operation *outer);

/// The elementwise consumer of zero-initialized AMX blocks' loops `outer`
/// (zeroInitBlocks; a bias, residual and activation epilogue over the same
/// shape, reading their result and writing through identity maps, calling
/// no math function) applied in each block (the loops hold one marker) to
/// what the block just computed, while it is in cache: the loops then write
/// the consumer's output in place of their own temporary, and the second
/// pass over the workgroup's output is gone. Where the output's rows (along
/// `rowDim`: a convolution's filters, a matmul's rows) lie a multiple of 4
/// KiB apart, all in one L1 set, the tiles go to a contiguous scratch
/// buffer that the epilogue reads; elsewhere it rewrites them in place
/// (faster there: ResNet-50 bf16 21.9 against 22.6 ms; a 3x3 convolution
/// of 32 channels over 128 x 128 0.39 ms from scratch, 0.46 in place, 0.49
/// not fused). Convolutions: UNet 52 -> 47.5 ms, ResNet-50 22.8 -> 21.6;
/// matmuls: a 1x1 128 -> 512 convolution with residual over 28 x 28 0.256
/// -> 0.185 ms. Returns whether it did; changes nothing otherwise.
bool fuseEpilogue(mlir::RewriterBase &rewriter, mlir::Operation *outer,
                  unsigned rowDim);

/// After bufferization: lowers the kernel's markers to the tile
/// instructions (LLVM's x86 AMX intrinsics, which configure the tiles).
void lowerAmxBlocks(mlir::func::FuncOp kernel);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_AMXTILES_H
