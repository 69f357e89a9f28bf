//===- DotContraction.h - dot-product register tiles ------------*- C++ -*-===//
//
// A contraction of few rows whose operands are both contiguous along the
// reduction (C[m, n] += A[m, k] * B[n, k]: a matrix-vector product with the
// weight as stored, [N, K], as a recurrent cell's step or Gemm transB) is
// computed as dot products: each step of the reduction loads a vector of k
// from every row of A and of B and multiplies them lane by lane into
// rows x cols accumulators, which are summed across lanes once at the end.
// Both operands stream contiguously, where the outer-product tiles read a
// vector of n from rows of B some KB apart (a GEMV's 128-byte pieces of an
// L2-sized weight, one FMA chain per tile).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_DOTCONTRACTION_H
#define IGN_TARGETS_HOST_DOTCONTRACTION_H

#include "HostSchedule.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace ign::host {

/// The loops of a dot-product contraction.
struct DotLoops {
  llvm::SmallVector<int64_t> ranges;
  unsigned n = 0;            // the output's contiguous loop (rows of B)
  std::optional<unsigned> m; // rows of A, when the output has them
  unsigned k = 0;            // the reduction, contiguous in A and B
  unsigned a = 0, b = 0;     // operand numbers of A (indexes m) and B
};

/// Contractions of at most this many rows of A take dot-product tiles
/// whatever their reduction; up to kMaxDotRows when it is at least
/// kMinDotSteps vectors long (the sums across lanes, one per accumulator and
/// tile, cost about one step each: attention's 64-long head dim is left to
/// the outer-product tiles).
constexpr int64_t kFewDotRows = 4;
constexpr int64_t kMaxDotRows = 512;
constexpr int64_t kMinDotSteps = 4;

/// The loops of `op` when it is a dot-product contraction: static, out +=
/// a * b, one reduction loop k that is the last dim of both inputs, the
/// output's last loop n indexing only B, rows of A as above, and k a
/// multiple of the machine's lanes; else nullopt.
std::optional<DotLoops> analyzeDotContraction(mlir::linalg::GenericOp op,
                                              const HostMachine &machine);

/// Rows of A per tile: the largest divisor of them up to 4 (2 with 16
/// vector registers).
int64_t dotTileRows(const DotLoops &d, const HostMachine &machine);

/// At most this many rows of B per tile by default: 12 accumulators with
/// the tile's rows of A on 32 vector registers, 8 on 16 (enough to hide the
/// FMA latency).
int64_t defaultDotColumns(const DotLoops &d, const HostMachine &machine);

/// Replaces `op` by loops over tiles of dotTileRows rows of A x cols rows of
/// B (the largest divisor of n up to `maxCols`), each a loop over the
/// reduction in vectors. Returns cols, or 0 when nothing changed.
int64_t vectorizeDotContraction(mlir::RewriterBase &rewriter,
                                mlir::linalg::GenericOp op, const DotLoops &d,
                                int64_t maxCols, const HostMachine &machine);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_DOTCONTRACTION_H
