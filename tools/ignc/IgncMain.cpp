//===- IgncMain.cpp - the ignc command line -------------------------------===//
//
// A thin CLI11 front end over lib/Driver; the registered targets add their
// own subcommands. ignc's main() is one call to igncMain, so a test binary
// can register one more target first.
//
//===----------------------------------------------------------------------===//

#include "IgncMain.h"
#include "ign/Driver/Driver.h"
#include "ign/Search/ScheduleSpace.h"
#include "ign/Target/TargetRegistry.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

namespace {
/// Splits "NAME=VALUE" at the last '=' (input names may contain '=').
bool splitAssignment(const std::string &text, std::string &name,
                     std::string &value) {
  size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0)
    return false;
  name = text.substr(0, eq);
  value = text.substr(eq + 1);
  return true;
}
} // namespace

/// "90s", "10m", "1h", "1.5h" or plain seconds; negative when malformed.
double parseDuration(const std::string &text) {
  if (text.empty())
    return -1;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  std::string unit(end);
  double scale = unit.empty() || unit == "s" ? 1
                 : unit == "m"               ? 60
                 : unit == "h"               ? 3600
                                             : -1;
  if (scale < 0 || !(v > 0))
    return -1;
  return v * scale;
}

namespace {

/// The top-level options (compiling a model) as given on the command line.
struct CompileArgs {
  ign::DriverOptions options;
  std::vector<std::string> inputShapes, frozen;
  std::string tuneTime;
  bool noFuse = false;
  int optLevel = 1;
  bool verbose = false, quiet = false;
};

/// The options of compiling a model, ignc's top level, with -v and -q.
void addCompileOptions(CLI::App &app, CompileArgs &args) {
  ign::DriverOptions &options = args.options;
  app.add_option("model", options.modelPath,
                 "ONNX model (.onnx, or .onnxtxt "
                 "in ONNX's text syntax)");
  app.add_option("--target", options.target,
                 "target to compile for (see `ignc targets`)")
      ->capture_default_str();
  app.add_option("--chip", options.chip,
                 "the target's chip (`ignc targets` lists each target's; "
                 "default: the target's first)");
  app.add_option("-o,--output", options.outputPath,
                 "output file (default: stdout for --emit)");
  app.add_option("--emit", options.emit,
                 "what to produce: ign (the imported module), linalg (the "
                 "reference lowering), kernels (the fused kernels: ops, "
                 "shapes, FLOPs, bytes, task ids), llvm (the host kernels' "
                 "optimized LLVM IR), gpu (each GPU kernel, bufferized, with "
                 "its mapping script: ign-opt --split-input-file "
                 "--transform-interpreter replays it), ptx (the CUDA "
                 "kernels' PTX), schedule (each "
                 "kernel's schedule: tuned from the database, or the "
                 "default)")
      ->check(CLI::IsMember(
          {"ign", "linalg", "kernels", "llvm", "gpu", "ptx", "schedule"}));
  app.add_flag("--json", options.json, "--emit=kernels as JSON");
  app.add_flag("--no-fuse", args.noFuse,
               "one op per kernel (for comparison and debugging)");
  app.add_option("-O", args.optLevel, "optimization level: 0 = --no-fuse, 1")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  app.add_option("--schedule", options.schedule,
                 "kernel schedules: default (tiled into workgroups run on "
                 "the runtime's threads) or reference (plain loops, one "
                 "thread: the correctness oracle)")
      ->check(CLI::IsMember({"default", "reference"}))
      ->capture_default_str();
  app.add_option("--host-cpu", options.hostCpu,
                 "for a device target: the CPU the bundle's host kernels are "
                 "built for (a CPU name as --target takes: x86-64-v3, "
                 "znver4, ...; default: this machine's)");
  app.add_option("--cores", options.cores,
                 "the cores the bundle's host kernels are split into "
                 "workgroups for (default: this machine's when compiling for "
                 "it; for a named --chip or --host-cpu unknown, up to 32 "
                 "workgroups per kernel)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--precision", options.precision,
                 "what matmuls and convolutions compute in: fp32, bf16 "
                 "(inputs rounded to bfloat16, sums in f32; on the host with "
                 "AVX512-BF16, else fp32 with a warning; CUDA's tensor "
                 "cores), fp16 or tf32 (inputs rounded to half or tf32, sums "
                 "in f32; CUDA's tensor cores)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16", "tf32"}))
      ->capture_default_str();
  app.add_option("--input-shape", args.inputShapes,
                 "bind a graph input's shape: NAME=1x3x224x224 (repeatable)");
  app.add_option("--freeze-input", args.frozen,
                 "make a graph input a constant read from a TensorProto file: "
                 "NAME=FILE.pb (repeatable)");
  app.add_option("--trials", options.tune.trials,
                 "tune: measure candidate schedules until the model's kernels "
                 "have N trials in the tuning database (earlier runs count)");
  app.add_option("--tune-time", args.tuneTime,
                 "tune for at most this long (90s, 10m, 1h)");
  app.add_option("--seed", options.tune.seed, "seed of the search (repeatable)")
      ->capture_default_str();
  app.add_option("--jobs", options.tune.jobs,
                 "candidates compiled at once (0: one per core)");
  app.add_option("--tune-threads", options.tune.threads,
                 "threads kernels are measured with (0: one per core)");
  app.add_option("--search", options.tune.search,
                 "model (evolutionary search ranked by the learned cost "
                 "model) or random (baseline)")
      ->check(CLI::IsMember({"model", "random"}))
      ->capture_default_str();
  app.add_option("--candidate-timeout", options.tune.candidateTimeout,
                 "seconds a candidate may take to build or to measure")
      ->capture_default_str();
  app.add_option("--report", options.tune.reportPath,
                 "write the tuning report (JSON) here");
  app.add_option("--tuning-db", options.tuningDb,
                 "tuning database (SQLite); default $IGNC_TUNING_DB or "
                 "~/.cache/ignc/tuning.db");
  app.add_flag("--no-tuning-db", options.noTuningDb,
               "use no tuning database: default schedules only");
  app.add_option("--tune-extra-candidate", options.tune.extraCandidates,
                 "schedule JSON measured first for every kernel (for testing "
                 "the search's isolation, e.g. {\"c0.pack\":1})")
      ->group("");
  app.add_flag("--print-weights", options.printWeights,
               "print large constants in full with --emit=ign");
  app.add_flag("-v,--verbose", args.verbose, "more output");
  app.add_flag("-q,--quiet", args.quiet, "errors only");
}

