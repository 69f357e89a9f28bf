//===- SystolicTarget.cpp - the systolic array as an ignc target ----------===//
//
// A device target: it claims the kernels the array can run (matrix products
// with their epilogues), maps each by simulated cycles and emits ISA
// programs; the rest run on the host. Candidates are measured in process on
// the cycle-level simulator (deterministic, so one run each) and checked
// against a reference GEMM by the one validator.
//
//===----------------------------------------------------------------------===//

#include "ScaleSimCommand.h"
#include "Simulator.h"
#include "SystolicCompiler.h"
#include "SystolicDevice.h"
#include "SystolicKnobs.h"
#include "ign/Target/TargetRegistry.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <CLI/CLI.hpp>

#include <cmath>

namespace ign::systolic {

namespace {

/// The array kernel of a task module, if the array runs it.
std::optional<ArrayKernel> taskArrayKernel(mlir::ModuleOp module) {
  mlir::func::FuncOp kernel;
  for (auto f : module.getOps<mlir::func::FuncOp>())
    if (f.getName() != "main")
      kernel = f;
  std::string why;
  return kernel ? matchArrayKernel(kernel, why) : std::nullopt;
}

ArrayConfig machineOf(const std::string &chip) {
  auto preset = presetConfig(chip);
  return preset ? *preset : ArrayConfig();
}

/// Features of (array kernel, mapping): the GEMM and the array, then every
/// knob (dataflow one-hot, accumulate, resident, chunk, stream share).
std::vector<float> arrayFeatures(const ArrayConfig &machine,
                                 const ArrayKernel &k,
                                 const search::Schedule &s) {
  GemmMapping m = mappingFromSchedule(machine, k, s);
  auto lg = [](double v) { return float(std::log2(1.0 + v)); };
  std::vector<float> f = {lg(double(k.gemm.M)), lg(double(k.gemm.K)),
                          lg(double(k.gemm.N)), lg(double(machine.rows)),
                          lg(double(machine.cols))};
  for (int d = 0; d < 3; ++d)
    f.push_back(int(m.dataflow) == d ? 1.0f : 0.0f);
  f.push_back(m.accumulate ? 1.0f : 0.0f);
  f.push_back(m.resident ? 1.0f : 0.0f);
  f.push_back(lg(double(m.chunk)));
  f.push_back(float(m.streamSpadElems) / float(machine.spadElems()));
  return f;
}

/// Nanoseconds of `cycles` per program run at the chip's clock.
double nsOf(const ArrayConfig &machine, const ArrayKernel &k, int64_t cycles) {
  return double(cycles) * double(k.programRuns) * 1000.0 / machine.clockMHz;
}

/// Candidates simulated in this process: the simulator validates every
/// program before it runs it, so a bad candidate is an error record.
class SimulatorRunner : public target::Runner {
public:
  SimulatorRunner(ArrayConfig machine, std::vector<ArrayKernel> kernels)
      : machine_(std::move(machine)), kernels_(std::move(kernels)) {}

  std::vector<search::TuningRecord>
  run(size_t task, const std::vector<search::Schedule> &schedules) override {
    std::vector<search::TuningRecord> records;
    for (const search::Schedule &s : schedules)
      records.push_back(measure(kernels_[task], s));
    return records;
  }

private:
  search::TuningRecord measure(const ArrayKernel &k,
                               const search::Schedule &s) const {
    search::TuningRecord r;
    GemmBuffers buf = arrayKernelBuffers(machine_, k);
    GemmMapping m = mappingFromSchedule(machine_, k, s);
    auto program = buildGemmProgram(machine_, k.gemm, m, buf);
    if (!program) {
      r.status = search::Status::Error;
      r.message = program.message();
      return r;
    }
    Machine sim(machine_);
    auto rep = sim.simulate(*program, SimOptions{false});
    if (!rep) {
      r.status = search::Status::Error;
      r.message = rep.message();
      return r;
    }
    r.medianNs = r.minNs = r.p90Ns = nsOf(machine_, k, rep->totalCycles);
    r.runs = 1;
    if (Status e = checkGemmProgram(machine_, k.gemm, buf, *program); !e.ok()) {
      r.status = search::Status::Wrong;
      r.message = e.message();
      r.relL2 = 1;
    } else {
      r.status = search::Status::Ok;
    }
    return r;
  }

