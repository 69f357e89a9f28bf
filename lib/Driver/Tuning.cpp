//===- Tuning.cpp - the search agent on the host target
//---------------------===//
//
// The glue between lib/Search and the host target: task modules written to
// a work directory, candidates built and measured by `ignc tune-worker`
// child processes (crash and hang isolation), the reference outputs each
// candidate is checked against, the cost model's features, the schedule
// lookup of a compile, and the tuning report.
//
//===----------------------------------------------------------------------===//

#include "Tuning.h"
#include "HostCompiler.h"
#include "RuntimeHelpers.h"
#include "Simulator.h"
#include "ign/Bundle/BundleWriter.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Search/Peak.h"
#include "ign/Search/WorkerProcess.h"
#include "llvm/Support/FormatVariadic.h"

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

/// Validation thresholds per dtype: relative L2 error over the whole
/// output and max absolute error relative to the reference's largest
/// magnitude. Integers and booleans must match exactly.
struct Tolerance {
  double relL2, maxRel;
};
std::optional<Tolerance> toleranceFor(ignrt_dtype dtype) {
  switch (dtype) {
  case IGNRT_F32:
  case IGNRT_F64:
    return Tolerance{1e-4, 1e-3};
  case IGNRT_F16:
  case IGNRT_BF16:
    return Tolerance{1e-2, 2e-2};
  default:
    return std::nullopt;
  }
}

