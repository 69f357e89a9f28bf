//===- Runner.h - builds and measures candidate schedules -------*- C++ -*-===//
//
// MetaSchedule's builder + runner in one interface: a target creates one
// for the tasks it tunes. The worker runner here serves every target whose
// kernels run on this machine: each candidate is compiled into a bundle and
// run by `ignc tune-worker` child processes (a crash or hang costs one
// record), its outputs checked against the host's reference lowering by the
// validator (Validator.h).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_SEARCH_RUNNER_H
#define IGN_SEARCH_RUNNER_H

#include "ign/Search/ScheduleSpace.h"
#include "ign/Search/TuningDatabase.h"

#include <memory>
#include <string>
#include <vector>

namespace ign::search {

/// One schedule's part in a side-by-side timing (Runner::compare).
struct SideBySide {
  TuningRecord record; // status, latency over the compared runs, errors
  /// Its latency over the first schedule's, run by run: the median ratio
  /// and a 95% interval for it; NaN for the first and where not timed.
  double ratio = std::nan(""), low = std::nan(""), high = std::nan("");
};

class Runner {
public:
  virtual ~Runner();
  /// One record per schedule of task `task` (status, errors, latency); the
  /// search fills in the task, fingerprint, schedule and origin.
  virtual std::vector<TuningRecord>
  run(size_t task, const std::vector<Schedule> &schedules) = 0;
  /// Times `schedules` of task `task` side by side, interleaved run by run
  /// in one process (the first is the baseline); one entry per schedule.
  /// Empty when the runner has no such timing (its latencies are
  /// predictions, or it cannot build them side by side).
  virtual std::vector<SideBySide> compare(size_t task,
                                          const std::vector<Schedule> &) {
    (void)task;
    return {};
  }
  /// Whether compare() times schedules (runners that only predict or
  /// simulate have no noise to confirm against).
  virtual bool comparesSideBySide() const { return false; }
  /// Threads a measurement used (for the report's peak).
  virtual int threads() const { return 1; }
  /// Candidates the search should measure per round.
  virtual size_t batchSize() const { return 8; }
  /// Whether its latencies are a model's predictions (nothing runs: a
  /// chip this machine does not have), not measurements.
  virtual bool predicts() const { return false; }
};

struct WorkerTask {
  std::string module; // the task module's file (MLIR text)
  /// Timed runs start with the task's weights evicted from the caches.
  bool evictWeights = false;
};

struct WorkerRunnerOptions {
  std::string executable; // ignc
  /// How the worker finds the target: `--target NAME --chip CHIP`.
  std::vector<std::string> targetArgs;
  /// More arguments of every `tune-worker measure` (`--tolerance-of bf16`
  /// when the kernels compute in bf16).
  std::vector<std::string> measureArgs;
  std::string workDir; // candidates' files and the reference outputs
  int jobs = 1, threads = 1;
  double timeoutSeconds = 60;
};

/// Builds each candidate with `tune-worker build` and measures it with
/// `tune-worker measure` against the reference outputs (built once per
/// task, lazily, from the reference lowering).
std::unique_ptr<Runner> createWorkerRunner(std::vector<WorkerTask> tasks,
                                           WorkerRunnerOptions options);

} // namespace ign::search

#endif // IGN_SEARCH_RUNNER_H
