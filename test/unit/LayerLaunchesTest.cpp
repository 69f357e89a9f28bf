//===- LayerLaunchesTest.cpp - the GPU layer's own launches ---------------===//
//
// The shared GPU layer's own launches on a chip of no backend in
// particular: the staged GEMM (targets/gpu/StagedGemm.h) and the group
// reduction (targets/gpu/GroupReduction.h). Which kernels get their knobs,
// that the knobs switch between them and the mapping script, that a
// staged tile follows the chip's shared memory and threads, and that the
// launches (run by the GPU interpreter, which checks bounds and races
// between barriers) compute exactly what the ops do (inputs are small
// multiples of 1/4: exact products and sums in any order).
//
//===----------------------------------------------------------------------===//

#include "GpuCompile.h"
#include "GpuInterpreter.h"
#include "GroupReduction.h"
#include "RowLaunch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace mlir;
namespace ig = ign::gpu;

namespace {

std::string matmul(int64_t M, int64_t N, int64_t K) {
  auto t = [](int64_t a, int64_t b) {
    return "tensor<" + std::to_string(a) + "x" + std::to_string(b) + "xf32>";
  };
  return "func.func @k(%x: " + t(M, K) + ", %y: " + t(K, N) +
         ", %c: " + t(M, N) + ") -> " + t(M, N) +
         " {\n  %r = linalg.matmul ins(%x, %y : " + t(M, K) + ", " + t(K, N) +
         ") outs(%c : " + t(M, N) + ") -> " + t(M, N) +
         "\n  return %r : " + t(M, N) + "\n}\n";
}

/// A lavapipe-like chip: subgroups of 8, 32 KiB of shared memory, 1024
/// threads, two compute units; the layer's launches on by default or not.
ig::GpuChip chip(bool staged = true, bool grouped = true,
                 bool subgroups = false) {
  ig::GpuChip c;
  c.limits.subgroupSize = 8;
  c.numbers = {2, 3000, 96, 20};
  c.stagedGemms = staged;
  c.groupReductions = grouped;
  c.subgroupReductions = subgroups;
  return c;
}

struct Kernel {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> source;
  func::FuncOp func;

  explicit Kernel(const std::string &mlir) {
    ctx.loadDialect<func::FuncDialect, linalg::LinalgDialect,
                    tensor::TensorDialect, arith::ArithDialect,
                    math::MathDialect>();
    source = parseSourceString<ModuleOp>(mlir, &ctx);
    if (source)
      func = *source->getOps<func::FuncOp>().begin();
  }
};

/// The outlined launches with workgroup memory (the layer's own).
std::vector<mlir::gpu::GPUFuncOp> sharedMemoryFuncs(ig::MappedKernel &k) {
  std::vector<mlir::gpu::GPUFuncOp> out;
  k.module->walk([&](mlir::gpu::GPUFuncOp f) {
    if (f.getNumWorkgroupAttributions())
      out.push_back(f);
  });
  return out;
}

int sharedMemoryLaunches(ig::MappedKernel &k) {
  return int(sharedMemoryFuncs(k).size());
}

/// The staged launch's note (the dispatch with shared memory), or none.
ig::DispatchNote stagedNote(const ig::MappedKernel &k) {
  for (const ig::DispatchNote &n : k.notes)
    if (n.sharedBytes > 0)
      return n;
  return {};
}

float at(const std::vector<char> &b, int64_t i) {
  float f;
  std::memcpy(&f, b.data() + 4 * i, 4);
  return f;
}

/// Random multiples of 1/4 in [lo, lo + 4] for `k`'s (f32) buffers.
std::vector<std::vector<char>> randomBuffers(const ig::MappedKernel &k,
                                             float lo) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> value(0, 16);
  std::vector<std::vector<char>> buffers;
  for (Type t : k.argumentTypes) {
    std::vector<float> f(cast<MemRefType>(t).getNumElements());
    for (float &x : f)
      x = lo + float(value(rng)) / 4;
    buffers.emplace_back(f.size() * 4);
    std::memcpy(buffers.back().data(), f.data(), f.size() * 4);
  }
  return buffers;
}

