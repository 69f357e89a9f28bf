//===- Tuning.cpp - the search agent on any target ------------------------===//
//
// The glue between lib/Search and the selected target, naming none: task
// modules written to a work directory, the target's half of every task
// (space, features) and its runner, the search, and the tuning report. The
// `ignc tune-worker` child processes build a candidate through the same
// compile pipeline and measure it with libignrt against the reference
// lowering's outputs.
//
//===----------------------------------------------------------------------===//

#include "Tuning.h"
#include "RuntimeHelpers.h"
#include "ign/Bundle/BundleWriter.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Search/Validator.h"
#include "ign/Search/WorkerProcess.h"
#include "ign/Target/Pipeline.h"
#include "ign/Target/TargetRegistry.h"
#include "ign/Transforms/KernelTasks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace mlir;
namespace fs = std::filesystem;

namespace ign {

namespace {

bool readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

bool writeFile(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), std::streamsize(data.size()));
  return bool(out);
}

int workerError(const std::string &message) {
  std::cerr << "ignc tune-worker: error: " << message << "\n";
  return kExitRuntime;
}

struct BuildArgs {
  std::string task, scheduleFile, out, target = "host", chip;
  std::string precision = "fp32";
  bool reference = false;
};

/// `tune-worker build TASK.mlir (--schedule-file F | --reference) -o OUT
/// [--target T --chip C --precision P]`: the task compiled for T (the
/// host's reference lowering with --reference, in fp32) with F's knobs on
/// the kernel T runs.
std::optional<BuildArgs> parseBuildArgs(const std::vector<std::string> &args) {
  BuildArgs b;
  for (size_t i = 0; i < args.size(); ++i) {
    bool hasValue = i + 1 < args.size();
    if (args[i] == "--schedule-file" && hasValue)
      b.scheduleFile = args[++i];
    else if (args[i] == "--reference")
      b.reference = true;
    else if (args[i] == "-o" && hasValue)
      b.out = args[++i];
    else if (args[i] == "--target" && hasValue)
      b.target = args[++i];
    else if (args[i] == "--chip" && hasValue)
      b.chip = args[++i];
    else if (args[i] == "--precision" && hasValue)
      b.precision = args[++i];
    else if (b.task.empty())
      b.task = args[i];
    else
      return std::nullopt;
  }
  if (b.task.empty() || b.out.empty() ||
      (b.scheduleFile.empty() && !b.reference))
    return std::nullopt;
  return b;
}

int workerBuild(const std::vector<std::string> &args) {
  std::optional<BuildArgs> b = parseBuildArgs(args);
  if (!b)
    return workerError("usage: tune-worker build TASK.mlir (--schedule-file "
                       "FILE | --reference) -o OUT.ignb [--target T --chip C]");
  search::Schedule knobs;
  if (!b->reference) {
    std::string text, error;
    if (!readFile(b->scheduleFile, text))
      return workerError("cannot read '" + b->scheduleFile + "'");
    auto parsed = search::scheduleFromJson(text, &error);
    if (!parsed)
      return workerError(b->scheduleFile + ": " + error);
    knobs = *parsed;
  }
  target::registerBuiltinTargets();
  std::string error;
  auto selection = b->reference
                       ? target::resolveTarget("host", "", error)
                       : target::resolveTarget(b->target, b->chip, error);
  if (b->reference && selection)
    selection->target = target::fallbackTarget();
  if (!selection || !selection->target)
    return workerError(error.empty() ? "no host target" : error);
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<IgnDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect, linalg::LinalgDialect,
                      math::MathDialect>();
  context.printOpOnDiagnostic(false);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(b->task, &context);
  if (!module)
    return workerError("cannot parse task module '" + b->task + "'");
  // The model's weights are weights here too: a host kernel then reads its
  // constant panels packed at compile time, as in the model's bundle.
  bindTaskWeights(*module);
  const target::Target *selected = selection->target;
  target::PipelineOptions pipeline;
  pipeline.kernelsFormed = true;
  pipeline.compile.config = {selection->chip,
                             b->reference ? "reference" : "default", true,
                             b->reference ? "fp32" : b->precision};
  if (std::string why =
          selected->checkPrecision(pipeline.compile.config.precision);
      !why.empty())
    return workerError("--precision: " + why);
  pipeline.lookup = [&](const target::Target &where, const KernelSummary &) {
    return &where == selected ? &knobs : nullptr;
  };
  auto contents = target::compileModule(*module, *selected, pipeline);
  if (failed(contents))
    return workerError("the schedule does not compile");
  contents->modelSource = fs::path(b->task).filename().string();
  error = bundle::writeBundle(b->out, *contents);
  if (!error.empty())
    return workerError(error);
  return kExitOk;
}

