//===- HostTarget.cpp - the host CPU as an ignc target --------------------===//
//
// The target every bundle has: it runs the kernels no device target claims.
// Chips are "host" (this machine: its CPU and features) or an LLVM CPU name
// (x86-64-v3, znver4, ...), accepted as --target spellings too. Candidates
// are measured by worker processes (search/Runner.h) on this machine only.
//
//===----------------------------------------------------------------------===//

#include "AmxTiles.h"
#include "HostCompiler.h"
#include "HostKnobs.h"
#include "HostPeak.h"
#include "ign/Target/TargetRegistry.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace ign::host {

namespace {

int cores() { return int(std::max(1u, std::thread::hardware_concurrency())); }

/// One core's measured FMA peak, once per process.
double corePeakGflops() {
  static std::once_flag once;
  static double peak = 0;
  std::call_once(once, [] { peak = measureFmaPeakGflops(); });
  return peak;
}

/// Features of (kernel, schedule): the kernel's size and intensity, then
/// what every knob means (workgroups and balance, the first contractions'
/// register tiles, chunks, order, row dim and packing).
std::vector<float> hostFeatures(const KernelSummary &k,
                                const search::Schedule &s, int64_t lanes,
                                int threads) {
  auto get = [&](const std::string &name, int64_t fallback) {
    auto it = s.find(name);
    return it == s.end() ? fallback : it->second;
  };
  auto lg = [](double v) { return float(std::log2(1.0 + std::max(0.0, v))); };
  std::vector<float> f;
  double bytes = double(k.bytesRead + k.bytesWritten);
  f.push_back(lg(double(k.flops)));
  f.push_back(lg(bytes));
  f.push_back(float(double(k.flops) / std::max(1.0, bytes)));
  int64_t workgroups = 1, splitLoops = 0, innerSplit = 1, lastLoop = -1;
  llvm::StringRef prefix(knobs::kSplitPrefix);
  for (auto &[name, value] : s)
    if (llvm::StringRef(name).starts_with(prefix)) {
      workgroups *= std::max<int64_t>(1, value);
      splitLoops += value > 1;
      int64_t loop = std::atoll(name.c_str() + prefix.size());
      if (loop > lastLoop)
        lastLoop = loop, innerSplit = value;
    }
  f.push_back(lg(double(workgroups)));
  f.push_back(float(splitLoops));
  f.push_back(lg(double(innerSplit)));
  // Load balance: the share of the last wave of workgroups that is busy.
  int64_t waves = (workgroups + threads - 1) / std::max(1, threads);
  f.push_back(float(double(workgroups) / double(waves * std::max(1, threads))));
  for (int c = 0; c < knobs::kFeaturedContractions; ++c) {
    std::string p = knobs::contraction(c);
    int64_t rows = get(p + knobs::kRows, 0), cols = get(p + knobs::kCols, 0);
    int64_t vectors = (cols + lanes - 1) / lanes;
    f.push_back(float(rows));
    f.push_back(float(cols));
    f.push_back(float(vectors));
    f.push_back(float(rows * vectors));
    f.push_back(lg(double(get(p + knobs::kKTile, 0))));
    f.push_back(float(get(p + knobs::kOrder, 0)));
    f.push_back(float(get(p + knobs::kRowDim, 0)));
    f.push_back(float(get(p + knobs::kPack, 0)));
    f.push_back(float(get(p + knobs::kPackRows, 0)));
  }
  return f;
}

/// Whether a model's weights leave the caches between two runs: the bytes
/// its kernels move per run (every launch's arguments and results) exceed
/// the last-level cache. Tasks are then timed with their weights evicted
/// first and otherwise warm, as the previous run left the caches: in a
/// model, a kernel's inputs were just written by its producers.
/// (Flushing every cache, as tuning did before, timed yolo's convolutions
/// over 162x162 pixels at 2.5-4 ms where they run in 1.4 ms in the model.)
bool weightsLeaveCaches(const std::vector<const target::TaskModule *> &tasks) {
  double llc = 32.0 * (1 << 20);
  if (long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE); l3 > 0)
    llc = double(l3);
  double moved = 0;
  for (const target::TaskModule *t : tasks)
    moved += double(t->summary.launches) *
             double(t->summary.bytesRead + t->summary.bytesWritten);
  return moved > llc;
}