double elementAt(const char *data, size_t i, ignrt_dtype dtype) {
  switch (dtype) {
  case IGNRT_F32: {
    float f;
    std::memcpy(&f, data + 4 * i, 4);
    return f;
  }
  case IGNRT_F64: {
    double d;
    std::memcpy(&d, data + 8 * i, 8);
    return d;
  }
  case IGNRT_F16:
  case IGNRT_BF16: {
    uint16_t h;
    std::memcpy(&h, data + 2 * i, 2);
    if (dtype == IGNRT_BF16) {
      uint32_t bits = uint32_t(h) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0    ? std::ldexp(m, -24)
               : e == 31 ? (m ? NAN : INFINITY)
                         : std::ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
  }
  case IGNRT_I64:
  case IGNRT_U64: {
    int64_t v;
    std::memcpy(&v, data + 8 * i, 8);
    return double(v);
  }
  case IGNRT_I32:
  case IGNRT_U32: {
    int32_t v;
    std::memcpy(&v, data + 4 * i, 4);
    return double(v);
  }
  case IGNRT_I16:
  case IGNRT_U16: {
    int16_t v;
    std::memcpy(&v, data + 2 * i, 2);
    return double(v);
  }
  default:
    return double(int8_t(data[i]));
  }
}

struct Comparison {
  double relL2 = 0, maxAbs = 0;
  bool pass = true;
};

/// Compares one output with its reference (a NaN or infinity where the
/// reference has a finite value fails, whatever the thresholds).
Comparison compareOutput(const char *got, const std::string &want,
                         const ignrt_tensor_info &info) {
  Comparison c;
  size_t n = info.bytes / std::max<size_t>(1, ignrt_dtype_size(info.dtype));
  std::optional<Tolerance> tol = toleranceFor(info.dtype);
  if (!tol) {
    size_t wrong = 0;
    if (std::memcmp(got, want.data(), info.bytes) != 0)
      for (size_t i = 0; i < n; ++i) {
        double d = std::fabs(elementAt(got, i, info.dtype) -
                             elementAt(want.data(), i, info.dtype));
        wrong += d != 0;
        c.maxAbs = std::max(c.maxAbs, d);
      }
    c.relL2 = n ? double(wrong) / double(n) : 0;
    c.pass = wrong == 0;
    return c;
  }
  double err2 = 0, ref2 = 0, refMax = 0;
  bool nonFinite = false;
  for (size_t i = 0; i < n; ++i) {
    double g = elementAt(got, i, info.dtype);
    double w = elementAt(want.data(), i, info.dtype);
    if (!std::isfinite(w)) {
      if (!(std::isnan(w) ? std::isnan(g) : g == w))
        nonFinite = true;
      continue;
    }
    if (!std::isfinite(g)) {
      nonFinite = true;
      continue;
    }
    err2 += (g - w) * (g - w);
    ref2 += w * w;
    refMax = std::max(refMax, std::fabs(w));
    c.maxAbs = std::max(c.maxAbs, std::fabs(g - w));
  }
  c.relL2 = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  if (nonFinite) {
    c.relL2 = INFINITY;
    c.maxAbs = INFINITY;
  }
  c.pass = !nonFinite && c.relL2 <= tol->relL2 &&
           c.maxAbs <= tol->maxRel * std::max(1.0, refMax);
  return c;
}

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

/// `tune-worker build TASK.mlir (--schedule-file F | --reference) -o OUT`.
int workerBuild(const std::vector<std::string> &args) {
  std::string task, scheduleFile, out;
  bool reference = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--schedule-file" && i + 1 < args.size())
      scheduleFile = args[++i];
    else if (args[i] == "--reference")
      reference = true;
    else if (args[i] == "-o" && i + 1 < args.size())
      out = args[++i];
    else if (task.empty())
      task = args[i];
    else
      return workerError("unexpected argument '" + args[i] + "'");
  }
  if (task.empty() || out.empty() || (scheduleFile.empty() && !reference))
    return workerError("usage: tune-worker build TASK.mlir (--schedule-file "
                       "FILE | --reference) -o OUT.ignb");
  search::Schedule knobs;
  if (!reference) {
    std::string text, error;
    if (!readFile(scheduleFile, text))
      return workerError("cannot read '" + scheduleFile + "'");
    auto parsed = search::scheduleFromJson(text, &error);
    if (!parsed)
      return workerError(scheduleFile + ": " + error);
    knobs = *parsed;
  }
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<IgnDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect, linalg::LinalgDialect,
                      math::MathDialect>();
  context.printOpOnDiagnostic(false);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(task, &context);
  if (!module)
    return workerError("cannot parse task module '" + task + "'");
  host::HostOptions options;
  options.kernelsFormed = true;
  options.schedule = reference ? "reference" : "default";
  options.scheduleFor = [&](const KernelSummary &) { return &knobs; };
  auto contents = host::compileForHost(*module, options);
  if (failed(contents))
    return workerError("the schedule does not compile");
  contents->modelSource = fs::path(task).filename().string();
  std::string error = bundle::writeBundle(out, *contents);
  if (!error.empty())
    return workerError(error);
  return kExitOk;
}

