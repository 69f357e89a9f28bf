//===- Target.h - what every ignc target implements -------------*- C++ -*-===//
//
// A target is the unit of hardware knowledge (../shared/DESIGN.md): its chip
// presets, its graph policy, which kernels it runs, the schedule space of a
// kernel, the lowering of (kernel, schedule) to an artifact, features and an
// estimate for the cost model, a runner that measures candidates, and the
// runtime driver it registers with libignrt. The driver and lib/Search only
// talk to this interface; a target joins the registry (TargetRegistry.h)
// from its own folder. docs/targets.md walks through adding one.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGET_TARGET_H
#define IGN_TARGET_TARGET_H

#include "ign/Bundle/BundleWriter.h"
#include "ign/Search/Runner.h"
#include "ign/Search/ScheduleSpace.h"
#include "ign/Search/TuningDatabase.h"
#include "ign/Transforms/GraphPipeline.h"
#include "ign/Transforms/KernelTasks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
} // namespace CLI

namespace ign::target {

/// A chip a target compiles for, with the numbers a cost model needs
/// (0 where a number does not apply or is unknown).
struct ChipInfo {
  std::string name;    // the --chip spelling
  std::string summary; // one line for `ignc targets`
  int64_t cores = 0;   // CPU cores, SMs, arrays
  int64_t lanes = 0;   // f32 lanes of a vector, warp, or array row
  double clockMHz = 0;
  double peakGflops = 0;   // f32, the whole chip
  double bandwidthGBs = 0; // to main memory
  std::vector<std::pair<std::string, int64_t>> memoryBytes; // per level
};

/// Marks `spec` as a kernel of device `device` (no host symbol): the
/// driver's descriptor and program, and the schedule applied.
inline void placeOnDevice(bundle::KernelSpec &spec, std::string device,
                          std::string descriptor, std::string blob,
                          std::string schedule) {
  spec.symbol = "";
  spec.device = std::move(device);
  spec.deviceJson = std::move(descriptor);
  spec.deviceBlob = std::move(blob);
  spec.scheduleJson = std::move(schedule);
}

/// What a compile asks of its target.
struct TargetConfig {
  std::string chip;                 // one of the target's chips
  std::string schedule = "default"; // "reference": the plain lowering
  bool fuse = true;                 // false: one op per kernel
  /// What matmuls and convolutions compute in: "fp32", or "bf16" / "fp16"
  /// / "tf32" (inputs rounded to bfloat16 / half / tf32, products summed in
  /// f32) where the target has it.
  std::string precision = "fp32";
  /// The CPU a device bundle's host kernels are built for (a chip of the
  /// host target, --host-cpu); empty: the host target's default (this
  /// machine's).
  std::string hostChip;
  /// The cores the host kernels are split for (--cores); 0: this machine's
  /// when compiling for it (--chip host), else unknown.
  int64_t hostCores = 0;
};

/// A kernel the placement gave to a target, to compile into the bundle.
struct PlacedKernel {
  mlir::func::FuncOp kernel;               // in the module compiled
  const KernelSummary *summary = nullptr;  // what it computes
  const search::Schedule *tuned = nullptr; // the database's best, if any
  bundle::KernelSpec *spec = nullptr;      // the target fills in its half
  /// Set by a device target's compile: it cannot run the kernel after all
  /// (no mapping fits), so the host compiles it.
  bool declined = false;
};

struct CompileOptions {
  TargetConfig config;
  /// Receives the target's low-level IR when the target has one and it is
  /// asked for (--emit=llvm on the host).
  std::string *lowLevelIR = nullptr;
  /// One line per kernel a device target maps (shown with -v).
  std::function<void(const std::string &)> log;
};

/// One tuning task: a kernel as a module of its own whose @main launches
/// it once, with every argument (weights too) as an input.
struct TaskModule {
  KernelSummary summary;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string path; // the module's text, written for worker processes
};

/// A task as its target tunes it.
struct TuningTask {
  std::string description; // for humans: ops and shapes, or the GEMM
  search::ScheduleSpace space;
  /// Features of a schedule of this task for the cost model; fixed width
  /// per target, covering every knob of the space.
  std::function<std::vector<float>(const search::Schedule &)> features;
  /// Predicted nanoseconds of a launch without measuring, if the target
  /// has a model (used where no runner can measure).
  std::function<std::optional<double>(const search::Schedule &)> estimateNs;
};

/// How candidates are measured: limits and the worker command line.
struct RunnerContext {
  int jobs = 1;                 // candidates built at once
  int threads = 1;              // threads a kernel is measured with
  double candidateTimeout = 60; // seconds per build or measurement
  std::string executable;       // ignc, whose `tune-worker` runs candidates
  std::string workDir;          // scratch space, removed after tuning
  /// `--target NAME --chip CHIP`: how a worker finds this target.
  std::vector<std::string> targetArgs;
};

using search::Runner;

/// A subcommand a target adds to ignc (`ignc sim` for the systolic one);
/// `run` is called when it was given.
struct Subcommand {
  CLI::App *app = nullptr;
  std::function<int()> run;
};

class Target {
public:
  virtual ~Target();

