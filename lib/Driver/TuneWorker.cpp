//===- TuneWorker.cpp - `ignc tune-worker`: build and time one candidate --===//
//
// The child processes of a tuning run. `build` compiles a task module with
// one schedule through the same pipeline as `ignc`; `measure` checks a
// bundle's outputs against the reference lowering's and times it;
// `compare` checks several bundles and times them side by side in one
// process, interleaved run by run (the confirmation stage's measurement).
//
//===----------------------------------------------------------------------===//

#include "RuntimeHelpers.h"
#include "Tuning.h"
#include "ign/Bundle/BundleWriter.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Search/Validator.h"
#include "ign/Target/Pipeline.h"
#include "ign/Target/TargetRegistry.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <nlohmann/json.hpp>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

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
  /// `compare`: the bundles after the first (which is `path`).
  std::vector<std::string> others;
  bool writeReference = false;
  int seeds = 3, threads = 0, maxRuns = 200;
  double minTimeMs = 300;
  int64_t flushMb = 0;
  /// --evict-weights: the bundle's weights leave the caches before every
  /// timed run.
  bool evictWeights = false;
  /// --tolerance-of: float outputs are checked at this dtype's thresholds
  /// (bf16 or f16 for kernels that compute in them).
  std::optional<ignrt_dtype> toleranceOf;
};

/// `tune-worker measure BUNDLE --reference-dir DIR [--write-reference]
/// [--seeds N] [--threads T] [--min-time-ms M] [--flush-mb F] [--evict-weights]
/// [--max-runs R] [--tolerance-of bf16|f16]`; `tune-worker compare` takes
/// several bundles (the first is the baseline) and no --write-reference.
std::optional<MeasureArgs>
parseMeasureArgs(const std::vector<std::string> &args, std::string &error,
                 bool several = false) {
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
      else if (args[i] == "--evict-weights")
        m.evictWeights = true;
      else if (args[i] == "--max-runs")
        m.maxRuns = std::stoi(next());
      else if (args[i] == "--tolerance-of") {
        const std::string &dtype = next();
        if (dtype != "bf16" && dtype != "f16")
          throw std::runtime_error("--tolerance-of takes bf16 or f16");
        m.toleranceOf = dtype == "bf16" ? IGNRT_BF16 : IGNRT_F16;
      } else if (m.path.empty())
        m.path = args[i];
      else if (several)
        m.others.push_back(args[i]);
      else
        throw std::runtime_error("unexpected argument '" + args[i] + "'");
    }
  } catch (const std::exception &e) {
    error = e.what();
    return std::nullopt;
  }
  if (m.path.empty() || m.refDir.empty() || m.seeds < 1 || m.maxRuns < 1 ||
      (several && (m.others.empty() || m.writeReference))) {
    error = several ? "usage: tune-worker compare BASELINE BUNDLE... "
                      "--reference-dir DIR [--threads T]"
                    : "usage: tune-worker measure BUNDLE --reference-dir DIR "
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

/// What a timed run starts from: with --flush-mb, every cache written over
/// (a buffer larger than the last-level cache); with --evict-weights, the
/// bundle's weights evicted (CLFLUSH of every line), as a model whose data
/// per run outgrows the last-level cache finds them; else warm, as the
/// previous run left them.
class ColdStart {
public:
  ColdStart(const MeasureArgs &m, ignrt_bundle *bundle)
      : flush_(size_t(std::max<int64_t>(0, m.flushMb)) << 20) {
    const void *data = nullptr;
    if (m.evictWeights &&
        ignrt_bundle_weights(bundle, &data, &weightBytes_) == IGNRT_OK)
      weights_ = static_cast<const char *>(data);
  }
  void apply(int r) {
    if (!flush_.empty()) {
      std::memset(flush_.data(), r & 0xff, flush_.size());
      asm volatile("" : : "r"(flush_.data()) : "memory");
    }
#if defined(__x86_64__)
    if (!weights_)
      return;
    for (size_t i = 0; i < weightBytes_; i += 64)
      _mm_clflush(weights_ + i);
    _mm_mfence();
#endif
  }

private:
  std::vector<char> flush_;
  const char *weights_ = nullptr;
  size_t weightBytes_ = 0;
};

/// The latency of one run of `session` in ns, from `cold` (nullptr: as the
/// previous run left the caches); negative when the run failed.
double timeOneRun(ignrt_session *session, ColdStart *cold, int r) {
  if (cold)
    cold->apply(r);
  auto t0 = std::chrono::steady_clock::now();
  if (ignrt_session_run(session) != IGNRT_OK)
    return -1;
  auto t1 = std::chrono::steady_clock::now();
  double device = deviceNs(session);
  return device > 0 ? device
                    : std::chrono::duration<double, std::nano>(t1 - t0).count();
}

double millisecondsSince(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - begin)
      .count();
}

