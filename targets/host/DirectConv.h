//===- DirectConv.h - register tiles of direct convolutions -----*- C++ -*-===//
//
// A convolution with filters-last weights (ign.conv filters_last, see
// ign-conv-to-matmul) is a generic
//   out[n, f, o...] += in[n, c, o * s + k * d] * w[c, k..., f]
// whose input map is not a projected permutation, so it is no linalg
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

/// The loops of a direct convolution's register tile.
struct DirectConvLoops {
  llvm::SmallVector<int64_t> ranges;
  unsigned filters = 0; // the loop of f (the weight's contiguous dim)
  unsigned pixels = 0;  // the output's contiguous loop (a row of pixels)
  unsigned input = 0;   // operand number of the input (the other: weights)
};

/// The loops of `op` when it is a direct convolution (static, out += a * b,
/// one operand indexed by plain loops ending in an output loop f that the
/// other does not use, the other indexed by sums of loops), else nullopt.
std::optional<DirectConvLoops> analyzeDirectConv(mlir::linalg::GenericOp op);

/// The default register tile of a direct convolution: {filters, pixels}.
std::pair<int64_t, int64_t> defaultDirectConvTile(const DirectConvLoops &c,
                                                  const HostMachine &machine);

/// Tiles direct convolution `op` into register tiles of `filters` lanes by
/// `pixels` rows (the rest of each loop peeled off into tiles of what is
/// left), the reduction innermost, and vectorizes them. Returns the tile
/// applied ({} when the convolution was left to LLVM's loop vectorizer).
std::vector<int64_t> vectorizeDirectConv(mlir::RewriterBase &rewriter,
                                         mlir::linalg::GenericOp op,
                                         int64_t filters, int64_t pixels);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_DIRECTCONV_H