  ArrayConfig machine_;
  std::vector<ArrayKernel> kernels_;
};

class SystolicTarget : public target::Target {
public:
  std::string name() const override { return "systolic"; }
  std::string description() const override {
    return "systolic-array accelerator on ignc's cycle-level simulator; "
           "--chip " +
           llvm::join(presetNames(), ", ");
  }
  std::vector<target::ChipInfo> chips() const override;
  std::string defaultChip() const override { return "gemmini-16"; }
  std::string checkChip(const std::string &chip) const override {
    auto preset = presetConfig(chip);
    return preset ? "" : preset.message();
  }
  std::string fingerprint(const target::TargetConfig &config) const override {
    return systolicFingerprint(machineOf(config.chip), IGN_VERSION_STRING);
  }
  GraphPolicy graphPolicy(const target::TargetConfig &config) const override {
    GraphPolicy policy = Target::graphPolicy(config);
    // The array's MVIN_IM2COL moves windows itself: convolutions keep
    // their columns in their kernel.
    policy.separateThinColumns = false;
    return policy;
  }
  bool claims(mlir::func::FuncOp kernel, const target::TargetConfig &,
              std::string &why) const override {
    return matchArrayKernel(kernel, why).has_value();
  }
  std::string placementPhrase() const override { return "on the array"; }
  double
  modelRelL2Tolerance(const target::TargetConfig &config) const override {
    // Per-tensor dynamic quantization (docs/systolic.md): 3e-2, as the
    // e2e-systolic-int8 test holds it; other machines compute exactly
    // enough for their dtype.
    return machineOf(config.chip).inType == ElemType::I8 ? 3e-2 : 0;
  }
  mlir::LogicalResult
  compileKernels(mlir::ModuleOp module,
                 llvm::MutableArrayRef<target::PlacedKernel> kernels,
                 const target::CompileOptions &options,
                 bundle::BundleContents &contents) const override;
  mlir::FailureOr<target::TuningTask>
  tuningTask(const target::TaskModule &task, const target::TargetConfig &config,
             const target::RunnerContext &context) const override;
  std::unique_ptr<target::Runner>
  createRunner(const std::vector<const target::TaskModule *> &tasks,
               const target::TargetConfig &config,
               const target::RunnerContext &context) const override;
  void registerRuntimeDriver() const override { registerSystolicDevice(); }
  void addSubcommands(CLI::App &app,
                      std::vector<target::Subcommand> &out) const override;
};

std::vector<target::ChipInfo> SystolicTarget::chips() const {
  std::vector<target::ChipInfo> out;
  for (const std::string &name : presetNames()) {
    ArrayConfig m = machineOf(name);
    target::ChipInfo c;
    c.name = name;
    c.summary = m.describe();
    c.cores = 1;
    c.lanes = m.cols;
    c.clockMHz = m.clockMHz;
    c.peakGflops = 2.0 * double(m.rows * m.cols) * m.clockMHz / 1000.0;
    c.bandwidthGBs = m.dramBytesPerCycle * m.clockMHz / 1000.0;
    c.memoryBytes = {{"scratchpad", m.spadBytes}, {"accumulator", m.accBytes}};
    out.push_back(std::move(c));
  }
  return out;
}

mlir::LogicalResult SystolicTarget::compileKernels(
    mlir::ModuleOp, llvm::MutableArrayRef<target::PlacedKernel> kernels,
    const target::CompileOptions &options,
    bundle::BundleContents &contents) const {
  ArrayConfig machine = machineOf(options.config.chip);
  contents.chip = options.config.chip;
  for (target::PlacedKernel &k : kernels) {
    auto compiled = compileArrayKernel(machine, k.kernel, k.tuned, options.log);
    if (!compiled) {
      k.declined = true;
      continue;
    }
    target::placeOnDevice(*k.spec, name(), std::move(compiled->deviceJson),
                          std::move(compiled->blob),
                          std::move(compiled->scheduleJson));
  }
  return mlir::success();
}

mlir::FailureOr<target::TuningTask>
SystolicTarget::tuningTask(const target::TaskModule &task,
                           const target::TargetConfig &config,
                           const target::RunnerContext &) const {
  std::optional<ArrayKernel> k = taskArrayKernel(*task.module);
  if (!k)
    return mlir::emitError(task.module.get().getLoc(),
                           "the array cannot run this task's kernel");
  ArrayConfig machine = machineOf(config.chip);
  target::TuningTask t;
  t.description = llvm::formatv("GEMM {0}x{1}x{2} x{3}: {4}", k->gemm.M,
                                k->gemm.K, k->gemm.N, k->programRuns,
                                llvm::join(task.summary.opShapes, "; "))
                      .str();
  // The default is what compiling without tuning picks.
  GemmBuffers buf = arrayKernelBuffers(machine, *k);
  auto heuristic = tuneGemmMapping(machine, k->gemm, 8, &buf, /*check=*/true);
  t.space = arrayScheduleSpace(machine, *k,
                               heuristic ? &heuristic->mapping : nullptr);
  ArrayKernel kernel = *k;
  t.features = [machine, kernel](const search::Schedule &s) {
    return arrayFeatures(machine, kernel, s);
  };
  // The analytical tier: one pass, no simulation.
  t.estimateNs = [machine, kernel,
                  buf](const search::Schedule &s) -> std::optional<double> {
    GemmMapping m = mappingFromSchedule(machine, kernel, s);
    auto program = buildGemmProgram(machine, kernel.gemm, m, buf);
    if (!program)
      return std::nullopt;
    auto est = Machine(machine).estimate(*program);
    if (!est)
      return std::nullopt;
    return nsOf(machine, kernel, est->totalCycles);
  };
  return t;
}

std::unique_ptr<target::Runner> SystolicTarget::createRunner(
    const std::vector<const target::TaskModule *> &tasks,
    const target::TargetConfig &config, const target::RunnerContext &) const {
  std::vector<ArrayKernel> kernels;
  for (const target::TaskModule *t : tasks)
    kernels.push_back(*taskArrayKernel(*t->module));
  return std::make_unique<SimulatorRunner>(machineOf(config.chip),
                                           std::move(kernels));
}

void SystolicTarget::addSubcommands(
    CLI::App &app, std::vector<target::Subcommand> &out) const {
  auto sim = std::make_shared<SimCommand>();
  CLI::App *cmd = app.add_subcommand(
      "sim", "simulate the layers of a SCALE-Sim topology on the systolic "
             "simulator and write SCALE-Sim's reports");
  cmd->add_option("--config", sim->config, "a SCALE-Sim configuration file");
  cmd->add_option("--chip", sim->chip,
                  "or a systolic preset: " + llvm::join(presetNames(), ", "));
  cmd->add_option("--topology", sim->topology, "a SCALE-Sim topology file")
      ->required();
  cmd->add_flag("--gemm", sim->gemm,
                "the topology is in GEMM form: name, M, N, K");
  cmd->add_option("--output-dir", sim->outputDir,
                  "where COMPUTE_REPORT.csv, BANDWIDTH_REPORT.csv and "
                  "REPORT.json go")
      ->required();
  cmd->add_option("--mapping", sim->mapping,
                  "scalesim: SCALE-Sim's fixed mapping for the dataflow; "
                  "tuned: the fastest mapping the simulator finds")
      ->capture_default_str();
  cmd->add_option("--dataflow", sim->dataflow,
                  "os, ws or is instead of the configuration's");
  cmd->add_flag("--json", sim->json, "print REPORT.json");
  out.push_back({cmd, [sim] { return runSimCommand(*sim); }});
}

} // namespace

void registerSystolicTarget() {
  target::registerTarget(std::make_unique<SystolicTarget>());
}

} // namespace ign::systolic
