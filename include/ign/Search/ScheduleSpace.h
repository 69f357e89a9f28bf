//===- ScheduleSpace.h - schedules as data, and the space of them -*- C++
//-*-===//
//
// A schedule is a small value: one integer per named knob of a target's
// schedule space ("split.0" = 4, "c0.rows" = 6, ...). Targets describe the
// space of a kernel (its knobs, their legal values, the heuristic's choice
// and a legality check); lib/Search samples, mutates and measures points of
// it without knowing what the knobs mean.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_SEARCH_SCHEDULESPACE_H
#define IGN_SEARCH_SCHEDULESPACE_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ign::search {

/// Knob name -> value. Ordered, so that its JSON text is canonical.
using Schedule = std::map<std::string, int64_t>;

struct Knob {
  std::string name;
  std::vector<int64_t> values; // legal values, ascending
};

struct ScheduleSpace {
  std::vector<Knob> knobs;
  /// The target's heuristic choice (what compiling without tuning uses).
  Schedule defaults;
  /// False for points that would compile to something known to be bad or
  /// invalid (pruned before compiling). Null: every point is legal.
  std::function<bool(const Schedule &)> legal;

  bool isLegal(const Schedule &s) const { return !legal || legal(s); }
};

/// {"c0.rows":4,...} (keys sorted, no spaces): the canonical text.
std::string scheduleToJson(const Schedule &schedule);
/// Parses scheduleToJson's output (any JSON object of integers); nullopt
/// and `error` set otherwise.
std::optional<Schedule> scheduleFromJson(const std::string &text,
                                         std::string *error = nullptr);

} // namespace ign::search

#endif // IGN_SEARCH_SCHEDULESPACE_H
