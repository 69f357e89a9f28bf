//===- Driver.cpp - compile pipeline and diagnostics for ignc -------------===//

#include "ign/Driver/Driver.h"
#include "HostCompiler.h"
#include "KernelReport.h"
#include "SystolicCompiler.h"
#include "Tuning.h"
#include "ign/Bundle/BundleWriter.h"
#include "ign/Conversion/Passes.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace ign {

const std::vector<TargetInfo> &knownTargets() {
  static const std::vector<TargetInfo> targets = {
      {"host",
       "the compiling machine's CPU via LLVM; or name a CPU: "
       "x86-64-v3, x86-64-v4, znver4, ...",
       true},
      {"systolic",
       "systolic-array accelerator on ignc's cycle-level simulator; "
       "--chip gemmini-16, gemmini-16-f32, tpu-v1 or scale-32",
       true},
      {"vulkan", "Vulkan / SPIR-V mobile GPUs (mali-g710, adreno-740)", false},
      {"cuda", "NVIDIA GPUs via PTX (sm80, sm90, ...)", false},
      {"rocm", "AMD GPUs (gfx90a, gfx942, ...)", false},
  };
  return targets;
}

int printTargets() {
  llvm::outs() << "Targets (status in this build):\n";
  for (const TargetInfo &t : knownTargets())
    llvm::outs() << "  " << llvm::left_justify(t.name, 10)
                 << (t.available ? "available    " : "not built yet") << "  "
                 << t.description << "\n";
  return kExitOk;
}

namespace {

/// Formats a diagnostic as `ignc: error: FILE: node 'NAME' (OP): message`.
struct LocationParts {
  std::string file, node, opType, value;
};

void collect(Location loc, LocationParts &parts) {
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    if (auto op = dyn_cast_or_null<StringAttr>(fused.getMetadata()))
      parts.opType = op.str();
    for (Location inner : fused.getLocations())
      collect(inner, parts);
  } else if (auto name = dyn_cast<NameLoc>(loc)) {
    (parts.opType.empty() ? parts.value : parts.node) = name.getName().str();
    collect(name.getChildLoc(), parts);
  } else if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    parts.file = file.getFilename().str();
  }
}

void printDiagnostic(Diagnostic &diag, Verbosity verbosity) {
  const char *severity = "error";
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    break;
  case DiagnosticSeverity::Warning:
    if (verbosity == Verbosity::Quiet)
      return;
    severity = "warning";
    break;
  case DiagnosticSeverity::Remark:
    if (verbosity != Verbosity::Verbose)
      return;
    severity = "remark";
    break;
  case DiagnosticSeverity::Note:
    severity = "note";
    break;
  }
  LocationParts parts;
  collect(diag.getLocation(), parts);
  auto &os = llvm::errs();
  os << "ignc: " << severity << ": ";
  if (!parts.file.empty())
    os << parts.file << ": ";
  if (!parts.opType.empty())
    os << "node '" << parts.node << "' (" << parts.opType << "): ";
  else if (!parts.value.empty())
    os << "'" << parts.value << "': ";
  os << diag.str() << "\n";
  for (Diagnostic &note : diag.getNotes())
    printDiagnostic(note, verbosity);
}

} // namespace

/// Opens -o (default stdout) for --emit; null after printing why not.
static std::unique_ptr<llvm::ToolOutputFile>
openEmitOutput(const DriverOptions &options) {
  std::string outPath = options.outputPath.empty() ? "-" : options.outputPath;
  std::string error;
  auto output = openOutputFile(outPath, &error);
  if (!output)
    llvm::errs() << "ignc: error: cannot write '" << outPath << "': " << error
                 << "\n";
  return output;
}

/// Opens the tuning database a compile uses: --tuning-db, else the default
/// one when it exists or when tuning. Null without error when none.
static std::unique_ptr<search::TuningDatabase>
openTuningDatabase(const DriverOptions &options, bool &failedToOpen) {
  failedToOpen = false;
  if (options.noTuningDb)
    return nullptr;
  std::string path = options.tuningDb;
  if (path.empty()) {
    path = search::defaultTuningDatabasePath();
    if (!options.tune.enabled() && !llvm::sys::fs::exists(path))
      return nullptr;
    llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path));
  }
  std::string error;
  auto db = search::TuningDatabase::open(path, error);
  if (!db) {
    llvm::errs() << "ignc: error: " << error << "\n";
    failedToOpen = true;
  }
  return db;
}

/// Prints the tuning table and writes --report; an exit code on failure.
static int reportTuning(const TuningRun &run, const DriverOptions &options,
                        const std::string &fingerprint, double peakGflops) {
  std::string table;
  std::string report =
      tuningReport(run, options.modelPath, fingerprint, &table, peakGflops);
  if (options.verbosity != Verbosity::Quiet)
    llvm::errs() << table;
  if (options.tune.reportPath.empty())
    return kExitOk;
  std::error_code ec;
  llvm::raw_fd_ostream os(options.tune.reportPath, ec);
  if (ec) {
    llvm::errs() << "ignc: error: cannot write '" << options.tune.reportPath
                 << "': " << ec.message() << "\n";
    return kExitOutput;
  }
  os << report;
  return kExitOk;
}

