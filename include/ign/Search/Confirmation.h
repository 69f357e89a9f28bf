//===- Confirmation.h - the search's winners timed against the default -*- C++
//-*-//
//
// Over hundreds of noisy measurements, a task's lowest median is often a
// lucky one (the winner's curse). The confirmation stage builds the default
// schedule and the best few candidates again and times them side by side,
// interleaved run by run in one process (Runner::compare); a candidate
// replaces the default only when its latency ratio's 95% interval lies
// below kConfirmRatio. The pick is recorded with origin "confirmed" (the
// others "confirm"), and TuningDatabase::chosen applies it.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_SEARCH_CONFIRMATION_H
#define IGN_SEARCH_CONFIRMATION_H

#include "ign/Search/Runner.h"
#include "ign/Search/Search.h"

#include <functional>
#include <string>
#include <vector>

namespace ign::search {

/// A candidate must be this much faster than the default (the upper end of
/// its ratio's interval) to replace it.
inline constexpr double kConfirmRatio = 0.98;
/// Candidates timed against the default per task.
inline constexpr size_t kConfirmCandidates = 3;

/// Confirms the tasks whose search found candidates faster than the
/// default, those with the most model time at stake first, until
/// `outOfTime` says stop. Tasks confirmed after their last search record
/// are skipped. Per task, what the stage did, for the log and the report
/// ("confirmed: x0.912 [...] of the default"; "" when nothing).
std::vector<std::string>
confirmTasks(const std::vector<SearchTask> &tasks, const Comparer &compare,
             TuningDatabase &db, const std::string &fingerprint,
             const std::function<bool()> &outOfTime,
             const std::function<void(const std::string &)> &log);

} // namespace ign::search

#endif // IGN_SEARCH_CONFIRMATION_H
