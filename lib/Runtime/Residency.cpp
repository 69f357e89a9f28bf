//===- Residency.cpp - intermediates that stay on a device ----------------===//

#include "Residency.h"

#include "ign/Runtime/ignrt.h"

#include <utility>

namespace ignrt_detail {

namespace {

/// One write of an arena range and the launches that read it.
struct Version {
  size_t launch, arg; // the producer
  uint64_t offset;
  size_t bytes;
  int driver;
  bool device; // still a candidate: every use so far by `driver`, exactly
  std::vector<std::pair<size_t, size_t>> readers;
};

bool overlaps(const Version &v, const ResidencyArg &a) {
  return a.offset < v.offset + v.bytes && v.offset < a.offset + a.bytes;
}

bool sameRange(const Version &v, const ResidencyArg &a) {
  return a.offset == v.offset && a.bytes == v.bytes;
}

/// Marks a finished version's producer and readers where it stays on the
/// device (it needs a reader: an unread one is copied back as before).
void finish(const Version &v, std::vector<std::vector<unsigned char>> &plan) {
  if (!v.device || v.readers.empty())
    return;
  plan[v.launch][v.arg] = IGNRT_RESIDENT;
  for (auto [l, i] : v.readers)
    plan[l][i] = IGNRT_RESIDENT;
  auto [last, arg] = v.readers.back();
  plan[last][arg] = IGNRT_RESIDENT_LAST;
}

} // namespace

std::vector<std::vector<unsigned char>>
planResidency(const std::vector<ResidencyLaunch> &launches) {
  std::vector<std::vector<unsigned char>> plan;
  for (const ResidencyLaunch &l : launches)
    plan.emplace_back(l.args.size(), IGNRT_RESIDENT_HOST);
  for (const ResidencyLaunch &l : launches)
    if (!l.kernel)
      return plan;
  std::vector<Version> live;
  for (size_t li = 0; li < launches.size(); ++li) {
    const ResidencyLaunch &l = launches[li];
    bool device = l.driver >= 0;
    for (size_t i = 0; i < l.inputs && i < l.args.size(); ++i) {
      const ResidencyArg &a = l.args[i];
      if (!a.arena)
        continue;
      for (Version &v : live)
        if (overlaps(v, a)) {
          v.device &= device && l.driver == v.driver && sameRange(v, a);
          v.readers.emplace_back(li, i);
        }
    }
    for (size_t i = l.inputs; i < l.args.size(); ++i) {
      const ResidencyArg &a = l.args[i];
      if (!a.arena)
        continue;
      // A write ends every version it touches.
      for (size_t k = 0; k < live.size();)
        if (overlaps(live[k], a)) {
          finish(live[k], plan);
          live.erase(live.begin() + long(k));
        } else {
          ++k;
        }
      live.push_back({li, i, a.offset, a.bytes, l.driver, device, {}});
    }
  }
  for (const Version &v : live)
    finish(v, plan);
  return plan;
}

} // namespace ignrt_detail