  /// `--target=NAME`, and a line for `ignc targets`.
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  /// Another `--target=` spelling this target accepts ("sm80", a CPU name)
  /// and the chip it stands for; nullopt when it is not this target's.
  virtual std::optional<std::string> chipForSpelling(llvm::StringRef) const {
    return std::nullopt;
  }
  virtual std::vector<ChipInfo> chips() const = 0;
  virtual std::string defaultChip() const = 0;
  /// "" when `chip` names a chip of this target, else why not.
  virtual std::string checkChip(const std::string &chip) const;
  /// "" when the target computes in `precision` (--precision), else why
  /// not. Every target computes in fp32.
  virtual std::string checkPrecision(const std::string &precision) const {
    return precision == "fp32" ? ""
                               : "the " + name() +
                                     " target computes in fp32 "
                                     "only";
  }
  /// The chip's description (nullopt when unknown); on the host, measured.
  virtual std::optional<ChipInfo> chipInfo(const std::string &chip) const;
  /// What a schedule measured on this target depends on, for the tuning
  /// database's key ("<target>/<chip>/<hash>").
  virtual std::string fingerprint(const TargetConfig &config) const = 0;

  /// The graph pipeline's choices for this target.
  virtual GraphPolicy graphPolicy(const TargetConfig &config) const;
  /// Whether the target runs `kernel`; the kernels no device target claims
  /// run on the host. `why` says why not.
  virtual bool claims(mlir::func::FuncOp kernel, const TargetConfig &config,
                      std::string &why) const = 0;
  /// Compiles the kernels placed on this target (in `module`), filling in
  /// their specs and the bundle fields the target owns (its artifact).
  /// Diagnostics at the failing op.
  virtual mlir::LogicalResult
  compileKernels(mlir::ModuleOp module,
                 llvm::MutableArrayRef<PlacedKernel> kernels,
                 const CompileOptions &options,
                 bundle::BundleContents &contents) const = 0;
  /// How `ignc` says where its claimed kernels run ("on the array").
  virtual std::string placementPhrase() const { return "on " + name(); }
  /// The name of the low-level IR `CompileOptions::lowLevelIR` receives
  /// ("llvm"), or "" when the target has none.
  virtual std::string lowLevelIRName() const { return ""; }

  /// The target's half of tuning a task it claims.
  virtual mlir::FailureOr<TuningTask>
  tuningTask(const TaskModule &task, const TargetConfig &config,
             const RunnerContext &context) const = 0;
  /// A runner for `tasks` (in the order tuningTask saw them).
  virtual std::unique_ptr<Runner>
  createRunner(const std::vector<const TaskModule *> &tasks,
               const TargetConfig &config,
               const RunnerContext &context) const = 0;
  /// The relative L2 error a whole model's float outputs may carry on this
  /// chip where it computes in less than their dtype (an int8 array
  /// quantizes its operands); 0: the dtype's own threshold.
  virtual double modelRelL2Tolerance(const TargetConfig &) const { return 0; }
  /// Why tuning is refused for this configuration ("" when it is not).
  virtual std::string tuningRefusal(const TargetConfig &) const { return ""; }

  /// Registers the target's driver with libignrt (device targets).
  virtual void registerRuntimeDriver() const {}
  /// Subcommands of ignc that belong to this target.
  virtual void addSubcommands(CLI::App &, std::vector<Subcommand> &) const {}
  /// True for the one target that runs every kernel no device claims.
  virtual bool runsUnclaimedKernels() const { return false; }
};

} // namespace ign::target

#endif // IGN_TARGET_TARGET_H
