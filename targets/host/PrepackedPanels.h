//===- PrepackedPanels.h - constant weights in panels at compile time -*- C++
//-*-===//
//
// A register tile that streams a weight reads it from panels [N / cols, K,
// cols] (HostSchedule.cpp's buildPanels). Copied by every workgroup on every
// run, the panels were up to half of a kernel's time: a 32 x 1024 x 8210
// Gemm's copy read 16 rows a page apart for each vector it wrote. A kernel
// argument that is a constant weight at every launch (`ign.weight`) is read
// from panels computed once, at compile time, instead: the kernel gains an
// argument (`ign.panels`) saying how they derive from the weight, in the
// order its workgroups and reduction chunks read them, and the compiler
// writes them into the bundle in place of the weight.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_HOST_PREPACKEDPANELS_H
#define IGN_TARGETS_HOST_PREPACKEDPANELS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ign::host {

/// A kernel argument bound to a constant weight at every launch.
inline constexpr const char kWeightArgAttr[] = "ign.weight";
/// A kernel argument holding panels of a weight argument (a PanelPlan).
inline constexpr const char kPanelsArgAttr[] = "ign.panels";

/// The element of panels grouping `group` reduction steps of a `source`
/// operand: the source's own (1: f32, bytes or words; 4: bytes; 2: words),
/// or bfloat16 for pairs of f32 (2); null when the source does not suit
/// the group.
mlir::Type panelElement(mlir::Type source, int64_t group);

/// How an `ign.panels` argument derives from weight argument `source`, an
/// f32, 8- or 16-bit [K, N] (or [N, K] when `transposed`) as stored: element
/// [w, c, j, kk, l] is B(k = c * chunk + kk, n = offsets[w] + j * cols + l).
/// `w` is the workgroup's piece of N, `c` the reduction chunk. With a
/// `group` G of reduction steps (> 1) the panels hold them adjacent, as
/// grouped dot products read them (GroupedDots.h): element [w, c, j, kg,
/// G l + p] is B(c * chunk + G kg + p, n); bfloat16 pairs of an f32 weight,
/// byte quads of an 8-bit one, word pairs of a 16-bit one.
struct PanelPlan {
  int64_t source = 0;
  bool transposed = false;
  int64_t k = 0, n = 0;         // the weight's reduction and column extents
  int64_t cols = 0;             // lanes of a panel
  int64_t width = 0;            // columns of one workgroup's piece
  int64_t chunk = 0;            // reduction steps of one chunk
  int64_t group = 1;            // reduction steps adjacent in a panel row
  int64_t intBits = 0;          // an 8- or 16-bit weight (0: f32)
  std::vector<int64_t> offsets; // first column of each piece
  /// Channel pairs (a direct convolution's bf16 weights, DirectConv.cpp):
  /// the f32 weight of shape `weightShape` (any rank) in bfloat16 pairs of
  /// its dim `pairDim`: [..., ceil(D / 2), ..., 2], element [..., i, ...,
  /// p] the weight's [..., 2 i + p, ...], 0 past D; or an int8 weight
  /// (`intBits` 8) in quads, `group` 4. -1: panels as above.
  int64_t pairDim = -1;
  std::vector<int64_t> weightShape;
  /// A permutation (AMX convolutions' weights, DirectConv.cpp): the f32
  /// weight of shape `weightShape` in bfloat16 with its dims reordered, dim
  /// i of the result the weight's dim permutation[i]. Empty: none.
  std::vector<int64_t> permutation;
  /// Zero elements after each row of the permuted weight (its last dim):
  /// rows of a power-of-two length a tile reads part of at a time map to a
  /// fraction of L1's sets (DirectConv.cpp's amxWeightRowPad). 0: none.
  int64_t padLast = 0;

  /// [pieces, K / chunk, width / cols, chunk / group, cols * group], or
  /// the channel pairs' or the permuted weight's shape.
  std::vector<int64_t> shape() const;
  int64_t elementBytes() const {
    return intBits ? intBits / 8 : group == 2 ? 2 : 4;
  }
  /// Bytes of one element of the weight as stored.
  int64_t weightElementBytes() const { return intBits ? intBits / 8 : 4; }
  /// The bundle dtype of the panels (f32, bf16, i8 or i16) and of their
  /// weight as stored (f32, i8 or i16).
  std::string dtype() const;
  std::string weightDtype() const;
  mlir::DictionaryAttr toAttr(mlir::MLIRContext *ctx) const;
  static std::optional<PanelPlan> fromAttr(mlir::Attribute attr);
};

/// The panels that register tiles inside `outer` read of `source` (a
/// [K, N] slice, or [N, K] when `transposed`, whose N is a multiple of
/// `cols`), as a slice of a new `ign.panels` argument of the kernel, when
/// `source` is a slice of an `ign.weight` argument taken at offsets the
/// loops around `outer` step through evenly; null, changing nothing,
/// otherwise. With a `group` > 1, grouped panels [N / cols, K / group,
/// cols * group].
mlir::Value prepackedPanels(mlir::RewriterBase &rewriter, mlir::Value source,
                            bool transposed, int64_t cols,
                            mlir::Operation *outer, int64_t group);

/// The slice `source` (of an `ign.weight` argument, or of slices of one:
/// unit strides, whole groups of dim `dim`: a size a multiple of `group`
/// at an offset a multiple of it wherever its loop takes it) in groups of
/// that dim (an f32 weight in bfloat16 pairs, `group` 2; an int8 one in
/// quads, 4), as a slice of a new `ign.panels` argument of the kernel
/// holding the whole weight so (PanelPlan::pairDim), computed at compile
/// time; null, changing nothing, when `source` is no such slice.
mlir::Value prepackedChannelPairs(mlir::RewriterBase &rewriter,
                                  mlir::Value source, unsigned dim,
                                  int64_t group = 2);

/// The slice `source` (of an `ign.weight` argument, unit strides, or the
/// argument itself) as a slice of a new `ign.panels` argument holding the
/// whole weight in
/// bfloat16 with its dims in the order `permutation` (PanelPlan::
/// permutation), computed at compile time, its rows `padLast` elements
/// longer (PanelPlan::padLast; the slice leaves them out); null, changing
/// nothing, when `source` is no such slice.
mlir::Value prepackedPermutation(mlir::RewriterBase &rewriter,
                                 mlir::Value source,
                                 llvm::ArrayRef<int64_t> permutation,
                                 int64_t padLast = 0);

/// The bytes of the panels of `plan` from the weight's elements as stored
/// (f32, rounded to bfloat16 as VCVTNEPS2BF16 does for pairs; or integers).
std::string packPanelBytes(const PanelPlan &plan, const char *weight);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_PREPACKEDPANELS_H