/// `tune-worker measure BUNDLE --reference-dir DIR [--write-reference]
/// [--seeds N] [--threads T] [--min-time-ms M] [--max-runs R]`: checks the
/// outputs on N random input sets against DIR's (or writes them there),
/// then times runs rotating over the N sets, and prints one JSON line.
int workerMeasure(const std::vector<std::string> &args) {
  std::string path, refDir;
  bool writeReference = false;
  int seeds = 3, threads = 0, maxRuns = 200;
  double minTimeMs = 300;
  int64_t flushMb = 0;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      auto next = [&]() -> const std::string & {
        if (i + 1 >= args.size())
          throw std::runtime_error(args[i] + " needs a value");
        return args[++i];
      };
      if (args[i] == "--reference-dir")
        refDir = next();
      else if (args[i] == "--write-reference")
        writeReference = true;
      else if (args[i] == "--seeds")
        seeds = std::stoi(next());
      else if (args[i] == "--threads")
        threads = std::stoi(next());
      else if (args[i] == "--min-time-ms")
        minTimeMs = std::stod(next());
      else if (args[i] == "--flush-mb")
        flushMb = std::stoll(next());
      else if (args[i] == "--max-runs")
        maxRuns = std::stoi(next());
      else if (path.empty())
        path = args[i];
      else
        throw std::runtime_error("unexpected argument '" + args[i] + "'");
    }
  } catch (const std::exception &e) {
    return workerError(e.what());
  }
  if (path.empty() || refDir.empty() || seeds < 1 || maxRuns < 1)
    return workerError("usage: tune-worker measure BUNDLE --reference-dir DIR "
                       "[--write-reference] [--seeds N] [--threads T]");
  ignrt_bundle *rawBundle = nullptr;
  registerDevices();
  if (ignrt_bundle_open(path.c_str(), &rawBundle) != IGNRT_OK)
    return workerError(ignrt_last_error());
  BundlePtr bundle(rawBundle);
  std::vector<SessionPtr> sessions;
  size_t numOutputs = ignrt_bundle_num_outputs(bundle.get());
  for (int s = 0; s < seeds; ++s) {
    ignrt_session *raw = nullptr;
    if (ignrt_session_create(bundle.get(), threads, &raw) != IGNRT_OK)
      return workerError(ignrt_last_error());
    sessions.emplace_back(raw);
    // Input set s is the same in the reference's worker and in every
    // candidate's: seeded by its index.
    std::mt19937_64 rng(0x5eed0000u + uint64_t(s));
    for (size_t i = 0; i < ignrt_bundle_num_inputs(bundle.get()); ++i) {
      ignrt_tensor_info info;
      ignrt_bundle_input(bundle.get(), i, &info);
      std::string bytes = randomBytes(info, rng);
      if (ignrt_session_set_input(raw, info.name, info.dtype, info.dims,
                                  info.rank, bytes.data(),
                                  bytes.size()) != IGNRT_OK)
        return workerError(ignrt_last_error());
    }
  }
  nlohmann::json result = {{"status", "ok"}};
  double worstL2 = 0, worstAbs = 0;
  bool pass = true;
  for (int s = 0; s < seeds; ++s) {
    ignrt_session *session = sessions[size_t(s)].get();
    // Poisoned outputs: an element no kernel writes stays NaN (or -1).
    ignrt_session_fill_outputs(session, 0xFF);
    if (ignrt_session_run(session) != IGNRT_OK)
      return workerError(ignrt_last_error());
    for (size_t o = 0; o < numOutputs; ++o) {
      ignrt_tensor_info info;
      ignrt_bundle_output(bundle.get(), o, &info);
      const void *data;
      size_t bytes;
      ignrt_session_output(session, info.name, &data, &bytes);
      std::string file = refDir + "/set" + std::to_string(s) + ".out" +
                         std::to_string(o) + ".bin";
      if (writeReference) {
        if (!writeFile(file,
                       std::string(static_cast<const char *>(data), bytes)))
          return workerError("cannot write '" + file + "'");
        continue;
      }
      std::string want;
      if (!readFile(file, want) || want.size() != bytes)
        return workerError("no reference output '" + file + "'");
      Comparison c = compareOutput(static_cast<const char *>(data), want, info);
      worstL2 = std::max(worstL2, c.relL2);
      worstAbs = std::max(worstAbs, c.maxAbs);
      pass &= c.pass;
    }
  }
  auto finite = [](double v) { return std::isfinite(v) ? v : 1e300; };
  result["rel_l2"] = finite(worstL2);
  result["max_abs"] = finite(worstAbs);
  if (!pass) {
    result["status"] = "wrong";
    std::cout << result.dump() << "\n";
    return kExitOk;
  }
  if (!writeReference) {
    // One untimed run per input set, then runs rotating over the sets (no
    // candidate wins by keeping one set's data in cache) until both the
    // minimum time and 5 runs are reached.
    for (auto &s : sessions)
      if (ignrt_session_run(s.get()) != IGNRT_OK)
        return workerError(ignrt_last_error());
    // With --flush-mb, every timed run starts with the caches flushed (a
    // buffer larger than the last-level cache written over): a kernel that
    // streams megabytes of weights reads them from memory in a whole model
    // too, and a candidate must not win by finding them in cache.
    std::vector<char> flush(size_t(std::max<int64_t>(0, flushMb)) << 20);
    std::vector<double> ns;
    auto begin = std::chrono::steady_clock::now();
    for (int r = 0; r < maxRuns; ++r) {
      ignrt_session *session = sessions[size_t(r) % sessions.size()].get();
      if (!flush.empty()) {
        std::memset(flush.data(), r & 0xff, flush.size());
        asm volatile("" : : "r"(flush.data()) : "memory");
      }
      auto t0 = std::chrono::steady_clock::now();
      if (ignrt_session_run(session) != IGNRT_OK)
        return workerError(ignrt_last_error());
      auto t1 = std::chrono::steady_clock::now();
      ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
      if (r + 1 >= 5 &&
          std::chrono::duration<double, std::milli>(t1 - begin).count() >=
              minTimeMs)
        break;
    }
    std::sort(ns.begin(), ns.end());
    auto q = [&](double f) {
      return ns[std::min(ns.size() - 1,
                         size_t(f * double(ns.size() - 1) + 0.5))];
    };
    result["median_ns"] = q(0.5);
    result["min_ns"] = ns.front();
    result["p90_ns"] = q(0.9);
    result["runs"] = ns.size();
  }
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

