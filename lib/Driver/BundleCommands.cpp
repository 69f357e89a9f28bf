//===- BundleCommands.cpp - ignc run / bench / inspect
//---------------------===//
//
// These commands use only libignrt to load bundles, as an application would.
//
//===----------------------------------------------------------------------===//

#include "KernelReport.h"
#include "RuntimeHelpers.h"
#include "ign/Driver/Driver.h"
#include "ign/Driver/TensorFiles.h"
#include "ign/Runtime/ignrt.h"

#include <nlohmann/json.hpp>

#include "ign/Target/TargetRegistry.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <random>

namespace ign {

void registerDevices() {
  target::registerBuiltinTargets();
  target::registerRuntimeDrivers();
}

namespace {

int runtimeError(const std::string &what) {
  std::cerr << "ignc: error: " << what << ": " << ignrt_last_error() << "\n";
  return kExitRuntime;
}

/// The device (simulated) statistics of the last run, summed over launches.
struct DeviceTotals {
  int64_t launches = 0, cycles = 0;
  double ns = 0, utilizationCycles = 0;
  std::vector<int64_t> perLaunchCycles; // -1: a host launch
  std::vector<double> perLaunchNs;      // device time, 0 for the host
};
DeviceTotals deviceTotals(ignrt_session *session) {
  DeviceTotals t;
  size_t n = ignrt_session_num_kernels(session);
  for (size_t k = 0; k < n; ++k) {
    ignrt_device_stats s;
    if (ignrt_session_kernel_device(session, k, &s) != IGNRT_OK) {
      t.perLaunchCycles.push_back(-1);
      t.perLaunchNs.push_back(0);
      continue;
    }
    ++t.launches;
    t.cycles += s.cycles;
    t.ns += s.device_ns;
    t.utilizationCycles += s.utilization * double(s.cycles);
    t.perLaunchCycles.push_back(s.cycles);
    t.perLaunchNs.push_back(s.device_ns);
  }
  return t;
}

/// The device's share of a run: a simulated device counts cycles at its
/// chip's clock; a GPU reports the time its own timestamps measured.
void printDeviceLine(const DeviceTotals &d, const char *simulationNote) {
  if (!d.launches)
    return;
  if (d.cycles > 0)
    std::printf("device: %lld launches on the simulated array, %lld cycles, "
                "%.2f%% utilization, %.3f ms at the chip's clock%s\n",
                (long long)d.launches, (long long)d.cycles,
                100.0 * d.utilizationCycles / double(d.cycles), d.ns / 1e6,
                simulationNote);
  else
    std::printf("device: %lld launches, %.3f ms on the device (its own "
                "timestamps)\n",
                (long long)d.launches, d.ns / 1e6);
}

BundlePtr openBundle(const std::string &path, int &code) {
  registerDevices();
  ignrt_bundle *b = nullptr;
  if (ignrt_bundle_open(path.c_str(), &b) != IGNRT_OK) {
    code = runtimeError(path);
    return nullptr;
  }
  return BundlePtr(b);
}

std::string shapeText(const int64_t *dims, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i)
    s += (i ? "x" : "") + std::to_string(dims[i]);
  return s + "]";
}

ignrt_dtype dtypeOf(const std::string &name) {
  for (int d = IGNRT_F32; d <= IGNRT_BOOL; ++d)
    if (name == ignrt_dtype_name(ignrt_dtype(d)))
      return ignrt_dtype(d);
  return ignrt_dtype(0);
}

/// Element i of an integer tensor, widened.
template <typename T> long long intAt(const void *data, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char *>(data) + i * sizeof(T), sizeof v);
  return static_cast<long long>(v);
}

