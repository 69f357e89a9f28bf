//===- ReportMeasure.cpp - measurement for `ignc report` ------------------===//

#include "ReportMeasure.h"
#include "PeerProcess.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sched.h>
#include <thread>
#include <unistd.h>

namespace ign::report {

namespace {

const char *kDistributions[] = {"uniform +-[0.01, 1]", "normal(0, 1)",
                                "uniform [0, 1)"};

/// One input's bytes from distribution `d` (floats only; the rest as
/// randomBytes draws them).
std::string drawInput(const ignrt_tensor_info &info, int d,
                      std::mt19937_64 &rng) {
  if (d == 0 || (info.dtype != IGNRT_F32 && info.dtype != IGNRT_F64))
    return randomBytes(info, rng);
  size_t elem = ignrt_dtype_size(info.dtype);
  size_t n = info.bytes / elem;
  std::string bytes(info.bytes, '\0');
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (size_t i = 0; i < n; ++i) {
    double v = d == 1 ? normal(rng) : unit(rng);
    if (info.dtype == IGNRT_F32) {
      float f = float(v);
      std::memcpy(&bytes[i * 4], &f, 4);
    } else {
      std::memcpy(&bytes[i * 8], &v, 8);
    }
  }
  return bytes;
}

double elapsedMs(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// Writes over a buffer larger than the last-level cache.
void flushCaches(std::vector<char> &buffer, int round) {
  if (buffer.empty())
    return;
  std::memset(buffer.data(), round & 0xff, buffer.size());
  asm volatile("" : : "r"(buffer.data()) : "memory");
}

/// One timed run of the contender's next input set, outputs poisoned.
bool timedRun(Contender &c, double &ms, std::string &error) {
  ignrt_session *s = c.sessions[c.turn++ % c.sessions.size()].get();
  ignrt_session_fill_outputs(s, 0xff);
  auto start = std::chrono::steady_clock::now();
  if (ignrt_session_run(s) != IGNRT_OK) {
    error = c.label + ": run failed: " + ignrt_last_error();
    return false;
  }
  ms = elapsedMs(start);
  return true;
}

/// Adds the last run's per-kernel times (launches summed per kernel).
void addKernelTimes(Contender &c, ignrt_session *s, Samples &out) {
  size_t kernels = c.manifest["kernels"].size();
  out.kernelMs.resize(kernels);
  out.kernelDeviceMs.assign(kernels, 0);
  std::vector<double> sum(kernels, 0);
  const auto &launches = c.manifest["launches"];
  for (size_t l = 0; l < ignrt_session_num_kernels(s) && l < launches.size();
       ++l) {
    if (launches[l].value("kind", "") != "kernel")
      continue;
    size_t k = launches[l]["kernel"].get<size_t>();
    const char *name;
    double ns;
    if (k < kernels &&
        ignrt_session_kernel_timing(s, l, &name, &ns) == IGNRT_OK)
      sum[k] += ns / 1e6;
    ignrt_device_stats d;
    if (k < kernels && ignrt_session_kernel_device(s, l, &d) == IGNRT_OK)
      out.kernelDeviceMs[k] += d.device_ns / 1e6;
  }
  for (size_t k = 0; k < kernels; ++k)
    out.kernelMs[k].push_back(sum[k]);
}

bool measureContender(Contender &c, const MeasureOptions &o,
                      std::vector<char> &flush, int round, Samples &out,
                      std::string &error) {
  double ms;
  if (!timedRun(c, ms, error)) // untimed: the first touch of this round
    return false;
  for (int r = 0; r < o.warmRuns; ++r) {
    ignrt_session *s = c.sessions[c.turn % c.sessions.size()].get();
    if (!timedRun(c, ms, error))
      return false;
    out.warmMs.push_back(ms);
    addKernelTimes(c, s, out);
  }
  for (int r = 0; r < o.coldRuns; ++r) {
    flushCaches(flush, round * 131 + r);
    if (!timedRun(c, ms, error))
      return false;
    out.coldMs.push_back(ms);
  }
  return true;
}

bool measurePeer(PeerProcess &peer, const MeasureOptions &o, Samples &out,
                 std::string &error) {
  auto ask = [&](int n, size_t flushMb, std::vector<double> &into) {
    auto reply = peer.call({{"cmd", "run"}, {"n", n}, {"flush_mb", flushMb}},
                           600, error);
    if (!reply || !(*reply)["ms"].is_array())
      return false;
    for (const auto &v : (*reply)["ms"])
      into.push_back(v.get<double>());
    return true;
  };
  std::vector<double> untimed;
  return ask(1, 0, untimed) && ask(o.warmRuns, 0, out.warmMs) &&
         (o.coldRuns == 0 ||
          ask(o.coldRuns, std::max<size_t>(1, o.flushBytes >> 20), out.coldMs));
}

} // namespace

InputSets drawInputSets(ignrt_bundle *bundle, uint64_t seed, int count) {
  InputSets out;
  for (int s = 0; s < count; ++s) {
    std::mt19937_64 rng(seed * 7919 + uint64_t(s));
    out.distributions.push_back(kDistributions[s % 3]);
    std::vector<TensorData> set;
    for (size_t i = 0; i < ignrt_bundle_num_inputs(bundle); ++i) {
      ignrt_tensor_info info;
      ignrt_bundle_input(bundle, i, &info);
      set.push_back({info.name, ignrt_dtype_name(info.dtype),
                     std::vector<int64_t>(info.dims, info.dims + info.rank),
                     drawInput(info, s % 3, rng)});
    }
    out.sets.push_back(std::move(set));
  }
  return out;
}

std::vector<std::map<std::string, std::string>>
writeInputSets(const InputSets &inputs, const std::string &dir,
               std::string &error) {
  std::vector<std::map<std::string, std::string>> out;
  for (size_t s = 0; s < inputs.sets.size(); ++s) {
    std::map<std::string, std::string> paths;
    for (size_t i = 0; i < inputs.sets[s].size(); ++i) {
      std::string path =
          dir + "/in" + std::to_string(s) + "_" + std::to_string(i) + ".npy";
      if (!writeNpy(path, inputs.sets[s][i], error))
        return {};
      paths[inputs.sets[s][i].name] = path;
    }
    out.push_back(std::move(paths));
  }
  return out;
}

bool openContender(const std::string &path, const std::string &label,
                   int threads, const InputSets &inputs, Contender &c,
                   std::string &error) {
  c.label = label;
  ignrt_bundle *b = nullptr;
  if (ignrt_bundle_open(path.c_str(), &b) != IGNRT_OK) {
    error = path + ": " + ignrt_last_error();
    return false;
  }
  c.bundle.reset(b);
  c.manifest = nlohmann::json::parse(ignrt_bundle_manifest(b), nullptr, false);
  return addSessions(c, threads, inputs, error);
}

bool addSessions(Contender &c, int threads, const InputSets &inputs,
                 std::string &error) {
  ignrt_bundle *b = c.bundle.get();
  const std::string &path = c.label;
  for (const std::vector<TensorData> &set : inputs.sets) {
    ignrt_session *raw = nullptr;
    if (ignrt_session_create(b, threads, &raw) != IGNRT_OK) {
      error = path + ": cannot create a session: " + ignrt_last_error();
      return false;
    }
    c.sessions.emplace_back(raw);
    for (const TensorData &t : set) {
      ignrt_dtype dtype = ignrt_dtype(0);
      for (int d = IGNRT_F32; d <= IGNRT_BOOL; ++d)
        if (t.dtype == ignrt_dtype_name(ignrt_dtype(d)))
          dtype = ignrt_dtype(d);
      if (ignrt_session_set_input(raw, t.name.c_str(), dtype, t.shape.data(),
                                  t.shape.size(), t.bytes.data(),
                                  t.bytes.size()) != IGNRT_OK) {
        error = path + ": input '" + t.name + "': " + ignrt_last_error();
        return false;
      }
    }
  }
  return true;
}

bool runOnce(Contender &c, size_t set, std::vector<TensorData> &outputs,
             std::string &error) {
  ignrt_session *s = c.sessions.at(set).get();
  ignrt_session_fill_outputs(s, 0xff);
  if (ignrt_session_run(s) != IGNRT_OK) {
    error = c.label + ": run failed: " + ignrt_last_error();
    return false;
  }
  outputs.clear();
  for (size_t i = 0; i < ignrt_bundle_num_outputs(c.bundle.get()); ++i) {
    ignrt_tensor_info info;
    const void *data;
    ignrt_session_output_at(s, i, &info, &data);
    outputs.push_back(
        {info.name, ignrt_dtype_name(info.dtype),
         std::vector<int64_t>(info.dims, info.dims + info.rank),
         std::string(static_cast<const char *>(data), info.bytes)});
  }
  return true;
}

bool measureInterleaved(std::vector<Contender *> contenders, PeerProcess *peer,
                        const MeasureOptions &options,
                        std::vector<Samples> &samples, std::string &error,
                        std::string &peerError) {
  size_t n = contenders.size() + (peer ? 1 : 0);
  samples.assign(n, Samples{});
  std::vector<char> flush(options.coldRuns > 0 ? options.flushBytes : 0);
  for (int round = 0; round < options.rounds; ++round)
    for (size_t j = 0; j < n; ++j) {
      size_t who = (j + size_t(round)) % n; // each round a rotated order
      // Thread pools spin for a while after a run (onnxruntime's and
      // ours): let the last contender's go idle first.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (who == contenders.size()) {
        // A peer that fails stops being measured; ignc's figures stand.
        if (peer && !measurePeer(*peer, options, samples[who], peerError))
          peer = nullptr;
        continue;
      }
      if (!measureContender(*contenders[who], options, flush, round,
                            samples[who], error))
        return false;
    }
  return true;
}

Stats statsOf(std::vector<double> v) {
  Stats s;
  s.runs = v.size();
  if (v.empty())
    return s;
  std::sort(v.begin(), v.end());
  auto q = [&](double f) {
    double at = f * double(v.size() - 1);
    size_t lo = size_t(at);
    size_t hi = std::min(v.size() - 1, lo + 1);
    return v[lo] + (v[hi] - v[lo]) * (at - double(lo));
  };
  s.median = q(0.5);
  s.p10 = q(0.1);
  s.p90 = q(0.9);
  s.min = v.front();
  return s;
}

nlohmann::json statsJson(const Stats &s) {
  return {{"median_ms", s.median},
          {"p10_ms", s.p10},
          {"p90_ms", s.p90},
          {"min_ms", s.min},
          {"runs", s.runs}};
}

Interval speedupInterval(const std::vector<double> &base,
                         const std::vector<double> &faster, uint64_t seed) {
  Interval out;
  if (base.empty() || faster.empty())
    return out;
  double f = statsOf(faster).median;
  out.value = f > 0 ? statsOf(base).median / f : 0;
  std::mt19937_64 rng(seed);
  std::vector<double> ratios;
  std::vector<double> a(base.size()), b(faster.size());
  for (int i = 0; i < 1000; ++i) {
    for (double &x : a)
      x = base[rng() % base.size()];
    for (double &x : b)
      x = faster[rng() % faster.size()];
    double m = statsOf(b).median;
    if (m > 0)
      ratios.push_back(statsOf(a).median / m);
  }
  std::sort(ratios.begin(), ratios.end());
  if (!ratios.empty()) {
    out.lo = ratios[size_t(0.025 * double(ratios.size() - 1))];
    out.hi = ratios[size_t(0.975 * double(ratios.size() - 1))];
  }
  return out;
}

nlohmann::json intervalJson(const Interval &i) {
  return {{"value", i.value}, {"lo", i.lo}, {"hi", i.hi}};
}

size_t lastLevelCacheBytes() {
  size_t best = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" +
                     std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text) || text.empty())
      continue;
    size_t value = std::strtoull(text.c_str(), nullptr, 10);
    char unit = text.back();
    value <<= unit == 'K' ? 10 : unit == 'M' ? 20 : 0;
    best = std::max(best, value);
  }
  return best ? best : size_t(32) << 20;
}

double measureBandwidthGBs(int threads) {
  threads = std::max(1, threads);
  size_t bytes = std::max<size_t>(4 * lastLevelCacheBytes(), size_t(256) << 20);
  bytes = std::min<size_t>(bytes, size_t(1) << 30);
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double best = 0;
  for (int pass = 0; pass < 4; ++pass) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    size_t chunk = bytes / size_t(threads);
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        std::memcpy(dst.data() + t * chunk, src.data() + t * chunk, chunk);
      });
    for (std::thread &w : workers)
      w.join();
    double s = elapsedMs(start) / 1e3;
    // A copy reads and writes every byte.
    if (s > 0)
      best = std::max(best, 2.0 * double(bytes) / s / 1e9);
  }
  return best;
}

std::vector<int> cpuAffinity() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set))
        cpus.push_back(c);
  return cpus;
}

} // namespace ign::report