namespace {

/// Features of (kernel, schedule) for the cost model: the kernel's size
/// and intensity, then what the knobs mean (workgroups, the first two
/// contractions' register tiles and chunks).
std::vector<float> hostFeatures(const KernelSummary &k,
                                const search::Schedule &s, int64_t lanes,
                                int threads) {
  auto get = [&](const std::string &name, int64_t fallback) {
    auto it = s.find(name);
    return it == s.end() ? fallback : it->second;
  };
  auto lg = [](double v) { return float(std::log2(1.0 + std::max(0.0, v))); };
  std::vector<float> f;
  double bytes = double(k.bytesRead + k.bytesWritten);
  f.push_back(lg(double(k.flops)));
  f.push_back(lg(bytes));
  f.push_back(float(double(k.flops) / std::max(1.0, bytes)));
  int64_t workgroups = 1, splitLoops = 0, innerSplit = 1, lastLoop = -1;
  for (auto &[name, value] : s)
    if (name.rfind("split.", 0) == 0) {
      workgroups *= std::max<int64_t>(1, value);
      splitLoops += value > 1;
      int64_t loop = std::atoll(name.c_str() + 6);
      if (loop > lastLoop)
        lastLoop = loop, innerSplit = value;
    }
  f.push_back(lg(double(workgroups)));
  f.push_back(float(splitLoops));
  f.push_back(lg(double(innerSplit)));
  // Load balance: the share of the last wave of workgroups that is busy.
  int64_t waves = (workgroups + threads - 1) / std::max(1, threads);
  f.push_back(float(double(workgroups) / double(waves * std::max(1, threads))));
  for (int c = 0; c < 2; ++c) {
    std::string p = "c" + std::to_string(c) + ".";
    int64_t rows = get(p + "rows", 0), cols = get(p + "cols", 0);
    int64_t vectors = (cols + lanes - 1) / lanes;
    f.push_back(float(rows));
    f.push_back(float(cols));
    f.push_back(float(vectors));
    f.push_back(float(rows * vectors));
    f.push_back(lg(double(get(p + "k_tile", 0))));
    f.push_back(float(get(p + "order", 0)));
    f.push_back(float(get(p + "row_dim", 0)));
  }
  return f;
}

struct TaskFiles {
  std::string module;       // task module (.mlir)
  std::string referenceDir; // reference outputs
  bool referenceReady = false;
  std::string referenceError;
};

} // namespace

/// The search's options from the command line's.
static search::SearchOptions
searchOptions(const TuneOptions &tune, Verbosity verbosity, size_t batch,
              std::function<void(const std::string &)> log) {
  search::SearchOptions options;
  options.trials = tune.trials > 0 ? tune.trials : int64_t(1) << 40;
  options.timeLimitSeconds = tune.seconds;
  options.seed = tune.seed;
  options.useModel = tune.search != "random";
  options.terminal = verbosity != Verbosity::Quiet && isatty(2);
  options.batch = batch;
  options.log = std::move(log);
  return options;
}