/// `k` run by the GPU interpreter on `buffers` in subgroups of `subgroup`
/// threads; empty, with a failure recorded, where it does not run.
std::vector<std::vector<char>> run(ig::MappedKernel &k,
                                   std::vector<std::vector<char>> buffers,
                                   int64_t subgroup = 32) {
  std::string why;
  if (failed(ig::interpretMappedKernel(k.kernel, buffers, why, {}, subgroup))) {
    ADD_FAILURE() << why << " (subgroups of " << subgroup << ")";
    buffers.clear();
  }
  return buffers;
}

/// `k` run on random buffers (randomBuffers).
std::vector<std::vector<char>> interpret(ig::MappedKernel &k, float lo = -2,
                                         int64_t subgroup = 32) {
  return run(k, randomBuffers(k, lo), subgroup);
}

/// Runs the mapped M x N x K matmul on random inputs and checks C + A * B.
void expectMatmul(ig::MappedKernel &k, int64_t M, int64_t N, int64_t K) {
  std::vector<std::vector<char>> buffers = interpret(k);
  ASSERT_FALSE(buffers.empty());
  const auto &x = buffers[0], &y = buffers[1], &c = buffers[2],
             &out = buffers[3];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double want = at(c, i * N + j);
      for (int64_t kk = 0; kk < K; ++kk)
        want += double(at(x, i * K + kk)) * at(y, kk * N + j);
      ASSERT_EQ(at(out, i * N + j), float(want)) << i << ", " << j;
    }
}

TEST(StagedGemm, OnlyKernelsWithALargeContractionHaveTheKnob) {
  Kernel large(matmul(128, 96, 64)), small(matmul(40, 36, 20));
  ASSERT_TRUE(large.func && small.func);
  ign::search::Schedule on = ig::defaultKnobs(large.func, chip(true));
  ASSERT_TRUE(on.count(ig::kStagedGemm));
  EXPECT_EQ(on.at(ig::kStagedGemm), 1);
  EXPECT_EQ(ig::defaultKnobs(large.func, chip(false)).at(ig::kStagedGemm), 0);
  EXPECT_FALSE(ig::defaultKnobs(small.func, chip(true)).count(ig::kStagedGemm));
}

/// The knob decides: 1 stages (and computes exactly, with edges in m, n
/// and k), 0 keeps the register tiles, whatever the chip's default.
TEST(StagedGemm, TheKnobSwitchesBetweenStagingAndRegisterTiles) {
  Kernel k(matmul(100, 72, 40));
  ASSERT_TRUE(k.func);
  for (int64_t knob : {0, 1}) {
    ign::search::Schedule tuned = ig::defaultKnobs(k.func, chip(1 - knob));
    tuned[ig::kStagedGemm] = knob;
    std::string why;
    FailureOr<ig::MappedKernel> m =
        ig::mapKernelCopy(k.func, &tuned, chip(1 - knob), why);
    ASSERT_TRUE(succeeded(m)) << why;
    EXPECT_EQ(sharedMemoryLaunches(*m), knob);
    EXPECT_EQ(m->schedule.knobs().at(ig::kStagedGemm), knob);
    EXPECT_EQ(stagedNote(*m).sharedBytes > 0, knob == 1);
    expectMatmul(*m, 100, 72, 40);
  }
}

