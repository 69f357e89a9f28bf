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

/// How an `ign.panels` argument derives from weight argument `source`, an
/// f32 [K, N] (or [N, K] when `transposed`) as stored: element [w, c, j, kk,
/// l] is B(k = c * chunk + kk, n = offsets[w] + j * cols + l). `w` is the
/// workgroup's piece of N, `c` the reduction chunk. With `pairs` the panels
/// hold bfloat16 pairs of reduction steps, as AVX512-BF16's dot products
/// read them: element [w, c, j, kp, 2 l + p] is B(c * chunk + 2 kp + p, n).
struct PanelPlan {
  int64_t source = 0;
  bool transposed = false;
  int64_t k = 0, n = 0;         // the weight's reduction and column extents
  int64_t cols = 0;             // lanes of a panel
  int64_t width = 0;            // columns of one workgroup's piece
  int64_t chunk = 0;            // reduction steps of one chunk
  bool pairs = false;
  std::vector<int64_t> offsets; // first column of each piece

  /// [pieces, K / chunk, width / cols, chunk, cols]; with pairs [pieces,
  /// K / chunk, width / cols, chunk / 2, cols * 2].
  std::vector<int64_t> shape() const;
  int64_t elementBytes() const { return pairs ? 2 : 4; }
  mlir::DictionaryAttr toAttr(mlir::MLIRContext *ctx) const;
  static std::optional<PanelPlan> fromAttr(mlir::Attribute attr);
};

/// The panels that register tiles inside `outer` read of `source` (a
/// [K, N] slice, or [N, K] when `transposed`, whose N is a multiple of
/// `cols`), as a slice of a new `ign.panels` argument of the kernel, when
/// `source` is a slice of an `ign.weight` argument taken at offsets the
/// loops around `outer` step through evenly; null, changing nothing,
/// otherwise. With `pairs`, bfloat16 pair panels [N / cols, K / 2, cols *
/// 2].
mlir::Value prepackedPanels(mlir::RewriterBase &rewriter, mlir::Value source,
                            bool transposed, int64_t cols,
                            mlir::Operation *outer, bool pairs);

/// The bytes of the panels of `plan` from the weight's f32 elements
/// (rounded to bfloat16 as VCVTNEPS2BF16 does, with pairs).
std::string packPanelBytes(const PanelPlan &plan, const float *weight);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_PREPACKEDPANELS_H
