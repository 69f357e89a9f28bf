//===- ScratchCache.cpp - kernel temporaries kept between calls -----------===//

#include "ScratchCache.h"

#include <cstdlib>
#include <cstring>
#include <deque>

namespace ignrt_detail {
namespace {

/// Each block starts with a header holding its size; the caller's pointer
/// follows it, aligned as malloc aligns.
constexpr size_t kHeader = alignof(std::max_align_t);

struct Cache {
  std::deque<void *> blocks; // oldest first
  size_t bytes = 0;
  ~Cache() { release(); }
  void release() {
    for (void *b : blocks)
      std::free(b);
    blocks.clear();
    bytes = 0;
  }
};

thread_local Cache cache;

size_t sizeOf(void *base) {
  size_t bytes;
  std::memcpy(&bytes, base, sizeof(bytes));
  return bytes;
}

} // namespace

void *scratchAlloc(size_t bytes) {
  // The most recently freed block that fits, as malloc's free lists would
  // hand it out: still in cache. (Exactly sized blocks kept each kernel's
  // temporaries apart: DenseNet-121's 220 kernels 7% slower than malloc.)
  for (auto it = cache.blocks.rbegin(); it != cache.blocks.rend(); ++it) {
    void *base = *it;
    size_t size = sizeOf(base);
    if (size < bytes || size / 2 > bytes)
      continue;
    cache.bytes -= size;
    cache.blocks.erase(std::next(it).base());
    return static_cast<char *>(base) + kHeader;
  }
  void *base = std::malloc(kHeader + bytes);
  if (!base)
    return nullptr;
  std::memcpy(base, &bytes, sizeof(bytes));
  return static_cast<char *>(base) + kHeader;
}

void scratchFree(void *block) {
  if (!block)
    return;
  void *base = static_cast<char *>(block) - kHeader;
  size_t bytes = sizeOf(base);
  if (bytes > kScratchCacheBytes) {
    std::free(base);
    return;
  }
  cache.blocks.push_back(base);
  cache.bytes += bytes;
  while (cache.bytes > kScratchCacheBytes) {
    void *oldest = cache.blocks.front();
    cache.blocks.pop_front();
    cache.bytes -= sizeOf(oldest);
    std::free(oldest);
  }
}

size_t scratchCachedBytes() { return cache.bytes; }

void scratchRelease() { cache.release(); }

} // namespace ignrt_detail