/// `ignc run`'s options as given on the command line.
struct RunArgs {
  ign::RunOptions run;
  std::vector<std::string> inputs;
};

CLI::App *addRunCommand(CLI::App &app, RunArgs &args) {
  auto *runCmd = app.add_subcommand("run", "run a bundle on inputs from files");
  runCmd->add_option("bundle", args.run.bundlePath, "the .ignb bundle")
      ->required();
  runCmd->add_option("--input", args.inputs,
                     "NAME=FILE (.npy or ONNX TensorProto .pb), repeatable");
  runCmd->add_option("--output-dir", args.run.outputDir,
                     "write each output as NAME.npy here");
  runCmd->add_option("--threads", args.run.threads,
                     "worker threads (0: one per core)");
  runCmd->add_flag("--random-inputs", args.run.randomInputs,
                   "seeded random values for inputs not given by --input");
  runCmd->add_option("--seed", args.run.seed, "seed for --random-inputs")
      ->capture_default_str();

  return runCmd;
}

/// `ignc bench`'s options as given on the command line.
struct BenchArgs {
  ign::BenchOptions bench;
  std::vector<std::string> inputs;
};

CLI::App *addBenchCommand(CLI::App &app, BenchArgs &args) {
  ign::BenchOptions &bench = args.bench;
  auto *benchCmd = app.add_subcommand(
      "bench", "time a bundle on random inputs (or some from files)");
  benchCmd->add_option("bundle", bench.bundlePath, "the .ignb bundle")
      ->required();
  benchCmd->add_option("--input", args.inputs,
                       "NAME=FILE for an input not to draw at random (one a "
                       "model branches on), repeatable");
  benchCmd->add_option("--threads", bench.threads,
                       "worker threads (0: one per core)");
  benchCmd->add_option("--warmup", bench.warmup, "untimed runs first")
      ->capture_default_str();
  benchCmd->add_option("--repeat", bench.repeat, "timed runs")
      ->capture_default_str();
  benchCmd->add_option("--seed", bench.seed, "seed of the random inputs")
      ->capture_default_str();
  benchCmd->add_flag("--json", bench.json, "print the report as JSON");

  return benchCmd;
}

CLI::App *addDbCommand(CLI::App &app, ign::DbCommand &db) {
  auto *dbCmd = app.add_subcommand(
      "db", "the tuning database: stats, export [FILE], import FILE, merge DB");
  dbCmd->add_option("action", db.action, "stats, export, import or merge")
      ->required()
      ->check(CLI::IsMember({"stats", "export", "import", "merge"}));
  dbCmd->add_option("file", db.file,
                    "JSON file (export: default stdout; import), or another "
                    "database (merge)");
  dbCmd->add_option("--tuning-db", db.dbPath,
                    "the database (default: as for "
                    "compiling)");
  dbCmd->add_option("--fingerprint", db.fingerprint,
                    "export only this fingerprint ('this': this machine's)");
  dbCmd->add_flag("--json", db.json, "stats as JSON");

  return dbCmd;
}

