//===- Search.h - the search agent: tasks, trials, the learned model -*- C++
//-*-//
//
// Given the tasks of a model (distinct kernels, each with its schedule
// space and how often it runs), spends a budget of trials where the whole
// model gains most (a gradient-style task scheduler, as in Ansor), and per
// task: the default schedule and random samples first, then evolutionary
// search (mutation, crossover) ranked by a cost model retrained on every
// measurement. Building and measuring are the caller's (a Measurer, which
// runs candidates in worker processes); every record goes to the tuning
// database as soon as it exists.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_SEARCH_SEARCH_H
#define IGN_SEARCH_SEARCH_H

#include "ign/Search/Runner.h"
#include "ign/Search/ScheduleSpace.h"
#include "ign/Search/TuningDatabase.h"

#include <functional>
#include <string>
#include <vector>

namespace ign::search {

struct SearchTask {
  std::string task;        // structural hash
  std::string description; // ops and shapes, for humans
  ScheduleSpace space;
  double launches = 1; // occurrences per model run
  int64_t flops = 0;
};

/// Builds and measures candidates of one task; returns one record per
/// schedule (task, fingerprint, schedule, origin and kernel are filled in
/// by the search).
using Measurer = std::function<std::vector<TuningRecord>(
    size_t task, const std::vector<Schedule> &schedules)>;
/// Times a task's schedules side by side (Runner::compare); the first is
/// the default.
using Comparer = std::function<std::vector<SideBySide>(
    size_t task, const std::vector<Schedule> &schedules)>;
/// Features of (task, schedule) for the cost model (fixed width).
using Featurizer =
    std::function<std::vector<float>(size_t task, const Schedule &schedule)>;

/// SearchOptions::trials when only a time budget is given.
inline constexpr int64_t kNoTrialLimit = int64_t(1) << 40;

struct SearchOptions {
  /// Trials for the model's tasks, counting the records already in the
  /// database: a model tuned to N trials before measures nothing more.
  /// kNoTrialLimit: only the time limit bounds the run.
  int64_t trials = 64;
  double timeLimitSeconds = 0; // 0: none
  uint64_t seed = 1;
  size_t batch = 8;     // candidates measured per round
  bool useModel = true; // false: plain random search (baseline)
  /// The confirmation stage's timing (Confirmation.h); empty: none (a
  /// runner whose latencies have no noise).
  Comparer compare;
  /// The share of the time limit kept for the confirmation stage.
  double confirmShare = 0.2;
  /// Progress: a live line on a terminal, plain lines otherwise.
  bool terminal = false;
  std::function<void(const std::string &)> log;
};

struct TaskOutcome {
  std::optional<TuningRecord> defaultRecord, best;
  /// What a bundle uses (TuningDatabase::chosen) and how it was confirmed.
  std::optional<TuningRecord> chosen;
  std::string confirmation;
  int64_t trials = 0;    // records for this task (this run and before)
  int64_t newTrials = 0; // measured in this run
  int64_t failed = 0;    // records not ok
  /// Best latency after each trial of this run, for search-quality curves.
  std::vector<double> bestCurve;
};

struct SearchSummary {
  std::vector<TaskOutcome> tasks;
  int64_t newTrials = 0;
  double seconds = 0;
  bool stoppedByTime = false;
};

/// Runs the search. Records are added to `db` under `fingerprint` as they
/// are measured.
SearchSummary runSearch(const std::vector<SearchTask> &tasks,
                        const Measurer &measure, const Featurizer &features,
                        TuningDatabase &db, const std::string &fingerprint,
                        const SearchOptions &options);

} // namespace ign::search

#endif // IGN_SEARCH_SEARCH_H