/// Compiles for the host and writes the bundle (or, with --emit=schedule,
/// prints each kernel's schedule). Kernels with a record in the tuning
/// database get its fastest valid schedule; the rest the default one.
static int compileBundle(ModuleOp module, const DriverOptions &options,
                         const std::string &cpu) {
  auto opset = module->getAttrOfType<IntegerAttr>("ign.opset");
  auto producer = module->getAttrOfType<StringAttr>("ign.producer");
  host::HostOptions hostOptions;
  hostOptions.cpu = cpu;
  hostOptions.schedule = options.schedule;
  hostOptions.fuse = options.fuse;
  const bool systolicTarget = options.target == "systolic";
  int arrayKernels = 0;
  systolic::ArrayConfig machine;
  if (systolicTarget) {
    auto preset = systolic::presetConfig(options.chip);
    if (!preset) {
      llvm::errs() << "ignc: error: " << llvm::toString(preset.takeError())
                   << "\n";
      return kExitTarget;
    }
    machine = *preset;
    hostOptions.targetName = "systolic";
    // The array's MVIN_IM2COL moves windows itself: convolutions keep their
    // columns in their kernel.
    hostOptions.separateThinColumns = false;
  }
  bool dbFailed = false;
  auto db = openTuningDatabase(options, dbFailed);
  if (dbFailed)
    return kExitOutput;
  std::string fingerprint =
      host::hostFingerprint(hostOptions, IGN_VERSION_STRING);
  // The array kernels' records live under the chip's fingerprint.
  std::string arrayFingerprint =
      systolicTarget
          ? systolic::systolicFingerprint(machine, IGN_VERSION_STRING)
          : std::string();
  std::map<std::string, search::Schedule> arrayTuned;
  if (systolicTarget) {
    systolic::ArrayScheduleLookup lookup;
    if (db)
      lookup = [&](const KernelSummary &k) -> const search::Schedule * {
        if (auto it = arrayTuned.find(k.task); it != arrayTuned.end())
          return &it->second;
        if (auto best = db->best(k.task, arrayFingerprint))
          if (auto s = search::scheduleFromJson(best->schedule))
            return &(arrayTuned[k.task] = *s);
        return nullptr;
      };
    hostOptions.offload = systolic::systolicOffload(
        machine,
        [&](const std::string &line) {
          if (line.find(": systolic,") != std::string::npos)
            ++arrayKernels;
          if (options.verbosity == Verbosity::Verbose)
            llvm::errs() << "ignc: " << line << "\n";
        },
        lookup);
  }
  if (options.tune.enabled() && systolicTarget) {
    // The search agent on the array kernels: simulated cycles are the
    // measurement, a reference GEMM the check.
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
    auto run = tuneSystolicModel(*copy, hostOptions, machine, options.tune, *db,
                                 arrayFingerprint, options.verbosity);
    if (!run)
      return kExitLowering;
    double peak = 2.0 * double(machine.rows * machine.cols) * machine.clockMHz /
                  1000.0; // GFLOP/s of the array
    if (int code = reportTuning(*run, options, arrayFingerprint, peak))
      return code;
  } else if (options.tune.enabled()) {
    if (cpu != "host" || options.schedule != "default") {
      llvm::errs() << "ignc: error: tuning measures on this machine: it needs "
                      "--target=host and the default schedule\n";
      return kExitUsage;
    }
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
    auto run = tuneModel(*copy, hostOptions, options.tune, *db, fingerprint,
                         options.verbosity);
    if (!run)
      return kExitLowering;
    if (int code = reportTuning(*run, options, fingerprint, /*peak=*/0))
      return code;
  }
  std::map<std::string, search::Schedule> tuned;
  std::vector<std::string> foreign;
  if (db && options.schedule == "default") {
    hostOptions.scheduleFor =
        [&](const KernelSummary &k) -> const search::Schedule * {
      if (auto it = tuned.find(k.task); it != tuned.end())
        return &it->second;
      if (auto best = db->best(k.task, fingerprint))
        if (auto s = search::scheduleFromJson(best->schedule))
          return &(tuned[k.task] = *s);
      auto others = db->otherFingerprints(k.task, fingerprint);
      if (!others.empty())
        foreign.push_back(k.task + " (" + llvm::join(others, ", ") + ")");
      return nullptr;
    };
  }
  auto compiled = host::compileForHost(module, hostOptions);
  if (failed(compiled))
    return kExitLowering;
  if (!foreign.empty() && options.verbosity != Verbosity::Quiet)
    llvm::errs() << "ignc: warning: the tuning database has records for "
                 << foreign.size()
                 << " kernel(s) only under other target fingerprints, not "
                    "applied (this machine is "
                 << fingerprint << "): " << llvm::join(foreign, "; ") << "\n";
  if (options.emit == "schedule") {
    auto output = openEmitOutput(options);
    if (!output)
      return kExitOutput;
    for (const bundle::KernelSpec &k : compiled->kernels)
      output->os() << k.name << " task " << k.task << ": " << k.scheduleJson
                   << "\n";
    output->keep();
    return kExitOk;
  }
  bundle::BundleContents &contents = *compiled;
  if (systolicTarget)
    contents.chip = options.chip;
  contents.modelSource = llvm::sys::path::filename(options.modelPath).str();
  contents.producer = producer ? producer.str() : "";
  contents.opset = opset ? opset.getInt() : 0;

  std::string outPath = options.outputPath;
  if (outPath.empty())
    outPath = llvm::sys::path::stem(options.modelPath).str() + ".ignb";
  std::string error = bundle::writeBundle(outPath, contents);
  if (!error.empty()) {
    llvm::errs() << "ignc: error: " << error << "\n";
    return kExitOutput;
  }
  if (options.verbosity != Verbosity::Quiet) {
    if (systolicTarget)
      llvm::errs() << "ignc: wrote " << outPath << " (target systolic, chip "
                   << options.chip << ": " << arrayKernels << " of "
                   << contents.kernels.size()
                   << " kernels on the array, the rest on the host cpu "
                   << contents.cpu << ")\n";
    else
      llvm::errs() << "ignc: wrote " << outPath << " (target host, cpu "
                   << contents.cpu << ")\n";
  }
  return kExitOk;
}

