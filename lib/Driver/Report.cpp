//===- Report.cpp - `ignc report`: measuring a bundle against its peers ---===//

#include "Report.h"
#include "Digest.h"
#include "ign/Search/Validator.h"
#include "ign/Search/WorkerProcess.h"
#include "ign/Target/TargetRegistry.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/TargetParser/Host.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/utsname.h>
#include <thread>

namespace fs = std::filesystem;

namespace ign::report {

Measurement::~Measurement() {
  peer.reset();
  if (workDir.empty())
    return;
  std::error_code ec;
  fs::remove_all(workDir, ec);
}

std::string findModel(const ReportOptions &options,
                      const nlohmann::json &manifest, std::string &error) {
  std::string source = manifest["model"].value("source", std::string());
  std::vector<std::string> candidates;
  if (!options.modelPath.empty())
    candidates.push_back(options.modelPath);
  else if (!source.empty()) {
    llvm::SmallString<256> beside(
        llvm::sys::path::parent_path(options.bundlePath));
    llvm::sys::path::append(beside, source);
    candidates = {beside.str().str(), source};
  }
  for (const std::string &path : candidates) {
    if (!llvm::sys::fs::exists(path))
      continue;
    std::string want = manifest["model"].value("sha256", std::string());
    if (!want.empty() && sha256OfFile(path) != want) {
      error = "'" + path +
              "' is not the model the bundle was compiled from (its SHA-256 "
              "differs from the manifest's " +
              want.substr(0, 12) + "...)";
      return "";
    }
    return path;
  }
  error = options.modelPath.empty()
              ? "cannot find the model '" + source +
                    "' beside the bundle or here; give --model"
              : "cannot read the model '" + options.modelPath + "'";
  return "";
}

namespace {} // namespace

std::vector<std::string> recordedArgs(const nlohmann::json &manifest) {
  std::vector<std::string> args;
  auto compile = manifest.find("compile");
  if (compile == manifest.end() || !compile->is_object())
    return args;
  auto list = compile->find("args");
  if (list != compile->end() && list->is_array())
    for (const auto &a : *list)
      if (a.is_string())
        args.push_back(a.get<std::string>());
  return args;
}

namespace {

std::string argAfter(const nlohmann::json &manifest, const std::string &flag,
                     const std::string &otherwise) {
  std::vector<std::string> args = recordedArgs(manifest);
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == flag)
      return args[i + 1];
  return otherwise;
}

} // namespace

std::optional<BundleTarget> bundleTarget(const nlohmann::json &manifest) {
  target::registerBuiltinTargets();
  std::string error;
  auto selection = target::resolveTarget(
      manifest["target"].value("name", "host"),
      argAfter(manifest, "--chip", manifest["target"].value("chip", "")),
      error);
  if (!selection)
    return std::nullopt;
  bool fuse = true;
  for (const std::string &a : recordedArgs(manifest))
    fuse &= a != "--no-fuse";
  return BundleTarget{*selection,
                      {selection->chip, "default", fuse,
                       argAfter(manifest, "--precision", "fp32")}};
}

