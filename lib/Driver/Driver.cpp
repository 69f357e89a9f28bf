//===- Driver.cpp - compile pipeline and diagnostics for ignc -------------===//

#include "ign/Driver/Driver.h"
#include "Digest.h"
#include "KernelReport.h"
#include "Tuning.h"
#include "ign/Bundle/BundleWriter.h"
#include "ign/Conversion/Passes.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Target/Pipeline.h"
#include "ign/Target/TargetRegistry.h"

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

int printTargets() {
  target::registerBuiltinTargets();
  llvm::outs() << "Targets:\n";
  for (const target::Target *t : target::registeredTargets()) {
    llvm::outs() << "  " << llvm::left_justify(t->name(), 10) << "  "
                 << t->description() << "\n";
    for (const target::ChipInfo &c : t->chips()) {
      llvm::outs() << "      --chip " << llvm::left_justify(c.name, 16)
                   << c.summary;
      if (c.peakGflops > 0)
        llvm::outs() << llvm::format(", peak %.0f G op/s", c.peakGflops);
      llvm::outs() << "\n";
    }
  }
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
static int reportTuning(const TuningRun &run, const DriverOptions &options) {
  std::string table;
  std::string report = tuningReport(run, options.modelPath, &table);
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

namespace {
/// The tuning database's best schedules for a compile, by the fingerprint
/// of the target each kernel is placed on; remembers the kernels whose
/// records are only under other fingerprints.
struct DatabaseLookup {
  search::TuningDatabase *db = nullptr;
  const target::Target *selected = nullptr;
  target::TargetConfig config;
  std::map<std::string, search::Schedule> tuned; // by fingerprint + task
  std::vector<std::string> foreign;
  std::string hostFingerprint;

  const search::Schedule *operator()(const target::Target &where,
                                     const KernelSummary &k) {
    std::string fingerprint =
        where.fingerprint(target::configFor(where, *selected, config));
    if (where.runsUnclaimedKernels())
      hostFingerprint = fingerprint;
    std::string key = fingerprint + "|" + k.task;
    if (auto it = tuned.find(key); it != tuned.end())
      return &it->second;
    if (auto chosen = db->chosen(k.task, fingerprint))
      if (auto s = search::scheduleFromJson(chosen->schedule))
        return &(tuned[key] = *s);
    auto others = db->otherFingerprints(k.task, fingerprint);
    if (!others.empty() && where.runsUnclaimedKernels())
      foreign.push_back(k.task + " (" + llvm::join(others, ", ") + ")");
    return nullptr;
  }
};
} // namespace

/// Tunes the kernels the selected target runs (with --trials/--tune-time).
static int tuneIfAsked(ModuleOp module, const target::Selection &selection,
                       const target::TargetConfig &config,
                       const DriverOptions &options,
                       search::TuningDatabase *db) {
  if (!options.tune.enabled())
    return kExitOk;
  std::string refusal = selection.target->tuningRefusal(config);
  if (!refusal.empty()) {
    llvm::errs() << "ignc: error: " << refusal << "\n";
    return kExitUsage;
  }
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  auto run =
      tuneModel(*copy, selection, config, options.tune, *db, options.verbosity);
  if (!run)
    return kExitLowering;
  return reportTuning(*run, options);
}

/// Prints each kernel's schedule (--emit=schedule).
static int emitSchedules(const bundle::BundleContents &contents,
                         const DriverOptions &options) {
  auto output = openEmitOutput(options);
  if (!output)
    return kExitOutput;
  for (const bundle::KernelSpec &k : contents.kernels)
    output->os() << k.name << " task " << k.task << ": " << k.scheduleJson
                 << "\n";
  output->keep();
  return kExitOk;
}

/// The compile's options as ignc arguments (after the model), so that a
/// bundle says how to compile it again.
static std::vector<std::string>
compileArgsOf(const DriverOptions &options,
              const target::Selection &selection) {
  std::vector<std::string> args = {"--target",    selection.target->name(),
                                   "--chip",      selection.chip,
                                   "--precision", options.precision};
  if (options.schedule != "default")
    args.insert(args.end(), {"--schedule", options.schedule});
  if (!options.fuse)
    args.push_back("--no-fuse");
  for (const auto &[name, dims] : options.import.inputShapes) {
    std::string text;
    for (int64_t d : dims)
      text += (text.empty() ? "" : "x") + std::to_string(d);
    args.insert(args.end(), {"--input-shape", name + "=" + text});
  }
  for (const auto &[name, path] : options.import.frozenInputs) {
    llvm::SmallString<256> absolute(path);
    llvm::sys::fs::make_absolute(absolute);
    args.insert(args.end(),
                {"--freeze-input", name + "=" + absolute.str().str()});
  }
  return args;
}

/// Writes the bundle and says where its kernels run.
static int writeBundleFile(bundle::BundleContents &contents, ModuleOp module,
                           const target::Selection &selection,
                           const DriverOptions &options) {
  auto opset = module->getAttrOfType<IntegerAttr>("ign.opset");
  auto producer = module->getAttrOfType<StringAttr>("ign.producer");
  contents.modelSource = llvm::sys::path::filename(options.modelPath).str();
  contents.producer = producer ? producer.str() : "";
  contents.opset = opset ? opset.getInt() : 0;
  contents.modelSha256 = sha256OfFile(options.modelPath);
  contents.compileArgs = compileArgsOf(options, selection);
  std::string outPath = options.outputPath;
  if (outPath.empty())
    outPath = llvm::sys::path::stem(options.modelPath).str() + ".ignb";
  std::string error = bundle::writeBundle(outPath, contents);
  if (!error.empty()) {
    llvm::errs() << "ignc: error: " << error << "\n";
    return kExitOutput;
  }
  if (options.verbosity == Verbosity::Quiet)
    return kExitOk;
  const target::Target &t = *selection.target;
  if (t.runsUnclaimedKernels()) {
    llvm::errs() << "ignc: wrote " << outPath << " (target " << t.name()
                 << ", cpu " << contents.cpu << ")\n";
    return kExitOk;
  }
  size_t onDevice = 0;
  for (const bundle::KernelSpec &k : contents.kernels)
    onDevice += k.device == t.name();
  llvm::errs() << "ignc: wrote " << outPath << " (target " << t.name()
               << ", chip " << selection.chip << ": " << onDevice << " of "
               << contents.kernels.size() << " kernels " << t.placementPhrase()
               << ", the rest on the host cpu " << contents.cpu << ")\n";
  return kExitOk;
}

/// Tunes when asked, then compiles the bundle (or, with --emit=schedule,
/// prints each kernel's schedule). Kernels with a record in the tuning
/// database get its fastest valid schedule; the rest the default one.
static int compileBundle(ModuleOp module, const DriverOptions &options,
                         const target::Selection &selection,
                         const target::TargetConfig &config) {
  bool dbFailed = false;
  auto db = openTuningDatabase(options, dbFailed);
  if (dbFailed)
    return kExitOutput;
  if (int code = tuneIfAsked(module, selection, config, options, db.get()))
    return code;
  target::PipelineOptions pipeline;
  pipeline.compile.config = config;
  if (options.verbosity == Verbosity::Verbose)
    pipeline.compile.log = [](const std::string &line) {
      llvm::errs() << "ignc: " << line << "\n";
    };
  DatabaseLookup lookup{db.get(), selection.target, config};
  if (db)
    pipeline.lookup = [&](const target::Target &where, const KernelSummary &k) {
      return lookup(where, k);
    };
  auto compiled = target::compileModule(module, *selection.target, pipeline);
  if (failed(compiled))
    return kExitLowering;
  if (!lookup.foreign.empty() && options.verbosity != Verbosity::Quiet)
    llvm::errs() << "ignc: warning: the tuning database has records for "
                 << lookup.foreign.size()
                 << " kernel(s) only under other target fingerprints, not "
                    "applied (this machine is "
                 << lookup.hostFingerprint
                 << "): " << llvm::join(lookup.foreign, "; ") << "\n";
  if (options.emit == "schedule")
    return emitSchedules(*compiled, options);
  return writeBundleFile(*compiled, module, selection, options);
}

/// --emit=kernels and --emit=llvm: the fused kernels, or the low-level IR.
static int emitTargetView(ModuleOp module, const DriverOptions &options,
                          const target::Selection &selection,
                          const target::TargetConfig &config) {
  auto output = openEmitOutput(options);
  if (!output)
    return kExitOutput;
  if (options.emit == "kernels") {
    auto kernels = target::planKernels(module, *selection.target, config);
    if (failed(kernels))
      return kExitLowering;
    nlohmann::json j = kernelsJson(*kernels);
    output->os() << (options.json ? j.dump(2) + "\n" : kernelTable(j));
    output->keep();
    return kExitOk;
  }
  std::string ir;
  target::PipelineOptions pipeline;
  pipeline.compile.config = config;
  pipeline.compile.lowLevelIR = &ir;
  if (failed(target::compileModule(module, *selection.target, pipeline)))
    return kExitLowering;
  output->os() << ir;
  output->keep();
  return kExitOk;
}

static void installDiagnostics(MLIRContext &context, Verbosity verbosity) {
  context.loadDialect<IgnDialect, func::FuncDialect>();
  // Diagnostics name the ONNX node; dumping the failing op is noise.
  context.printOpOnDiagnostic(false);
  context.getDiagEngine().registerHandler([verbosity](Diagnostic &diag) {
    printDiagnostic(diag, verbosity);
    return success();
  });
}

/// The host target's chip `cpu` names, for the host kernels of a bundle of
/// device target `selected`: "" with `chip` set, else why not.
static std::string hostChipFor(const target::Target &selected,
                               const std::string &cpu, std::string &chip) {
  const target::Target *host = target::fallbackTarget();
  if (!host || &selected == host)
    return "it is for the device targets; the host target takes its CPU "
           "as --target (--target=" +
           cpu + ")";
  std::string error;
  auto resolved = target::resolveTarget(cpu, "", error);
  if (!resolved || resolved->target != host)
    return "'" + cpu +
           "' is not a CPU the host target knows (a CPU name as --target "
           "takes: x86-64-v3, znver4, ...)";
  chip = resolved->chip;
  return "";
}

int runCompile(const DriverOptions &options) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  installDiagnostics(context, options.verbosity);
  target::registerBuiltinTargets();
  std::string error;
  auto selection = target::resolveTarget(options.target, options.chip, error);
  if (!selection) {
    llvm::errs() << "ignc: error: " << error << "\n";
    return kExitTarget;
  }
  target::TargetConfig config{selection->chip, options.schedule, options.fuse,
                              options.precision};
  config.hostCores = options.cores;
  if (!options.hostCpu.empty()) {
    std::string why =
        hostChipFor(*selection->target, options.hostCpu, config.hostChip);
    if (!why.empty()) {
      llvm::errs() << "ignc: error: --host-cpu=" << options.hostCpu << ": "
                   << why << "\n";
      return kExitUsage;
    }
  }
  if (std::string why = selection->target->checkPrecision(options.precision);
      !why.empty()) {
    llvm::errs() << "ignc: error: --precision=" << options.precision << ": "
                 << why << "\n";
    return kExitUsage;
  }
  bool lowLevel =
      options.emit == "llvm" || options.emit == "gpu" || options.emit == "ptx";
  if (lowLevel && selection->target->lowLevelIRName() != options.emit) {
    const char *forWhom = options.emit == "llvm"  ? "--target=host"
                          : options.emit == "gpu" ? "--target=vulkan"
                                                  : "the cuda target (sm80)";
    const char *what = options.emit == "llvm"  ? "LLVM IR"
                       : options.emit == "gpu" ? "mapped GPU kernels"
                                               : "PTX";
    llvm::errs() << "ignc: error: --emit=" << options.emit << " is for "
                 << forWhom << "; the " << selection->target->name()
                 << " target's kernels are not " << what
                 << " (ignc inspect shows them)\n";
    return kExitUsage;
  }
  OwningOpRef<ModuleOp> module =
      importOnnxFile(context, options.modelPath, options.import);
  if (!module)
    return kExitImport;
  if (options.emit.empty() || options.emit == "schedule")
    return compileBundle(*module, options, *selection, config);
  if (options.emit == "kernels" || lowLevel)
    return emitTargetView(*module, options, *selection, config);
  if (options.emit == "linalg") {
    PassManager pm(&context);
    pm.addPass(createConvertIgnToLinalg());
    pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(*module)))
      return kExitLowering;
  }
  auto output = openEmitOutput(options);
  if (!output)
    return kExitOutput;
  OpPrintingFlags flags;
  if (!options.printWeights)
    flags.elideLargeElementsAttrs(16).elideLargeResourceString(64);
  module->print(output->os(), flags);
  output->os() << "\n";
  output->keep();
  return kExitOk;
}

} // namespace ign
