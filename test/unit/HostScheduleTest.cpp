//===- HostScheduleTest.cpp - the host's default schedule heuristics ------===//

#include "HostSchedule.h"
#include "PrepackedPanels.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstring>

namespace {

using ign::host::defaultReductionChunk;
using ign::host::HostMachine;

HostMachine avx512(int64_t l1Bytes) {
  HostMachine m;
  m.vectorBits = 512;
  m.vectorRegisters = 32;
  m.l1Bytes = l1Bytes;
  return m;
}

// A panel that fits the L1 is streamed whole (no chunk).
TEST(DefaultReductionChunk, WholePanelWhenItFitsL1) {
  HostMachine m = avx512(32 << 10);
  // 128 steps x 32 columns x 4 bytes = 16 KiB.
  EXPECT_EQ(defaultReductionChunk(128, m.tileColumns(), m), 0);
}

// The longest divisor of the reduction whose panel fills at most two thirds
// of a 32 KiB L1: 170 steps of 128 bytes -> 128 for 512 and 1024 steps.
TEST(DefaultReductionChunk, ChunkFillsTwoThirdsOfL1) {
  HostMachine m = avx512(32 << 10);
  EXPECT_EQ(defaultReductionChunk(512, m.tileColumns(), m), 128);
  EXPECT_EQ(defaultReductionChunk(1024, m.tileColumns(), m), 128);
  // AVX2 tiles of 16 columns: 341 steps of 64 bytes -> 256.
  HostMachine avx2;
  avx2.vectorBits = 256;
  EXPECT_EQ(defaultReductionChunk(1024, avx2.tileColumns(), avx2), 256);
}

// An L1 above 32 KiB counts as 32 KiB (LLaMA's 32000-column head ran
// 36.3-37.9 ms in the 48 KiB L1's chunks of 256 and 32.7-33.4 in chunks of
// 128 on an Emerald Rapids), unless the caller asks for the whole L1.
TEST(DefaultReductionChunk, LargerL1CountsAs32KiB) {
  HostMachine m = avx512(48 << 10);
  EXPECT_EQ(defaultReductionChunk(512, m.tileColumns(), m), 128);
  EXPECT_EQ(defaultReductionChunk(512, m.tileColumns(), m, m.l1Bytes), 256);
  // A 40 KiB panel is chunked although it fits 48 KiB.
  EXPECT_EQ(defaultReductionChunk(320, m.tileColumns(), m), 160);
  EXPECT_EQ(defaultReductionChunk(320, m.tileColumns(), m, m.l1Bytes), 0);
}

// bf16 panels (an even reduction on a machine computing in bf16) take half
// the bytes per element.
TEST(DefaultReductionChunk, Bf16PanelsTakeHalfTheBytes) {
  HostMachine m = avx512(32 << 10);
  m.bf16 = true;
  EXPECT_EQ(defaultReductionChunk(256, m.tileColumns(), m), 0);
  EXPECT_EQ(defaultReductionChunk(1024, m.tileColumns(), m), 256);
  // An odd reduction computes in f32.
  EXPECT_EQ(defaultReductionChunk(511, m.tileColumns(), m), 73);
}

} // namespace

namespace {

using ign::host::PanelPlan;

// A direct convolution's constant weight in bfloat16 pairs of its channel
// dim (PanelPlan::pairDim): [2, 3, 2] paired along dim 1 is [2, 2, 2, 2],
// element [a, i, b, p] the weight's [a, 2 i + p, b], 0 past the 3 channels.
TEST(ChannelPairs, PacksPairsOfTheDimAndZeroPastIt) {
  PanelPlan plan;
  plan.pairDim = 1;
  plan.group = 2;
  plan.weightShape = {2, 3, 2};
  EXPECT_EQ(plan.shape(), (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(plan.dtype(), "bf16");
  // Values exact in bfloat16: w[a, c, b] = 100 a + 10 c + b + 1.
  std::vector<float> w;
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 3; ++c)
      for (int b = 0; b < 2; ++b)
        w.push_back(float(100 * a + 10 * c + b + 1));
  std::string bytes =
      ign::host::packPanelBytes(plan, reinterpret_cast<const char *>(w.data()));
  ASSERT_EQ(bytes.size(), size_t(16 * 2));
  auto at = [&](int a, int i, int b, int p) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * (((a * 2 + i) * 2 + b) * 2 + p), 2);
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
  };
  EXPECT_EQ(at(0, 0, 0, 0), 1.0f);   // w[0, 0, 0]
  EXPECT_EQ(at(0, 0, 0, 1), 11.0f);  // w[0, 1, 0]
  EXPECT_EQ(at(1, 1, 1, 0), 122.0f); // w[1, 2, 1]
  EXPECT_EQ(at(1, 1, 1, 1), 0.0f);   // past the channels
  EXPECT_EQ(at(0, 1, 0, 1), 0.0f);
}