/// A tuned record made before the knob existed keeps what it was measured
/// with (GpuChip::stagedGemmsBefore), whatever the chip's default now.
TEST(StagedGemm, RecordsFromBeforeTheKnobKeepWhatTheyMeasured) {
  Kernel k(matmul(128, 96, 64));
  ASSERT_TRUE(k.func);
  ign::search::Schedule old = ig::defaultKnobs(k.func, chip());
  old.erase(ig::kStagedGemm);
  for (bool before : {false, true}) {
    ig::GpuChip c = chip(/*staged=*/true);
    c.stagedGemmsBefore = before;
    std::string why;
    FailureOr<ig::MappedKernel> m = ig::mapKernelCopy(k.func, &old, c, why);
    ASSERT_TRUE(succeeded(m)) << why;
    EXPECT_EQ(sharedMemoryLaunches(*m), before ? 1 : 0);
  }
}

/// The two tiles must fit the chip's shared memory: 128 x 128 needs
/// 16.5 KiB, 64 x 64 8.5 KiB; under 32 x 32's 4.5 KiB, or with fewer than
/// 256 threads a workgroup, nothing is staged.
TEST(StagedGemm, TheTileFitsTheChip) {
  Kernel k(matmul(256, 256, 64));
  ASSERT_TRUE(k.func);
  ig::GpuChip c = chip();
  c.numbers.computeUnits = 1;
  std::string why;
  auto noteOf = [&](const ig::GpuChip &c) {
    FailureOr<ig::MappedKernel> m = ig::mapKernelCopy(k.func, nullptr, c, why);
    EXPECT_TRUE(succeeded(m)) << why;
    return succeeded(m) ? stagedNote(*m) : ig::DispatchNote();
  };
  EXPECT_EQ(noteOf(c).sharedBytes, 2 * 16 * 132 * 4);
  c.limits.sharedMemoryBytes = 12 * 1024;
  EXPECT_EQ(noteOf(c).sharedBytes, 2 * 16 * 68 * 4);
  EXPECT_EQ(noteOf(c).registerOutputs, 16);
  c.limits.sharedMemoryBytes = 4 * 1024;
  EXPECT_FALSE(ig::defaultKnobs(k.func, c).count(ig::kStagedGemm));
  c = chip();
  c.limits.maxInvocations = 128;
  EXPECT_FALSE(ig::defaultKnobs(k.func, c).count(ig::kStagedGemm));
}

/// Rows of `cols` reduced to their maxima, the output filled with -inf
/// right before (the launch takes the fill over).
std::string rowMax(int64_t rows, int64_t cols) {
  std::string in = "tensor<" + std::to_string(rows) + "x" +
                   std::to_string(cols) + "xf32>",
              out = "tensor<" + std::to_string(rows) + "xf32>";
  return "func.func @k(%x: " + in + ") -> " + out +
         " {\n  %ninf = arith.constant 0xFF800000 : f32\n  %e = tensor.empty() "
         ": " +
         out + "\n  %f = linalg.fill ins(%ninf : f32) outs(%e : " + out +
         ") -> " + out + "\n  %r = linalg.reduce ins(%x : " + in +
         ") outs(%f : " + out +
         ") dimensions = [1]\n    (%in: f32, %acc: f32) {\n      %m = "
         "arith.maximumf %in, %acc : f32\n      linalg.yield %m : f32\n    "
         "}\n  return %r : " +
         out + "\n}\n";
}

int groupLaunches(const ig::MappedKernel &k) {
  return int(llvm::count_if(
      k.notes, [](const ig::DispatchNote &n) { return n.sharedBytes > 0; }));
}

