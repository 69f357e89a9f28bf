//===- HostKnobs.h - the names of the host schedule's knobs -----*- C++ -*-===//
//
// The one place the host's knob names are spelled (docs/search.md):
//
//   split.D      workgroups along the root's loop D (divides the loop)
//   cJ.rows      output rows of contraction J's register tile
//   cJ.cols      output columns (contiguous lanes) of the tile; 1 = scalar
//   cJ.row_dim   which output loop the rows run along (0 = heuristic's)
//   cJ.k_tile    reduction chunk (cache block) outside the tiles; 0 = whole
//   cJ.order     0: row tiles outside column tiles; 1: the reverse
//   cJ.pack      1: the streamed operand is packed into panels first; -1:
//                as the default decides on the workgroup's rows
//   cJ.pack_rows 1: the broadcast operand (rows) is packed into panels first
//   cJ.dot       rows of B per dot-product tile (DotContraction.h); 0 = the
//                outer-product tiles above
//   dJ.filters   lanes (filters) of direct convolution J's register tile
//   dJ.pixels    rows (output pixels of one row) of that tile
//   block.rows   rows per block of a workgroup whose temporaries outgrow L2
//                (attention): 0 = not blocked, -1 = the heuristic's
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_HOSTKNOBS_H
#define IGN_TARGETS_HOST_HOSTKNOBS_H

#include <cstdint>
#include <string>

namespace ign::host::knobs {

constexpr const char *kSplitPrefix = "split.";
inline std::string split(unsigned loop) {
  return kSplitPrefix + std::to_string(loop);
}

/// "cJ." of contraction J.
inline std::string contraction(size_t index) {
  return "c" + std::to_string(index) + ".";
}
constexpr const char *kRows = "rows";
constexpr const char *kCols = "cols";
constexpr const char *kRowDim = "row_dim";
constexpr const char *kKTile = "k_tile";
constexpr const char *kOrder = "order";
constexpr const char *kPack = "pack";
constexpr const char *kPackRows = "pack_rows";
constexpr const char *kDot = "dot";
/// A contraction computes in blocks on AMX tiles (1) or in register tiles
/// (0), where it can (--precision=bf16 on a CPU with AMX).
constexpr const char *kAmx = "amx";
/// A contraction's "pack" as the default decides it on the workgroup's op
/// (kMinPackedRowTiles: the search space is built before the workgroups
/// exist, so its default record must not fix a value for the whole op).
constexpr int64_t kHeuristicPack = -1;

/// Rows per block of a workgroup's row loop (blockRows).
constexpr const char *kBlockRows = "block.rows";
constexpr int64_t kHeuristicBlockRows = -1;

/// "dJ." of direct convolution J.
inline std::string directConv(size_t index) {
  return "d" + std::to_string(index) + ".";
}
constexpr const char *kFilters = "filters";
constexpr const char *kPixels = "pixels";
/// A direct convolution's chunk of input channels ("k_tile") chosen by
/// defaultChannelChunk on the workgroup's op (the search space is built
/// before the workgroups exist).
constexpr int64_t kHeuristicChannelChunk = -1;

/// "wJ." of channel-wise (depthwise, grouped) convolution J.
inline std::string channelConv(size_t index) {
  return "w" + std::to_string(index) + ".";
}
// kCols and kRows: its tile's pixels of a row (lanes) and rows.

/// Contractions whose knobs the cost model's features describe.
constexpr int kFeaturedContractions = 2;

} // namespace ign::host::knobs

#endif // IGN_TARGETS_HOST_HOSTKNOBS_H
