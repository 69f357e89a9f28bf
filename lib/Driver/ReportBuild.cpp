//===- ReportBuild.cpp - `ignc report`: the report and its claims ---------===//
//
// Puts the measurement (Report.cpp), the tuning database's records of the
// bundle's kernels and this machine's description into one JSON document;
// its `claims` are what `--verify` checks again.
//
//===----------------------------------------------------------------------===//

#include "Digest.h"
#include "Report.h"
#include "ign/Search/TuningDatabase.h"
#include "ign/Target/Pipeline.h"
#include "ign/Target/TargetRegistry.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iostream>
#include <thread>

namespace ign::report {

namespace {

/// The tuning fingerprints of the bundle's kernels: .first for host
/// kernels, .second for the selected target's device kernels.
std::pair<std::string, std::string>
fingerprints(const nlohmann::json &manifest) {
  std::optional<BundleTarget> t = bundleTarget(manifest);
  if (!t)
    return {};
  const target::Target *host = target::fallbackTarget();
  return {host->fingerprint(
              target::configFor(*host, *t->selection.target, t->config)),
          t->selection.target->fingerprint(t->config)};
}

/// What tuning the kernel cost and found, from the database's records.
nlohmann::json kernelTuning(const std::vector<search::TuningRecord> &records,
                            bool onDevice) {
  // Confirmation records are side-by-side timings, not trials: they count
  // in the costs only.
  int64_t confirmations = std::count_if(
      records.begin(), records.end(),
      [](const search::TuningRecord &r) { return r.isConfirmation(); });
  nlohmann::json t = {{"trials", int64_t(records.size()) - confirmations},
                      {"confirmation_records", confirmations}};
  nlohmann::json byStatus = nlohmann::json::object();
  nlohmann::json curve = nlohmann::json::array();
  nlohmann::json predicted = nlohmann::json::array();
  double best = 0, defaultNs = 0, cpu = 0, wall = 0, device = 0;
  for (const search::TuningRecord &r : records)
    if (r.origin == "default" && r.status == search::Status::Ok)
      defaultNs = r.medianNs;
  for (const search::TuningRecord &r : records) {
    cpu += r.workerCpuSeconds;
    wall += r.workerWallSeconds;
    // Candidates measured on a device ran there for their timed runs.
    if (onDevice)
      device += double(r.runs) * r.medianNs / 1e9;
    if (r.isConfirmation())
      continue;
    std::string status = search::statusName(r.status);
    byStatus[status] = byStatus.value(status, 0) + 1;
    if (r.status == search::Status::Ok && (best == 0 || r.medianNs < best))
      best = r.medianNs;
    curve.push_back(best / 1e6);
    if (r.status == search::Status::Ok && std::isfinite(r.predicted) &&
        defaultNs > 0)
      predicted.push_back({r.predicted, std::log(defaultNs / r.medianNs)});
    // The fastest valid record (ties: the oldest) is what a compile
    // applies: its check against the reference is the kernel's.
    if (r.status == search::Status::Ok && r.medianNs == best &&
        (!t.contains("validation") ||
         t["validation"]["isolated_median_ms"].get<double>() > best / 1e6))
      t["validation"] = {
          {"rel_l2", r.relL2},
          {"max_abs", r.maxAbs},
          {"record", r.id},
          {"schedule", nlohmann::json::parse(r.schedule, nullptr, false)},
          {"isolated_median_ms", r.medianNs / 1e6}};
  }
  t["by_status"] = byStatus;
  t["best_curve_ms"] = curve;
  t["predicted_vs_measured"] = predicted;
  t["worker_cpu_seconds"] = cpu;
  t["worker_wall_seconds"] = wall;
  t["device_seconds"] = device;
  if (defaultNs > 0)
    t["isolated_default_ms"] = defaultNs / 1e6;
  return t;
}

/// The default bundle's kernel computing the same as tuned kernel `k`.
std::optional<size_t> matchingKernel(const nlohmann::json &tuned,
                                     const nlohmann::json &defaults, size_t k) {
  const auto &a = tuned["kernels"], &b = defaults["kernels"];
  auto task = [](const nlohmann::json &kernel) {
    return kernel.value("task", std::string());
  };
  if (task(a[k]).empty())
    return std::nullopt;
  if (k < b.size() && task(b[k]) == task(a[k]))
    return k;
  for (size_t i = 0; i < b.size(); ++i)
    if (task(b[i]) == task(a[k]))
      return i;
  return std::nullopt;
}

} // namespace

nlohmann::json environmentFor(const nlohmann::json &manifest) {
  nlohmann::json e = environment();
  // The chip's fingerprint: a GPU's device name, a CPU's features and
  // versions, as tuning keys its records.
  e["target_fingerprint"] = fingerprints(manifest).second;
  return e;
}

static nlohmann::json roofline(const nlohmann::json &kernel, double ms,
                               const Machine &machine) {
  double flops = kernel.value("flops", 0.0);
  double bytes =
      kernel.value("bytes_read", 0.0) + kernel.value("bytes_written", 0.0);
  nlohmann::json r = {{"gflops", ms > 0 ? flops / ms / 1e6 : 0},
                      {"gbps", ms > 0 ? bytes / ms / 1e6 : 0},
                      {"intensity", bytes > 0 ? flops / bytes : 0}};
  if (machine.peakGflops > 0 && machine.bandwidthGBs > 0 && ms > 0) {
    double bound = std::max(flops / (machine.peakGflops * 1e6),
                            bytes / (machine.bandwidthGBs * 1e6));
    r["bound_ms"] = bound;
    r["percent_of_roofline"] = 100 * bound / ms;
  }
  return r;
}

nlohmann::json kernelsSection(Measurement &m, const Machine &machine,
                              search::TuningDatabase *db) {
  auto [hostFp, deviceFp] = fingerprints(m.tuned.manifest);
  const auto &kernels = m.tuned.manifest["kernels"];
  const Samples &tuned = m.samples[0], &defaults = m.samples[1];
  nlohmann::json out = nlohmann::json::array();
  for (size_t k = 0; k < kernels.size(); ++k) {
    const auto &kernel = kernels[k];
    nlohmann::json j = {{"name", kernel["name"]},
                        {"task", kernel.value("task", "")},
                        {"ops", kernel.value("ops", nlohmann::json::array())},
                        {"flops", kernel.value("flops", 0)},
                        {"bytes", kernel.value("bytes_read", 0) +
                                      kernel.value("bytes_written", 0)},
                        {"schedule", kernel["schedule"]},
                        {"where", kernel.contains("device")
                                      ? kernel["device"].value("name", "device")
                                      : "host"}};
    std::vector<double> t =
        k < tuned.kernelMs.size() ? tuned.kernelMs[k] : std::vector<double>{};
    Stats ts = statsOf(t);
    j["tuned"] = statsJson(ts);
    if (k < tuned.kernelDeviceMs.size() && tuned.kernelDeviceMs[k] > 0)
      j["device_ms"] = tuned.kernelDeviceMs[k];
    if (auto d = matchingKernel(m.tuned.manifest, m.defaults.manifest, k);
        d && *d < defaults.kernelMs.size()) {
      j["default"] = statsJson(statsOf(defaults.kernelMs[*d]));
      j["speedup"] =
          intervalJson(speedupInterval(defaults.kernelMs[*d], t, 1000 + k));
    }
    if (j["where"] == "host")
      j["roofline"] = roofline(kernel, ts.median, machine);
    if (db && !j["task"].get<std::string>().empty())
      j["tuning"] = kernelTuning(
          db->records(j["task"], j["where"] == "host" ? hostFp : deviceFp),
          j["where"] != "host");
    out.push_back(j);
  }
  return out;
}

namespace {

nlohmann::json tuningSection(const nlohmann::json &kernels,
                             search::TuningDatabase *db,
                             const nlohmann::json &manifest) {
  if (!db)
    return {{"database", nullptr}};
  auto [hostFp, deviceFp] = fingerprints(manifest);
  std::vector<std::string> tasks;
  nlohmann::json byStatus = nlohmann::json::object();
  double cpu = 0, wall = 0, device = 0;
  int64_t trials = 0;
  for (const auto &k : kernels) {
    tasks.push_back(k["task"]);
    if (!k.contains("tuning"))
      continue;
    const auto &t = k["tuning"];
    trials += t["trials"].get<int64_t>();
    cpu += t["worker_cpu_seconds"].get<double>();
    wall += t["worker_wall_seconds"].get<double>();
    device += t["device_seconds"].get<double>();
    for (auto &[status, n] : t["by_status"].items())
      byStatus[status] = byStatus.value(status, 0) + n.get<int64_t>();
  }
  nlohmann::json runs = nlohmann::json::array();
  double runSeconds = 0, runCpu = 0;
  for (const std::string &fp : {hostFp, deviceFp}) {
    for (const search::TuningRunRecord &r : db->runsFor(tasks, fp)) {
      runs.push_back({{"started", r.started},
                      {"seconds", r.seconds},
                      {"cpu_seconds", r.cpuSeconds},
                      {"new_trials", r.newTrials},
                      {"fingerprint", r.fingerprint}});
      runSeconds += r.seconds;
      runCpu += r.cpuSeconds;
    }
    if (deviceFp == hostFp)
      break;
  }
  return {{"database", db->path()},     {"fingerprints", {hostFp, deviceFp}},
          {"trials", trials},           {"by_status", byStatus},
          {"worker_cpu_seconds", cpu},  {"worker_wall_seconds", wall},
          {"device_seconds", device},   {"runs", runs},
          {"wall_seconds", runSeconds}, {"cpu_seconds", runCpu}};
}

std::string nowUtc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

} // namespace

nlohmann::json endToEnd(const Measurement &m) {
  nlohmann::json e = {{"bundle",
                       {{"warm", statsJson(statsOf(m.samples[0].warmMs))},
                        {"cold", statsJson(statsOf(m.samples[0].coldMs))}}},
                      {"default",
                       {{"warm", statsJson(statsOf(m.samples[1].warmMs))},
                        {"cold", statsJson(statsOf(m.samples[1].coldMs))}}},
                      {"speedup_vs_default",
                       intervalJson(speedupInterval(m.samples[1].warmMs,
                                                    m.samples[0].warmMs, 7))}};
  if (m.peer && m.samples.size() > 2) {
    e["onnxruntime"] = {{"warm", statsJson(statsOf(m.samples[2].warmMs))},
                        {"cold", statsJson(statsOf(m.samples[2].coldMs))},
                        {"version", m.peerVersion}};
    e["speedup_vs_onnxruntime"] = intervalJson(
        speedupInterval(m.samples[2].warmMs, m.samples[0].warmMs, 11));
  } else {
    e["onnxruntime"] = {{"unavailable", m.peerUnavailable}};
  }
  return e;
}

static nlohmann::json measurementSection(const Measurement &m, int threads,
                                         uint64_t seed) {
  nlohmann::json sets = nlohmann::json::array();
  for (const std::string &d : m.inputs.distributions)
    sets.push_back(d);
  return {{"threads", threads},
          {"affinity", cpuAffinity()},
          {"rounds", m.options.rounds},
          {"warm_runs_per_round", m.options.warmRuns},
          {"cold_runs_per_round", m.options.coldRuns},
          {"cold_flush_bytes", m.options.flushBytes},
          {"input_sets", sets},
          {"seed", seed},
          {"outputs_poisoned", true},
          {"order", "interleaved: each round runs every contender, in an "
                    "order rotated round by round"}};
}

static bool allPass(const nlohmann::json &correctness, const char *against) {
  bool any = false;
  for (const auto &set : correctness) {
    if (set.contains("error"))
      return false;
    for (const auto &o : set.value(against, nlohmann::json::array())) {
      any = true;
      if (!o.value("pass", false))
        return false;
    }
  }
  return any;
}

static nlohmann::json claimsOf(const nlohmann::json &r) {
  nlohmann::json claims = nlohmann::json::array();
  const auto &e = r["end_to_end"];
  claims.push_back({{"id", "latency"},
                    {"median_ms", e["bundle"]["warm"]["median_ms"]},
                    {"p90_ms", e["bundle"]["warm"]["p90_ms"]}});
  claims.push_back(
      {{"id", "speedup/default"}, {"interval", e["speedup_vs_default"]}});
  if (e.contains("speedup_vs_onnxruntime"))
    claims.push_back({{"id", "speedup/onnxruntime"},
                      {"interval", e["speedup_vs_onnxruntime"]}});
  double total = e["bundle"]["warm"]["median_ms"].get<double>();
  for (const auto &k : r["kernels"]) {
    if (k["schedule"].value("kind", "") != "tuned" || !k.contains("speedup"))
      continue;
    // Kernels under 1% of the model are too short to time across machines.
    if (k["tuned"]["median_ms"].get<double>() < 0.01 * total)
      continue;
    claims.push_back({{"id", "kernel/" + k["name"].get<std::string>()},
                      {"interval", k["speedup"]}});
  }
  claims.push_back({{"id", "correct/reference"},
                    {"holds", allPass(r["correctness"], "reference")}});
  if (e.contains("speedup_vs_onnxruntime"))
    claims.push_back({{"id", "correct/onnxruntime"},
                      {"holds", allPass(r["correctness"], "onnxruntime")}});
  return claims;
}

/// Writes `text` to `path`; false after printing why not.
static bool writeText(const std::string &path, const std::string &text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    std::cerr << "ignc: error: cannot write '" << path << "': " << ec.message()
              << "\n";
    return false;
  }
  os << text;
  return true;
}

