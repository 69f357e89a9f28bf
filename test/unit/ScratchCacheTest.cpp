//===- ScratchCacheTest.cpp - kernel temporaries kept between calls -------===//
//
// libignrt's allocator for kernel temporaries (lib/Runtime/ScratchCache.h):
// a block freed by a thread comes back for that thread's next request of
// up to its size and at least half of it, the block freed last first (no
// fresh pages per kernel call, and memory still in cache); the cache never
// holds more than kScratchCacheBytes.
//
//===----------------------------------------------------------------------===//

#include "ScratchCache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>

using namespace ignrt_detail;

namespace {

TEST(ScratchCache, FreedBlockServesTheNextRequestOfItsSize) {
  scratchRelease();
  void *a = scratchAlloc(300000);
  ASSERT_NE(a, nullptr);
  std::memset(a, 1, 300000); // usable for its whole size
  scratchFree(a);
  EXPECT_EQ(scratchCachedBytes(), 300000u);
  void *other = scratchAlloc(1000); // another size: a block of its own
  EXPECT_NE(other, a);
  EXPECT_EQ(scratchAlloc(300000), a);
  EXPECT_EQ(scratchCachedBytes(), 0u);
  scratchFree(other);
  scratchFree(a);
  scratchRelease();
  EXPECT_EQ(scratchCachedBytes(), 0u);
}

TEST(ScratchCache, SmallerRequestTakesTheLastFreedBlockUpToTwiceItsSize) {
  scratchRelease();
  void *older = scratchAlloc(1000);
  void *last = scratchAlloc(1100);
  scratchFree(older);
  scratchFree(last);
  EXPECT_EQ(scratchAlloc(600), last); // freed last, still in cache
  void *tiny = scratchAlloc(400);     // 1000 is more than twice 400
  EXPECT_NE(tiny, older);
  EXPECT_EQ(scratchCachedBytes(), 1000u);
  scratchFree(tiny);
  scratchFree(last);
  scratchRelease();
}

TEST(ScratchCache, BlocksAreAlignedAsMallocs) {
  void *a = scratchAlloc(24);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % alignof(std::max_align_t), 0u);
  scratchFree(a);
  scratchFree(nullptr); // nothing to do
  scratchRelease();
}

TEST(ScratchCache, KeepsAtMostItsLimitOldestFreedFirst) {
  scratchRelease();
  size_t quarter = kScratchCacheBytes / 4;
  void *blocks[5];
  for (void *&b : blocks)
    b = scratchAlloc(quarter);
  for (void *b : blocks)
    scratchFree(b);
  EXPECT_LE(scratchCachedBytes(), kScratchCacheBytes);
  EXPECT_EQ(scratchCachedBytes(), 4 * quarter);
  void *huge = scratchAlloc(kScratchCacheBytes + 1); // never kept
  scratchFree(huge);
  EXPECT_EQ(scratchCachedBytes(), 4 * quarter);
  scratchRelease();
}

TEST(ScratchCache, EachThreadKeepsItsOwnBlocks) {
  scratchRelease();
  void *mine = scratchAlloc(4096);
  scratchFree(mine);
  void *theirs = nullptr;
  std::thread([&] {
    theirs = scratchAlloc(4096);
    EXPECT_EQ(scratchCachedBytes(), 0u);
    scratchFree(theirs);
  }).join();
  EXPECT_NE(theirs, mine);
  EXPECT_EQ(scratchAlloc(4096), mine);
  scratchFree(mine);
  scratchRelease();
}

} // namespace