/// A short preview of a tensor's first values.
std::string preview(const void *data, size_t bytes, ignrt_dtype dtype) {
  std::string s;
  size_t n = bytes / std::max<size_t>(1, ignrt_dtype_size(dtype));
  for (size_t i = 0; i < n && i < 6; ++i) {
    char buf[32];
    switch (dtype) {
    case IGNRT_I8:
      std::snprintf(buf, sizeof buf, "%lld", intAt<int8_t>(data, i));
      break;
    case IGNRT_I16:
      std::snprintf(buf, sizeof buf, "%lld", intAt<int16_t>(data, i));
      break;
    case IGNRT_U16:
      std::snprintf(buf, sizeof buf, "%lld", intAt<uint16_t>(data, i));
      break;
    case IGNRT_U32:
      std::snprintf(buf, sizeof buf, "%lld", intAt<uint32_t>(data, i));
      break;
    case IGNRT_U64:
      std::snprintf(buf, sizeof buf, "%llu",
                    static_cast<unsigned long long>(intAt<uint64_t>(data, i)));
      break;
    case IGNRT_F32:
      std::snprintf(buf, sizeof buf, "%.6g",
                    double(static_cast<const float *>(data)[i]));
      break;
    case IGNRT_F64:
      std::snprintf(buf, sizeof buf, "%.6g",
                    static_cast<const double *>(data)[i]);
      break;
    case IGNRT_I64:
      std::snprintf(buf, sizeof buf, "%lld",
                    (long long)static_cast<const int64_t *>(data)[i]);
      break;
    case IGNRT_I32:
      std::snprintf(buf, sizeof buf, "%d",
                    static_cast<const int32_t *>(data)[i]);
      break;
    case IGNRT_BOOL:
    case IGNRT_U8:
      std::snprintf(buf, sizeof buf, "%u",
                    unsigned(static_cast<const uint8_t *>(data)[i]));
      break;
    default:
      std::snprintf(buf, sizeof buf, "?");
    }
    s += (i ? ", " : "") + std::string(buf);
  }
  return s + (n > 6 ? ", ..." : "");
}

std::string safeFileName(std::string name) {
  for (char &c : name)
    if (c == '/' || c == '\\' || c == ':' || c == ' ')
      c = '_';
  return name.empty() ? "output" : name;
}

} // namespace

/// Sets the session's inputs from `inputs` (NAME, FILE), the others to
/// seeded random values when `randomInputs`; an exit code.
static int
setInputs(ignrt_bundle *bundle, ignrt_session *session,
          const std::vector<std::pair<std::string, std::string>> &inputs,
          bool randomInputs, uint64_t seed) {
  std::map<std::string, std::string> files(inputs.begin(), inputs.end());
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < ignrt_bundle_num_inputs(bundle); ++i) {
    ignrt_tensor_info info;
    ignrt_bundle_input(bundle, i, &info);
    auto it = files.find(info.name);
    if (it == files.end() && randomInputs) {
      std::string bytes = randomBytes(info, rng);
      if (ignrt_session_set_input(session, info.name, info.dtype, info.dims,
                                  info.rank, bytes.data(),
                                  bytes.size()) != IGNRT_OK)
        return runtimeError("setting inputs");
      continue;
    }
    if (it == files.end()) {
      std::cerr << "ignc: error: no --input for '" << info.name << "' ("
                << ignrt_dtype_name(info.dtype) << " "
                << shapeText(info.dims, info.rank)
                << "); give a file or --random-inputs\n";
      return kExitUsage;
    }
    TensorData t;
    std::string error;
    if (!readTensorFile(it->second, t, error)) {
      std::cerr << "ignc: error: " << error << "\n";
      return kExitUsage;
    }
    if (ignrt_session_set_input(session, info.name, dtypeOf(t.dtype),
                                t.shape.data(), t.shape.size(), t.bytes.data(),
                                t.bytes.size()) != IGNRT_OK)
      return runtimeError(it->second);
    files.erase(it);
  }
  for (const auto &[name, file] : files) {
    std::cerr << "ignc: error: the bundle has no input '" << name << "'\n";
    return kExitUsage;
  }
  return kExitOk;
}

