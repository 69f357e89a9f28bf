//===- GemmMapping.h - GEMM mappings as systolic programs -------*- C++ -*-===//
//
// C[M x N] = A[M x K] * B[K x N] mapped onto the array as folds: a fold is
// one stationary tile (WS: a K x N block of B; IS: an M x K block of A; OS:
// an M x N block of C) through which the remaining dimension streams in
// chunks. Every convolution reaches the array as this GEMM over its im2col
// operand matrices (M = output pixels, K = window, N = filters).
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_SYSTOLIC_GEMMMAPPING_H
#define IGN_TARGETS_SYSTOLIC_GEMMMAPPING_H

#include "Isa.h"
#include "Result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ign::systolic {

struct GemmShape {
  int64_t M = 0, K = 0, N = 0;
};

struct GemmMapping {
  Dataflow dataflow = Dataflow::WS;
  /// Streamed vectors per COMPUTE; 0: as many as the buffers hold.
  int64_t chunk = 0;
  /// false: SCALE-Sim's fixed mapping. The stationary tiles are visited
  /// column fold outer, row fold inner; each fold streams the whole
  /// streamed dimension and stores its partial sums (WS, IS) as SCALE-Sim
  /// does, so the program is a timing model only.
  /// true: partial sums stay in the accumulator across the K folds
  /// (stream chunk outer, K folds inner) and every output is stored once:
  /// the program computes C.
  bool accumulate = true;
  /// WS/IS with accumulate: every stationary block is loaded once into a
  /// resident scratchpad region and preloaded from there for every stream
  /// chunk (instead of once per chunk from DRAM). Needs the whole
  /// stationary operand in the scratchpad beside two stream slots.
  bool resident = false;
  /// Scratchpad share of the streamed operand (the rest double-buffers the
  /// stationary tiles); 0 means "what the stationary tiles leave".
  int64_t streamSpadElems = 0;

  std::string str() const;
};

/// A 2-D convolution's window geometry over a C x H x W (NCHW) image:
/// output pixel p = (oy, ox) and window column kk = (c, ky, kx) read
/// image[c][oy*sh - ph + ky*dh][ox*sw - pw + kx*dw], or 0 outside.
struct ConvGeometry {
  int64_t C = 0, H = 0, W = 0, kh = 0, kw = 0, sh = 1, sw = 1, ph = 0, pw = 0,
          dh = 1, dw = 1, OH = 0, OW = 0;
  /// The geometry as CONFIG_IM2COL encodes it, or nullopt where a field
  /// does not fit (or OH·OW or C·kh·kw exceed MVIN_IM2COL's 16 bits).
  std::optional<Instr::Im2col> instr() const;
  static ConvGeometry of(const Instr::Im2col &g);
  /// The im2col matrix, [OH·OW x C·kh·kw], of \p image into \p rows.
  template <typename T> void rows(const T *image, T *rows) const {
    int64_t window = kh * kw;
    for (int64_t p = 0; p < OH * OW; ++p)
      for (int64_t kk = 0; kk < C * window; ++kk) {
        int64_t oy = p / OW, ox = p % OW, c = kk / window;
        int64_t y = oy * sh - ph + (kk % window / kw) * dh;
        int64_t x = ox * sw - pw + (kk % kw) * dw;
        *rows++ = y < 0 || y >= H || x < 0 || x >= W
                      ? T(0)
                      : image[(c * H + y) * W + x];
      }
  }
};

/// Where the operands live in DRAM. Row-major, element size of the
/// machine's input type for A and B and of \p outType for C.
struct GemmBuffers {
  uint64_t a = 0, b = 0, c = 0;
  uint64_t dramBytes = 0;
  ElemType outType = ElemType::I8;
  float scale = 1.0f;
  bool relu = false;
  float clampMax = 0.0f; // after ReLU (ReLU6: 6); 0: none
  /// D, added to every output before it is stored (bias, residual): an
  /// M x N matrix of the accumulator type at `d`, or with `dBroadcast` one
  /// row of N values for every row. Needs an accumulating mapping.
  bool hasD = false, dBroadcast = false;
  uint64_t d = 0;
  /// Implicit im2col: A is not stored; `a` holds a C x H x W image and the
  /// program moves its windows into A's rows with MVIN_IM2COL (M = output
  /// pixels, K = C·kh·kw).
  bool implicitIm2col = false;
  Instr::Im2col im2col;
};

