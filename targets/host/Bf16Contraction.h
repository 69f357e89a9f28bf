//===- Bf16Contraction.h - register tiles of bfloat16 dot products -*- C++ -*-//
//
// With --precision=bf16 on a CPU with AVX512-BF16, a register tile of
// `rows` x `cols` outputs takes two reduction steps at a time: both
// operands are packed into bfloat16 pairs (HostSchedule.cpp's buildPanels)
// and each vdpbf16ps adds two products per f32 lane, twice the FMAs' work
// per instruction, with half the bytes to stream.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_BF16CONTRACTION_H
#define IGN_TARGETS_HOST_BF16CONTRACTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace ign::host {

/// f32 lanes of one vdpbf16ps (a 512-bit register).
constexpr int64_t kBf16DotLanes = 16;

/// Replaces register tile `tile` (a contraction tiled to `rows` along loop
/// `rowLoop`, `cols` (a multiple of kBf16DotLanes) along `colLoop`, the
/// output's contiguous loop, two reduction steps and unit elsewhere) by dot
/// products of bfloat16 pairs: `aPairs` holds the tile's rows' pairs
/// (vector of rows * 2 bfloat16, row r at 2r; or, with `aMap`, the tile's
/// slice of A rounded to bfloat16 in A's layout, indexed by `aMap` and
/// contiguous along the reduction), `bPairs` its columns' (cols * 2,
/// column c at 2c). Each output vector is read, accumulated and
/// written back; the schedule's finish keeps it in registers across the
/// reduction loop.
void emitBf16DotTile(mlir::RewriterBase &rewriter, mlir::linalg::GenericOp tile,
                     mlir::Value aPairs, mlir::AffineMap aMap,
                     mlir::Value bPairs, unsigned rowLoop, unsigned colLoop,
                     int64_t rows, int64_t cols);

/// After bufferization: makes the tiles' dot products of pairs (vector
/// contractions over 16 x 2 bfloat16) AVX512-BF16 instructions.
void lowerBf16Dots(mlir::func::FuncOp kernel);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_BF16CONTRACTION_H