/// One dispatch (the fill taken over), a workgroup of 64 threads a row of
/// 300 (256 bytes of partials), each row's maximum exact. Every value is
/// negative (in [-6, -2], the output's initial contents too): an identity
/// of 0, or the output read instead of the fill's -inf, would show.
TEST(GroupReduction, RowMaximaTakeAWorkgroupEach) {
  Kernel k(rowMax(6, 300));
  ASSERT_TRUE(k.func);
  std::string why;
  FailureOr<ig::MappedKernel> m =
      ig::mapKernelCopy(k.func, nullptr, chip(), why);
  ASSERT_TRUE(succeeded(m)) << why;
  EXPECT_EQ(m->schedule.knobs().at(ig::kGroupReduce), 1);
  ASSERT_EQ(m->notes.size(), 1u);
  EXPECT_EQ(m->notes[0].sharedBytes, 64 * 4);
  std::vector<std::vector<char>> b = interpret(*m, /*lo=*/-6);
  ASSERT_FALSE(b.empty());
  for (int64_t r = 0; r < 6; ++r) {
    float want = at(b[0], r * 300);
    for (int64_t c = 1; c < 300; ++c)
      want = std::max(want, at(b[0], r * 300 + c));
    EXPECT_EQ(at(b[1], r), want) << "row " << r;
  }
}

/// A sum of squares over two reduced loops (20 x 40 per output) added to
/// the output's values: partials of 128 threads' strides, a tree, exact
/// (every element of each output's 800 counted once).
const char *kSumOfSquares = R"(
#in = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0)>
func.func @k(%x: tensor<3x20x40xf32>, %c: tensor<3xf32>) -> tensor<3xf32> {
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction", "reduction"]} ins(%x : tensor<3x20x40xf32>) outs(%c : tensor<3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %sq, %o : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %r : tensor<3xf32>
})";

/// kSumOfSquares's outputs in `b` (x, c, out) are c + the sums.
void expectSumsOfSquares(const std::vector<std::vector<char>> &b) {
  ASSERT_EQ(b.size(), 3u);
  for (int64_t r = 0; r < 3; ++r) {
    double want = at(b[1], r);
    for (int64_t i = 0; i < 800; ++i)
      want += double(at(b[0], r * 800 + i)) * at(b[0], r * 800 + i);
    EXPECT_EQ(at(b[2], r), float(want)) << "output " << r;
  }
}

TEST(GroupReduction, ASumOverTwoLoopsAddsToTheOutput) {
  Kernel k(kSumOfSquares);
  ASSERT_TRUE(k.func);
  std::string why;
  FailureOr<ig::MappedKernel> m =
      ig::mapKernelCopy(k.func, nullptr, chip(), why);
  ASSERT_TRUE(succeeded(m)) << why;
  EXPECT_EQ(groupLaunches(*m), 1);
  expectSumsOfSquares(interpret(*m));
}

/// Ops of a kind in `k`'s launches with workgroup memory (group
/// reductions).
template <typename Op> int countOps(ig::MappedKernel &k) {
  int n = 0;
  for (mlir::gpu::GPUFuncOp f : sharedMemoryFuncs(k))
    f.walk([&](Op) { ++n; });
  return n;
}

/// On a chip whose subgroups reduce, each subgroup's partials are one
/// gpu.subgroup_reduce, the first subgroup reduces their results: one
/// barrier instead of the tree's eight (128 threads), and the same exact
/// sums whatever the device's subgroup size (the launch reads it): 1, 4,
/// 8, 32, or wider than the workgroup.
TEST(GroupReduction, SubgroupsReduceTheirPartials) {
  Kernel k(kSumOfSquares);
  ASSERT_TRUE(k.func);
  std::string why;
  FailureOr<ig::MappedKernel> tree =
      ig::mapKernelCopy(k.func, nullptr, chip(), why);
  FailureOr<ig::MappedKernel> m =
      ig::mapKernelCopy(k.func, nullptr, chip(true, true, true), why);
  ASSERT_TRUE(succeeded(tree) && succeeded(m)) << why;
  EXPECT_EQ(countOps<mlir::gpu::SubgroupReduceOp>(*tree), 0);
  EXPECT_EQ(countOps<mlir::gpu::BarrierOp>(*tree), 8);
  EXPECT_EQ(countOps<mlir::gpu::SubgroupReduceOp>(*m), 2);
  EXPECT_EQ(countOps<mlir::gpu::BarrierOp>(*m), 1);
  for (int64_t subgroup : {1, 4, 8, 32, 256}) {
    SCOPED_TRACE("subgroups of " + std::to_string(subgroup));
    expectSumsOfSquares(interpret(*m, -2, subgroup));
  }
}

