//===- MmaFragmentsTest.cpp - the MMA fragment tables against the ISA -----===//
//
// targets/cuda/MmaFragments.h against the PTX ISA's fragment figures (spot
// values read off them), against itself (every element of a tile held by
// exactly one lane, once), and across instructions with a model of a warp:
// the product its fragments describe is the matrix product, and ldmatrix
// delivers exactly mma's A and B fragments.
//
//===----------------------------------------------------------------------===//

#include "MmaFragments.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>

using namespace ign::cuda;

namespace {

const MmaKind kKinds[] = {MmaKind::F16_M16N8K16, MmaKind::TF32_M16N8K8,
                          MmaKind::S8_M16N8K32};

std::pair<int, int> tileOf(MmaKind kind, Operand op) {
  MmaShape s = mmaShape(kind);
  return op == Operand::A   ? std::make_pair(s.m, s.k)
         : op == Operand::B ? std::make_pair(s.k, s.n)
                            : std::make_pair(s.m, s.n);
}

int elementsOf(MmaKind kind, Operand op) {
  MmaShape s = mmaShape(kind);
  return op == Operand::A   ? s.elementsA
         : op == Operand::B ? s.elementsB
                            : s.elementsC;
}

TEST(MmaFragments, EveryElementIsHeldByOneLaneOnce) {
  for (MmaKind kind : kKinds)
    for (Operand op : {Operand::A, Operand::B, Operand::C}) {
      auto [rows, cols] = tileOf(kind, op);
      std::set<std::pair<int, int>> seen;
      for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < elementsOf(kind, op); ++i) {
          Position p = fragmentPosition(kind, op, lane, i);
          ASSERT_TRUE(p.row >= 0 && p.row < rows && p.col >= 0 && p.col < cols)
              << describeFragment(kind, op, lane);
          EXPECT_TRUE(seen.insert({p.row, p.col}).second)
              << "twice: " << p.row << ", " << p.col;
        }
      EXPECT_EQ(int(seen.size()), rows * cols);
    }
}

TEST(MmaFragments, MatchTheIsaFigures) {
  // m16n8k16 .f16: lane 0 and lane 5 (groupID 1, threadID_in_group 1).
  EXPECT_EQ(describeFragment(MmaKind::F16_M16N8K16, Operand::A, 0),
            "a0: (0, 0), a1: (0, 1), a2: (8, 0), a3: (8, 1), a4: (0, 8), "
            "a5: (0, 9), a6: (8, 8), a7: (8, 9)");
  EXPECT_EQ(describeFragment(MmaKind::F16_M16N8K16, Operand::A, 5),
            "a0: (1, 2), a1: (1, 3), a2: (9, 2), a3: (9, 3), a4: (1, 10), "
            "a5: (1, 11), a6: (9, 10), a7: (9, 11)");
  EXPECT_EQ(describeFragment(MmaKind::F16_M16N8K16, Operand::B, 0),
            "b0: (0, 0), b1: (1, 0), b2: (8, 0), b3: (9, 0)");
  EXPECT_EQ(describeFragment(MmaKind::F16_M16N8K16, Operand::C, 31),
            "c0: (7, 6), c1: (7, 7), c2: (15, 6), c3: (15, 7)");
  // m16n8k8 .tf32: lane 6 (groupID 1, threadID_in_group 2).
  EXPECT_EQ(describeFragment(MmaKind::TF32_M16N8K8, Operand::A, 6),
            "a0: (1, 2), a1: (9, 2), a2: (1, 6), a3: (9, 6)");
  EXPECT_EQ(describeFragment(MmaKind::TF32_M16N8K8, Operand::B, 6),
            "b0: (2, 1), b1: (6, 1)");
  // m16n8k32 .s8: lane 9 (groupID 2, threadID_in_group 1).
  EXPECT_EQ(describeFragment(MmaKind::S8_M16N8K32, Operand::B, 9),
            "b0: (4, 2), b1: (5, 2), b2: (6, 2), b3: (7, 2), b4: (20, 2), "
            "b5: (21, 2), b6: (22, 2), b7: (23, 2)");
  Position a12 = fragmentPosition(MmaKind::S8_M16N8K32, Operand::A, 9, 12);
  EXPECT_EQ(a12, (Position{10, 20}));
}

