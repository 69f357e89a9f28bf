//===- MmaFragments.h - which lane holds which element of an MMA -*- C++
//-*-===//
//
// The warp-level matrix instructions of sm_80 and newer (mma.sync, and
// ldmatrix that feeds it) spread each operand tile over the 32 lanes of a
// warp in a fixed pattern, the PTX ISA's "matrix fragments" (sections
// "Matrix Fragments for mma.m16n8k16 / m16n8k8 / m16n8k32" and
// "ldmatrix"). These tables are that pattern, as data: the tensor-core
// emission builds its index arithmetic from them, and the unit tests check
// them against the ISA's figures and against each other (ldmatrix's result
// is an mma operand) with a model of a warp. Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_CUDA_MMAFRAGMENTS_H
#define IGN_TARGETS_CUDA_MMAFRAGMENTS_H

#include <string>
#include <vector>

namespace ign::cuda {

/// An mma.sync shape and element type.
enum class MmaKind {
  F16_M16N8K16, // .f16 or .bf16 inputs, f32 accumulators
  TF32_M16N8K8, // .tf32 inputs, f32 accumulators
  S8_M16N8K32,  // .s8 or .u8 inputs, s32 accumulators
};

enum class Operand { A, B, C };

struct MmaShape {
  int m, n, k;
  int elementsA, elementsB, elementsC; // per lane
  int elementsPerRegister;             // of A and B (C: one per register)
};

MmaShape mmaShape(MmaKind kind);

/// A position in an operand tile: A is m x k, B is k x n, C (and D) m x n.
struct Position {
  int row = 0, col = 0;
  bool operator==(const Position &o) const {
    return row == o.row && col == o.col;
  }
};

/// Where element `element` of lane `lane`'s fragment of `operand` is in its
/// tile (elements numbered as the ISA numbers them: a0, a1, ... in
/// register order, the lower half of a packed register first).
Position fragmentPosition(MmaKind kind, Operand operand, int lane, int element);

/// ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16: element `element`
/// (0 or 1) of register `reg` of lane `lane` is this row and column of
/// 8x8 matrix `reg` (whose rows the lanes 8*reg .. 8*reg+7 address).
Position ldmatrixPosition(bool transposed, int lane, int element);

/// An index as a function of the lane: the sum of terms
/// ((lane / divisor) % modulus) * scale, plus offset. The emission builds
/// its per-lane index arithmetic from these, the tests evaluate them.
struct LaneExpr {
  struct Term {
    int divisor, modulus, scale;
  };
  std::vector<Term> terms;
  int offset = 0;

  int at(int lane) const;
};

/// A position in a tile as a function of the lane.
struct LanePosition {
  LaneExpr row, col;

  Position at(int lane) const { return {row.at(lane), col.at(lane)}; }
};

/// The address each lane gives an ldmatrix (not transposed) that loads an
/// m16n8k16 operand from a tile stored with k contiguous: the row and first
/// column of the 8 elements it points at. A (x4): a 16x16 tile of m rows;
/// B (x2): an 8x16 tile of n rows (lanes 16-31 repeat lanes 0-15's
/// addresses, which x2 ignores).
LanePosition ldmatrixSource(Operand operand);

/// fragmentPosition as lane arithmetic: where element `element` of every
/// lane's fragment of `operand` is in its tile.
LanePosition fragmentLanes(MmaKind kind, Operand operand, int element);

/// "a0: (0, 0)" style listing of a lane's fragment, for messages.
std::string describeFragment(MmaKind kind, Operand operand, int lane);

} // namespace ign::cuda

#endif // IGN_TARGETS_CUDA_MMAFRAGMENTS_H