std::optional<TuningRun>
tuneModel(ModuleOp module, const host::HostOptions &hostOptions,
          const TuneOptions &tune, search::TuningDatabase &db,
          const std::string &fingerprint, Verbosity verbosity) {
  auto log = [&](const std::string &line) {
    if (verbosity != Verbosity::Quiet)
      llvm::errs() << line << "\n";
  };
  auto tasks = host::extractHostTasks(module, hostOptions);
  if (failed(tasks))
    return std::nullopt;
  std::string self = search::selfExecutable();
  if (self.empty()) {
    llvm::errs() << "ignc: error: cannot find the ignc executable to start "
                    "tuning workers\n";
    return std::nullopt;
  }
  llvm::SmallString<128> work;
  if (llvm::sys::fs::createUniqueDirectory("ignc-tune", work)) {
    llvm::errs() << "ignc: error: cannot create a work directory for tuning\n";
    return std::nullopt;
  }
  // The work directory goes when tuning ends, however it ends, unless
  // IGNC_TUNE_KEEP is set (to replay a worker by hand: docs/search.md).
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      if (const char *keep = std::getenv("IGNC_TUNE_KEEP"); keep && *keep) {
        llvm::errs() << "tune: kept the work directory " << dir << "\n";
        return;
      }
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{work.str().str()};

  int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  int jobs = tune.jobs > 0 ? tune.jobs : cores;
  int threads = tune.threads > 0 ? tune.threads : cores;
  int64_t lanes = std::max<int64_t>(1, host::hostVectorBits(hostOptions) / 32);

  TuningRun run;
  std::vector<search::SearchTask> searchTasks;
  std::vector<TaskFiles> files;
  for (size_t i = 0; i < tasks->size(); ++i) {
    host::HostTask &t = (*tasks)[i];
    auto space = host::hostScheduleSpace(*t.module);
    if (failed(space))
      return std::nullopt;
    TaskFiles f;
    f.module = (work + "/task" + std::to_string(i) + ".mlir").str();
    f.referenceDir = (work + "/task" + std::to_string(i) + ".ref").str();
    fs::create_directories(f.referenceDir);
    std::error_code ec;
    llvm::raw_fd_ostream os(f.module, ec);
    if (ec) {
      llvm::errs() << "ignc: error: cannot write '" << f.module
                   << "': " << ec.message() << "\n";
      return std::nullopt;
    }
    t.module->print(os);
    files.push_back(f);
    search::SearchTask st;
    st.task = t.summary.task;
    st.description = llvm::join(t.summary.opShapes, "; ");
    st.space = std::move(*space);
    st.launches = t.summary.launches;
    st.flops = int64_t(t.summary.flops);
    searchTasks.push_back(std::move(st));
    run.kernels.push_back(t.summary);
  }

  std::vector<search::Schedule> extras;
  for (const std::string &text : tune.extraCandidates) {
    std::string error;
    auto s = search::scheduleFromJson(text, &error);
    if (!s) {
      llvm::errs() << "ignc: error: extra candidate '" << text << "': " << error
                   << "\n";
      return std::nullopt;
    }
    extras.push_back(*s);
  }

  // Kernels moving at least 1 MB are timed with cold caches (weights
  // stream from memory in a whole model): twice the last-level cache is
  // written over before each timed run.
  int64_t llcMb = 32;
  if (long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE); l3 > 0)
    llcMb = std::max<int64_t>(1, int64_t(l3 >> 20));
  auto flushMb = [&](size_t i) -> int64_t {
    const KernelSummary &k = run.kernels[i];
    return k.bytesRead + k.bytesWritten >= (uint64_t(1) << 20)
               ? std::min<int64_t>(2 * llcMb, 256)
               : 0;
  };
  size_t counter = 0;
  auto measure = [&](size_t i, const std::vector<search::Schedule> &batch) {
    TaskFiles &f = files[i];
    std::vector<search::TuningRecord> records(batch.size());
    if (!f.referenceReady && f.referenceError.empty()) {
      std::string ref = f.referenceDir + "/reference.ignb";
      auto built = search::runWorker(
          {self, "tune-worker", "build", f.module, "--reference", "-o", ref},
          std::max(300.0, tune.candidateTimeout));
      auto wrote =
          built.ok()
              ? search::runWorker({self, "tune-worker", "measure", ref,
                                   "--reference-dir", f.referenceDir,
                                   "--write-reference", "--threads", "1"},
                                  std::max(600.0, tune.candidateTimeout))
              : built;
      if (built.ok() && wrote.ok())
        f.referenceReady = true;
      else
        f.referenceError =
            "no reference: " +
            (built.ok() ? wrote : built)
                .describe(std::max(300.0, tune.candidateTimeout));
    }
    if (!f.referenceReady) {
      for (auto &r : records) {
        r.status = search::Status::Error;
        r.message = f.referenceError;
      }
      return records;
    }
    std::vector<std::vector<std::string>> builds;
    std::vector<std::string> bundles;
    for (const search::Schedule &s : batch) {
      std::string base = (work + "/c" + std::to_string(counter++)).str();
      writeFile(base + ".json", search::scheduleToJson(s));
      bundles.push_back(base + ".ignb");
      builds.push_back({self, "tune-worker", "build", f.module,
                        "--schedule-file", base + ".json", "-o",
                        base + ".ignb"});
    }
    auto built = search::runWorkers(builds, jobs, tune.candidateTimeout);
    for (size_t k = 0; k < batch.size(); ++k) {
      search::TuningRecord &r = records[k];
      if (!built[k].ok()) {
        r.status = built[k].timedOut ? search::Status::Timeout
                   : built[k].signal ? search::Status::Crash
                                     : search::Status::BuildError;
        r.message = "build: " + built[k].describe(tune.candidateTimeout);
        continue;
      }
      auto m = search::runWorker({self, "tune-worker", "measure", bundles[k],
                                  "--reference-dir", f.referenceDir,
                                  "--threads", std::to_string(threads),
                                  "--flush-mb", std::to_string(flushMb(i))},
                                 tune.candidateTimeout);
      std::error_code ec;
      fs::remove(bundles[k], ec);
      if (!m.ok()) {
        r.status = m.timedOut ? search::Status::Timeout
                   : m.signal ? search::Status::Crash
                              : search::Status::Error;
        r.message = m.describe(tune.candidateTimeout);
        continue;
      }
      std::string last = m.out;
      while (!last.empty() && last.back() == '\n')
        last.pop_back();
      last = last.substr(
          last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
      nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        r.status = search::Status::Error;
        r.message = "the worker printed no result";
        continue;
      }
      r.status = j.value("status", "") == "ok" ? search::Status::Ok
                                               : search::Status::Wrong;
      r.relL2 = j.value("rel_l2", 0.0);
      r.maxAbs = j.value("max_abs", 0.0);
      r.medianNs = j.value("median_ns", 0.0);
      r.minNs = j.value("min_ns", 0.0);
      r.p90Ns = j.value("p90_ns", 0.0);
      r.runs = j.value("runs", int64_t(0));
      if (r.status == search::Status::Wrong)
        r.message = "outputs differ from the reference";
      else if (!(r.medianNs > 0)) {
        r.status = search::Status::Error;
        r.message = "no timing";
      }
    }
    return records;
  };

  auto features = [&](size_t i, const search::Schedule &s) {
    return hostFeatures(run.kernels[i], s, lanes, threads);
  };

  // Injected candidates (tests): measured and recorded before the search.
  if (!extras.empty())
    for (size_t i = 0; i < searchTasks.size(); ++i) {
      auto records = measure(i, extras);
      for (size_t k = 0; k < records.size(); ++k) {
        search::TuningRecord &r = records[k];
        r.task = searchTasks[i].task;
        r.fingerprint = fingerprint;
        r.schedule = search::scheduleToJson(extras[k]);
        r.origin = "injected";
        r.kernel = searchTasks[i].description;
        r.flops = searchTasks[i].flops;
        std::string error;
        if (!db.add(r, error))
          log("tune: warning: " + error);
        log("tune: injected candidate " + r.schedule + " for task " + r.task +
            ": " + search::statusName(r.status) +
            (r.message.empty() ? "" : " (" + r.message + ")"));
      }
    }

  search::SearchOptions options =
      searchOptions(tune, verbosity, size_t(std::max(2, 4 * jobs)), log);
  run.summary = search::runSearch(searchTasks, measure, features, db,
                                  fingerprint, options);
  run.threads = threads;
  run.tasks = std::move(searchTasks);
  return run;
}