static std::unique_ptr<search::TuningDatabase>
openDatabase(const std::string &given) {
  std::string path =
      given.empty() ? search::defaultTuningDatabasePath() : given;
  if (!llvm::sys::fs::exists(path)) {
    if (!given.empty())
      std::cerr << "ignc: warning: no tuning database at '" << given
                << "'; the report has no tuning records\n";
    return nullptr;
  }
  std::string error;
  auto db = search::TuningDatabase::open(path, error);
  if (!db)
    std::cerr << "ignc: warning: " << error << "; the report has no tuning "
              << "records\n";
  return db;
}

static std::vector<std::string>
reproduceCommands(const ReportOptions &o, const std::string &model,
                  const nlohmann::json &manifest, const std::string &db) {
  std::string compile = "ignc " + model;
  for (const std::string &a : recordedArgs(manifest))
    compile += " " + a;
  std::string dbArg = db.empty() ? "" : " --tuning-db " + db;
  std::string claims = o.outputPath;
  return {compile + dbArg + " -o " + o.bundlePath,
          "ignc report " + o.bundlePath + " --model " + model + dbArg +
              " --threads " + std::to_string(o.threads) + " -o " + o.outputPath,
          "ignc report --verify " + o.bundlePath + " --model " + model +
              " --claims " + claims};
}

} // namespace ign::report

