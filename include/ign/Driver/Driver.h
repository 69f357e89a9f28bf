//===- Driver.h - what the ignc command does, as a library ------*- C++ -*-===//
//
// The CLI in tools/ignc only parses flags into DriverOptions and calls here.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_DRIVER_DRIVER_H
#define IGN_DRIVER_DRIVER_H

#include "ign/Driver/ExitCodes.h"
#include "ign/Import/OnnxImporter.h"

#include <string>
#include <vector>

namespace ign {

enum class Verbosity { Quiet, Normal, Verbose };

/// The search agent's settings (docs/search.md).
struct TuneOptions {
  int64_t trials = 0;           // --trials: total for the model's kernels
  double seconds = 0;           // --tune-time
  uint64_t seed = 1;            // --seed
  int jobs = 0;                 // candidates compiled at once (0: one per core)
  int threads = 0;              // threads kernels are measured with (0: cores)
  std::string search = "model"; // "model" (evolutionary + cost model) or
                                // "random" (the baseline)
  std::string reportPath;       // --report FILE.json
  double candidateTimeout = 60; // seconds per build or measurement
  /// Schedules measured first for every task (testing the isolation:
  /// e.g. {"debug.fault":1}); never chosen unless they are valid.
  std::vector<std::string> extraCandidates;

  bool enabled() const { return trials > 0 || seconds > 0; }
};

struct DriverOptions {
  std::string modelPath;
  std::string target = "host";
  /// The target's chip (a preset); empty: the target's default.
  std::string chip;
  std::string outputPath;
  std::string emit; // "" (bundle), "ign", "linalg", "kernels" or "llvm"
  std::string schedule = "default"; // or "reference"
  bool fuse = true;                 // false: one op per kernel (--no-fuse)
  std::string precision = "fp32";   // "bf16", "fp16", "tf32" (--precision)
  /// --host-cpu: the CPU a device bundle's host kernels are built for (a
  /// CPU name as --target takes); empty: this machine's.
  std::string hostCpu;
  /// --cores: the cores the host kernels are split for; 0: this machine's
  /// for --chip host, unknown for a named CPU.
  int64_t cores = 0;
  bool json = false; // --emit=kernels as JSON
  bool printWeights = false;
  Verbosity verbosity = Verbosity::Normal;
  ImportOptions import;
  /// --tuning-db; empty: the default path (used when it exists, or when
  /// tuning). --no-tuning-db: none.
  std::string tuningDb;
  bool noTuningDb = false;
  TuneOptions tune;
};

/// Registers every target's device driver with libignrt, so that ignc's
/// tools run bundles for those targets.
void registerDevices();

/// `ignc tune-worker build|measure ...`: the child processes of tuning.
int runTuneWorker(const std::vector<std::string> &args);

/// `ignc db stats|export|import|merge`.
struct DbCommand {
  std::string action;      // stats, export, import, merge
  std::string dbPath;      // empty: the default database
  std::string file;        // JSON for export/import, a database for merge
  std::string fingerprint; // export: only this one ("" all, "this": ours)
  bool json = false;       // stats as JSON
};
int runDbCommand(const DbCommand &command);

/// Runs one compilation; diagnostics go to stderr in ignc's format.
int runCompile(const DriverOptions &options);

struct RunOptions {
  std::string bundlePath;
  std::vector<std::pair<std::string, std::string>> inputs; // name, file
  std::string outputDir;
  int threads = 0;
  /// Inputs not given by file get seeded random values (never zeros).
  bool randomInputs = false;
  uint64_t seed = 1;
  Verbosity verbosity = Verbosity::Normal;
};
/// `ignc run`: runs a bundle on inputs from files, writes outputs as .npy.
int runBundle(const RunOptions &options);

struct BenchOptions {
  std::string bundlePath;
  /// Inputs from files (name, file); the others get seeded random values.
  std::vector<std::pair<std::string, std::string>> inputs;
  int threads = 0, warmup = 3, repeat = 20;
  bool json = false;
  uint64_t seed = 1;
};
/// `ignc bench`: latency on inputs from files or random ones, with a
/// per-kernel breakdown.
int benchBundle(const BenchOptions &options);

struct ReportOptions {
  std::string bundlePath;
  std::string modelPath;  // default: the manifest's source, found nearby
  std::string tuningDb;   // default: as for compiling
  std::string outputPath; // .html or .json
  std::string claimsPath; // --verify: the report to check
  bool verify = false;
  std::string baseline = "onnxruntime"; // or "none"
  std::string python = "python3";       // runs the baseline's peer script
  int threads = 0;                      // 0: one per core
  int rounds = 5, runs = 10, coldRuns = 3;
  /// Input sets whose outputs are checked against the reference lowering
  /// (its naive loops dominate a large model's report) and onnxruntime.
  int checkSets = 3;
  uint64_t seed = 1;
  double tolerance = 0.15; // --verify: slack on latency claims
  Verbosity verbosity = Verbosity::Normal;
};
/// `ignc report`: measures a bundle against its default schedules, the
/// reference lowering and onnxruntime, and writes the report; with
/// `verify`, re-measures and checks a report's claims.
int runReport(const ReportOptions &options);

/// `ignc inspect`: the manifest in human form.
int inspectBundle(const std::string &path);

/// Prints the target list (`ignc targets`).
int printTargets();

} // namespace ign

#endif // IGN_DRIVER_DRIVER_H