std::optional<TuningRun>
tuneSystolicModel(ModuleOp module, const host::HostOptions &hostOptions,
                  const systolic::ArrayConfig &machine, const TuneOptions &tune,
                  search::TuningDatabase &db, const std::string &fingerprint,
                  Verbosity verbosity) {
  auto tasks = host::extractHostTasks(module, hostOptions);
  if (failed(tasks))
    return std::nullopt;
  auto log = [&](const std::string &line) {
    if (verbosity != Verbosity::Quiet)
      llvm::errs() << line << "\n";
  };
  TuningRun run;
  std::vector<search::SearchTask> searchTasks;
  std::vector<systolic::ArrayKernel> arrayKernels;
  for (host::HostTask &t : *tasks) {
    func::FuncOp kernel;
    for (auto f : t.module->getOps<func::FuncOp>())
      if (f.getName() != "main")
        kernel = f;
    std::string why;
    std::optional<systolic::ArrayKernel> k =
        kernel ? systolic::matchArrayKernel(kernel, why) : std::nullopt;
    if (!k)
      continue; // a host kernel: its host schedule is not tuned here
    search::SearchTask st;
    st.task = t.summary.task;
    st.description = llvm::formatv("GEMM {0}x{1}x{2} x{3}: {4}", k->gemm.M,
                                   k->gemm.K, k->gemm.N, k->programRuns,
                                   llvm::join(t.summary.opShapes, "; "))
                         .str();
    // The default is what compiling without tuning picks.
    systolic::GemmBuffers buf = systolic::arrayKernelBuffers(machine, *k);
    auto heuristic = systolic::tuneGemmMapping(machine, k->gemm, 8, &buf,
                                               /*check=*/true);
    if (!heuristic)
      llvm::consumeError(heuristic.takeError());
    st.space = systolic::arrayScheduleSpace(
        machine, *k, heuristic ? &heuristic->mapping : nullptr);
    st.launches = t.summary.launches;
    st.flops = int64_t(t.summary.flops);
    searchTasks.push_back(std::move(st));
    run.kernels.push_back(t.summary);
    arrayKernels.push_back(std::move(*k));
  }
  if (searchTasks.empty()) {
    log("tune: no kernel of this model runs on the array");
    run.threads = 1;
    return run;
  }
  // Candidates are simulated in this process: the simulator validates every
  // program before it runs it, so a bad candidate is an error record.
  auto measure = [&](size_t i, const std::vector<search::Schedule> &schedules) {
    std::vector<search::TuningRecord> records;
    const systolic::ArrayKernel &k = arrayKernels[i];
    systolic::GemmBuffers buf = systolic::arrayKernelBuffers(machine, k);
    for (const search::Schedule &s : schedules) {
      search::TuningRecord r;
      systolic::GemmMapping m = systolic::mappingFromSchedule(machine, k, s);
      auto program = systolic::buildGemmProgram(machine, k.gemm, m, buf);
      if (!program) {
        r.status = search::Status::Error;
        r.message = llvm::toString(program.takeError());
        records.push_back(r);
        continue;
      }
      systolic::Machine sim(machine);
      auto rep = sim.simulate(*program, systolic::SimOptions{false});
      if (!rep) {
        r.status = search::Status::Error;
        r.message = llvm::toString(rep.takeError());
        records.push_back(r);
        continue;
      }
      double ns = double(rep->totalCycles) * double(k.programRuns) * 1000.0 /
                  machine.clockMHz;
      r.medianNs = r.minNs = r.p90Ns = ns;
      r.runs = 1;
      if (llvm::Error e =
              systolic::checkGemmProgram(machine, k.gemm, buf, *program)) {
        r.status = search::Status::Wrong;
        r.message = llvm::toString(std::move(e));
        r.relL2 = 1;
      } else {
        r.status = search::Status::Ok;
      }
      records.push_back(r);
    }
    return records;
  };
  auto features = [&](size_t i, const search::Schedule &s) {
    const systolic::ArrayKernel &k = arrayKernels[i];
    systolic::GemmMapping m = systolic::mappingFromSchedule(machine, k, s);
    auto lg = [](double v) { return float(std::log2(1.0 + v)); };
    std::vector<float> f = {lg(double(k.gemm.M)), lg(double(k.gemm.K)),
                            lg(double(k.gemm.N)), lg(double(machine.rows)),
                            lg(double(machine.cols))};
    for (int d = 0; d < 3; ++d)
      f.push_back(int(m.dataflow) == d ? 1.0f : 0.0f);
    f.push_back(m.accumulate ? 1.0f : 0.0f);
    f.push_back(m.resident ? 1.0f : 0.0f);
    f.push_back(lg(double(m.chunk)));
    f.push_back(float(m.streamSpadElems) / float(machine.spadElems()));
    return f;
  };
  search::SearchOptions options = searchOptions(tune, verbosity, 8, log);
  run.summary = search::runSearch(searchTasks, measure, features, db,
                                  fingerprint, options);
  run.threads = 1;
  run.tasks = std::move(searchTasks);
  return run;
}

