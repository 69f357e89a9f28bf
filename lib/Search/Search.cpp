//===- Search.cpp - task scheduler, evolutionary search, learned model ----===//

#include "ign/Search/Search.h"
#include "ign/Search/Confirmation.h"
#include "ign/Search/CostModel.h"
#include "ign/Search/WorkerProcess.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>

namespace ign::search {

namespace {

/// Label of a failed candidate for the model: far below any valid one.
constexpr float kFailedLabel = -2.0f;

struct TaskState {
  const SearchTask *task = nullptr;
  std::set<std::string> measured;                 // canonical schedule JSON
  std::vector<std::pair<Schedule, double>> valid; // schedule, median ns
  std::vector<std::pair<Schedule, Status>> failed;
  std::optional<TuningRecord> defaultRecord, best;
  int64_t trials = 0, newTrials = 0, failures = 0;
  /// Best latency before each of this run's rounds (the scheduler's
  /// gradient).
  std::vector<double> roundBest;
  std::vector<double> curve;
  bool exhausted = false;

  void record(const TuningRecord &r) {
    // The confirmation stage's records are not trials (Confirmation.h).
    if (r.isConfirmation())
      return;
    auto s = scheduleFromJson(r.schedule);
    measured.insert(r.schedule);
    ++trials;
    if (r.origin == "default" && !defaultRecord)
      defaultRecord = r;
    if (!s)
      return;
    if (r.status == Status::Ok) {
      valid.push_back({*s, r.medianNs});
      if (!best || r.medianNs < best->medianNs)
        best = r;
    } else {
      failed.push_back({*s, r.status});
      ++failures;
    }
  }
  double bestNs() const { return best ? best->medianNs : 0; }
};

class Sampler {
public:
  Sampler(const ScheduleSpace &space, std::mt19937_64 &rng)
      : space_(space), rng_(rng) {}

  std::optional<Schedule> random() {
    for (int attempt = 0; attempt < 64; ++attempt) {
      Schedule s = space_.defaults;
      for (const Knob &k : space_.knobs)
        s[k.name] = k.values[pick(k.values.size())];
      if (space_.isLegal(s))
        return s;
    }
    return std::nullopt;
  }

  std::optional<Schedule> mutate(const Schedule &parent) {
    if (space_.knobs.empty())
      return std::nullopt;
    for (int attempt = 0; attempt < 16; ++attempt) {
      Schedule s = parent;
      int changes = (rng_() % 10) < 3 ? 2 : 1;
      for (int c = 0; c < changes; ++c) {
        const Knob &k = space_.knobs[pick(space_.knobs.size())];
        s[k.name] = k.values[pick(k.values.size())];
      }
      if (s != parent && space_.isLegal(s))
        return s;
    }
    return std::nullopt;
  }

  std::optional<Schedule> crossover(const Schedule &a, const Schedule &b) {
    Schedule s = a;
    for (const Knob &k : space_.knobs)
      if (rng_() & 1)
        if (auto it = b.find(k.name); it != b.end())
          s[k.name] = it->second;
    if (space_.isLegal(s))
      return s;
    return std::nullopt;
  }

  size_t pick(size_t n) { return n ? size_t(rng_() % n) : 0; }

private:
  const ScheduleSpace &space_;
  std::mt19937_64 &rng_;
};

std::string formatDuration(double seconds) {
  char buf[32];
  int s = int(seconds + 0.5);
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%dh%02dm", s / 3600, s / 60 % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%dm%02ds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ds", s);
  return buf;
}

/// The candidates of one round of a task: schedules new to it, each with its
/// origin.
struct Batch {
  const TaskState &st;
  int64_t limit;
  std::vector<Schedule> schedules;
  std::vector<std::string> origins;
  std::set<std::string> chosen;
  /// The cost model's score of each schedule it ranked (NaN for the rest).
  std::vector<double> predicted;

  /// Notes the cost model's score of the schedule taken last.
  void scoreLast(double score) {
    predicted.resize(schedules.size() - 1, std::nan(""));
    predicted.push_back(score);
  }