CLI::App *addReportCommand(CLI::App &app, ign::ReportOptions &report) {
  auto *cmd = app.add_subcommand(
      "report", "measure a bundle against its default schedules, the "
                "reference and onnxruntime; write HTML or JSON; or --verify a "
                "report's claims");
  cmd->add_option("bundle", report.bundlePath, "the .ignb bundle")->required();
  cmd->add_option("-o,--output", report.outputPath,
                  "report.html or report.json");
  cmd->add_flag("--verify", report.verify,
                "re-measure and check the claims of --claims");
  cmd->add_option("--claims", report.claimsPath,
                  "the report (.json or .html) whose claims --verify checks");
  cmd->add_option(
      "--model", report.modelPath,
      "the ONNX model (default: the manifest's, beside the bundle)");
  cmd->add_option("--tuning-db", report.tuningDb,
                  "the tuning database (default: as for compiling)");
  cmd->add_option("--baseline", report.baseline, "onnxruntime or none")
      ->capture_default_str();
  cmd->add_option("--python", report.python,
                  "the Python that runs the onnxruntime peer")
      ->capture_default_str();
  cmd->add_option("--threads", report.threads, "threads (0: one per core)");
  cmd->add_option("--rounds", report.rounds, "interleaved rounds")
      ->capture_default_str();
  cmd->add_option("--runs", report.runs, "warm runs per round and contender")
      ->capture_default_str();
  cmd->add_option("--cold-runs", report.coldRuns,
                  "runs per round after flushing the caches")
      ->capture_default_str();
  cmd->add_option(
         "--check-sets", report.checkSets,
         "input sets (1-3) checked against the reference and "
         "onnxruntime (the reference's loops are slow on large models)")
      ->capture_default_str();
  cmd->add_option("--seed", report.seed, "seed of the random inputs")
      ->capture_default_str();
  cmd->add_option("--tolerance", report.tolerance,
                  "--verify: slack on timing claims (0.15: 15%)")
      ->capture_default_str();
  return cmd;
}

/// `--input NAME=FILE` options as (name, file) pairs; false (with an error
/// printed) on one that is not NAME=FILE.
bool parseInputs(const std::vector<std::string> &given,
                 std::vector<std::pair<std::string, std::string>> &inputs) {
  for (const std::string &s : given) {
    std::string name, file;
    if (!splitAssignment(s, name, file)) {
      std::cerr << "ignc: error: --input '" << s << "' is not NAME=FILE\n";
      return false;
    }
    inputs.push_back({name, file});
  }
  return true;
}

int runCommand(RunArgs &args, bool quiet) {
  if (!parseInputs(args.inputs, args.run.inputs))
    return ign::kExitUsage;
  args.run.verbosity = quiet ? ign::Verbosity::Quiet : ign::Verbosity::Normal;
  return ign::runBundle(args.run);
}

int benchCommand(BenchArgs &args) {
  if (!parseInputs(args.inputs, args.bench.inputs))
    return ign::kExitUsage;
  return ign::benchBundle(args.bench);
}

int dbCommand(ign::DbCommand &db) {
  if ((db.action == "import" || db.action == "merge") && db.file.empty()) {
    std::cerr << "ignc: error: db " << db.action << " needs a file\n";
    return ign::kExitUsage;
  }
  return ign::runDbCommand(db);
}

/// Checks the tuning options; false (the error printed) when they are wrong.
bool checkTuningOptions(ign::DriverOptions &options,
                        const std::string &tuneTime) {
  if (!tuneTime.empty()) {
    options.tune.seconds = parseDuration(tuneTime);
    if (options.tune.seconds <= 0) {
      std::cerr << "ignc: error: --tune-time '" << tuneTime
                << "' is not a duration (90s, 10m, 1h)\n";
      return false;
    }
  }
  if (options.tune.trials < 0 || options.tune.jobs < 0 ||
      options.tune.threads < 0 || !(options.tune.candidateTimeout > 0)) {
    std::cerr << "ignc: error: --trials, --jobs and --tune-threads must not be "
                 "negative, --candidate-timeout positive\n";
    return false;
  }
  for (const std::string &text : options.tune.extraCandidates) {
    std::string error;
    if (!ign::search::scheduleFromJson(text, &error)) {
      std::cerr << "ignc: error: --tune-extra-candidate '" << text
                << "': " << error << "\n";
      return false;
    }
  }
  if (options.tune.enabled() && !options.emit.empty() &&
      options.emit != "schedule") {
    std::cerr << "ignc: error: tuning (--trials, --tune-time) goes with a "
                 "bundle or --emit=schedule\n";
    return false;
  }
  if (options.noTuningDb &&
      (!options.tuningDb.empty() || options.tune.enabled())) {
    std::cerr << "ignc: error: --no-tuning-db excludes --tuning-db and "
                 "tuning\n";
    return false;
  }
  return true;
}