namespace {

/// The bundle's compile options (its manifest's `compile.args`), with
/// `--schedule` replaced when `schedule` is given.
std::vector<std::string> compileArgs(const nlohmann::json &manifest,
                                     const std::string &schedule) {
  std::vector<std::string> args = recordedArgs(manifest);
  if (args.empty()) // bundles written before the manifest recorded options
    args = {"--target", manifest["target"].value("name", "host")};
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--schedule")
      args.erase(args.begin() + long(i), args.begin() + long(i) + 2);
  if (!schedule.empty())
    args.insert(args.end(), {"--schedule", schedule});
  return args;
}

bool compileVariant(const std::string &model, const nlohmann::json &manifest,
                    const std::string &schedule, const std::string &out,
                    std::string &error) {
  std::vector<std::string> argv = {search::selfExecutable(), model};
  for (const std::string &a : compileArgs(manifest, schedule))
    argv.push_back(a);
  argv.insert(argv.end(), {"--no-tuning-db", "-q", "-o", out});
  search::WorkerResult r = search::runWorker(argv, 3600);
  if (r.ok())
    return true;
  error = "compiling the " + schedule +
          "-schedule variant failed: " + r.describe(3600);
  return false;
}

/// The peer script shipped beside ignc (build tree or install prefix).
std::string peerScript() {
  std::string exe = search::selfExecutable();
  llvm::SmallString<256> dir(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(dir, "share", "ignc", "peers", "onnxruntime_peer.py");
  return dir.str().str();
}

void startPeer(const ReportOptions &options, const std::string &model,
               int threads, Measurement &m) {
  if (options.baseline == "none") {
    m.peerUnavailable = "not asked for (--baseline none)";
    return;
  }
  std::string error;
  auto paths = writeInputSets(m.inputs, m.workDir, error);
  std::string script = peerScript();
  if (!llvm::sys::fs::exists(script))
    error = "the peer script " + script + " is missing";
  if (error.empty())
    m.peer = PeerProcess::start({options.python, script}, error);
  if (m.peer) {
    auto reply = m.peer->call({{"cmd", "load"},
                               {"model", model},
                               {"threads", threads},
                               {"sets", paths}},
                              600, error);
    if (reply) {
      m.peerVersion = reply->value("version", std::string("?"));
      return;
    }
  }
  m.peer.reset();
  m.peerUnavailable = error;
}

} // namespace

bool measure(const ReportOptions &options, const std::string &modelPath,
             Measurement &m, std::string &error) {
  llvm::SmallString<128> work;
  if (llvm::sys::fs::createUniqueDirectory("ignc-report", work)) {
    error = "cannot create a work directory";
    return false;
  }
  m.workDir = work.str().str();
  int threads = options.threads > 0
                    ? options.threads
                    : int(std::max(1u, std::thread::hardware_concurrency()));
  if (!openContender(options.bundlePath, "the bundle", threads, InputSets{},
                     m.tuned, error))
    return false;
  m.inputs = drawInputSets(m.tuned.bundle.get(), options.seed, 3);
  if (!addSessions(m.tuned, threads, m.inputs, error))
    return false;
  const nlohmann::json &manifest = m.tuned.manifest;
  std::string defaults = m.workDir + "/default.ignb";
  std::string reference = m.workDir + "/reference.ignb";
  if (!compileVariant(modelPath, manifest, "default", defaults, error) ||
      !compileVariant(modelPath, manifest, "reference", reference, error))
    return false;
  if (!openContender(defaults, "default schedules", threads, m.inputs,
                     m.defaults, error) ||
      !openContender(reference, "reference lowering", threads, m.inputs,
                     m.reference, error))
    return false;
  if (auto t = bundleTarget(manifest))
    m.modelRelL2 = t->selection.target->modelRelL2Tolerance(t->config);
  startPeer(options, modelPath, threads, m);
  m.options.rounds = options.rounds;
  m.options.warmRuns = options.runs;
  m.options.coldRuns = options.coldRuns;
  m.options.flushBytes = 2 * lastLevelCacheBytes();
  std::string peerError;
  if (!measureInterleaved({&m.tuned, &m.defaults}, m.peer.get(), m.options,
                          m.samples, error, peerError))
    return false;
  if (!peerError.empty()) {
    m.peer.reset();
    m.peerUnavailable = "failed while measured: " + peerError;
  }
  return true;
}

namespace {

ignrt_dtype dtypeNamed(const std::string &name) {
  for (int d = IGNRT_F32; d <= IGNRT_BOOL; ++d)
    if (name == ignrt_dtype_name(ignrt_dtype(d)))
      return ignrt_dtype(d);
  return ignrt_dtype(0);
}

nlohmann::json compareOne(const TensorData &got, const TensorData &want,
                          std::optional<ignrt_dtype> computedIn,
                          double modelRelL2) {
  ignrt_dtype dtype = dtypeNamed(got.dtype);
  nlohmann::json j = {{"output", got.name}, {"dtype", got.dtype}};
  if (got.bytes.size() != want.bytes.size()) {
    j["pass"] = false;
    j["why"] = "sizes differ (" + std::to_string(got.bytes.size()) + " vs " +
               std::to_string(want.bytes.size()) + " bytes)";
    return j;
  }
  search::Comparison c = search::compareOutput(
      got.bytes.data(), want.bytes, got.bytes.size(), dtype, computedIn);
  j["rel_l2"] = c.relL2;
  j["max_abs"] = c.maxAbs;
  j["pass"] = c.pass;
  std::optional<search::Tolerance> tol = search::toleranceFor(
      computedIn && dtype == IGNRT_F32 ? *computedIn : dtype);
  j["threshold"] = tol ? nlohmann::json{{"rel_l2", tol->relL2},
                                        {"max_abs_relative", tol->maxRel}}
                       : nlohmann::json("exact");
  if (tol && modelRelL2 > tol->relL2) {
    // The chip computes in less than the dtype: its relative L2 bound.
    j["pass"] = std::isfinite(c.relL2) && c.relL2 <= modelRelL2;
    j["threshold"] = {{"rel_l2", modelRelL2},
                      {"why", "the chip computes in lower precision"}};
  }
  return j;
}

bool peerOutputs(Measurement &m, size_t set, std::vector<TensorData> &out,
                 std::string &error) {
  auto reply = m.peer->call(
      {{"cmd", "outputs"}, {"set", set}, {"dir", m.workDir}}, 600, error);
  if (!reply)
    return false;
  out.clear();
  for (const auto &o : (*reply)["outputs"]) {
    TensorData t;
    if (!readTensorFile(o["path"].get<std::string>(), t, error))
      return false;
    t.name = o["name"].get<std::string>();
    out.push_back(std::move(t));
  }
  return true;
}

} // namespace

nlohmann::json checkCorrectness(Measurement &m, bool withPeer, int checked) {
  std::optional<ignrt_dtype> computedIn;
  std::string precision = argAfter(m.tuned.manifest, "--precision", "fp32");
  if (precision == "bf16")
    computedIn = IGNRT_BF16;
  else if (precision == "fp16" || precision == "tf32") // tf32: f16's bits
    computedIn = IGNRT_F16;
  nlohmann::json sets = nlohmann::json::array();
  for (size_t s = 0; s < m.inputs.sets.size() && s < size_t(checked); ++s) {
    nlohmann::json entry = {{"set", s},
                            {"distribution", m.inputs.distributions[s]}};
    std::vector<TensorData> got, want, peer;
    std::string error;
    if (!runOnce(m.tuned, s, got, error) ||
        !runOnce(m.reference, s, want, error)) {
      entry["error"] = error;
      sets.push_back(entry);
      continue;
    }
    for (size_t i = 0; i < got.size() && i < want.size(); ++i)
      entry["reference"].push_back(
          compareOne(got[i], want[i], computedIn, m.modelRelL2));
    if (withPeer && m.peer && peerOutputs(m, s, peer, error))
      for (size_t i = 0; i < got.size() && i < peer.size(); ++i)
        entry["onnxruntime"].push_back(
            compareOne(got[i], peer[i], computedIn, m.modelRelL2));
    else if (withPeer && m.peer)
      entry["onnxruntime_error"] = error;
    sets.push_back(entry);
  }
  return sets;
}

nlohmann::json environment() {
  std::string model;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  std::vector<std::string> features;
  for (const auto &f : llvm::sys::getHostCPUFeatures())
    if (f.second)
      features.push_back(f.first().str());
  std::sort(features.begin(), features.end());
  utsname u{};
  uname(&u);
  return {{"cpu_model", model},
          {"cpu_name", llvm::sys::getHostCPUName().str()},
          {"cpu_features", features},
          {"logical_cpus", std::thread::hardware_concurrency()},
          {"affinity", cpuAffinity()},
          {"os", std::string(u.sysname) + " " + u.release},
          {"ignc_version", IGN_VERSION_STRING},
          {"llvm_version", LLVM_VERSION_STRING}};
}

std::vector<std::string> environmentDifferences(const nlohmann::json &a,
                                                const nlohmann::json &b) {
  std::vector<std::string> out;
  for (const char *key :
       {"cpu_model", "cpu_name", "cpu_features", "logical_cpus", "ignc_version",
        "llvm_version", "target_fingerprint"})
    if (a.value(key, nlohmann::json()) != b.value(key, nlohmann::json()))
      out.push_back(key);
  return out;
}

nlohmann::json weightDigests(const std::string &bundlePath,
                             const nlohmann::json &manifest) {
  nlohmann::json out = nlohmann::json::object();
  auto buffer = llvm::MemoryBuffer::getFile(bundlePath, false, false);
  if (!buffer)
    return out;
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() < 56)
    return out;
  uint32_t count;
  uint64_t table;
  std::memcpy(&count, bytes.data() + 12, 4);
  std::memcpy(&table, bytes.data() + 16, 8);
  for (uint32_t i = 0; i < count && table + 64 * (i + 1) <= bytes.size(); ++i) {
    const char *entry = bytes.data() + table + 64 * i;
    uint32_t kind;
    uint64_t offset, size;
    std::memcpy(&kind, entry, 4);
    std::memcpy(&offset, entry + 8, 8);
    std::memcpy(&size, entry + 16, 8);
    if (kind != 2 || offset + size > bytes.size())
      continue;
    for (const auto &w : manifest["weights"]) {
      uint64_t at = w["offset"].get<uint64_t>(), n = w["bytes"].get<uint64_t>();
      if (at + n <= size)
        out[w["name"].get<std::string>()] =
            sha256Hex(bytes.substr(offset + at, n));
    }
  }
  return out;
}

} // namespace ign::report