int runBundle(const RunOptions &options) {
  int code = kExitOk;
  BundlePtr bundle = openBundle(options.bundlePath, code);
  if (!bundle)
    return code;
  ignrt_session *raw = nullptr;
  if (ignrt_session_create(bundle.get(), options.threads, &raw) != IGNRT_OK)
    return runtimeError("cannot create a session");
  SessionPtr session(raw);
  if (int code = setInputs(bundle.get(), session.get(), options.inputs,
                           options.randomInputs, options.seed);
      code != kExitOk)
    return code;
  auto start = std::chrono::steady_clock::now();
  if (ignrt_session_run(session.get()) != IGNRT_OK)
    return runtimeError("run failed");
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  if (!options.outputDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.outputDir, ec);
    if (ec) {
      std::cerr << "ignc: error: cannot create '" << options.outputDir
                << "': " << ec.message() << "\n";
      return kExitOutput;
    }
  }
  for (size_t i = 0; i < ignrt_bundle_num_outputs(bundle.get()); ++i) {
    ignrt_tensor_info info;
    const void *data;
    ignrt_session_output_at(session.get(), i, &info, &data);
    size_t bytes = info.bytes;
    if (options.verbosity != Verbosity::Quiet)
      std::cout << info.name << ": " << ignrt_dtype_name(info.dtype) << " "
                << shapeText(info.dims, info.rank) << " = ["
                << preview(data, bytes, info.dtype) << "]\n";
    if (!options.outputDir.empty()) {
      TensorData t{info.name, ignrt_dtype_name(info.dtype),
                   std::vector<int64_t>(info.dims, info.dims + info.rank),
                   std::string(static_cast<const char *>(data), bytes)};
      std::string path =
          options.outputDir + "/" + safeFileName(info.name) + ".npy";
      std::string error;
      if (!writeNpy(path, t, error)) {
        std::cerr << "ignc: error: " << error << "\n";
        return kExitOutput;
      }
    }
  }
  if (options.verbosity != Verbosity::Quiet) {
    std::cout << "latency: " << ms << " ms (one run, including first-touch)\n";
    printDeviceLine(deviceTotals(session.get()), "");
  }
  return kExitOk;
}

int benchBundle(const BenchOptions &options) {
  int code = kExitOk;
  BundlePtr bundle = openBundle(options.bundlePath, code);
  if (!bundle)
    return code;
  if (options.repeat <= 0 || options.warmup < 0) {
    std::cerr << "ignc: error: --repeat must be positive and --warmup >= 0\n";
    return kExitUsage;
  }
  ignrt_session *raw = nullptr;
  if (ignrt_session_create(bundle.get(), options.threads, &raw) != IGNRT_OK)
    return runtimeError("cannot create a session");
  SessionPtr session(raw);
  if (int code = setInputs(bundle.get(), session.get(), options.inputs,
                           /*randomInputs=*/true, options.seed);
      code != kExitOk)
    return code;
  for (int i = 0; i < options.warmup; ++i)
    if (ignrt_session_run(session.get()) != IGNRT_OK)
      return runtimeError("run failed");
  size_t kernels = ignrt_session_num_kernels(session.get());
  std::vector<double> totals;
  std::vector<std::vector<double>> perKernel(kernels);
  for (int i = 0; i < options.repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (ignrt_session_run(session.get()) != IGNRT_OK)
      return runtimeError("run failed");
    totals.push_back(std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count());
    for (size_t k = 0; k < kernels; ++k) {
      const char *name;
      double ns;
      ignrt_session_kernel_timing(session.get(), k, &name, &ns);
      perKernel[k].push_back(ns / 1e6);
    }
  }
  auto stat = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * (v.size() - 1) + 0.5))];
  };
  nlohmann::json report = {{"bundle", options.bundlePath},
                           {"threads", options.threads},
                           {"warmup", options.warmup},
                           {"repeat", options.repeat},
                           {"latency_ms",
                            {{"min", stat(totals, 0)},
                             {"median", stat(totals, 0.5)},
                             {"p90", stat(totals, 0.9)}}}};
  report["kernels"] = nlohmann::json::array();
  // Simulated devices are deterministic: the last run's cycles are every
  // run's.
  DeviceTotals device = deviceTotals(session.get());
  for (size_t k = 0; k < kernels; ++k) {
    const char *name;
    double ns;
    ignrt_session_kernel_timing(session.get(), k, &name, &ns);
    nlohmann::json entry = {{"name", name},
                            {"median_ms", stat(perKernel[k], 0.5)}};
    if (device.perLaunchCycles[k] > 0)
      entry["device_cycles"] = device.perLaunchCycles[k];
    else if (device.perLaunchCycles[k] == 0)
      entry["device_ms"] = device.perLaunchNs[k] / 1e6;
    report["kernels"].push_back(entry);
  }
  if (device.launches)
    report["device"] = {
        {"launches", device.launches},
        {"cycles", device.cycles},
        {"utilization",
         device.cycles ? device.utilizationCycles / double(device.cycles) : 0},
        {"ms_at_clock", device.ns / 1e6}};
  if (options.json) {
    std::cout << report.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("latency over %d runs (after %d warm-up): min %.3f ms, median "
              "%.3f ms, p90 %.3f ms\n",
              options.repeat, options.warmup, stat(totals, 0),
              stat(totals, 0.5), stat(totals, 0.9));
  printDeviceLine(device, " (host wall time above includes the simulation)");
  // Simulated devices count cycles; GPUs time themselves.
  std::printf("%-32s %12s %14s\n", "kernel", "median ms",
              device.cycles > 0 || !device.launches ? "device cycles"
                                                    : "device ms");
  for (const auto &k : report["kernels"]) {
    std::string where = "host";
    if (k.contains("device_cycles"))
      where = std::to_string(k["device_cycles"].get<int64_t>());
    else if (k.contains("device_ms"))
      where = llvm::formatv("{0:F3}", k["device_ms"].get<double>()).str();
    std::printf("%-32s %12.3f %14s\n", k["name"].get<std::string>().c_str(),
                k["median_ms"].get<double>(), where.c_str());
  }
  return kExitOk;
}

