//===- DirectConv.h - register tiles of direct convolutions -----*- C++ -*-===//
//
// A convolution with blocked filters-last weights (ign.conv filter_block T,
// see ign-conv-to-matmul) is a generic
//   out[n, f, o...] += in[n, c, o * s + k * d] * w[f / T, c, k..., f % T]
// whose maps are not projected permutations, so it is no linalg
// contraction. Its register tile spans two vectors of filters (lanes) by a
// few output pixels of one row (rows): each step of the reduction (c, k...)
// loads the filters' weights, contiguous, broadcasts one input pixel per
// row, and adds their products, as a GEMM microkernel does; no im2col
// columns are formed. The tile is written to the NCHW output transposed,
// once (the accumulator is carried through the reduction loops).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_DIRECTCONV_H
#define IGN_TARGETS_HOST_DIRECTCONV_H

#include "HostSchedule.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace ign::host {

/// The attribute on the loop over a channel-wise convolution tile's window
/// rows (innermost), unrolled once its accumulators are carried: the input
/// vector a step loads for one row of the tile is the one the next step
/// loads for the row above, and LLVM loads it once.
inline constexpr llvm::StringLiteral kUnrollWindow = "ign.unroll_window";

/// The attribute on a loop LLVM must not unroll (the codegen pipeline's
/// loop lowering gives its back edge llvm.loop.unroll.disable): a direct
/// convolution tile's loop over the window's columns (windowColumnsInside).
inline constexpr llvm::StringLiteral kKeepLoop = "ign.keep_loop";
/// An scf.for LLVM's vectorizer interleaves this many times (an i32): a
/// scalar loop whose body is a long arithmetic chain (KeptLoops.cpp).
inline constexpr llvm::StringLiteral kInterleaveLoop = "ign.interleave_loop";

/// The loops of a direct convolution's register tile.
struct DirectConvLoops {
  llvm::SmallVector<int64_t> ranges;
  unsigned filters = 0; // the loop of f (the weight's contiguous dim)
  unsigned pixels = 0;  // the output's contiguous loop (a row of pixels)
  unsigned input = 0;   // operand number of the input
  unsigned weights = 0; // operand number of the weights
  /// Filters a block of the weights (f / T, f % T); the range of f when
  /// the weights index f directly.
  int64_t block = 0;
  /// Steps of the reduction read along the row of pixels (the kernel's
  /// columns: 3 for a 3x3 window, 1 for a 1x1 convolution).
  int64_t windowColumns = 1;
  /// Input pixels between neighbouring output pixels of a row (the
  /// convolution's stride along it).
  int64_t rowStride = 1;
};

/// The loops of `op` when it is a direct convolution (static, out += a * b,
/// one operand indexed by plain loops ending in an output loop f, or in
/// f % T after f / T, that the other does not use, the other indexed by
/// sums of loops), else nullopt.
std::optional<DirectConvLoops> analyzeDirectConv(mlir::linalg::GenericOp op);

/// The default register tile of a direct convolution: {filters, pixels}.
std::pair<int64_t, int64_t> defaultDirectConvTile(const DirectConvLoops &c,
                                                  const HostMachine &machine);

/// Tiles direct convolution `op` into register tiles of `filters` lanes
/// (dividing its block) by `pixels` rows (the rest of the row peeled off
/// into a tile of what is left), the reduction innermost, and vectorizes
/// them. Returns the tile
/// applied ({} when the convolution was left to LLVM's loop vectorizer).
/// With `channels`, the reduction runs in chunks of that many input
/// channels (defaultChannelChunk); `channels` is set to the chunk applied
/// (0 when it does not divide them). On a machine computing in bf16
/// (--precision=bf16), tiles of whole 16-lane vectors over an even number
/// of input channels sum bfloat16 pairs of channels with vdpbf16ps
/// (docs/host-schedule.md, "bf16 tiles").
/// With --precision=bf16 on a CPU with AMX (and `amx`), a convolution
/// takesAmxConv takes computes in blocks on the tile registers instead
/// (AmxTiles.h): 16 or 32 filters by up to 32 pixels of an output row,
/// from the input's channel pairs (copied per run) and the weights
/// permuted to [kh, kw, F, C] in bfloat16 at compile time.
std::vector<int64_t> vectorizeDirectConv(mlir::RewriterBase &rewriter,
                                         mlir::linalg::GenericOp op,
                                         int64_t filters, int64_t pixels,
                                         const HostMachine &machine,
                                         int64_t &channels, bool amx = true);