std::string tuningReport(const TuningRun &run, const std::string &modelPath,
                         const std::string &fingerprint, std::string *table,
                         double peakGflops) {
  double peak = peakGflops > 0 ? peakGflops
                               : search::measureFmaPeakGflops() * run.threads;
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
    std::snprintf(
        line, sizeof line,
        "%-16s %-34s %5u %8.3fms %8.3fms %6.2fx %8.1f %5.1f%% %6lld %8.1e\n",
        k.task.c_str(), name.c_str(), k.launches, def / 1e6, best / 1e6,
        def > 0 && best > 0 ? def / best : 0.0, gflops,
        peak > 0 ? 100 * gflops / peak : 0.0, (long long)o.trials,
        o.best ? o.best->relL2 : 0.0);
    t += line;
  }
  std::snprintf(line, sizeof line,
                "model (sum of kernel latencies x launches): default %.3f ms, "
                "tuned %.3f ms, %.2fx; %lld new trials in %.1f s; peak %.1f "
                "GFLOP/s (FMA, %d thread(s))\n",
                before / 1e6, after / 1e6, after > 0 ? before / after : 0.0,
                (long long)run.summary.newTrials, run.summary.seconds, peak,
                run.threads);
  t += line;
  if (table)
    *table = t;
  nlohmann::json report = {{"model", modelPath},
                           {"fingerprint", fingerprint},
                           {"threads", run.threads},
                           {"peak_gflops", peak},
                           {"tuning_seconds", run.summary.seconds},
                           {"new_trials", run.summary.newTrials},
                           {"stopped_by_time", run.summary.stoppedByTime},
                           {"kernels", kernels},
                           {"model_estimate",
                            {{"default_ms", before / 1e6},
                             {"tuned_ms", after / 1e6},
                             {"speedup", after > 0 ? before / after : 0}}}};
  return report.dump(2) + "\n";
}

} // namespace ign
