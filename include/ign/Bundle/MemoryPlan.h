//===- MemoryPlan.h - packs intermediate buffers into one arena -*- C++ -*-===//
//
// The static memory plan of a bundle: every intermediate tensor gets an
// offset in one arena, and tensors whose lifetimes overlap never share
// bytes. Plain C++ so the compiler and tests can use it alike.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_BUNDLE_MEMORYPLAN_H
#define IGN_BUNDLE_MEMORYPLAN_H

#include <cstdint>
#include <vector>

namespace ign::bundle {

/// A buffer live from launch `first` to launch `last`, both inclusive.
struct BufferLifetime {
  uint64_t bytes = 0;
  int64_t first = 0, last = 0;
};

struct MemoryPlan {
  std::vector<uint64_t> offsets; // one per buffer, multiples of `alignment`
  uint64_t arenaBytes = 0;
};

/// Greedy by size: the largest buffers are placed first, each at the lowest
/// aligned offset that does not overlap a placed buffer whose lifetime
/// overlaps its own (TFLite's "greedy by size" strategy).
MemoryPlan planMemory(const std::vector<BufferLifetime> &buffers,
                      uint64_t alignment = 64);

} // namespace ign::bundle

#endif // IGN_BUNDLE_MEMORYPLAN_H