/// The f-quantile of sorted values (nearest rank).
double quantile(const std::vector<double> &sorted, double f) {
  return sorted[std::min(sorted.size() - 1,
                         size_t(f * double(sorted.size() - 1) + 0.5))];
}

/// Median, minimum, 90th percentile and count of the finite latencies.
void putLatencies(std::vector<double> ns, nlohmann::json &result) {
  ns.erase(std::remove_if(ns.begin(), ns.end(),
                          [](double v) { return !std::isfinite(v); }),
           ns.end());
  if (ns.empty())
    return;
  std::sort(ns.begin(), ns.end());
  result["median_ns"] = quantile(ns, 0.5);
  result["min_ns"] = ns.front();
  result["p90_ns"] = quantile(ns, 0.9);
  result["runs"] = ns.size();
}

/// One untimed run per input set, then runs rotating over the sets (no
/// candidate wins by keeping one set's data in cache) until both the
/// minimum time and 5 runs are reached, each from ColdStart's state.
std::string timeRuns(const MeasureArgs &m, ignrt_bundle *bundle,
                     std::vector<SessionPtr> &sessions,
                     nlohmann::json &result) {
  for (auto &s : sessions)
    if (ignrt_session_run(s.get()) != IGNRT_OK)
      return ignrt_last_error();
  ColdStart cold(m, bundle);
  std::vector<double> ns;
  auto begin = std::chrono::steady_clock::now();
  for (int r = 0; r < m.maxRuns; ++r) {
    double t =
        timeOneRun(sessions[size_t(r) % sessions.size()].get(), &cold, r);
    if (t < 0)
      return ignrt_last_error();
    ns.push_back(t);
    if (r + 1 >= 5 && millisecondsSince(begin) >= m.minTimeMs)
      break;
  }
  putLatencies(std::move(ns), result);
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
    error = timeRuns(*m, bundle.get(), sessions, result);
  if (!error.empty())
    return workerError(error);
  std::cout << result.dump() << "\n";
  return kExitOk;
}

/// One bundle of `tune-worker compare`: its sessions, its latency in each
/// round (NaN where it did not run) and what became of it.
struct Contender {
  BundlePtr bundle;
  std::vector<SessionPtr> sessions;
  std::unique_ptr<ColdStart> cold;
  std::vector<double> ns;
  nlohmann::json result = {{"status", "ok"}};
  bool timed() const { return result["status"] == "ok"; }
  void fail(const std::string &message) {
    result = {{"status", "error"}, {"message", message}};
  }
};

/// Opens a bundle and checks its outputs (which also warms it up); what
/// goes wrong is the contender's status, not the worker's.
void prepareContender(const std::string &path, const MeasureArgs &m,
                      Contender &c) {
  ignrt_bundle *raw = nullptr;
  if (ignrt_bundle_open(path.c_str(), &raw) != IGNRT_OK)
    return c.fail(ignrt_last_error());
  c.bundle.reset(raw);
  if (!createSessions(c.bundle.get(), m, c.sessions))
    return c.fail(ignrt_last_error());
  std::string error = checkOutputs(c.bundle.get(), m, c.sessions, c.result);
  if (!error.empty())
    c.fail(error);
  c.cold = std::make_unique<ColdStart>(m, c.bundle.get());
}

