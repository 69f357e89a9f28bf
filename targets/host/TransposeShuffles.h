//===- TransposeShuffles.h - transposes as shuffle stages -*- C++ -*-===//

#ifndef IGN_TARGETS_HOST_TRANSPOSESHUFFLES_H
#define IGN_TARGETS_HOST_TRANSPOSESHUFFLES_H

#include "mlir/IR/PatternMatch.h"

namespace ign::host {

/// Adds a pattern lowering a vector.transpose of a rows x cols matrix of
/// 32-bit elements (unit dims aside; the columns the source's last dim, the
/// rows the result's) to log2(rows) stages of two-source shuffles per block
/// of `lanes` columns, instead of the vector dialect's element-by-element
/// lowering (which LLVM turned into 3-5 shuffles and blends per element).
/// A direct convolution's register tile (8 pixels by 16 or 32 filters) is
/// stored this way to its NCHW output.
void populateTransposeShufflePatterns(mlir::RewritePatternSet &patterns,
                                      int64_t lanes);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_TRANSPOSESHUFFLES_H