/// Binds --input-shape and --freeze-input into the import options; false
/// (the error printed) when one is malformed.
bool bindInputs(CompileArgs &args) {
  ign::DriverOptions &options = args.options;
  for (const std::string &s : args.inputShapes) {
    std::string name, dims;
    std::optional<std::vector<int64_t>> shape;
    if (splitAssignment(s, name, dims))
      shape = ign::parseShape(dims);
    if (!shape) {
      std::cerr << "ignc: error: --input-shape '" << s
                << "' is not NAME=DIMS (e.g. input=1x3x224x224)\n";
      return false;
    }
    if (options.import.inputShapes.count(name)) {
      std::cerr << "ignc: error: --input-shape given twice for '" << name
                << "'\n";
      return false;
    }
    options.import.inputShapes[name] = *shape;
  }
  for (const std::string &s : args.frozen) {
    std::string name, path;
    if (!splitAssignment(s, name, path)) {
      std::cerr << "ignc: error: --freeze-input '" << s
                << "' is not NAME=FILE.pb\n";
      return false;
    }
    options.import.frozenInputs[name] = path;
  }
  return true;
}

/// Compiles the model after checking the top-level options.
int compile(CompileArgs &args, CLI::App &app) {
  ign::DriverOptions &options = args.options;
  if (options.modelPath.empty()) {
    std::cerr << "ignc: error: no model given\n" << app.help();
    return ign::kExitUsage;
  }
  options.fuse = !args.noFuse && args.optLevel != 0;
  if (!checkTuningOptions(options, args.tuneTime))
    return ign::kExitUsage;
  if (options.json && options.emit != "kernels") {
    std::cerr << "ignc: error: --json goes with --emit=kernels\n";
    return ign::kExitUsage;
  }
  options.verbosity = args.quiet     ? ign::Verbosity::Quiet
                      : args.verbose ? ign::Verbosity::Verbose
                                     : ign::Verbosity::Normal;
  if (!bindInputs(args))
    return ign::kExitUsage;
  return ign::runCompile(options);
}

} // namespace

int ign::igncMain(int argc, char **argv) {
  // The tuning workers (child processes of a tuning run) skip CLI11.
  if (argc >= 2 && std::string(argv[1]) == "tune-worker")
    return ign::runTuneWorker(std::vector<std::string>(argv + 2, argv + argc));
  CLI::App app{"ignc: an autotuning compiler for neural-network inference.\n"
               "Compiles an ONNX model into a kernel bundle for one target.",
               "ignc"};
  app.set_version_flag("--version", std::string("ignc " IGN_VERSION_STRING));
  CompileArgs compileArgs;
  addCompileOptions(app, compileArgs);
  auto *targets = app.add_subcommand("targets", "list the known targets");
  RunArgs runArgs;
  CLI::App *runCmd = addRunCommand(app, runArgs);
  BenchArgs bench;
  CLI::App *benchCmd = addBenchCommand(app, bench);
  ign::DbCommand db;
  CLI::App *dbCmd = addDbCommand(app, db);
  ign::ReportOptions report;
  CLI::App *reportCmd = addReportCommand(app, report);

  // The targets' own subcommands (`ignc sim`, ...).
  ign::target::registerBuiltinTargets();
  std::vector<ign::target::Subcommand> targetCommands;
  for (const ign::target::Target *t : ign::target::registeredTargets())
    t->addSubcommands(app, targetCommands);

  std::string inspectPath;
  auto *inspectCmd = app.add_subcommand("inspect", "describe a bundle");
  inspectCmd->add_option("bundle", inspectPath, "the .ignb bundle")->required();
  // -v/-q given after a subcommand still reach the app.
  for (CLI::App *sub :
       {runCmd, benchCmd, inspectCmd, targets, dbCmd, reportCmd})
    sub->fallthrough();
  for (ign::target::Subcommand &sub : targetCommands)
    sub.app->fallthrough();
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? ign::kExitOk : ign::kExitUsage;
  }
  if (targets->parsed())
    return ign::printTargets();
  if (inspectCmd->parsed())
    return ign::inspectBundle(inspectPath);
  if (dbCmd->parsed())
    return dbCommand(db);
  if (benchCmd->parsed())
    return benchCommand(bench);
  if (reportCmd->parsed()) {
    report.verbosity =
        compileArgs.quiet ? ign::Verbosity::Quiet : ign::Verbosity::Normal;
    return ign::runReport(report);
  }
  for (ign::target::Subcommand &sub : targetCommands)
    if (sub.app->parsed())
      return sub.run();
  if (runCmd->parsed())
    return runCommand(runArgs, compileArgs.quiet);
  return compile(compileArgs, app);
}