struct MeasureArgs {
  std::string path, refDir;
  bool writeReference = false;
  int seeds = 3, threads = 0, maxRuns = 200;
  double minTimeMs = 300;
  int64_t flushMb = 0;
  /// --tolerance-of: float outputs are checked at this dtype's thresholds
  /// (bf16 or f16 for kernels that compute in them).
  std::optional<ignrt_dtype> toleranceOf;
};

/// `tune-worker measure BUNDLE --reference-dir DIR [--write-reference]
/// [--seeds N] [--threads T] [--min-time-ms M] [--flush-mb F]
/// [--max-runs R] [--tolerance-of bf16|f16]`.
std::optional<MeasureArgs>
parseMeasureArgs(const std::vector<std::string> &args, std::string &error) {
  MeasureArgs m;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      auto next = [&]() -> const std::string & {
        if (i + 1 >= args.size())
          throw std::runtime_error(args[i] + " needs a value");
        return args[++i];
      };
      if (args[i] == "--reference-dir")
        m.refDir = next();
      else if (args[i] == "--write-reference")
        m.writeReference = true;
      else if (args[i] == "--seeds")
        m.seeds = std::stoi(next());
      else if (args[i] == "--threads")
        m.threads = std::stoi(next());
      else if (args[i] == "--min-time-ms")
        m.minTimeMs = std::stod(next());
      else if (args[i] == "--flush-mb")
        m.flushMb = std::stoll(next());
      else if (args[i] == "--max-runs")
        m.maxRuns = std::stoi(next());
      else if (args[i] == "--tolerance-of") {
        const std::string &dtype = next();
        if (dtype != "bf16" && dtype != "f16")
          throw std::runtime_error("--tolerance-of takes bf16 or f16");
        m.toleranceOf = dtype == "bf16" ? IGNRT_BF16 : IGNRT_F16;
      } else if (m.path.empty())
        m.path = args[i];
      else
        throw std::runtime_error("unexpected argument '" + args[i] + "'");
    }
  } catch (const std::exception &e) {
    error = e.what();
    return std::nullopt;
  }
  if (m.path.empty() || m.refDir.empty() || m.seeds < 1 || m.maxRuns < 1) {
    error = "usage: tune-worker measure BUNDLE --reference-dir DIR "
            "[--write-reference] [--seeds N] [--threads T]";
    return std::nullopt;
  }
  return m;
}

/// One session per input set; set s is the same in the reference's worker
/// and in every candidate's: seeded by its index.
bool createSessions(ignrt_bundle *bundle, const MeasureArgs &m,
                    std::vector<SessionPtr> &sessions) {
  for (int s = 0; s < m.seeds; ++s) {
    ignrt_session *raw = nullptr;
    if (ignrt_session_create(bundle, m.threads, &raw) != IGNRT_OK)
      return false;
    sessions.emplace_back(raw);
    std::mt19937_64 rng(0x5eed0000u + uint64_t(s));
    for (size_t i = 0; i < ignrt_bundle_num_inputs(bundle); ++i) {
      ignrt_tensor_info info;
      ignrt_bundle_input(bundle, i, &info);
      std::string bytes = randomBytes(info, rng);
      if (ignrt_session_set_input(raw, info.name, info.dtype, info.dims,
                                  info.rank, bytes.data(),
                                  bytes.size()) != IGNRT_OK)
        return false;
    }
  }
  return true;
}

/// Runs every input set once with poisoned outputs and writes (or checks
/// against) the reference outputs. "" or an error message.
std::string checkOutputs(ignrt_bundle *bundle, const MeasureArgs &m,
                         std::vector<SessionPtr> &sessions,
                         nlohmann::json &result) {
  double worstL2 = 0, worstAbs = 0;
  bool pass = true;
  size_t numOutputs = ignrt_bundle_num_outputs(bundle);
  for (int s = 0; s < m.seeds; ++s) {
    ignrt_session *session = sessions[size_t(s)].get();
    // Poisoned outputs: an element no kernel writes stays NaN (or -1).
    ignrt_session_fill_outputs(session, 0xFF);
    if (ignrt_session_run(session) != IGNRT_OK)
      return ignrt_last_error();
    for (size_t o = 0; o < numOutputs; ++o) {
      ignrt_tensor_info info;
      ignrt_bundle_output(bundle, o, &info);
      const void *data;
      size_t bytes;
      ignrt_session_output(session, info.name, &data, &bytes);
      const char *got = static_cast<const char *>(data);
      std::string file = m.refDir + "/set" + std::to_string(s) + ".out" +
                         std::to_string(o) + ".bin";
      if (m.writeReference) {
        if (!writeFile(file, std::string(got, bytes)))
          return "cannot write '" + file + "'";
        continue;
      }
      std::string want;
      if (!readFile(file, want) || want.size() != bytes)
        return "no reference output '" + file + "'";
      search::Comparison c =
          search::compareOutput(got, want, bytes, info.dtype, m.toleranceOf);
      worstL2 = std::max(worstL2, c.relL2);
      worstAbs = std::max(worstAbs, c.maxAbs);
      pass &= c.pass;
    }
  }
  auto finite = [](double v) { return std::isfinite(v) ? v : 1e300; };
  result["rel_l2"] = finite(worstL2);
  result["max_abs"] = finite(worstAbs);
  if (!pass)
    result["status"] = "wrong";
  return "";
}