/// Whether direct convolution `op` can compute in AMX blocks: --precision=
/// bf16 on a CPU with AMX, stride and dilation 1 over an input padded
/// before, blocked weights of whole tiles of 16 filters, input channels in
/// whole tile steps (kAmxSteps), static f32 operands. (A constant weight
/// too, which is only known when the blocks are built.)
bool takesAmxConv(mlir::linalg::GenericOp op, const HostMachine &machine);

/// The chunks of input channels the search may give direct convolution
/// `op`: 0 (none) and the powers of two from 16 to 256 below and dividing
/// them (defaultChannelChunk's choice is one of them).
std::vector<int64_t> channelChunkChoices(mlir::linalg::GenericOp op,
                                         const DirectConvLoops &c);

/// The default chunk of input channels of direct convolution `op` (its
/// loops `c`) with register tiles of `filters`, 0 for the whole reduction
/// at once: chunks of at least 128 channels whose input fits in L1 where
/// one exists, else chunks when its input and a tile's weights exceed half
/// of L2.
/// Register tiles then run the reduction one chunk at a time, the chunks'
/// loop outside them, so each filter block's weights for a chunk stay in
/// L1 across the pixel tiles and the chunk's input in L2 across the filter
/// blocks: ResNet-50's stride-2 3x3 convolution 512 -> 512 over 16 x 16
/// pixels (a 524 KB input) 5.21 -> 3.82 ms in chunks of 64 channels, its
/// 2048 -> 512 1x1 over 7 x 7 1.65 -> 1.34 (one thread, Zen 3: 512 KB L2).
/// None with 16 lanes (AVX-512), where the chunks lost on Zen 4.
int64_t defaultChannelChunk(mlir::linalg::GenericOp op,
                            const DirectConvLoops &c, int64_t filters,
                            const HostMachine &machine);

/// The loops of a channel-wise convolution's register tile: a depthwise
/// (or grouped) convolution out[n, c, oh, ow] += in[n, c, oh * s + kh,
/// ow + kw] * w[c, 0, kh, kw], whose weights index no output pixel. Its
/// tile spans `columns` output pixels of a row (lanes) by `rows` rows: each
/// step of the reduction (kh, kw) broadcasts one weight and loads one
/// vector of input pixels per row.
struct ChannelConvLoops {
  llvm::SmallVector<int64_t> ranges;
  unsigned columns = 0;         // the output's contiguous loop (ow)
  std::optional<unsigned> rows; // the output loop before it (oh)
  /// An output loop the weights index and the input does not: the filters
  /// of an ungrouped (or grouped) convolution kept pixel-tiled, none for a
  /// depthwise convolution or a pool.
  std::optional<unsigned> filters;
  unsigned input = 0;           // operand number of the input
  unsigned weights = 0;         // operand number of the weights
};

/// The loops of `op` when it is a channel-wise convolution (static, out +=
/// a * b, the weights a projected permutation that does not use the
/// output's contiguous loop, the input sums of loops that reads it with
/// unit stride), else nullopt. Direct convolutions (analyzeDirectConv) are
/// not. Pooling windows (out = max(out, in) or out + in, the window's shape
/// the unused "weights") are, with the same tiles.
std::optional<ChannelConvLoops> analyzeChannelConv(mlir::linalg::GenericOp op);

/// A channel-wise convolution's register tile: `columns` lanes by `rows`
/// rows by `filters` filters (1 without a filter loop). Each reduction step
/// loads a vector of input pixels per row once for all the tile's filters
/// and broadcasts one weight per filter.
struct ChannelConvTile {
  int64_t columns = 1;
  int64_t rows = 1;
  int64_t filters = 1;
};

/// The default register tile of a channel-wise convolution.
ChannelConvTile defaultChannelConvTile(const ChannelConvLoops &c,
                                       const HostMachine &machine);

/// Tiles channel-wise convolution `op` into register tiles of `tile` (the
/// rest of each loop peeled off into a tile of what is left), the
/// reduction innermost, and vectorizes them; lanes a row does not fill are
/// masked. Returns the tile applied ({} when it was left to LLVM's loop
/// vectorizer).
std::vector<int64_t> vectorizeChannelConv(mlir::RewriterBase &rewriter,
                                          mlir::linalg::GenericOp op,
                                          ChannelConvTile tile);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_DIRECTCONV_H