class HostTarget : public target::Target {
public:
  std::string name() const override { return "host"; }
  std::string description() const override {
    return "the compiling machine's CPU via LLVM; or name a CPU: "
           "x86-64-v3, x86-64-v4, znver4, ...";
  }
  std::optional<std::string>
  chipForSpelling(llvm::StringRef spelling) const override {
    if (spelling != "host" && isKnownHostCpu(spelling))
      return spelling.str();
    return std::nullopt;
  }
  std::vector<target::ChipInfo> chips() const override {
    return {*chipInfo("host")};
  }
  std::string defaultChip() const override { return "host"; }
  std::string checkChip(const std::string &chip) const override {
    return isKnownHostCpu(chip) ? "" : "unknown CPU '" + chip + "'";
  }
  std::optional<target::ChipInfo>
  chipInfo(const std::string &chip) const override {
    if (!isKnownHostCpu(chip))
      return std::nullopt;
    target::ChipInfo c;
    c.name = chip;
    c.summary = chip == "host" ? "this machine's CPU" : "CPU " + chip;
    c.lanes = hostMachine(chip).lanes();
    if (chip == "host") {
      // Measured (about 0.2 s, once), so only for this machine.
      c.cores = cores();
      c.peakGflops = corePeakGflops() * double(c.cores);
    }
    return c;
  }
  std::string checkPrecision(const std::string &precision) const override {
    return precision == "fp32" || precision == "bf16"
               ? ""
               : "the host computes in fp32 or bf16";
  }
  std::string fingerprint(const target::TargetConfig &config) const override {
    std::string f = hostFingerprint(config.chip, IGN_VERSION_STRING);
    return config.precision == "fp32" ? f : f + "/" + config.precision;
  }
  bool claims(mlir::func::FuncOp, const target::TargetConfig &,
              std::string &) const override {
    return true;
  }
  bool runsUnclaimedKernels() const override { return true; }
  std::string lowLevelIRName() const override { return "llvm"; }
  GraphPolicy graphPolicy(const target::TargetConfig &config) const override {
    GraphPolicy policy = Target::graphPolicy(config);
    // Spatial convolutions as direct register tiles (DirectConv.cpp),
    // reading their input in place instead of im2col columns, their weights
    // in blocks of one tile's filters.
    if (policy.convToMatmul)
      policy.directConvFilterBlock = hostMachine(config.chip).tileColumns();
    // Gemm weights with transB read as [K, N], copied into panels a vector
    // at a time (transposed per element on every run: a 1x1280 x 1280x1000
    // classifier took 1.6 ms).
    policy.untransposeWeights = policy.convToMatmul;
    // Quantized matmuls in bytes where VNNI's register tiles take them,
    // else in 16-bit words where vpmaddwd's do; integer convolutions as the
    // direct f32 kernels where that is exact.
    HostMachine machine = hostMachine(config.chip);
    if (policy.convToMatmul)
      policy.integerMatmuls = machine.hasVnniDot   ? IntegerOperands::Bytes
                              : machine.hasWordDot ? IntegerOperands::Words
                                                   : IntegerOperands::None;
    policy.integerConvsInFloat = policy.convToMatmul;
    // bf16 convolutions whose channels are no multiple of the AMX tiles'
    // steps get zero channels up to one (PadChannels.cpp). Filters no block
    // divides (24, 40, 72), padded, take AMX blocks or bf16 pair tiles
    // (channels in pairs) rather than fp32 pixel tiles.
    HostMachine bf16 = hostMachine(config);
    if (policy.convToMatmul && bf16.amx()) {
      policy.convChannelMultiple = kAmxSteps;
      policy.padFiltersFirst = 1;
    } else if (policy.convToMatmul && bf16.bf16Pairs()) {
      policy.padFiltersFirst = 2;
    }
    return policy;
  }
  mlir::LogicalResult
  compileKernels(mlir::ModuleOp module,
                 llvm::MutableArrayRef<target::PlacedKernel> kernels,
                 const target::CompileOptions &options,
                 bundle::BundleContents &contents) const override {
    return compileHostKernels(module, kernels, options, contents);
  }
  std::string tuningRefusal(const target::TargetConfig &config) const override {
    if (config.chip != "host" || config.schedule != "default")
      return "tuning measures on this machine: it needs --target=host and "
             "the default schedule";
    return "";
  }
  mlir::FailureOr<target::TuningTask>
  tuningTask(const target::TaskModule &task, const target::TargetConfig &config,
             const target::RunnerContext &context) const override;
  std::unique_ptr<target::Runner>
  createRunner(const std::vector<const target::TaskModule *> &tasks,
               const target::TargetConfig &config,
               const target::RunnerContext &context) const override;
};

mlir::FailureOr<target::TuningTask>
HostTarget::tuningTask(const target::TaskModule &task,
                       const target::TargetConfig &config,
                       const target::RunnerContext &context) const {
  HostMachine machine = hostMachine(config);
  auto space = hostScheduleSpace(*task.module, machine);
  if (failed(space))
    return mlir::failure();
  target::TuningTask t;
  t.description = llvm::join(task.summary.opShapes, "; ");
  t.space = std::move(*space);
  int64_t lanes = machine.lanes();
  int threads = context.threads;
  KernelSummary summary = task.summary;
  t.features = [summary, lanes, threads](const search::Schedule &s) {
    return hostFeatures(summary, s, lanes, threads);
  };
  // The compute bound: FLOPs at the measured FMA peak of the threads.
  t.estimateNs = [summary, threads](const search::Schedule &) {
    double peak = corePeakGflops() * threads;
    return peak > 0 ? std::optional<double>(double(summary.flops) / peak)
                    : std::nullopt;
  };
  return t;
}

std::unique_ptr<target::Runner>
HostTarget::createRunner(const std::vector<const target::TaskModule *> &tasks,
                         const target::TargetConfig &config,
                         const target::RunnerContext &context) const {
  std::vector<search::WorkerTask> work;
  bool evict = weightsLeaveCaches(tasks);
  for (const target::TaskModule *t : tasks)
    work.push_back({t->path, evict});
  search::WorkerRunnerOptions options;
  options.executable = context.executable;
  options.targetArgs = context.targetArgs;
  // Candidates computing in bf16 are checked against the fp32 reference at
  // bf16's thresholds; fp16 ones (a device target's tensor cores at any
  // reduced precision, measured through these workers) at fp16's.
  if (config.precision == "bf16" && hostMachine(config.chip).hasBf16Dot)
    options.measureArgs = {"--tolerance-of", "bf16"};
  if (config.precision == "fp16")
    options.measureArgs = {"--tolerance-of", "f16"};
  options.workDir = context.workDir;
  options.jobs = context.jobs;
  options.threads = context.threads;
  options.timeoutSeconds = context.candidateTimeout;
  return search::createWorkerRunner(std::move(work), std::move(options));
}

} // namespace

void registerHostTarget() {
  target::registerTarget(std::make_unique<HostTarget>());
}

} // namespace ign::host