/// The device's own time of the session's last run (its timestamps, summed
/// over the device launches), or 0 where no launch reported one. A GPU
/// kernel is judged by it: the wall time of a launch also holds the
/// driver's copies in and out, which would hide the schedule's effect.
double deviceNs(ignrt_session *session) {
  double total = 0;
  for (size_t k = 0; k < ignrt_session_num_kernels(session); ++k) {
    ignrt_device_stats stats;
    if (ignrt_session_kernel_device(session, k, &stats) == IGNRT_OK)
      total += stats.device_ns;
  }
  return total;
}

/// One untimed run per input set, then runs rotating over the sets (no
/// candidate wins by keeping one set's data in cache) until both the
/// minimum time and 5 runs are reached. With --flush-mb, every timed run
/// starts with the caches flushed (a buffer larger than the last-level
/// cache written over): a kernel that streams megabytes of weights reads
/// them from memory in a whole model too.
std::string timeRuns(const MeasureArgs &m, std::vector<SessionPtr> &sessions,
                     nlohmann::json &result) {
  for (auto &s : sessions)
    if (ignrt_session_run(s.get()) != IGNRT_OK)
      return ignrt_last_error();
  std::vector<char> flush(size_t(std::max<int64_t>(0, m.flushMb)) << 20);
  std::vector<double> ns;
  auto begin = std::chrono::steady_clock::now();
  for (int r = 0; r < m.maxRuns; ++r) {
    ignrt_session *session = sessions[size_t(r) % sessions.size()].get();
    if (!flush.empty()) {
      std::memset(flush.data(), r & 0xff, flush.size());
      asm volatile("" : : "r"(flush.data()) : "memory");
    }
    auto t0 = std::chrono::steady_clock::now();
    if (ignrt_session_run(session) != IGNRT_OK)
      return ignrt_last_error();
    auto t1 = std::chrono::steady_clock::now();
    double device = deviceNs(session);
    ns.push_back(
        device > 0 ? device
                   : std::chrono::duration<double, std::nano>(t1 - t0).count());
    if (r + 1 >= 5 &&
        std::chrono::duration<double, std::milli>(t1 - begin).count() >=
            m.minTimeMs)
      break;
  }
  std::sort(ns.begin(), ns.end());
  auto q = [&](double f) {
    return ns[std::min(ns.size() - 1, size_t(f * double(ns.size() - 1) + 0.5))];
  };
  result["median_ns"] = q(0.5);
  result["min_ns"] = ns.front();
  result["p90_ns"] = q(0.9);
  result["runs"] = ns.size();
  return "";
}

/// Checks the outputs on N random input sets against DIR's (or writes them
/// there), then times runs rotating over the sets; prints one JSON line.
int workerMeasure(const std::vector<std::string> &args) {
  std::string error;
  std::optional<MeasureArgs> m = parseMeasureArgs(args, error);
  if (!m)
    return workerError(error);
  ignrt_bundle *rawBundle = nullptr;
  registerDevices();
  if (ignrt_bundle_open(m->path.c_str(), &rawBundle) != IGNRT_OK)
    return workerError(ignrt_last_error());
  BundlePtr bundle(rawBundle);
  std::vector<SessionPtr> sessions;
  if (!createSessions(bundle.get(), *m, sessions))
    return workerError(ignrt_last_error());
  nlohmann::json result = {{"status", "ok"}};
  error = checkOutputs(bundle.get(), *m, sessions, result);
  if (error.empty() && !m->writeReference && result["status"] == "ok")
    error = timeRuns(*m, sessions, result);
  if (!error.empty())
    return workerError(error);
  std::cout << result.dump() << "\n";
  return kExitOk;
}

} // namespace

int runTuneWorker(const std::vector<std::string> &args) {
  if (args.empty())
    return workerError("usage: tune-worker build|measure ...");
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "build")
    return workerBuild(rest);
  if (args[0] == "measure")
    return workerMeasure(rest);
  return workerError("unknown tune-worker command '" + args[0] + "'");
}

//===----------------------------------------------------------------------===//
// The parent side.
//===----------------------------------------------------------------------===//

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
    double best = o.best ? o.best->medianNs : 0;
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
    if (o.best) {
      j["schedule"] = nlohmann::json::parse(o.best->schedule, nullptr, false);
      j["rel_l2"] = o.best->relL2;
      j["max_abs"] = o.best->maxAbs;
    }
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
          o.best ? o.best->relL2 : 0.0);
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
