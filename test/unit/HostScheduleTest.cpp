//===- HostScheduleTest.cpp - the host's default schedule heuristics ------===//

#include "HostSchedule.h"

#include <gtest/gtest.h>

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

// An L1 above 32 KiB counts as 32 KiB (LLaMA's 32000-column head ran 1.11x
// slower in the 48 KiB L1's chunks of 256 than in chunks of 128 on an
// Emerald Rapids), unless the caller asks for the whole L1.
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