  /// Adds `s` unless the batch is full or `s` was measured or chosen before.
  bool take(const Schedule &s) {
    std::string key = scheduleToJson(s);
    if (int64_t(schedules.size()) >= limit || st.measured.count(key) ||
        !chosen.insert(key).second)
      return false;
    schedules.push_back(s);
    return true;
  }
};

/// One run of the search: rounds of candidates for the task where the model
/// as a whole gains most, ranked by the learned cost model, measured and
/// recorded in the tuning database.
class SearchRun {
public:
  SearchRun(const std::vector<SearchTask> &tasks, const Measurer &measure,
            const Featurizer &features, TuningDatabase &db,
            const std::string &fingerprint, const SearchOptions &options)
      : start(std::chrono::steady_clock::now()), tasks(tasks), measure(measure),
        features(features), db(db), fingerprint(fingerprint), options(options),
        rng(options.seed), states(tasks.size()) {}

  SearchSummary run();

private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  }
  void log(const std::string &line) const {
    if (options.log)
      options.log(line);
  }
  void retrain();
  double modelSpeedup() const;
  void progress(bool final);
  void round(size_t i, int64_t n);
  void proposeByModel(size_t i, Sampler &sampler, Batch &batch);
  void measureAndRecord(size_t i, const Batch &batch);
  bool outOfTime();
  std::optional<size_t> pickTask() const;

  std::chrono::steady_clock::time_point start;
  const std::vector<SearchTask> &tasks;
  const Measurer &measure;
  const Featurizer &features;
  TuningDatabase &db;
  const std::string &fingerprint;
  const SearchOptions &options;
  std::mt19937_64 rng;
  std::vector<TaskState> states;
  SearchSummary summary;
  int64_t budget = 0;
  std::unique_ptr<CostModel> model;
};

/// The model learns speedups over each task's default schedule.
void SearchRun::retrain() {
  if (!options.useModel)
    return;
  model = std::make_unique<CostModel>(options.seed);
  for (size_t i = 0; i < states.size(); ++i) {
    const TaskState &st = states[i];
    if (!st.defaultRecord || st.defaultRecord->status != Status::Ok)
      continue;
    double base = st.defaultRecord->medianNs;
    for (auto &[s, ns] : st.valid)
      model->addSample(features(i, s), float(std::log(base / ns)));
    for (auto &[s, status] : st.failed)
      model->addSample(features(i, s), kFailedLabel);
  }
  if (!model->train())
    log("tune: warning: the cost model failed to train (" + model->error() +
        "); ranking candidates at random");
}

double SearchRun::modelSpeedup() const {
  double before = 0, after = 0;
  for (const TaskState &st : states)
    if (st.defaultRecord && st.best && st.defaultRecord->status == Status::Ok) {
      before += st.task->launches * st.defaultRecord->medianNs;
      after += st.task->launches * st.best->medianNs;
    }
  return after > 0 ? before / after : 1.0;
}

void SearchRun::progress(bool final) {
  size_t started = 0;
  for (const TaskState &st : states)
    started += st.trials > 0;
  int64_t total = std::max<int64_t>(budget, 0);
  double t = elapsed();
  std::string eta = "?";
  if (summary.newTrials > 0) {
    double left =
        t / double(summary.newTrials) * double(total - summary.newTrials);
    if (options.timeLimitSeconds > 0)
      left = std::min(left, options.timeLimitSeconds - t);
    eta = formatDuration(std::max(0.0, left));
  }
  // With only a time budget there is no trial total to show: the time is.
  std::string trials = std::to_string(summary.newTrials);
  if (options.trials >= kNoTrialLimit && options.timeLimitSeconds > 0)
    trials += " (budget " + formatDuration(options.timeLimitSeconds) + ")";
  else
    trials += "/" + std::to_string(total);
  char line[256];
  std::snprintf(line, sizeof line,
                "tune: tasks %zu/%zu, trials %s, best model speedup "
                "%.2fx, elapsed %s, ETA %s",
                started, states.size(), trials.c_str(), modelSpeedup(),
                formatDuration(t).c_str(), final ? "0s" : eta.c_str());
  if (options.terminal) {
    std::fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
    std::fflush(stderr);
  } else {
    log(line);
  }
}

