//===- ReportMeasure.h - measurement for `ignc report` ----------*- C++ -*-===//
//
// Bundles (and a peer process) measured side by side in interleaved rounds,
// in ways a kernel cannot game (KernelBench's lessons): several input sets
// of different distributions, one session each, rotated run by run (no
// input stays in cache, no result can be reused); outputs poisoned before
// every run; warm runs and cold ones (caches flushed before each); the
// thread count and CPU affinity recorded. Statistics: median, p10/p90, and
// bootstrap intervals of speedups.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_DRIVER_REPORTMEASURE_H
#define IGN_DRIVER_REPORTMEASURE_H

#include "RuntimeHelpers.h"
#include "ign/Driver/TensorFiles.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ign {

class PeerProcess;

namespace report {

/// Input tensors for a bundle: set s draws from distribution s % 3
/// (floats: uniform +-[0.01, 1], normal(0, 1), uniform [0, 1); integers
/// and booleans always in [0, 2), valid indices for any dim).
struct InputSets {
  std::vector<std::string> distributions;    // per set
  std::vector<std::vector<TensorData>> sets; // [set][input]
};
InputSets drawInputSets(ignrt_bundle *bundle, uint64_t seed, int count);
/// Writes each set's inputs as .npy under `dir` (for a peer); per set,
/// input name -> path. Empty on failure (`error` set).
std::vector<std::map<std::string, std::string>>
writeInputSets(const InputSets &inputs, const std::string &dir,
               std::string &error);

/// One bundle under measurement: a session per input set.
struct Contender {
  std::string label;
  BundlePtr bundle;
  nlohmann::json manifest;
  std::vector<SessionPtr> sessions;
  size_t turn = 0;
};
/// Opens `path` with a session per input set (none when `inputs` has no
/// sets); false and `error` if not.
bool openContender(const std::string &path, const std::string &label,
                   int threads, const InputSets &inputs, Contender &c,
                   std::string &error);

/// A session per input set for an open contender.
bool addSessions(Contender &c, int threads, const InputSets &inputs,
                 std::string &error);

/// Runs input set `set` once with poisoned outputs; the outputs' bytes.
bool runOnce(Contender &c, size_t set, std::vector<TensorData> &outputs,
             std::string &error);

struct Samples {
  std::vector<double> warmMs, coldMs;
  /// Per manifest kernel: its launches' summed time in each warm run.
  std::vector<std::vector<double>> kernelMs;
  /// Per manifest kernel: its device time (GPU timestamps or a simulator's
  /// clock) in the last run, 0 on the host.
  std::vector<double> kernelDeviceMs;
};

struct MeasureOptions {
  int rounds = 5, warmRuns = 10, coldRuns = 3;
  size_t flushBytes = 0; // written before each cold run
};

/// Measures every contender (and the peer, when given: warm and cold runs
/// through its "run" request) in `rounds` rounds; each round runs them in a
/// rotated order. `samples` gets one entry per contender, then the peer's.
/// A peer that fails is dropped with `peerError` set; a contender that
/// fails ends the measurement (false, `error`).
bool measureInterleaved(std::vector<Contender *> contenders, PeerProcess *peer,
                        const MeasureOptions &options,
                        std::vector<Samples> &samples, std::string &error,
                        std::string &peerError);

struct Stats {
  double median = 0, p10 = 0, p90 = 0, min = 0;
  size_t runs = 0;
};
Stats statsOf(std::vector<double> values);
nlohmann::json statsJson(const Stats &s);

/// The speedup of `faster` over `base` (ratio of medians) with a 95%
/// bootstrap interval (resampling each distribution, seeded).
struct Interval {
  double value = 0, lo = 0, hi = 0;
};
Interval speedupInterval(const std::vector<double> &base,
                         const std::vector<double> &faster, uint64_t seed);
nlohmann::json intervalJson(const Interval &i);

/// The last-level cache's size (bytes), for the cold-run flush.
size_t lastLevelCacheBytes();
/// Memory bandwidth (GB/s): copying a buffer far larger than the caches
/// with `threads` threads, best of a few passes.
double measureBandwidthGBs(int threads);
/// The CPUs this process may run on.
std::vector<int> cpuAffinity();

} // namespace report
} // namespace ign

#endif // IGN_DRIVER_REPORTMEASURE_H
