//===- MemoryPlanTest.cpp - the arena packing of intermediates ------------===//

#include "ign/Bundle/MemoryPlan.h"

#include <gtest/gtest.h>

#include <random>

namespace {

using ign::bundle::BufferLifetime;
using ign::bundle::planMemory;

bool overlapInTime(const BufferLifetime &a, const BufferLifetime &b) {
  return a.first <= b.last && b.first <= a.last;
}

/// No two buffers alive at the same time share a byte; all are aligned and
/// inside the arena.
void expectValid(const std::vector<BufferLifetime> &buffers,
                 const ign::bundle::MemoryPlan &plan) {
  ASSERT_EQ(plan.offsets.size(), buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 64, 0u);
    EXPECT_LE(plan.offsets[i] + buffers[i].bytes, plan.arenaBytes);
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      if (!overlapInTime(buffers[i], buffers[j]) || !buffers[i].bytes ||
          !buffers[j].bytes)
        continue;
      bool disjoint = plan.offsets[i] + buffers[i].bytes <= plan.offsets[j] ||
                      plan.offsets[j] + buffers[j].bytes <= plan.offsets[i];
      EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j;
    }
  }
}

TEST(MemoryPlan, AChainReusesMemory) {
  // a -> b -> c -> d: each buffer dies at the launch after its birth, so
  // the arena needs two buffers' worth, not four.
  std::vector<BufferLifetime> chain = {
      {1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 3}};
  auto plan = planMemory(chain);
  expectValid(chain, plan);
  EXPECT_EQ(plan.arenaBytes, 2 * 1024u);
}

TEST(MemoryPlan, BuffersAliveTogetherNeverShareBytes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferLifetime> buffers;
    int n = 1 + int(rng() % 40);
    for (int i = 0; i < n; ++i) {
      int64_t first = rng() % 30;
      buffers.push_back({rng() % 5000, first, first + int64_t(rng() % 6)});
    }
    auto plan = planMemory(buffers);
    expectValid(buffers, plan);
  }
}

TEST(MemoryPlan, EmptyPlanHasNoArena) {
  EXPECT_EQ(planMemory({}).arenaBytes, 0u);
}

} // namespace