namespace ign {

using namespace report;

/// The report's headline, on stdout.
static void printSummary(const nlohmann::json &r) {
  const auto &e = r["end_to_end"];
  auto median = [](const nlohmann::json &c) {
    return c["warm"]["median_ms"].get<double>();
  };
  auto interval = [](const nlohmann::json &i) {
    return llvm::formatv("{0:F2}x [{1:F2}, {2:F2}]", i["value"].get<double>(),
                         i["lo"].get<double>(), i["hi"].get<double>())
        .str();
  };
  std::cout << llvm::formatv("bundle {0:F3} ms, default schedules {1:F3} ms "
                             "(bundle {2} faster)",
                             median(e["bundle"]), median(e["default"]),
                             interval(e["speedup_vs_default"]))
                   .str();
  if (e.contains("speedup_vs_onnxruntime"))
    std::cout << llvm::formatv(", onnxruntime {0:F3} ms ({1})",
                               median(e["onnxruntime"]),
                               interval(e["speedup_vs_onnxruntime"]))
                     .str();
  else
    std::cout << "; onnxruntime not measured: "
              << e["onnxruntime"].value("unavailable", "");
  std::cout << "\n";
  for (const auto &c : r["claims"])
    if (c.contains("holds"))
      std::cout << c["id"].get<std::string>() << ": "
                << (c["holds"].get<bool>() ? "outputs match" : "OUTPUTS DIFFER")
                << "\n";
}

static bool checkReportOptions(const ReportOptions &o) {
  auto endsWith = [](const std::string &s, const char *suffix) {
    size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
  };
  std::string why;
  if (o.verify && o.claimsPath.empty())
    why = "--verify needs --claims REPORT.json|html";
  else if (!o.verify && !endsWith(o.outputPath, ".html") &&
           !endsWith(o.outputPath, ".json"))
    why = "-o must name a .html or .json file";
  else if (o.rounds < 1 || o.runs < 1 || o.coldRuns < 0 || o.threads < 0)
    why = "--rounds and --runs must be positive, --cold-runs and --threads "
          "not negative";
  else if (o.checkSets < 1 || o.checkSets > 3)
    why = "--check-sets is 1, 2 or 3";
  else if (o.baseline != "onnxruntime" && o.baseline != "none")
    why = "--baseline is onnxruntime or none";
  if (why.empty())
    return true;
  std::cerr << "ignc: error: " << why << "\n";
  return false;
}

static int runReportChecked(const ReportOptions &given);

int runReport(const ReportOptions &given) {
  // Manifests and reports are validated before use; a field of an
  // unexpected type deep inside one is still an error, never a crash.
  try {
    return runReportChecked(given);
  } catch (const nlohmann::json::exception &e) {
    std::cerr << "ignc: error: unexpected content in a manifest or report: "
              << e.what() << "\n";
    return kExitRuntime;
  }
}

static int runReportChecked(const ReportOptions &given) {
  ReportOptions options = given;
  if (!checkReportOptions(options))
    return kExitUsage;
  registerDevices();
  if (options.threads == 0)
    options.threads = int(std::max(1u, std::thread::hardware_concurrency()));
  if (options.verify)
    return verifyReport(options);
  Measurement m;
  std::string error;
  nlohmann::json manifest;
  {
    BundlePtr probe;
    ignrt_bundle *b = nullptr;
    if (ignrt_bundle_open(options.bundlePath.c_str(), &b) != IGNRT_OK) {
      std::cerr << "ignc: error: " << options.bundlePath << ": "
                << ignrt_last_error() << "\n";
      return kExitRuntime;
    }
    probe.reset(b);
    manifest = nlohmann::json::parse(ignrt_bundle_manifest(b));
  }
  std::string model = findModel(options, manifest, error);
  if (model.empty()) {
    std::cerr << "ignc: error: " << error << "\n";
    return kExitUsage;
  }
  if (options.verbosity != Verbosity::Quiet)
    std::cerr << "report: compiling the default and reference variants, then "
              << options.rounds << " interleaved rounds\n";
  if (!measure(options, model, m, error)) {
    std::cerr << "ignc: error: " << error << "\n";
    return kExitRuntime;
  }
  auto db = openDatabase(options.tuningDb);
  Machine machine;
  if (auto info = target::fallbackTarget()->chipInfo("host");
      info && info->cores > 0)
    machine.peakGflops =
        info->peakGflops *
        double(std::min<int64_t>(options.threads, info->cores)) /
        double(info->cores);
  machine.bandwidthGBs = measureBandwidthGBs(options.threads);
  nlohmann::json r = {
      {"format", "ignc-report"}, {"version", 1}, {"created", nowUtc()}};
  r["bundle"] = {
      {"path", options.bundlePath},
      {"sha256", sha256OfFile(options.bundlePath)},
      {"target", manifest["target"]},
      {"compile", manifest.value("compile", nlohmann::json())},
      {"weights_sha256", weightDigests(options.bundlePath, manifest)}};
  r["model"] = {{"path", model}, {"sha256", sha256OfFile(model)}};
  r["environment"] = environmentFor(manifest);
  r["machine"] = {{"peak_gflops", machine.peakGflops},
                  {"bandwidth_gbs", machine.bandwidthGBs},
                  {"threads", options.threads}};
  r["measurement"] = measurementSection(m, options.threads, options.seed);
  r["end_to_end"] = endToEnd(m);
  r["kernels"] = kernelsSection(m, machine, db.get());
  r["correctness"] = checkCorrectness(m, true, options.checkSets);
  r["tuning"] = tuningSection(r["kernels"], db.get(), manifest);
  r["claims"] = claimsOf(r);
  r["reproduce"] =
      reproduceCommands(options, model, manifest, db ? db->path() : "");
  std::string text = options.outputPath.size() > 5 &&
                             options.outputPath.substr(
                                 options.outputPath.size() - 5) == ".html"
                         ? renderHtml(r)
                         : r.dump(2) + "\n";
  if (!writeText(options.outputPath, text))
    return kExitOutput;
  if (options.verbosity != Verbosity::Quiet) {
    printSummary(r);
    std::cerr << "report: wrote " << options.outputPath << "\n";
  }
  return kExitOk;
}

} // namespace ign
