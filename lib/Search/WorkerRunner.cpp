//===- WorkerRunner.cpp - candidates built and measured in child processes ===//

#include "ign/Search/Runner.h"
#include "ign/Search/WorkerProcess.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace ign::search {

Runner::~Runner() = default;

namespace {

class WorkerRunner : public Runner {
public:
  WorkerRunner(std::vector<WorkerTask> tasks, WorkerRunnerOptions options)
      : tasks_(std::move(tasks)), options_(std::move(options)),
        references_(tasks_.size()) {}

  std::vector<TuningRecord> run(size_t task,
                                const std::vector<Schedule> &batch) override;
  std::vector<SideBySide> compare(size_t task,
                                  const std::vector<Schedule> &batch) override;
  bool comparesSideBySide() const override { return true; }
  int threads() const override { return options_.threads; }
  size_t batchSize() const override {
    return size_t(std::max(2, 4 * options_.jobs));
  }

private:
  struct Reference {
    std::string dir;
    bool ready = false;
    std::string error;
  };
  std::vector<std::string>
  worker(std::vector<std::string> args,
         const std::vector<std::string> &more = {}) const {
    args.insert(args.begin(), {options_.executable, "tune-worker"});
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  const Reference &reference(size_t task);
  /// The measurement's arguments after the task's: how timed runs start
  /// (WorkerTask) and the runner's own (measureArgs).
  std::vector<std::string> coldArgs(size_t task) const {
    std::vector<std::string> args = options_.measureArgs;
    if (tasks_[task].evictWeights)
      args.push_back("--evict-weights");
    return args;
  }
  void measureOne(size_t task, const std::string &bundle, TuningRecord &r);
  std::vector<std::string> buildAll(size_t task,
                                    const std::vector<Schedule> &batch,
                                    std::vector<TuningRecord> &records);
  void compareBuilt(size_t task, const std::vector<std::string> &bundles,
                    std::vector<SideBySide> &out);

  std::vector<WorkerTask> tasks_;
  WorkerRunnerOptions options_;
  std::vector<Reference> references_;
  size_t counter_ = 0;
};

/// The reference outputs of a task, written once by the reference
/// lowering's bundle (always the host's, one thread).
const WorkerRunner::Reference &WorkerRunner::reference(size_t task) {
  Reference &ref = references_[task];
  if (ref.ready || !ref.error.empty())
    return ref;
  ref.dir = options_.workDir + "/task" + std::to_string(task) + ".ref";
  fs::create_directories(ref.dir);
  std::string bundle = ref.dir + "/reference.ignb";
  double buildLimit = std::max(300.0, options_.timeoutSeconds);
  double runLimit = std::max(600.0, options_.timeoutSeconds);
  WorkerResult built = runWorker(
      worker({"build", tasks_[task].module, "--reference", "-o", bundle}),
      buildLimit);
  WorkerResult wrote =
      built.ok()
          ? runWorker(worker({"measure", bundle, "--reference-dir", ref.dir,
                              "--write-reference", "--threads", "1"}),
                      runLimit)
          : built;
  if (built.ok() && wrote.ok())
    ref.ready = true;
  else
    ref.error = "no reference: " + (built.ok() ? wrote.describe(runLimit)
                                               : built.describe(buildLimit));
  return ref;
}

/// The last line of a worker's stdout.
std::string lastLine(std::string out) {
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  size_t newline = out.rfind('\n');
  return newline == std::string::npos ? out : out.substr(newline + 1);
}

/// One bundle's result as `tune-worker measure` prints it, into `r`.
void parseResult(const nlohmann::json &j, TuningRecord &r) {
  std::string status = j.value("status", "");
  if (status == "error") {
    r.status = Status::Error;
    r.message = j.value("message", "the worker failed");
    return;
  }
  r.status = status == "ok" ? Status::Ok : Status::Wrong;
  r.relL2 = j.value("rel_l2", 0.0);
  r.maxAbs = j.value("max_abs", 0.0);
  r.medianNs = j.value("median_ns", 0.0);
  r.minNs = j.value("min_ns", 0.0);
  r.p90Ns = j.value("p90_ns", 0.0);
  r.runs = j.value("runs", int64_t(0));
  if (r.status == Status::Wrong)
    r.message = "outputs differ from the reference";
  else if (!(r.medianNs > 0)) {
    r.status = Status::Error;
    r.message = "no timing";
  }
}

/// The worker's last stdout line, parsed into `r`.
void parseMeasurement(const WorkerResult &m, TuningRecord &r) {
  nlohmann::json j = nlohmann::json::parse(lastLine(m.out), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    r.status = Status::Error;
    r.message = "the worker printed no result";
    return;
  }
  parseResult(j, r);
}

void WorkerRunner::measureOne(size_t task, const std::string &bundle,
                              TuningRecord &r) {
  WorkerResult m = runWorker(
      worker({"measure", bundle, "--reference-dir", references_[task].dir,
              "--threads", std::to_string(options_.threads)},
             coldArgs(task)),
      options_.timeoutSeconds);
  std::error_code ec;
  fs::remove(bundle, ec);
  r.workerCpuSeconds += m.cpuSeconds;
  r.workerWallSeconds += m.wallSeconds;
  if (!m.ok()) {
    r.status = m.timedOut ? Status::Timeout
               : m.signal ? Status::Crash
                          : Status::Error;
    r.message = m.describe(options_.timeoutSeconds);
    return;
  }
  parseMeasurement(m, r);
}

/// Builds every schedule of `batch` (in parallel): the bundles' paths, ""
/// where the build failed (its record says why).
std::vector<std::string>
WorkerRunner::buildAll(size_t task, const std::vector<Schedule> &batch,
                       std::vector<TuningRecord> &records) {
  std::vector<std::vector<std::string>> builds;
  std::vector<std::string> bundles;
  for (const Schedule &s : batch) {
    std::string base = options_.workDir + "/c" + std::to_string(counter_++);
    std::ofstream(base + ".json", std::ios::trunc) << scheduleToJson(s);
    bundles.push_back(base + ".ignb");
    std::vector<std::string> args = {
        "build", tasks_[task].module, "--schedule-file", base + ".json",
        "-o",    base + ".ignb"};
    args.insert(args.end(), options_.targetArgs.begin(),
                options_.targetArgs.end());
    builds.push_back(worker(args));
  }
  auto built = runWorkers(builds, options_.jobs, options_.timeoutSeconds);
  for (size_t k = 0; k < batch.size(); ++k) {
    TuningRecord &r = records[k];
    r.workerCpuSeconds = built[k].cpuSeconds;
    r.workerWallSeconds = built[k].wallSeconds;
    if (!built[k].ok()) {
      r.status = built[k].timedOut ? Status::Timeout
                 : built[k].signal ? Status::Crash
                                   : Status::BuildError;
      r.message = "build: " + built[k].describe(options_.timeoutSeconds);
      bundles[k].clear();
    }
  }
  return bundles;
}

/// Marks every record with the same failure.
void failAll(std::vector<TuningRecord> &records, const std::string &message) {
  for (TuningRecord &r : records) {
    r.status = Status::Error;
    r.message = message;
  }
}

std::vector<TuningRecord>
WorkerRunner::run(size_t task, const std::vector<Schedule> &batch) {
  std::vector<TuningRecord> records(batch.size());
  const Reference &ref = reference(task);
  if (!ref.ready) {
    failAll(records, ref.error);
    return records;
  }
  std::vector<std::string> bundles = buildAll(task, batch, records);
  for (size_t k = 0; k < batch.size(); ++k)
    if (!bundles[k].empty())
      measureOne(task, bundles[k], records[k]);
  return records;
}

/// The side-by-side timing of the built bundles (the first is the
/// baseline) by one `tune-worker compare`.
void WorkerRunner::compareBuilt(size_t task,
                                const std::vector<std::string> &bundles,
                                std::vector<SideBySide> &out) {
  std::vector<std::string> args = {"compare"}, order;
  for (size_t k = 0; k < bundles.size(); ++k)
    if (!bundles[k].empty())
      args.push_back(bundles[k]), order.push_back(std::to_string(k));
  args.insert(args.end(),
              {"--reference-dir", references_[task].dir, "--threads",
               std::to_string(options_.threads), "--min-time-ms", "1000"});
  double limit = options_.timeoutSeconds * double(bundles.size());
  WorkerResult m = runWorker(worker(args, coldArgs(task)), limit);
  for (const std::string &b : bundles) {
    std::error_code ec;
    fs::remove(b, ec);
  }
  std::string last = lastLine(m.out);
  nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
  nlohmann::json results =
      j.is_object() ? j.value("results", nlohmann::json()) : nlohmann::json();
  if (!m.ok() || !results.is_array() || results.size() != order.size()) {
    std::string why = m.ok() ? "the worker printed no comparison"
                             : "compare: " + m.describe(limit);
    for (SideBySide &s : out)
      if (s.record.message.empty())
        s.record.status = Status::Error, s.record.message = why;
    return;
  }
  for (size_t i = 0; i < order.size(); ++i) {
    SideBySide &s = out[std::stoul(order[i])];
    parseResult(results[i], s.record);
    s.ratio = results[i].value("ratio", std::nan(""));
    s.low = results[i].value("ratio_low", std::nan(""));
    s.high = results[i].value("ratio_high", std::nan(""));
  }
}

std::vector<SideBySide>
WorkerRunner::compare(size_t task, const std::vector<Schedule> &batch) {
  std::vector<TuningRecord> records(batch.size());
  const Reference &ref = reference(task);
  std::vector<std::string> bundles;
  if (!ref.ready)
    failAll(records, ref.error);
  else
    bundles = buildAll(task, batch, records);
  bool baselineBuilt = !bundles.empty() && !bundles[0].empty();
  std::vector<SideBySide> out(batch.size());
  for (size_t k = 0; k < batch.size(); ++k) {
    out[k].record = records[k];
    if (ref.ready && !baselineBuilt && out[k].record.message.empty())
      out[k].record.status = Status::Error,
      out[k].record.message = "the baseline did not build";
  }
  if (baselineBuilt)
    compareBuilt(task, bundles, out);
  return out;
}

} // namespace

std::unique_ptr<Runner> createWorkerRunner(std::vector<WorkerTask> tasks,
                                           WorkerRunnerOptions options) {
  return std::make_unique<WorkerRunner>(std::move(tasks), std::move(options));
}

} // namespace ign::search