int runCompile(const DriverOptions &options) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<IgnDialect, func::FuncDialect>();
  // Diagnostics name the ONNX node; dumping the failing op is noise.
  context.printOpOnDiagnostic(false);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    printDiagnostic(diag, options.verbosity);
    return success();
  });

  const TargetInfo *target = nullptr;
  std::string cpu = "host";
  for (const TargetInfo &t : knownTargets())
    if (options.target == t.name)
      target = &t;
  if (!target && host::isKnownHostCpu(options.target)) {
    target = &knownTargets().front();
    cpu = options.target;
  }
  if (!target) {
    llvm::errs() << "ignc: error: unknown target '" << options.target
                 << "'; `ignc targets` lists the known ones\n";
    return kExitTarget;
  }
  // A bundle, --emit=kernels and --emit=llvm need the target's compiler.
  if ((options.emit.empty() || options.emit == "llvm" ||
       options.emit == "kernels" || options.emit == "schedule") &&
      !target->available) {
    llvm::errs() << "ignc: error: target '" << options.target
                 << "' is not built yet in this version of ignc; only "
                    "--emit=ign and --emit=linalg are available\n";
    return kExitTarget;
  }

  if (options.target == "systolic" && options.emit == "llvm") {
    llvm::errs() << "ignc: error: --emit=llvm is for --target=host; the "
                    "systolic target's kernels are ISA programs (ignc inspect "
                    "shows their mappings)\n";
    return kExitUsage;
  }
  OwningOpRef<ModuleOp> module =
      importOnnxFile(context, options.modelPath, options.import);
  if (!module)
    return kExitImport;
  if (options.emit == "linalg") {
    PassManager pm(&context);
    pm.addPass(createConvertIgnToLinalg());
    pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(*module)))
      return kExitLowering;
  }

  if (options.emit.empty() || options.emit == "schedule")
    return compileBundle(*module, options, cpu);

  auto output = openEmitOutput(options);
  if (!output)
    return kExitOutput;
  if (options.emit == "kernels") {
    host::HostOptions hostOptions;
    hostOptions.cpu = cpu;
    hostOptions.schedule = options.schedule;
    hostOptions.fuse = options.fuse;
    auto kernels = host::planHostKernels(*module, hostOptions);
    if (failed(kernels))
      return kExitLowering;
    nlohmann::json j = kernelsJson(*kernels);
    output->os() << (options.json ? j.dump(2) + "\n" : kernelTable(j));
    output->keep();
    return kExitOk;
  }
  if (options.emit == "llvm") {
    std::string ir;
    host::HostOptions hostOptions;
    hostOptions.cpu = cpu;
    hostOptions.schedule = options.schedule;
    hostOptions.fuse = options.fuse;
    hostOptions.llvmIR = &ir;
    if (failed(host::compileForHost(*module, hostOptions)))
      return kExitLowering;
    output->os() << ir;
    output->keep();
    return kExitOk;
  }
  OpPrintingFlags flags;
  if (!options.printWeights)
    flags.elideLargeElementsAttrs(16).elideLargeResourceString(64);
  module->print(output->os(), flags);
  output->os() << "\n";
  output->keep();
  return kExitOk;
}

} // namespace ign