/// maximumf propagates a NaN: through the tree, and through subgroups
/// (SPIR-V's group FMax leaves it undefined, so the launch reduces a NaN
/// flag beside it). Other rows keep their exact maxima.
TEST(GroupReduction, AMaximumOverANaNIsNaN) {
  Kernel k(rowMax(6, 300));
  ASSERT_TRUE(k.func);
  for (bool subgroups : {false, true}) {
    SCOPED_TRACE(subgroups ? "subgroups" : "tree");
    std::string why;
    FailureOr<ig::MappedKernel> m =
        ig::mapKernelCopy(k.func, nullptr, chip(true, true, subgroups), why);
    ASSERT_TRUE(succeeded(m)) << why;
    EXPECT_EQ(countOps<mlir::gpu::SubgroupReduceOp>(*m), subgroups ? 4 : 0);
    std::vector<std::vector<char>> in = randomBuffers(*m, -6);
    float nan = std::nanf("");
    std::memcpy(in[0].data() + 4 * (2 * 300 + 123), &nan, 4);
    std::vector<std::vector<char>> b = run(*m, in, 8);
    ASSERT_FALSE(b.empty());
    for (int64_t r = 0; r < 6; ++r) {
      float want = at(b[0], r * 300);
      for (int64_t c = 1; c < 300; ++c)
        want = r == 2 ? nan : std::max(want, at(b[0], r * 300 + c));
      if (r == 2)
        EXPECT_TRUE(std::isnan(at(b[1], r)));
      else
        EXPECT_EQ(at(b[1], r), want) << "row " << r;
    }
  }
}

/// 1 x K @ (N x K)^T: a GEMV whose matrix is contiguous along K.
std::string gemvTransposed(int64_t N, int64_t K) {
  std::string x = "tensor<1x" + std::to_string(K) + "xf32>",
              w = "tensor<" + std::to_string(N) + "x" + std::to_string(K) +
                  "xf32>",
              c = "tensor<1x" + std::to_string(N) + "xf32>";
  return "func.func @k(%x: " + x + ", %w: " + w + ", %c: " + c + ") -> " + c +
         " {\n  %r = linalg.matmul_transpose_b ins(%x, %w : " + x + ", " + w +
         ") outs(%c : " + c + ") -> " + c + "\n  return %r : " + c + "\n}\n";
}

/// The knob at 0 keeps a thread per output; rows shorter than
/// kMinGroupLength, GEMMs (their outputs share operands, also with 8 rows,
/// too few for analyzeGemm) and a GEMV whose matrix is contiguous along
/// the outputs (x @ W[K, N]: a thread per output reads it coalesced) never
/// take it; a GEMV contiguous along K does.
TEST(GroupReduction, WhatKeepsAThreadPerOutput) {
  Kernel rows(rowMax(6, 300)), shortRows(rowMax(6, 100)),
      gemm(matmul(64, 64, 256)), eightRows(matmul(8, 64, 256)),
      gemv(matmul(1, 64, 256)), gemvT(gemvTransposed(64, 256));
  ASSERT_TRUE(rows.func && shortRows.func && gemm.func && eightRows.func &&
              gemv.func && gemvT.func);
  EXPECT_FALSE(
      ig::defaultKnobs(eightRows.func, chip(false)).count(ig::kGroupReduce));
  EXPECT_FALSE(
      ig::defaultKnobs(gemv.func, chip(false)).count(ig::kGroupReduce));
  EXPECT_EQ(ig::defaultKnobs(gemvT.func, chip(false)).at(ig::kGroupReduce), 1);
  ign::search::Schedule off = ig::defaultKnobs(rows.func, chip());
  off[ig::kGroupReduce] = 0;
  std::string why;
  FailureOr<ig::MappedKernel> m =
      ig::mapKernelCopy(rows.func, &off, chip(), why);
  ASSERT_TRUE(succeeded(m)) << why;
  EXPECT_EQ(groupLaunches(*m), 0);
  EXPECT_EQ(ig::defaultKnobs(rows.func, chip(true, false)).at(ig::kGroupReduce),
            0);
  EXPECT_FALSE(
      ig::defaultKnobs(shortRows.func, chip()).count(ig::kGroupReduce));
  EXPECT_FALSE(
      ig::defaultKnobs(gemm.func, chip(false)).count(ig::kGroupReduce));
}