/// A warp's mma as the emission will use the tables: each lane loads its
/// fragments of A, B and C by them, and the instruction's result, read
/// back by the C table, is the matrix product plus C for every shape (it
/// holds when each table is a one-to-one map of the tile; the ISA figures
/// above and ldmatrix below check that they are the right maps).
TEST(MmaFragments, AWarpComputesTheMatrixProduct) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> value(-8, 8);
  for (MmaKind kind : kKinds) {
    MmaShape s = mmaShape(kind);
    std::vector<std::vector<int>> a(s.m, std::vector<int>(s.k)),
        b(s.k, std::vector<int>(s.n)), c(s.m, std::vector<int>(s.n));
    for (auto *mat : {&a, &b, &c})
      for (auto &row : *mat)
        for (int &x : row)
          x = value(rng);
    // The lanes' registers, from the tables.
    std::vector<std::vector<int>> fa(32), fb(32), fc(32);
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < s.elementsA; ++i) {
        Position p = fragmentPosition(kind, Operand::A, lane, i);
        fa[lane].push_back(a[p.row][p.col]);
      }
      for (int i = 0; i < s.elementsB; ++i) {
        Position p = fragmentPosition(kind, Operand::B, lane, i);
        fb[lane].push_back(b[p.row][p.col]);
      }
      for (int i = 0; i < s.elementsC; ++i) {
        Position p = fragmentPosition(kind, Operand::C, lane, i);
        fc[lane].push_back(c[p.row][p.col]);
      }
    }
    // The instruction: D[m][n] = sum_k A[m][k] B[k][n] + C[m][n], reading
    // each operand element from the lane and register the tables name.
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < s.elementsC; ++i) {
        Position d = fragmentPosition(kind, Operand::C, lane, i);
        int sum = fc[lane][i];
        for (int k = 0; k < s.k; ++k) {
          int av = 0, bv = 0;
          for (int l = 0; l < 32; ++l) {
            for (int j = 0; j < s.elementsA; ++j)
              if (fragmentPosition(kind, Operand::A, l, j) ==
                  Position{d.row, k})
                av = fa[l][j];
            for (int j = 0; j < s.elementsB; ++j)
              if (fragmentPosition(kind, Operand::B, l, j) ==
                  Position{k, d.col})
                bv = fb[l][j];
          }
          sum += av * bv;
        }
        int want = c[d.row][d.col];
        for (int k = 0; k < s.k; ++k)
          want += a[d.row][k] * b[k][d.col];
        ASSERT_EQ(sum, want) << "lane " << lane << " c" << i;
      }
  }
}

/// ldmatrix.x4 over a 16x16 tile (matrices: rows 0-7 and 8-15 of columns
/// 0-7, then of columns 8-15) gives each lane exactly its m16n8k16 A
/// fragment; ldmatrix.x2.trans over a 16x8 B tile stored k-major, its B
/// fragment.
TEST(MmaFragments, LdmatrixDeliversTheMmaOperands) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg)
      for (int e = 0; e < 2; ++e) {
        Position in = ldmatrixPosition(false, lane, e);
        Position tile{in.row + 8 * (reg % 2), in.col + 8 * (reg / 2)};
        EXPECT_EQ(tile, fragmentPosition(MmaKind::F16_M16N8K16, Operand::A,
                                         lane, 2 * reg + e))
            << "lane " << lane << " register " << reg;
      }
    for (int reg = 0; reg < 2; ++reg)
      for (int e = 0; e < 2; ++e) {
        Position in = ldmatrixPosition(true, lane, e); // (k, n) in matrix
        Position tile{in.row + 8 * reg, in.col};
        EXPECT_EQ(tile, fragmentPosition(MmaKind::F16_M16N8K16, Operand::B,
                                         lane, 2 * reg + e))
            << "lane " << lane << " register " << reg;
      }
  }
}

/// The addresses the emission gives ldmatrix (ldmatrixSource) make it
/// deliver the mma operands: lane l's register j, element e, comes from
/// row r of matrix j, addressed by lane 8j + r; that lane's address plus
/// the column within the row must be the fragment's position (B's tile is
/// stored n x k, so its position is transposed).
TEST(MmaFragments, LdmatrixSourcesGiveTheMmaOperands) {
  for (Operand operand : {Operand::A, Operand::B}) {
    LanePosition source = ldmatrixSource(operand);
    int registers = operand == Operand::A ? 4 : 2;
    for (int lane = 0; lane < 32; ++lane)
      for (int reg = 0; reg < registers; ++reg)
        for (int e = 0; e < 2; ++e) {
          Position in = ldmatrixPosition(false, lane, e);
          Position start = source.at(8 * reg + in.row);
          Position tile{start.row, start.col + in.col};
          if (operand == Operand::B)
            tile = {tile.col, tile.row};
          EXPECT_EQ(tile, fragmentPosition(MmaKind::F16_M16N8K16, operand, lane,
                                           2 * reg + e))
              << "lane " << lane << " register " << reg;
        }
  }
  // B's x2 reads the addresses of lanes 0-15 only; the others must still
  // be inside the tile.
  for (int lane = 16; lane < 32; ++lane)
    EXPECT_EQ(ldmatrixSource(Operand::B).at(lane),
              ldmatrixSource(Operand::B).at(lane % 16))
        << "lane " << lane;
  // Rows start 16-byte aligned: a column of 0 or 8 halves.
  for (int lane = 0; lane < 32; ++lane)
    for (Operand operand : {Operand::A, Operand::B})
      EXPECT_EQ(ldmatrixSource(operand).at(lane).col % 8, 0);
}

TEST(MmaFragments, LaneArithmeticIsTheTables) {
  for (MmaKind kind : kKinds)
    for (Operand op : {Operand::A, Operand::B, Operand::C})
      for (int e = 0; e < elementsOf(kind, op); ++e)
        for (int lane = 0; lane < 32; ++lane)
          EXPECT_EQ(fragmentLanes(kind, op, e).at(lane),
                    fragmentPosition(kind, op, lane, e))
              << describeFragment(kind, op, lane) << ", element " << e;
}

} // namespace