/// Rounds of one timed run per contender, each right after an untimed run
/// of the same session, until both the minimum time and 20 rounds are
/// reached. As in `measure`, a timed run finds its session's threads awake
/// and (but for ColdStart) its data where the previous run left it: a
/// kernel in a model runs among others on one warm thread pool; right after
/// another contender's session, it would time mostly the wake-up of its own
/// threads. And as in a model, no other pool competes for the cores: after
/// its timed run, a contender's workers are left to finish spinning (about
/// 11 ms of yields on Zen 4) and go to sleep before the next one starts;
/// two bundles that are the same read 1.25x apart without it.
void compareRounds(const MeasureArgs &m, std::vector<Contender> &cs) {
  constexpr auto kSettle = std::chrono::milliseconds(25);
  auto begin = std::chrono::steady_clock::now();
  for (int r = 0; r < m.maxRuns; ++r) {
    for (Contender &c : cs) {
      if (c.timed())
        std::this_thread::sleep_for(kSettle);
      double t = std::nan("");
      if (c.timed()) {
        ignrt_session *session =
            c.sessions[size_t(r) % c.sessions.size()].get();
        t = timeOneRun(session, nullptr, r);
        if (t >= 0)
          t = timeOneRun(session, c.cold.get(), r);
        if (t < 0) {
          c.fail(ignrt_last_error());
          t = std::nan("");
        }
      }
      c.ns.push_back(t);
    }
    if (r + 1 >= 20 && millisecondsSince(begin) >= m.minTimeMs)
      break;
  }
}

/// The ratio of `other`'s latency to `base`'s in the rounds both ran: its
/// median and a distribution-free 95% interval for it (the order
/// statistics n/2 -+ 0.98 sqrt(n) of the ratios).
void putRatio(const std::vector<double> &base, const std::vector<double> &other,
              nlohmann::json &result) {
  std::vector<double> q;
  for (size_t r = 0; r < base.size() && r < other.size(); ++r)
    if (std::isfinite(base[r]) && std::isfinite(other[r]) && base[r] > 0)
      q.push_back(other[r] / base[r]);
  if (q.size() < 5)
    return;
  std::sort(q.begin(), q.end());
  double n = double(q.size()), half = 0.98 * std::sqrt(n);
  result["ratio"] = quantile(q, 0.5);
  result["ratio_low"] = q[size_t(std::max(0.0, std::floor(n / 2 - half)))];
  result["ratio_high"] =
      q[std::min(q.size() - 1, size_t(std::ceil(n / 2 + half)))];
}

/// Checks each bundle's outputs against DIR's, then times them side by
/// side; prints one JSON line: {"results": [...]}, one per bundle in the
/// order given, each as `measure` prints it plus its latency's ratio to
/// the first bundle's (ratio, ratio_low, ratio_high).
int workerCompare(const std::vector<std::string> &args) {
  std::string error;
  std::optional<MeasureArgs> m = parseMeasureArgs(args, error, true);
  if (!m)
    return workerError(error);
  registerDevices();
  std::vector<std::string> paths = {m->path};
  paths.insert(paths.end(), m->others.begin(), m->others.end());
  std::vector<Contender> cs(paths.size());
  for (size_t i = 0; i < paths.size(); ++i)
    prepareContender(paths[i], *m, cs[i]);
  if (!cs[0].timed())
    return workerError("the baseline '" + paths[0] +
                       "': " + cs[0].result.value("message", "wrong outputs"));
  compareRounds(*m, cs);
  nlohmann::json results = nlohmann::json::array();
  for (Contender &c : cs) {
    if (c.timed()) {
      putLatencies(c.ns, c.result);
      if (&c != &cs[0])
        putRatio(cs[0].ns, c.ns, c.result);
    }
    results.push_back(c.result);
  }
  std::cout << nlohmann::json{{"results", results}}.dump() << "\n";
  return kExitOk;
}

} // namespace

int runTuneWorker(const std::vector<std::string> &args) {
  if (args.empty())
    return workerError("usage: tune-worker build|measure|compare ...");
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "build")
    return workerBuild(rest);
  if (args[0] == "measure")
    return workerMeasure(rest);
  if (args[0] == "compare")
    return workerCompare(rest);
  return workerError("unknown tune-worker command '" + args[0] + "'");
}

} // namespace ign