// The plan travels as the kernel argument's attribute and back.
TEST(ChannelPairs, AttributeRoundTrip) {
  mlir::MLIRContext ctx;
  PanelPlan plan;
  plan.source = 3;
  plan.pairDim = 1;
  plan.group = 2;
  plan.weightShape = {4, 6, 3, 3, 32};
  std::optional<PanelPlan> back = PanelPlan::fromAttr(plan.toAttr(&ctx));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->source, 3);
  EXPECT_EQ(back->pairDim, 1);
  EXPECT_EQ(back->weightShape, plan.weightShape);
  EXPECT_EQ(back->shape(), (std::vector<int64_t>{4, 3, 3, 3, 32, 2}));
  // A pair dim outside the weight is no plan.
  plan.pairDim = 5;
  EXPECT_FALSE(PanelPlan::fromAttr(plan.toAttr(&ctx)));
}

// An AMX convolution's constant weight in bfloat16 with its dims permuted
// (PanelPlan::permutation): [F / T, C, kh, kw, T] = [2, 3, 1, 2, 2] read as
// [kh, kw, F / T, T, C] (2, 3, 0, 4, 1).
TEST(PermutedWeights, PacksTheWeightInTheNewOrder) {
  PanelPlan plan;
  plan.group = 2;
  plan.weightShape = {2, 3, 1, 2, 2};
  plan.permutation = {2, 3, 0, 4, 1};
  EXPECT_EQ(plan.shape(), (std::vector<int64_t>{1, 2, 2, 2, 3}));
  EXPECT_EQ(plan.dtype(), "bf16");
  // Values exact in bfloat16: w[f, c, 0, x, t] = 100 f + 10 c + 2 x + t.
  std::vector<float> w;
  for (int f = 0; f < 2; ++f)
    for (int c = 0; c < 3; ++c)
      for (int x = 0; x < 2; ++x)
        for (int t = 0; t < 2; ++t)
          w.push_back(float(100 * f + 10 * c + 2 * x + t));
  std::string bytes =
      ign::host::packPanelBytes(plan, reinterpret_cast<const char *>(w.data()));
  ASSERT_EQ(bytes.size(), size_t(24 * 2));
  // Element [0, x, f, t, c] of the permuted [1, 2, 2, 2, 3].
  auto at = [&](int x, int f, int t, int c) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * (((x * 2 + f) * 2 + t) * 3 + c), 2);
    uint32_t u = uint32_t(h) << 16;
    float v;
    std::memcpy(&v, &u, sizeof(v));
    return v;
  };
  EXPECT_EQ(at(0, 0, 0, 0), 0.0f);
  EXPECT_EQ(at(0, 0, 0, 2), 20.0f);
  EXPECT_EQ(at(1, 0, 1, 1), 13.0f);
  EXPECT_EQ(at(1, 1, 0, 2), 122.0f);
  EXPECT_EQ(at(0, 1, 1, 0), 101.0f);
}

// Rows of the permuted weight padded with zeros (PanelPlan::padLast: AMX
// convolutions' weights read in chunks of channels): [2, 3] read as [3, 2]
// with rows of 2 + 3, the last three elements of each 0.
TEST(PermutedWeights, PadsEachRowWithZeros) {
  PanelPlan plan;
  plan.group = 2;
  plan.weightShape = {2, 3};
  plan.permutation = {1, 0};
  plan.padLast = 3;
  EXPECT_EQ(plan.shape(), (std::vector<int64_t>{3, 5}));
  std::vector<float> w{1, 2, 3, 4, 5, 6};
  std::string bytes =
      ign::host::packPanelBytes(plan, reinterpret_cast<const char *>(w.data()));
  ASSERT_EQ(bytes.size(), size_t(15 * 2));
  std::vector<float> got;
  for (int e = 0; e < 15; ++e) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * e, 2);
    uint32_t u = uint32_t(h) << 16;
    float v;
    std::memcpy(&v, &u, sizeof(v));
    got.push_back(v);
  }
  EXPECT_EQ(got,
            (std::vector<float>{1, 4, 0, 0, 0, 2, 5, 0, 0, 0, 3, 6, 0, 0, 0}));
  mlir::MLIRContext ctx;
  std::optional<PanelPlan> back = PanelPlan::fromAttr(plan.toAttr(&ctx));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->padLast, 3);
  EXPECT_EQ(back->shape(), plan.shape());
}

// The permutation travels as the kernel argument's attribute and back; one
// that is no permutation is no plan.
TEST(PermutedWeights, AttributeRoundTrip) {
  mlir::MLIRContext ctx;
  PanelPlan plan;
  plan.source = 2;
  plan.group = 2;
  plan.weightShape = {4, 64, 3, 3, 32};
  plan.permutation = {2, 3, 0, 4, 1};
  std::optional<PanelPlan> back = PanelPlan::fromAttr(plan.toAttr(&ctx));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->source, 2);
  EXPECT_EQ(back->permutation, plan.permutation);
  EXPECT_EQ(back->shape(), (std::vector<int64_t>{3, 3, 4, 32, 64}));
  plan.permutation = {2, 3, 0, 4, 4};
  EXPECT_FALSE(PanelPlan::fromAttr(plan.toAttr(&ctx)));
}

} // namespace