/// A GEMV (1 x 256 @ (64 x 256)^T): a workgroup per output, exact.
TEST(GroupReduction, AGemvTakesAWorkgroupPerOutput) {
  Kernel gemv(gemvTransposed(64, 256));
  ASSERT_TRUE(gemv.func);
  std::string why;
  FailureOr<ig::MappedKernel> m =
      ig::mapKernelCopy(gemv.func, nullptr, chip(false), why);
  ASSERT_TRUE(succeeded(m)) << why;
  EXPECT_EQ(groupLaunches(*m), 1);
  std::vector<std::vector<char>> b = interpret(*m);
  ASSERT_EQ(b.size(), 4u);
  for (int64_t n = 0; n < 64; ++n) {
    double want = at(b[2], n);
    for (int64_t k = 0; k < 256; ++k)
      want += double(at(b[0], k)) * at(b[1], n * 256 + k);
    ASSERT_EQ(at(b[3], n), float(want)) << n;
  }
}

/// A chip whose driver stops loops (lavapipe: after 65535 iterations): a
/// thread per row of 300 would loop past a limit of 100, so the kernel
/// fails to map (its caller keeps it on the host, saying why); a workgroup
/// per row loops 5 times a thread and maps.
TEST(GroupReduction, ALoopPastTheDriversLimitStaysOff) {
  Kernel k(rowMax(6, 300));
  ASSERT_TRUE(k.func);
  ig::GpuChip c = chip(true, false);
  c.limits.maxLoopIterations = 100;
  std::string why;
  EXPECT_TRUE(failed(ig::mapKernelCopy(k.func, nullptr, c, why)));
  EXPECT_NE(why.find("a loop of 300 iterations in one thread, and the driver "
                     "stops loops after 100"),
            std::string::npos)
      << why;
  c.groupReductions = true;
  why.clear();
  FailureOr<ig::MappedKernel> m = ig::mapKernelCopy(k.func, nullptr, c, why);
  ASSERT_TRUE(succeeded(m)) << why;
  EXPECT_EQ(groupLaunches(*m), 1);
}

