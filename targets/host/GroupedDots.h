//===- GroupedDots.h - register tiles of grouped dot products ---*- C++ -*-===//
//
// Register tiles whose instructions sum a group of reduction steps per
// lane into one 32-bit accumulator:
// - bfloat16 pairs (--precision=bf16 on a CPU with AVX512-BF16): each
//   vdpbf16ps adds two products per f32 lane, twice the FMAs' work per
//   instruction, with half the bytes to stream;
// - 8-bit quads (quantized matmuls, IntegerMatmuls.cpp, on a CPU with
//   AVX512-VNNI): each vpdpbusd adds four products of an unsigned by a
//   signed byte per i32 lane, exactly;
// - 16-bit word pairs (the same matmuls on a CPU without VNNI: AVX2, or
//   AVX512BW): each vpmaddwd sums two products of words per i32 lane,
//   exactly, and a vpaddd adds them up (on a Zen 3, 1.6x the FMAs' work
//   per cycle).
// Both operands are packed so that a group's steps are adjacent
// (HostSchedule.cpp's buildPanels).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_GROUPEDDOTS_H
#define IGN_TARGETS_HOST_GROUPEDDOTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace ign::host {

/// Accumulator lanes of one AVX-512 instruction (a 512-bit register): the
/// bfloat16 pairs' and byte quads' (word pairs take the machine's lanes).
constexpr int64_t kDotLanes = 16;

/// The grouped dot products a register tile takes.
enum class DotKind { Bf16Pairs, Int8Quads, Int16Pairs };

/// Reduction steps of one group: 2 bfloat16, 4 bytes or 2 words.
int64_t groupSteps(DotKind kind);
/// Element type of the packed groups (bf16, i8 or i16) and of the
/// accumulators (f32 or i32).
mlir::Type groupElement(mlir::MLIRContext *ctx, DotKind kind);
mlir::Type accumulatorElement(mlir::MLIRContext *ctx, DotKind kind);

/// Replaces register tile `tile` (a contraction tiled to `rows` along loop
/// `rowLoop`, `cols` (a multiple of `lanes`) along `colLoop`, the
/// output's contiguous loop, one group of reduction steps and unit
/// elsewhere) by grouped dot products: `aGroups` holds the tile's rows'
/// groups (a vector of rows * G elements, row r at G r; or, with `aMap`, the
/// tile's slice of A in A's layout, indexed by `aMap` (loops, or constant
/// 0 where the tile holds one index) and its groups contiguous along its
/// last dim), `bGroups` its columns' (cols * G, column c at G c);
/// `lanes` accumulators a vector (kDotLanes but for word pairs).
/// With Int8Quads, `aUnsigned` says which operand holds the unsigned bytes
/// (A's, or else B's). Each output vector is read, accumulated and written
/// back; the schedule's finish keeps it in registers across the reduction
/// loop. A tile whose output has fewer than `cols` columns (B's panels
/// zero-padded past them) reads and writes those under a mask.
void emitDotTile(mlir::RewriterBase &rewriter, mlir::linalg::GenericOp tile,
                 DotKind kind, mlir::Value aGroups, mlir::AffineMap aMap,
                 mlir::Value bGroups, unsigned rowLoop, unsigned colLoop,
                 int64_t rows, int64_t cols, int64_t lanes,
                 bool aUnsigned = false);

/// A bfloat16 tensor of `shape` whose element at index i (of the loops over
/// it) is f32 tensor `value` at `read`(i), rounded: a bf16 operand's copy
/// (an elementwise loop, which LLVM vectorizes).
mlir::Value roundedCopy(mlir::RewriterBase &rewriter, mlir::Location loc,
                        mlir::Value value, llvm::ArrayRef<int64_t> shape,
                        mlir::AffineMap read);

/// A tensor of `shape` and `element` type whose element at index i (of the
/// loops over it) is tensor `value` at `read`(i), truncated where the types
/// differ (f32 into bfloat16): the copy, an elementwise generic writing its
/// output in order.
mlir::linalg::GenericOp copyThrough(mlir::RewriterBase &rewriter,
                                    mlir::Location loc, mlir::Value value,
                                    llvm::ArrayRef<int64_t> shape,
                                    mlir::AffineMap read, mlir::Type element);

/// The body of a contraction of bfloat16 operands into f32: yields
/// args[2] + extf(args[0]) * extf(args[1]) (a linalg.generic's body
/// builder).
void widenedMultiplyAdd(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::ValueRange args);

/// After bufferization: makes the tiles' grouped dot products (vector
/// contractions over lanes x G elements) AVX512-BF16, AVX512-VNNI or
/// vpmaddwd instructions.
void lowerGroupedDots(mlir::func::FuncOp kernel);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_GROUPEDDOTS_H