int inspectBundle(const std::string &path) {
  int code = kExitOk;
  BundlePtr bundle = openBundle(path, code);
  if (!bundle)
    return code;
  nlohmann::json m = nlohmann::json::parse(ignrt_bundle_manifest(bundle.get()));
  auto shape = [](const nlohmann::json &t) {
    std::string s = t["dtype"].get<std::string>() + "[";
    bool first = true;
    for (auto &d : t["shape"]) {
      s += (first ? "" : "x") + std::to_string(d.get<int64_t>());
      first = false;
    }
    return s + "]";
  };
  std::cout << "bundle: " << path << " (format " << m["format_version"] << ", "
            << m["compiler"]["name"].get<std::string>() << " "
            << m["compiler"]["version"].get<std::string>() << ")\n";
  std::cout << "model: " << m["model"]["source"].get<std::string>()
            << " (opset " << m["model"]["opset"] << ")\n";
  std::cout << "target: " << m["target"]["name"].get<std::string>() << ", "
            << m["target"]["triple"].get<std::string>() << ", cpu "
            << m["target"]["cpu"].get<std::string>() << ", "
            << m["target"]["features"].size() << " features\n";
  for (const char *key : {"inputs", "outputs"}) {
    std::cout << key << ":\n";
    for (auto &t : m[key]) {
      if (t.contains("shape_of"))
        continue; // shown with the output it describes
      std::string name = t["name"].get<std::string>();
      std::cout << "  " << name << ": " << shape(t);
      for (auto &s : m[key])
        if (s.value("shape_of", "") == name)
          std::cout << " (at most; actual shape in '"
                    << s["name"].get<std::string>() << "')";
      std::cout << "\n";
    }
  }
  uint64_t weightBytes = 0;
  for (auto &w : m["weights"])
    weightBytes += w["bytes"].get<uint64_t>();
  std::cout << "weights: " << m["weights"].size() << " tensors, " << weightBytes
            << " bytes (used in place from the bundle)\n";
  uint64_t ioBytes = 0;
  for (const char *key : {"inputs", "outputs"})
    for (auto &t : m[key]) {
      uint64_t n = 1;
      for (auto &d : t["shape"])
        n *= d.get<uint64_t>();
      ioBytes += n * ignrt_dtype_size(dtypeOf(t["dtype"]));
    }
  std::cout << "memory: arena of " << m["memory"]["arena_bytes"].get<uint64_t>()
            << " bytes for the intermediates, " << ioBytes
            << " bytes of inputs and outputs\n";
  std::cout << "kernels: " << m["kernels"].size() << "\n";
  nlohmann::json kernels = m["kernels"];
  for (auto &k : kernels)
    k["launches"] = 0;
  for (auto &l : m["launches"])
    if (l["kind"] == "kernel" && l["kernel"].is_number_unsigned() &&
        l["kernel"].get<size_t>() < kernels.size()) {
      auto &k = kernels[l["kernel"].get<size_t>()];
      k["launches"] = k["launches"].get<uint64_t>() + 1;
    }
  std::cout << kernelTable(kernels);
  std::cout << "schedules:\n";
  for (auto &k : m["kernels"])
    std::cout << "  " << k["name"].get<std::string>() << ": "
              << (k.contains("device")
                      ? "on " + k["device"].value("name", std::string("?")) +
                            ", "
                      : std::to_string(k["workgroups"].get<int64_t>()) +
                            " workgroup(s), ")
              << k["schedule"].dump() << "\n";
  std::cout << "launches: " << m["launches"].size() << "\n";
  auto where = [&](const nlohmann::json &a) {
    std::string kind = a["kind"].get<std::string>();
    std::string at =
        kind == "arena" ? "arena+" + std::to_string(a["offset"].get<uint64_t>())
                        : kind + " '" +
                              m[kind + "s"][a["index"].get<size_t>()]["name"]
                                  .get<std::string>() +
                              "'";
    return at + " " + shape(a);
  };
  size_t index = 0;
  for (auto &l : m["launches"]) {
    const auto &args = l["args"];
    std::cout << "  " << index++ << ": ";
    if (l["kind"] == "copy") {
      std::string at = l.value("at", std::string());
      std::cout << "copy " << where(args[0]) << (at == "from" ? " slice" : "")
                << " -> " << where(args[1]) << (at == "to" ? " slice" : "")
                << (at.empty() ? "" : " at " + where(args[2])) << "\n";
      continue;
    }
    if (l["kind"] == "loop") {
      std::cout << "loop over iteration " << where(args[0]) << " while "
                << where(args[1])
                << (args.size() > 2 ? " and below " + where(args[2]) : "")
                << (l.contains("max_trips")
                        ? " and below " + l["max_trips"].dump()
                        : "")
                << "; then go on at " << l["to"].get<size_t>() << "\n";
      continue;
    }
    if (l["kind"] == "fail") {
      std::cout << "fail: " << l.value("message", std::string()) << "\n";
      continue;
    }
    if (l["kind"] == "next") {
      std::cout << "next iteration: back to " << l["to"].get<size_t>() << "\n";
      continue;
    }
    if (l["kind"] == "branch") {
      std::cout << "if " << where(args[0]) << " is zero: go on at "
                << l["to"].get<size_t>() << "\n";
      continue;
    }
    if (l["kind"] == "jump") {
      std::cout << "go on at " << l["to"].get<size_t>() << "\n";
      continue;
    }
    const auto &kernel = m["kernels"][l["kernel"].get<size_t>()];
    // A kernel's arguments are its operands, then its results.
    size_t results = kernel["results"].get<size_t>();
    std::cout << kernel["name"].get<std::string>() << "(";
    for (size_t i = 0; i < args.size(); ++i) {
      if (i == args.size() - results)
        std::cout << (i ? ") -> (" : ") -> (");
      else if (i)
        std::cout << ", ";
      std::cout << where(args[i]);
    }
    std::cout << ")\n";
  }
  return kExitOk;
}

} // namespace ign