/// A softmax over rows of `cols` as the ONNX lowering writes it: the rows'
/// maxima, exp(x - max), their sums, the quotients (`transposed`: the
/// quotients read the exponentials transposed, square rows only).
std::string softmax(int64_t rows, int64_t cols, bool transposed = false) {
  std::string r = std::to_string(rows), c = std::to_string(cols);
  std::string in = "tensor<" + r + "x" + c + "xf32>",
              v = "tensor<" + r + "xf32>";
  std::string row = "affine_map<(d0, d1) -> (d0, d1)>",
              col = "affine_map<(d0, d1) -> (d0)>",
              t = transposed ? "affine_map<(d0, d1) -> (d1, d0)>" : row;
  auto reduce = [&](const std::string &x, const std::string &init,
                    const std::string &op) {
    return "linalg.generic {indexing_maps = [" + row + ", " + col +
           "], iterator_types = [\"parallel\", \"reduction\"]} ins(" + x +
           " : " + in + ") outs(" + init + " : " + v +
           ") {\n  ^bb0(%a: f32, %o: f32):\n    %s = " + op +
           " %a, %o : f32\n    linalg.yield %s : f32\n  } -> " + v;
  };
  return "func.func @k(%x: " + in + ") -> " + in +
         " {\n  %ninf = arith.constant 0xFF800000 : f32\n"
         "  %zero = arith.constant 0.0 : f32\n"
         "  %ev = tensor.empty() : " +
         v + "\n  %er = tensor.empty() : " + in +
         "\n  %f0 = linalg.fill ins(%ninf : f32) outs(%ev : " + v + ") -> " +
         v + "\n  %m = " + reduce("%x", "%f0", "arith.maximumf") +
         "\n  %ex = linalg.generic {indexing_maps = [" + row + ", " + col +
         ", " + row +
         "], iterator_types = [\"parallel\", \"parallel\"]} ins(%x, %m : " +
         in + ", " + v + ") outs(%er : " + in +
         ") {\n  ^bb0(%a: f32, %b: f32, %o: f32):\n    %d = arith.subf %a, "
         "%b : f32\n    %e = math.exp %d : f32\n    linalg.yield %e : f32\n  "
         "} -> " +
         in + "\n  %f1 = linalg.fill ins(%zero : f32) outs(%ev : " + v +
         ") -> " + v + "\n  %s = " + reduce("%ex", "%f1", "arith.addf") +
         "\n  %er2 = tensor.empty() : " + in +
         "\n  %y = linalg.generic {indexing_maps = [" + t + ", " + col + ", " +
         row +
         "], iterator_types = [\"parallel\", \"parallel\"]} ins(%ex, "
         "%s : " +
         in + ", " + v + ") outs(%er2 : " + in +
         ") {\n  ^bb0(%a: f32, %b: f32, %o: f32):\n    %q = arith.divf %a, "
         "%b : f32\n    linalg.yield %q : f32\n  } -> " +
         in + "\n  return %y : " + in + "\n}\n";
}

/// The softmax rows in `b` (x, y) against double precision.
void expectSoftmax(const std::vector<std::vector<char>> &b, int64_t rows,
                   int64_t cols) {
  ASSERT_EQ(b.size(), 2u);
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      m = std::max(m, double(at(b[0], r * cols + c)));
    for (int64_t c = 0; c < cols; ++c)
      sum += std::exp(double(at(b[0], r * cols + c)) - m);
    for (int64_t c = 0; c < cols; ++c) {
      double want = std::exp(double(at(b[0], r * cols + c)) - m) / sum;
      ASSERT_NEAR(at(b[1], r * cols + c), want, 1e-6 * want + 1e-9)
          << r << ", " << c;
    }
  }
}

/// On a chip whose subgroups reduce, a softmax (four ops, two of them
/// reductions) is one launch, a workgroup per row, whatever the device's
/// subgroup size; the knob at 0 gives four launches (the reductions as
/// group reductions).
TEST(RowLaunch, ASoftmaxIsOneLaunch) {
  Kernel k(softmax(5, 300));
  ASSERT_TRUE(k.func);
  ig::GpuChip c = chip(true, true, true);
  EXPECT_EQ(ig::defaultKnobs(k.func, c).at(ig::kRowLaunch), 1);
  std::string why;
  FailureOr<ig::MappedKernel> m = ig::mapKernelCopy(k.func, nullptr, c, why);
  ASSERT_TRUE(succeeded(m)) << why;
  ASSERT_EQ(m->notes.size(), 1u);
  EXPECT_EQ(m->notes[0].sharedBytes, (64 + 1) * 4);
  for (int64_t subgroup : {4, 8, 32}) {
    SCOPED_TRACE("subgroups of " + std::to_string(subgroup));
    expectSoftmax(interpret(*m, -3, subgroup), 5, 300);
  }
  ign::search::Schedule off = ig::defaultKnobs(k.func, c);
  off[ig::kRowLaunch] = 0;
  FailureOr<ig::MappedKernel> apart = ig::mapKernelCopy(k.func, &off, c, why);
  ASSERT_TRUE(succeeded(apart)) << why;
  EXPECT_EQ(apart->notes.size(), 4u);
  EXPECT_EQ(groupLaunches(*apart), 2);
  expectSoftmax(interpret(*apart, -3, 8), 5, 300);
}

