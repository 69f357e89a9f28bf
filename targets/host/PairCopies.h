//===- PairCopies.h - copies into pairs and groups of steps -----*- C++ -*-===//

#ifndef IGN_TARGETS_HOST_PAIRCOPIES_H
#define IGN_TARGETS_HOST_PAIRCOPIES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace ign::host {

/// Vectorizes `copy`, a copy of an f32 tensor rounded into bfloat16 pairs
/// (roundedCopy's form: the output's last loop, of 2, is the pair; the one
/// before it, x, walks the source's innermost dim with a stride s of 1 to
/// 4, and for s > 1 the loop before x, of s, is the phase added to it), one
/// output row at a time: per 16 pixels it reads each of the pair's two
/// source rows as s x 16 contiguous lanes, keeps each phase's every s-th by
/// a shuffle, rounds both and interleaves them (LLVM: two vcvtneps2bf16 and
/// a vpermi2w per 16 pairs). linalg's vectorizer read the pair's rows as a
/// transposed [2, n] block, which LLVM built from 128-bit pieces a word at
/// a time (26% of a 1x1 convolution's time on AMX). Returns the copy's
/// result: the vectorized one, or the copy unchanged when it has no such
/// form (static shapes, rows of at least 16 pixels).
mlir::Value vectorizePairCopy(mlir::RewriterBase &rewriter,
                              mlir::linalg::GenericOp copy);

/// Vectorizes `copy`, an f32 tensor rounded to bfloat16 in its own layout
/// (roundedCopy with an identity read: an AMX contraction's A rounded per
/// workgroup), 16 elements of its last dim at a time (a vcvtneps2bf16 of a
/// whole register). Left to LLVM, the loop vectorizer converted 4 at a time
/// (35% of a 128x3072x768 matmul's time). Returns the copy's result, or
/// null, changing nothing, unless its shape is static with a last dim of
/// 16k.
mlir::Value vectorizeRoundedCopy(mlir::RewriterBase &rewriter,
                                 mlir::linalg::GenericOp copy);

/// Vectorizes `copy`, a copy of a tensor into groups without a conversion
/// (loops (..., c, g) writing [..., cols, G], reading the source's row g
/// contiguous along c: HostSchedule.cpp's panels of a byte matmul's
/// activations, DirectConv.cpp's input quads of channels), 64 bytes of
/// output at a time: the group's G row pieces read, joined and put in
/// order by one shuffle (LLVM: byte and word unpacks). linalg's vectorizer read
/// them as a transposed [G, cols] block, which LLVM built a few bytes at a time
/// (20% of a 64 -> 256 byte 1x1 convolution's time). Returns the copy's result,
/// or null, changing nothing, unless it has that form with static shapes
/// and G of 2 or 4.
mlir::Value vectorizeGroupCopy(mlir::RewriterBase &rewriter,
                               mlir::linalg::GenericOp copy);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_PAIRCOPIES_H