/// Lays A, B, C (and D, when \p withD: broadcast or full) out back to back
/// from address 0.
GemmBuffers denseGemmBuffers(const ArrayConfig &config, const GemmShape &shape,
                             ElemType outType, bool withD = false,
                             bool dBroadcast = false);
/// The same with A as the image of an implicit im2col (\p geometry's
/// OH·OW must be M and C·kh·kw must be K).
GemmBuffers convGemmBuffers(const ArrayConfig &config, const GemmShape &shape,
                            const Instr::Im2col &geometry, ElemType outType,
                            bool withD = false, bool dBroadcast = false);

/// The program for \p mapping, or an error naming why the mapping cannot
/// run on \p config (dataflow unsupported, buffers too small).
Result<Program> buildGemmProgram(const ArrayConfig &config,
                                 const GemmShape &shape,
                                 const GemmMapping &mapping,
                                 const GemmBuffers &buffers);

/// Whether the program of \p mapping computes C: SCALE-Sim's
/// store-every-fold mapping stores partial sums it never adds up, which is
/// only the product where K fits one fold (OS always accumulates).
bool mappingComputesC(const ArrayConfig &config, const GemmShape &shape,
                      const GemmMapping &mapping);

/// The candidate mappings of \p shape on \p config that compute C: every
/// dataflow the machine runs, partial sums kept in the accumulator (or
/// stored, where K fits one fold), the stationary operand resident or
/// streamed per chunk, and stream chunks from the largest the buffers hold
/// down to a sixteenth of it.
std::vector<GemmMapping> gemmMappingSpace(const ArrayConfig &config,
                                          const GemmShape &shape);

struct TunedGemm {
  GemmMapping mapping;
  int64_t estimatedCycles = 0; // analytical tier
  int64_t cycles = 0;          // cycle-level total
  int64_t candidates = 0, simulated = 0;
  /// Candidates whose functional result differed from the reference.
  int64_t rejected = 0;
  Program program; // the mapping's program
};
/// Ranks the whole space with the analytical tier and measures the best
/// \p simulateTop (and SCALE-Sim's mapping for the machine's dataflow where
/// it computes C) with the cycle-level tier; the fewest cycles wins.
/// \p buffers: the operands' DRAM layout and epilogue (default: dense, no
/// D); mappings that cannot run it are skipped.
/// With \p check, the fastest candidates are run functionally on seeded
/// random operands and compared with a reference GEMM (+ epilogue) until
/// one matches: exactly for int8, to 1e-5 relative for floats. SCALE-Sim's
/// store-every-fold mapping then only qualifies where K fits one fold.
Result<TunedGemm> tuneGemmMapping(const ArrayConfig &config,
                                  const GemmShape &shape, int simulateTop = 8,
                                  const GemmBuffers *buffers = nullptr,
                                  bool check = false);

/// Runs \p program functionally on seeded random operands and compares C
/// with a reference; an error says where it differs.
Status checkGemmProgram(const ArrayConfig &config, const GemmShape &shape,
                        const GemmBuffers &buffers, const Program &program,
                        uint32_t seed = 1);

/// Number of folds the mapping visits and the cycles SCALE-Sim's formulas
/// give for them (used by the compatibility report and its tests).
struct FoldStats {
  int64_t folds = 0;
  double mappingEfficiency = 0; // mean used PEs / PEs over folds
  double computeUtil = 0;       // SCALE-Sim's "Compute Util" (mean)
};
FoldStats scaleSimFoldStats(const ArrayConfig &config, const GemmShape &shape,
                            Dataflow df);

} // namespace ign::systolic

#endif
