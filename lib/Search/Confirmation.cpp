//===- Confirmation.cpp - the search's winners timed against the default --===//

#include "ign/Search/Confirmation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace ign::search {

namespace {

/// What a task's records say about confirming it.
struct Contest {
  size_t task = 0;
  std::optional<TuningRecord> defaultRecord;
  std::vector<TuningRecord> entrants; // the fastest candidates, fastest first
  double stake = 0; // model time the best candidate claims to save (ns)
};

/// The default's record and the candidates worth confirming: valid, not the
/// default's schedule, and at least 1 - kConfirmRatio faster by the search's
/// measurements. Nothing when the task was confirmed after its last search
/// record.
Contest contestOf(size_t i, const SearchTask &task,
                  const std::vector<TuningRecord> &records) {
  Contest c{i};
  if (records.empty() || records.back().isConfirmation())
    return c;
  std::vector<TuningRecord> valid;
  for (const TuningRecord &r : records) {
    if (r.status != Status::Ok || r.isConfirmation())
      continue;
    if (r.origin == "default" && !c.defaultRecord)
      c.defaultRecord = r;
    valid.push_back(r);
  }
  if (!c.defaultRecord)
    return c;
  std::stable_sort(valid.begin(), valid.end(),
                   [](auto &a, auto &b) { return a.medianNs < b.medianNs; });
  std::set<std::string> seen = {c.defaultRecord->schedule};
  double limit = c.defaultRecord->medianNs * kConfirmRatio;
  for (const TuningRecord &r : valid)
    if (r.medianNs < limit && c.entrants.size() < kConfirmCandidates &&
        seen.insert(r.schedule).second)
      c.entrants.push_back(r);
  if (!c.entrants.empty())
    c.stake = task.launches *
              (c.defaultRecord->medianNs - c.entrants.front().medianNs);
  return c;
}

/// The entrant that beat the default side by side (its interval below
/// kConfirmRatio), the fastest such; 0 (the default) when none did.
size_t pickWinner(const std::vector<SideBySide> &sides) {
  size_t pick = 0;
  for (size_t k = 1; k < sides.size(); ++k) {
    const SideBySide &s = sides[k];
    if (s.record.status == Status::Ok && std::isfinite(s.high) &&
        s.high < kConfirmRatio && (pick == 0 || s.ratio < sides[pick].ratio))
      pick = k;
  }
  return pick;
}

/// The entrant whose ratio to report: the winner, else the fastest loser.
size_t reported(const std::vector<SideBySide> &sides, size_t pick) {
  if (pick)
    return pick;
  size_t best = 0;
  for (size_t k = 1; k < sides.size(); ++k)
    if (std::isfinite(sides[k].ratio) &&
        (best == 0 || sides[k].ratio < sides[best].ratio))
      best = k;
  return best;
}

/// "x0.93 [0.91, 0.95] of the default side by side".
std::string ratioText(const SideBySide &s) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "x%.3f [%.3f, %.3f] of the default", s.ratio,
                s.low, s.high);
  return buf;
}

/// Times a contest side by side and records every entrant (the pick with
/// origin "confirmed") in one transaction.
std::string runContest(const Contest &c, const SearchTask &task,
                       const Comparer &compare, TuningDatabase &db,
                       const std::string &fingerprint,
                       const std::function<void(const std::string &)> &log) {
  std::vector<Schedule> schedules;
  std::vector<const TuningRecord *> from = {&*c.defaultRecord};
  for (const TuningRecord &r : c.entrants)
    from.push_back(&r);
  for (const TuningRecord *r : from)
    if (auto s = scheduleFromJson(r->schedule))
      schedules.push_back(*s);
  if (schedules.size() != from.size())
    return "";
  std::vector<SideBySide> sides = compare(c.task, schedules);
  if (sides.size() != schedules.size())
    return "";
  size_t pick =
      sides[0].record.status == Status::Ok ? pickWinner(sides) : sides.size();
  std::vector<TuningRecord> records;
  for (size_t k = 0; k < sides.size(); ++k) {
    TuningRecord r = sides[k].record;
    r.task = task.task;
    r.fingerprint = fingerprint;
    r.schedule = from[k]->schedule;
    r.origin = k == pick ? "confirmed" : "confirm";
    r.kernel = task.description;
    r.flops = task.flops;
    if (k > 0 && std::isfinite(sides[k].ratio) && r.message.empty())
      r.message = ratioText(sides[k]) + " side by side";
    records.push_back(std::move(r));
  }
  std::string error;
  if (db.addAll(records, error, /*skipDuplicates=*/false) < 0)
    log("tune: warning: " + error);
  size_t shown = pick < sides.size() ? reported(sides, pick) : 0;
  std::string note =
      pick == sides.size()
          ? "the default failed side by side: " + sides[0].record.message
      : shown == 0 ? "no candidate was timed side by side"
                   : (pick > 0 ? "confirmed: " : "kept the default: best ") +
                         ratioText(sides[shown]);
  log("tune: task " + task.task + ": " + note);
  return note;
}

} // namespace

std::vector<std::string>
confirmTasks(const std::vector<SearchTask> &tasks, const Comparer &compare,
             TuningDatabase &db, const std::string &fingerprint,
             const std::function<bool()> &outOfTime,
             const std::function<void(const std::string &)> &log) {
  std::vector<std::string> outcomes(tasks.size());
  if (!compare)
    return outcomes;
  std::vector<Contest> contests;
  for (size_t i = 0; i < tasks.size(); ++i) {
    Contest c = contestOf(i, tasks[i], db.records(tasks[i].task, fingerprint));
    if (!c.entrants.empty())
      contests.push_back(std::move(c));
  }
  std::stable_sort(contests.begin(), contests.end(),
                   [](auto &a, auto &b) { return a.stake > b.stake; });
  for (const Contest &c : contests) {
    if (outOfTime())
      break;
    outcomes[c.task] =
        runContest(c, tasks[c.task], compare, db, fingerprint, log);
  }
  return outcomes;
}

} // namespace ign::search
