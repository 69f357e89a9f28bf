//===- MemoryPlan.cpp - greedy-by-size arena packing ----------------------===//

#include "ign/Bundle/MemoryPlan.h"
#include "ign/Bundle/BundleFormat.h"

#include <algorithm>
#include <numeric>

namespace ign::bundle {

MemoryPlan planMemory(const std::vector<BufferLifetime> &buffers,
                      uint64_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].bytes > buffers[b].bytes;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const BufferLifetime &buf = buffers[i];
    // The placed buffers alive at the same time, by offset.
    std::vector<size_t> conflicts;
    for (size_t p : placed)
      if (buffers[p].first <= buf.last && buf.first <= buffers[p].last)
        conflicts.push_back(p);
    std::sort(conflicts.begin(), conflicts.end(), [&](size_t a, size_t b) {
      return plan.offsets[a] < plan.offsets[b];
    });
    uint64_t offset = 0;
    for (size_t p : conflicts) {
      if (offset + buf.bytes <= plan.offsets[p])
        break; // fits in the gap before p
      offset = std::max(offset,
                        alignUp(plan.offsets[p] + buffers[p].bytes, alignment));
    }
    plan.offsets[i] = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, offset + buf.bytes);
    placed.push_back(i);
  }
  plan.arenaBytes = alignUp(plan.arenaBytes, alignment);
  return plan;
}

} // namespace ign::bundle
