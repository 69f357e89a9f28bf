//===- MmaFragments.cpp - which lane holds which element of an MMA --------===//
//
// Transcribed from the PTX ISA (9.7.14.5, "Matrix Fragments for
// mma.m16n8k*"; 9.7.14.5.15, "ldmatrix"): with groupID = lane / 4 and
// threadID_in_group = lane % 4.
//
//===----------------------------------------------------------------------===//

#include "MmaFragments.h"

namespace ign::cuda {

MmaShape mmaShape(MmaKind kind) {
  switch (kind) {
  case MmaKind::F16_M16N8K16:
    return {16, 8, 16, 8, 4, 4, 2};
  case MmaKind::TF32_M16N8K8:
    return {16, 8, 8, 4, 2, 4, 1};
  case MmaKind::S8_M16N8K32:
    return {16, 8, 32, 16, 8, 4, 4};
  }
  return {};
}

namespace {

/// The accumulators of every shape: c0, c1 in row groupID, c2, c3 eight
/// rows below, columns threadID_in_group * 2 + (i % 2).
Position accumulator(int group, int thread, int i) {
  return {group + (i >= 2 ? 8 : 0), thread * 2 + (i & 1)};
}

Position f16(Operand operand, int group, int thread, int i) {
  switch (operand) {
  case Operand::A: // a0..a7: rows +8 for a2, a3, a6, a7; columns +8 from a4
    return {group + ((i / 2) % 2) * 8, thread * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
  case Operand::B: // b0..b3: k rows +8 from b2; column groupID
    return {thread * 2 + (i & 1) + (i >= 2 ? 8 : 0), group};
  case Operand::C:
    return accumulator(group, thread, i);
  }
  return {};
}

Position tf32(Operand operand, int group, int thread, int i) {
  switch (operand) {
  case Operand::A: // a0..a3: rows +8 for a1, a3; columns +4 for a2, a3
    return {group + (i & 1) * 8, thread + (i >= 2 ? 4 : 0)};
  case Operand::B: // b0, b1: k rows threadID_in_group, +4 for b1
    return {thread + i * 4, group};
  case Operand::C:
    return accumulator(group, thread, i);
  }
  return {};
}

Position s8(Operand operand, int group, int thread, int i) {
  switch (operand) {
  case Operand::A: // a0..a15: rows +8 for a4..a7, a12..a15; columns +16 from a8
    return {group + ((i / 4) % 2) * 8,
            thread * 4 + (i & 3) + (i >= 8 ? 16 : 0)};
  case Operand::B: // b0..b7: k rows +16 from b4; column groupID
    return {thread * 4 + (i & 3) + (i >= 4 ? 16 : 0), group};
  case Operand::C:
    return accumulator(group, thread, i);
  }
  return {};
}

} // namespace

Position fragmentPosition(MmaKind kind, Operand operand, int lane,
                          int element) {
  int group = lane / 4, thread = lane % 4;
  switch (kind) {
  case MmaKind::F16_M16N8K16:
    return f16(operand, group, thread, element);
  case MmaKind::TF32_M16N8K8:
    return tf32(operand, group, thread, element);
  case MmaKind::S8_M16N8K32:
    return s8(operand, group, thread, element);
  }
  return {};
}

Position ldmatrixPosition(bool transposed, int lane, int element) {
  // Each lane receives two consecutive 16-bit elements of one row.
  Position p{lane / 4, (lane % 4) * 2 + element};
  return transposed ? Position{p.col, p.row} : p;
}

int LaneExpr::at(int lane) const {
  int value = offset;
  for (const Term &t : terms)
    value += ((lane / t.divisor) % t.modulus) * t.scale;
  return value;
}

LanePosition ldmatrixSource(Operand operand) {
  // Lanes 8j .. 8j+7 address the rows of 8x8 matrix j, which becomes
  // register j: A's a0..a3 are rows 0-7 / 8-15 of columns 0-7, then of
  // columns 8-15; B's b0, b1 are columns (k) 0-7, then 8-15, of its rows.
  if (operand == Operand::A)
    return {{{{1, 16, 1}}, 0}, {{{16, 2, 8}}, 0}};
  return {{{{1, 8, 1}}, 0}, {{{8, 2, 8}}, 0}};
}

LanePosition fragmentLanes(MmaKind kind, Operand operand, int element) {
  // The tables above with groupID = (lane / 4) % 8 and threadID_in_group =
  // lane % 4 as terms: each position is group * gs + thread * ts + offset
  // in its row or column.
  int i = element;
  auto at = [](int groupScale, int threadScale, int offset) {
    LaneExpr e;
    if (groupScale)
      e.terms.push_back({4, 8, groupScale});
    if (threadScale)
      e.terms.push_back({1, 4, threadScale});
    e.offset = offset;
    return e;
  };
  if (operand == Operand::C)
    return {at(1, 0, i >= 2 ? 8 : 0), at(0, 2, i & 1)};
  switch (kind) {
  case MmaKind::F16_M16N8K16:
    if (operand == Operand::A)
      return {at(1, 0, ((i / 2) % 2) * 8),
              at(0, 2, (i & 1) + (i >= 4 ? 8 : 0))};
    return {at(0, 2, (i & 1) + (i >= 2 ? 8 : 0)), at(1, 0, 0)};
  case MmaKind::TF32_M16N8K8:
    if (operand == Operand::A)
      return {at(1, 0, (i & 1) * 8), at(0, 1, i >= 2 ? 4 : 0)};
    return {at(0, 1, i * 4), at(1, 0, 0)};
  case MmaKind::S8_M16N8K32:
    if (operand == Operand::A)
      return {at(1, 0, ((i / 4) % 2) * 8),
              at(0, 4, (i & 3) + (i >= 8 ? 16 : 0))};
    return {at(0, 4, (i & 3) + (i >= 4 ? 16 : 0)), at(1, 0, 0)};
  }
  return {};
}

std::string describeFragment(MmaKind kind, Operand operand, int lane) {
  MmaShape s = mmaShape(kind);
  int n = operand == Operand::A   ? s.elementsA
          : operand == Operand::B ? s.elementsB
                                  : s.elementsC;
  const char *name = operand == Operand::A   ? "a"
                     : operand == Operand::B ? "b"
                                             : "c";
  std::string out;
  for (int i = 0; i < n; ++i) {
    Position p = fragmentPosition(kind, operand, lane, i);
    out += (i ? ", " : "") + std::string(name) + std::to_string(i) + ": (" +
           std::to_string(p.row) + ", " + std::to_string(p.col) + ")";
  }
  return out;
}

} // namespace ign::cuda