/// One round: up to `n` new candidates of task i, measured and recorded.
void SearchRun::round(size_t i, int64_t n) {
  TaskState &st = states[i];
  const ScheduleSpace &space = st.task->space;
  Sampler sampler(space, rng);
  Batch batch{st, n, {}, {}, {}};
  if (!st.defaultRecord && batch.take(space.defaults))
    batch.origins.push_back("default");
  if (!options.useModel || st.valid.empty()) {
    for (int attempt = 0;
         attempt < 64 * n && int64_t(batch.schedules.size()) < n; ++attempt)
      if (auto s = sampler.random(); s && batch.take(*s))
        batch.origins.push_back("random");
  } else {
    proposeByModel(i, sampler, batch);
  }
  if (batch.schedules.empty()) {
    st.exhausted = true;
    return;
  }
  st.roundBest.push_back(st.bestNs());
  measureAndRecord(i, batch);
}

/// Fills the batch with candidates bred from the best measured so far, plus
/// fresh samples, ranked by the cost model.
void SearchRun::proposeByModel(size_t i, Sampler &sampler, Batch &batch) {
  const TaskState &st = states[i];
  int64_t n = batch.limit;
  std::vector<std::pair<Schedule, double>> parents = st.valid;
  std::sort(parents.begin(), parents.end(),
            [](auto &a, auto &b) { return a.second < b.second; });
  parents.resize(std::min<size_t>(parents.size(), 8));
  std::vector<Schedule> pool;
  std::vector<std::string> poolOrigin;
  std::set<std::string> inPool;
  auto add = [&](std::optional<Schedule> s, const char *origin) {
    if (!s)
      return;
    std::string key = scheduleToJson(*s);
    if (st.measured.count(key) || batch.chosen.count(key) ||
        !inPool.insert(key).second)
      return;
    pool.push_back(*s);
    poolOrigin.push_back(origin);
  };
  for (int k = 0; k < 192; ++k)
    add(sampler.mutate(parents[sampler.pick(parents.size())].first), "evolved");
  for (int k = 0; k < 64 && parents.size() > 1; ++k)
    add(sampler.crossover(parents[sampler.pick(parents.size())].first,
                          parents[sampler.pick(parents.size())].first),
        "evolved");
  for (int k = 0; k < 64; ++k)
    add(sampler.random(), "random");
  std::vector<size_t> order(pool.size());
  for (size_t k = 0; k < order.size(); ++k)
    order[k] = k;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::vector<float>> rows;
  for (const Schedule &s : pool)
    rows.push_back(features(i, s));
  std::vector<float> scores = model->predict(rows);
  if (scores.size() == pool.size())
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  // Mostly the model's best; a quarter picked at random keeps it
  // learning about the rest of the space (epsilon-greedy).
  int64_t exploit = scores.empty() ? n : n - std::max<int64_t>(1, n / 4);
  size_t k = 0;
  auto score = [&](size_t p) {
    return p < scores.size() ? double(scores[p]) : std::nan("");
  };
  for (; k < order.size() && int64_t(batch.schedules.size()) < exploit; ++k)
    if (batch.take(pool[order[k]])) {
      batch.origins.push_back(poolOrigin[order[k]]);
      batch.scoreLast(score(order[k]));
    }
  std::vector<size_t> rest(order.begin() + k, order.end());
  std::shuffle(rest.begin(), rest.end(), rng);
  for (size_t r : rest)
    if (batch.take(pool[r])) {
      batch.origins.push_back(poolOrigin[r] == "random" ? "random"
                                                        : "explored");
      batch.scoreLast(score(r));
    }
}

void SearchRun::measureAndRecord(size_t i, const Batch &batch) {
  TaskState &st = states[i];
  auto start = std::chrono::steady_clock::now();
  double cpuBefore = processCpuSeconds(/*withChildren=*/false);
  std::vector<TuningRecord> records = measure(i, batch.schedules);
  // A runner without worker processes (a simulator in this process): its
  // cost is this process's, shared evenly.
  double share = 1.0 / double(std::max<size_t>(1, records.size()));
  double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  double cpu = processCpuSeconds(/*withChildren=*/false) - cpuBefore;
  for (size_t k = 0; k < records.size() && k < batch.schedules.size(); ++k) {
    TuningRecord &r = records[k];
    if (r.workerWallSeconds == 0 && r.workerCpuSeconds == 0) {
      r.workerWallSeconds = wall * share;
      r.workerCpuSeconds = cpu * share;
    }
    if (k < batch.predicted.size())
      r.predicted = batch.predicted[k];
    r.task = st.task->task;
    r.fingerprint = fingerprint;
    r.schedule = scheduleToJson(batch.schedules[k]);
    r.origin = batch.origins[k];
    r.kernel = st.task->description;
    r.flops = st.task->flops;
    std::string error;
    if (!db.add(r, error))
      log("tune: warning: " + error);
    st.record(r);
    ++st.newTrials;
    ++summary.newTrials;
    st.curve.push_back(st.bestNs());
  }
}