/// Row-sized buffers the launches with workgroup memory bind.
int rowBuffersBound(ig::MappedKernel &k, int64_t rows, int64_t cols) {
  int n = 0;
  for (mlir::gpu::GPUFuncOp f : sharedMemoryFuncs(k))
    for (Type t : f.getArgumentTypes())
      if (auto m = dyn_cast<MemRefType>(t))
        n += m.getShape() == ArrayRef<int64_t>{rows, cols};
  return n;
}

/// A thread's five elements of a row of 300 stay in registers: the launch
/// binds the input and the output rows only, the exponentials never go to
/// memory. On a chip of 32 threads a workgroup (ten elements a thread) the
/// rows go through memory between the ops, and are right too.
TEST(RowLaunch, RowElementsStayInRegisters) {
  Kernel k(softmax(5, 300));
  ASSERT_TRUE(k.func);
  std::string why;
  ig::GpuChip c = chip(true, true, true);
  FailureOr<ig::MappedKernel> m = ig::mapKernelCopy(k.func, nullptr, c, why);
  ASSERT_TRUE(succeeded(m)) << why;
  EXPECT_EQ(rowBuffersBound(*m, 5, 300), 2);
  c.limits.maxInvocations = 32;
  FailureOr<ig::MappedKernel> small =
      ig::mapKernelCopy(k.func, nullptr, c, why);
  ASSERT_TRUE(succeeded(small)) << why;
  ASSERT_EQ(small->notes.size(), 1u);
  EXPECT_EQ(small->notes[0].sharedBytes, (32 + 1) * 4);
  EXPECT_EQ(rowBuffersBound(*small, 5, 300), 3);
  expectSoftmax(interpret(*small, -3, 8), 5, 300);
}

/// No knob where the chip's subgroups do not reduce; an op reading the
/// chain's row elements at another element (a transposed read: another
/// thread's) ends the chain before it.
TEST(RowLaunch, WhatKeepsOpsApart) {
  Kernel k(softmax(5, 300)), t(softmax(64, 64, /*transposed=*/true));
  ASSERT_TRUE(k.func && t.func);
  EXPECT_FALSE(ig::defaultKnobs(k.func, chip()).count(ig::kRowLaunch));
  std::string why;
  FailureOr<ig::MappedKernel> m =
      ig::mapKernelCopy(t.func, nullptr, chip(true, true, true), why);
  ASSERT_TRUE(succeeded(m)) << why;
  // The first three ops in one launch, the transposed quotients apart.
  EXPECT_EQ(m->notes.size(), 2u);
  EXPECT_EQ(groupLaunches(*m), 1);
  std::vector<std::vector<char>> b = interpret(*m, -3, 8);
  ASSERT_EQ(b.size(), 2u);
  // y[r][c] = exp(x[c][r] - max[c]) / sum[r], sum[r] over exp(x[r][.] -
  // max[r]).
  auto x = [&](int64_t i, int64_t j) { return double(at(b[0], i * 64 + j)); };
  std::vector<double> mx(64, -INFINITY), sum(64, 0);
  for (int64_t i = 0; i < 64; ++i) {
    for (int64_t j = 0; j < 64; ++j)
      mx[i] = std::max(mx[i], x(i, j));
    for (int64_t j = 0; j < 64; ++j)
      sum[i] += std::exp(x(i, j) - mx[i]);
  }
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t c = 0; c < 64; ++c) {
      double want = std::exp(x(c, r) - mx[c]) / sum[r];
      ASSERT_NEAR(at(b[1], r * 64 + c), want, 1e-6 * want + 1e-9)
          << r << ", " << c;
    }
}

} // namespace
