//===- StagedGemmTest.cpp - the GPU layer's staged GEMM launch ------------===//
//
// The shared GPU layer's staged GEMM launch (targets/gpu/StagedGemm.h) on a
// chip of no backend in particular: which kernels get the kStagedGemm knob,
// that the knob switches between the staged launch and the mapping
// script's register tiles, that the tile follows the chip's shared memory
// and threads, and that the staged launch (run by the GPU interpreter,
// which checks bounds and races between barriers) computes C + A * B
// exactly (inputs are small multiples of 1/4: exact products and sums).
//
//===----------------------------------------------------------------------===//

#include "StagedGemm.h"
#include "GpuCompile.h"
#include "GpuInterpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

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
/// threads, two compute units.
ig::GpuChip chip(bool staged = true) {
  ig::GpuChip c;
  c.limits.subgroupSize = 8;
  c.numbers = {2, 3000, 96, 20};
  c.stagedGemms = staged;
  return c;
}

struct Kernel {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> source;
  func::FuncOp func;

  explicit Kernel(const std::string &mlir) {
    ctx.loadDialect<func::FuncDialect, linalg::LinalgDialect,
                    tensor::TensorDialect, arith::ArithDialect>();
    source = parseSourceString<ModuleOp>(mlir, &ctx);
    if (source)
      func = *source->getOps<func::FuncOp>().begin();
  }
};

int sharedMemoryLaunches(ig::MappedKernel &k) {
  int n = 0;
  k.module->walk([&](mlir::gpu::GPUFuncOp f) {
    n += f.getNumWorkgroupAttributions() > 0;
  });
  return n;
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

/// Runs the mapped M x N x K matmul on random inputs and checks C + A * B.
void expectMatmul(ig::MappedKernel &k, int64_t M, int64_t N, int64_t K) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> value(-8, 8);
  std::vector<std::vector<char>> buffers;
  for (Type t : k.argumentTypes) {
    std::vector<float> f(cast<MemRefType>(t).getNumElements());
    for (float &x : f)
      x = float(value(rng)) / 4;
    buffers.emplace_back(f.size() * 4);
    std::memcpy(buffers.back().data(), f.data(), f.size() * 4);
  }
  std::string why;
  ASSERT_TRUE(succeeded(ig::interpretMappedKernel(k.kernel, buffers, why)))
      << why;
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

} // namespace
