//===- Tuning.cpp - the search agent on any target ------------------------===//
//
// The glue between lib/Search and the selected target, naming none: task
// modules written to a work directory, the target's half of every task
// (space, features) and its runner, the search, and the tuning report. The
// `ignc tune-worker` child processes it starts are TuneWorker.cpp's.
//
//===----------------------------------------------------------------------===//

#include "Tuning.h"
#include "ign/Search/WorkerProcess.h"
#include "ign/Target/Pipeline.h"
#include "ign/Target/TargetRegistry.h"
#include "ign/Transforms/KernelTasks.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace mlir;
namespace fs = std::filesystem;

namespace ign {

/// The search's options from the command line's.
static search::SearchOptions
searchOptions(const TuneOptions &tune, Verbosity verbosity, size_t batch,
              std::function<void(const std::string &)> log) {
  search::SearchOptions options;
  options.trials = tune.trials > 0 ? tune.trials : search::kNoTrialLimit;
  options.timeLimitSeconds = tune.seconds;
  options.seed = tune.seed;
  options.useModel = tune.search != "random";
  options.terminal = verbosity != Verbosity::Quiet && isatty(2);
  options.batch = batch;
  options.log = std::move(log);
  return options;
}

namespace {

/// The work directory of a tuning run: it goes when tuning ends, however
/// it ends, unless IGNC_TUNE_KEEP is set (to replay a worker by hand:
/// docs/search.md).
struct WorkDirectory {
  std::string path;
  ~WorkDirectory() {
    if (path.empty())
      return;
    if (const char *keep = std::getenv("IGNC_TUNE_KEEP"); keep && *keep) {
      llvm::errs() << "tune: kept the work directory " << path << "\n";
      return;
    }
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// The selected target's tasks, each written to the work directory.
std::optional<std::vector<target::TaskModule>>
selectedTasks(ModuleOp module, const target::Selection &selection,
              const target::TargetConfig &config, const std::string &work) {
  auto placed = target::extractTasks(module, *selection.target, config);
  if (failed(placed))
    return std::nullopt;
  std::vector<target::TaskModule> tasks;
  for (target::PlacedTask &p : *placed) {
    if (p.target != selection.target)
      continue; // another target's kernel: not tuned in this run
    target::TaskModule t = std::move(p.task);
    t.path = work + "/task" + std::to_string(tasks.size()) + ".mlir";
    std::error_code ec;
    llvm::raw_fd_ostream os(t.path, ec);
    if (ec) {
      llvm::errs() << "ignc: error: cannot write '" << t.path
                   << "': " << ec.message() << "\n";
      return std::nullopt;
    }
    t.module->print(os);
    tasks.push_back(std::move(t));
  }
  return tasks;
}

/// --tune-extra-candidate: measured and recorded before the search.
bool measureInjected(const TuneOptions &tune, target::Runner &runner,
                     const std::vector<search::SearchTask> &tasks,
                     search::TuningDatabase &db, const std::string &fingerprint,
                     const std::function<void(const std::string &)> &log) {
  std::vector<search::Schedule> extras;
  for (const std::string &text : tune.extraCandidates) {
    std::string error;
    auto s = search::scheduleFromJson(text, &error);
    if (!s) {
      llvm::errs() << "ignc: error: extra candidate '" << text << "': " << error
                   << "\n";
      return false;
    }
    extras.push_back(*s);
  }
  if (extras.empty())
    return true;
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto records = runner.run(i, extras);
    for (size_t k = 0; k < records.size(); ++k) {
      search::TuningRecord &r = records[k];
      r.task = tasks[i].task;
      r.fingerprint = fingerprint;
      r.schedule = search::scheduleToJson(extras[k]);
      r.origin = "injected";
      r.kernel = tasks[i].description;
      r.flops = tasks[i].flops;
      std::string error;
      if (!db.add(r, error))
        log("tune: warning: " + error);
      log("tune: injected candidate " + r.schedule + " for task " + r.task +
          ": " + search::statusName(r.status) +
          (r.message.empty() ? "" : " (" + r.message + ")"));
    }
  }
  return true;
}

/// The measuring threads' share of the chip's peak.
double peakOfThreads(const target::Target &t, const std::string &chip,
                     int threads) {
  std::optional<target::ChipInfo> info = t.chipInfo(chip);
  if (!info || !(info->peakGflops > 0))
    return 0;
  int64_t cores = std::max<int64_t>(1, info->cores);
  return info->peakGflops * double(std::min<int64_t>(threads, cores)) /
         double(cores);
}

} // namespace

std::optional<TuningRun>
tuneModel(ModuleOp module, const target::Selection &selection,
          const target::TargetConfig &config, const TuneOptions &tune,
          search::TuningDatabase &db, Verbosity verbosity) {
  const target::Target &t = *selection.target;
  auto log = [&](const std::string &line) {
    if (verbosity != Verbosity::Quiet)
      llvm::errs() << line << "\n";
  };
  target::RunnerContext context;
  context.executable = search::selfExecutable();
  if (context.executable.empty()) {
    llvm::errs() << "ignc: error: cannot find the ignc executable to start "
                    "tuning workers\n";
    return std::nullopt;
  }
  llvm::SmallString<128> work;
  if (llvm::sys::fs::createUniqueDirectory("ignc-tune", work)) {
    llvm::errs() << "ignc: error: cannot create a work directory for tuning\n";
    return std::nullopt;
  }
  WorkDirectory cleanup{work.str().str()};
  int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  context.jobs = tune.jobs > 0 ? tune.jobs : cores;
  context.threads = tune.threads > 0 ? tune.threads : cores;
  context.candidateTimeout = tune.candidateTimeout;
  context.workDir = cleanup.path;
  context.targetArgs = {"--target",     t.name(),      "--chip",
                        selection.chip, "--precision", config.precision};

  auto tasks = selectedTasks(module, selection, config, cleanup.path);
  if (!tasks)
    return std::nullopt;
  TuningRun run;
  run.fingerprint = t.fingerprint(config);
  std::vector<search::SearchTask> searchTasks;
  std::vector<std::function<std::vector<float>(const search::Schedule &)>>
      features;
  std::vector<const target::TaskModule *> taskPtrs;
  for (target::TaskModule &task : *tasks) {
    auto tuning = t.tuningTask(task, config, context);
    if (failed(tuning))
      return std::nullopt;
    search::SearchTask st;
    st.task = task.summary.task;
    st.description = tuning->description;
    st.space = std::move(tuning->space);
    st.launches = task.summary.launches;
    st.flops = int64_t(task.summary.flops);
    searchTasks.push_back(std::move(st));
    features.push_back(std::move(tuning->features));
    run.kernels.push_back(task.summary);
    taskPtrs.push_back(&task);
  }
  if (searchTasks.empty()) {
    log("tune: no kernel of this model runs " + t.placementPhrase());
    run.peakGflops = peakOfThreads(t, selection.chip, 1);
    return run;
  }
  std::unique_ptr<target::Runner> runner =
      t.createRunner(taskPtrs, config, context);
  if (!runner)
    return std::nullopt;
  if (!measureInjected(tune, *runner, searchTasks, db, run.fingerprint, log))
    return std::nullopt;
  search::SearchOptions options =
      searchOptions(tune, verbosity, runner->batchSize(), log);
  if (runner->comparesSideBySide())
    options.compare = [&](size_t i, const std::vector<search::Schedule> &b) {
      return runner->compare(i, b);
    };
  search::TuningRunRecord cost{run.fingerprint, search::nowUtcText()};
  double cpuBefore = search::processCpuSeconds(/*withChildren=*/true);
  run.summary = search::runSearch(
      searchTasks,
      [&](size_t i, const std::vector<search::Schedule> &batch) {
        return runner->run(i, batch);
      },
      [&](size_t i, const search::Schedule &s) { return features[i](s); }, db,
      run.fingerprint, options);
  run.threads = runner->threads();
  run.predicted = runner->predicts();
  run.peakGflops = peakOfThreads(t, selection.chip, run.threads);
  run.tasks = std::move(searchTasks);
  cost.seconds = run.summary.seconds;
  cost.cpuSeconds = run.cpuSeconds =
      search::processCpuSeconds(/*withChildren=*/true) - cpuBefore;
  cost.newTrials = run.summary.newTrials;
  for (const search::SearchTask &st : run.tasks)
    cost.tasks.push_back(st.task);
  std::string error;
  if (cost.newTrials > 0 && !db.addRun(cost, error))
    log("tune: warning: " + error);
  return run;
}

std::string tuningReport(const TuningRun &run, const std::string &modelPath,
                         std::string *table) {
  double peak = run.peakGflops;
  const std::string &fingerprint = run.fingerprint;
  nlohmann::json kernels = nlohmann::json::array();
  double before = 0, after = 0;
  char line[512];
  std::string t;
  std::snprintf(line, sizeof line,
                "%-16s %-34s %5s %10s %10s %7s %8s %6s %6s %8s\n", "task",
                "kernel", "runs", "default", "tuned", "speedup", "GFLOP/s",
                "%peak", "trials", "rel_l2");
  t += line;
  for (size_t i = 0; i < run.tasks.size(); ++i) {
    const search::TaskOutcome &o = run.summary.tasks[i];
    const KernelSummary &k = run.kernels[i];
    double def =
        o.defaultRecord && o.defaultRecord->status == search::Status::Ok
            ? o.defaultRecord->medianNs
            : 0;
    // What the bundle uses: the default's latency when that is the choice
    // (the confirmation stage kept it), else the chosen record's.
    double best =
        !o.chosen ? 0
        : o.defaultRecord && o.chosen->schedule == o.defaultRecord->schedule
            ? def
            : o.chosen->medianNs;
    double gflops = best > 0 ? double(k.flops) / best : 0;
    nlohmann::json j = {{"task", k.task},
                        {"kernel", k.name},
                        {"ops", k.ops},
                        {"launches", k.launches},
                        {"flops", k.flops},
                        {"default_ms", def / 1e6},
                        {"tuned_ms", best / 1e6},
                        {"speedup", def > 0 && best > 0 ? def / best : 0},
                        {"gflops", gflops},
                        {"percent_of_peak", peak > 0 ? 100 * gflops / peak : 0},
                        {"trials", o.trials},
                        {"new_trials", o.newTrials},
                        {"failed_trials", o.failed},
                        {"best_curve_ms", nlohmann::json::array()}};
    for (double v : o.bestCurve)
      j["best_curve_ms"].push_back(v / 1e6);
    if (o.best)
      j["fastest_searched_ms"] = o.best->medianNs / 1e6;
    if (o.chosen) {
      j["schedule"] = nlohmann::json::parse(o.chosen->schedule, nullptr, false);
      j["rel_l2"] = o.chosen->relL2;
      j["max_abs"] = o.chosen->maxAbs;
      j["chosen_origin"] = o.chosen->origin;
    }
    if (!o.confirmation.empty())
      j["confirmation"] = o.confirmation;
    kernels.push_back(j);
    if (def > 0 && best > 0) {
      before += k.launches * def;
      after += k.launches * best;
    }
    std::string name = llvm::join(k.ops, "+");
    if (name.size() > 34)
      name = name.substr(0, 31) + "...";
    char share[16] = "-";
    if (peak > 0)
      std::snprintf(share, sizeof share, "%.1f%%", 100 * gflops / peak);
    if (def > 0 && best > 0)
      std::snprintf(
          line, sizeof line,
          "%-16s %-34s %5u %8.3fms %8.3fms %6.2fx %8.1f %6s %6lld %8.1e\n",
          k.task.c_str(), name.c_str(), k.launches, def / 1e6, best / 1e6,
          def / best, gflops, share, (long long)o.trials,
          o.chosen ? o.chosen->relL2 : 0.0);
    else // the budget ended before the task was measured (or all failed)
      std::snprintf(line, sizeof line,
                    "%-16s %-34s %5u %10s %10s %7s %8s %6s %6lld %8s\n",
                    k.task.c_str(), name.c_str(), k.launches, "not tuned", "-",
                    "-", "-", "-", (long long)o.trials, "-");
    t += line;
  }
  std::snprintf(line, sizeof line,
                "model (sum of kernel latencies x launches): default %.3f ms, "
                "tuned %.3f ms, %.2fx; %lld new trials in %.1f s; ",
                before / 1e6, after / 1e6, after > 0 ? before / after : 0.0,
                (long long)run.summary.newTrials, run.summary.seconds);
  t += line;
  // A chip without a known peak (a Vulkan device) says so instead of 0.
  if (peak > 0 && run.predicted)
    std::snprintf(line, sizeof line, "peak %.1f GFLOP/s\n", peak);
  else if (peak > 0)
    std::snprintf(line, sizeof line, "peak %.1f GFLOP/s (FMA, %d thread(s))\n",
                  peak, run.threads);
  else
    std::snprintf(line, sizeof line, "peak unknown for this chip\n");
  t += line;
  if (run.predicted)
    t += "every latency above is the target's analytical model's "
         "prediction: nothing ran\n";
  if (table)
    *table = t;
  nlohmann::json report = {{"model", modelPath},
                           {"fingerprint", fingerprint},
                           {"threads", run.threads},
                           {"peak_gflops", peak},
                           {"tuning_seconds", run.summary.seconds},
                           {"tuning_cpu_seconds", run.cpuSeconds},
                           {"new_trials", run.summary.newTrials},
                           {"predicted", run.predicted},
                           {"stopped_by_time", run.summary.stoppedByTime},
                           {"kernels", kernels},
                           {"model_estimate",
                            {{"default_ms", before / 1e6},
                             {"tuned_ms", after / 1e6},
                             {"speedup", after > 0 ? before / after : 0}}}};
  return report.dump(2) + "\n";
}

} // namespace ign