/// Whether the search's share of the time limit is spent (the rest is the
/// confirmation stage's when there is one).
bool SearchRun::outOfTime() {
  double share = options.compare ? 1 - options.confirmShare : 1;
  if (options.timeLimitSeconds > 0 &&
      elapsed() >= options.timeLimitSeconds * share) {
    summary.stoppedByTime = true;
    return true;
  }
  return false;
}

/// The task where the model as a whole gains most: a task's share of the
/// model's time, times how fast its best has been improving (with a floor,
/// and a bonus for tasks measured little so far).
std::optional<size_t> SearchRun::pickTask() const {
  std::optional<size_t> pick;
  double bestPriority = -1;
  for (size_t i = 0; i < states.size(); ++i) {
    const TaskState &st = states[i];
    if (st.exhausted || st.task->space.knobs.empty())
      continue;
    double time = st.task->launches * (st.best ? st.bestNs() : 1e6);
    double gain = 0.05;
    if (st.roundBest.size() >= 1 && st.roundBest.back() > 0 && st.best)
      gain += std::max(0.0, (st.roundBest.back() - st.bestNs()) /
                                st.roundBest.back());
    gain += 1.0 / std::sqrt(double(1 + st.trials));
    double priority = time * gain;
    if (priority > bestPriority)
      bestPriority = priority, pick = i;
  }
  return pick;
}

SearchSummary SearchRun::run() {
  int64_t spent = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    states[i].task = &tasks[i];
    for (const TuningRecord &r : db.records(tasks[i].task, fingerprint))
      states[i].record(r);
    spent += states[i].trials;
  }
  budget = options.trials - spent;
  model = std::make_unique<CostModel>(options.seed);

  if (budget > 0) {
    // Every task first: its default and a few random samples.
    int64_t initial = std::clamp<int64_t>(
        budget / std::max<int64_t>(1, int64_t(tasks.size())), 1,
        int64_t(options.batch));
    retrain();
    for (size_t i = 0; i < states.size() && summary.newTrials < budget; ++i) {
      if (outOfTime())
        break;
      if (states[i].trials > 0 && states[i].defaultRecord)
        continue;
      round(i, std::min(initial, budget - summary.newTrials));
      progress(false);
    }
    retrain();
    // Then where the model as a whole gains most.
    while (summary.newTrials < budget && !outOfTime()) {
      std::optional<size_t> pick = pickTask();
      if (!pick)
        break;
      round(*pick, std::min<int64_t>(int64_t(options.batch),
                                     budget - summary.newTrials));
      retrain();
      progress(false);
    }
    progress(true);
  }
  std::vector<std::string> confirmed = confirmTasks(
      tasks, options.compare, db, fingerprint,
      [&] {
        return options.timeLimitSeconds > 0 &&
               elapsed() >= options.timeLimitSeconds;
      },
      [&](const std::string &line) { log(line); });

  for (size_t i = 0; i < states.size(); ++i) {
    TaskState &st = states[i];
    TaskOutcome o;
    o.chosen = db.chosen(tasks[i].task, fingerprint);
    o.confirmation = confirmed[i];
    o.defaultRecord = st.defaultRecord;
    o.best = st.best;
    o.trials = st.trials;
    o.newTrials = st.newTrials;
    o.failed = st.failures;
    o.bestCurve = st.curve;
    summary.tasks.push_back(std::move(o));
  }
  summary.seconds = elapsed();
  return summary;
}

} // namespace

SearchSummary runSearch(const std::vector<SearchTask> &tasks,
                        const Measurer &measure, const Featurizer &features,
                        TuningDatabase &db, const std::string &fingerprint,
                        const SearchOptions &options) {
  return SearchRun(tasks, measure, features, db, fingerprint, options).run();
}

} // namespace ign::search
