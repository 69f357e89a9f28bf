//===- GpuTarget.cpp - what the GPU targets share at the Target seam ------===//

#include "GpuTarget.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

namespace ign::gpu {

namespace {

/// Features of a GPU schedule of a task for the search's cost model: the
/// task's size (log2 of FLOPs and bytes), then every knob.
std::vector<float> gpuFeatures(double flops, double bytes,
                               const search::Schedule &s) {
  auto lg = [](double v) { return float(std::log2(1.0 + v)); };
  std::vector<float> f = {lg(flops), lg(bytes)};
  for (const char *knob : {kThreadsX, kThreadsY, kElemsX, kElemsY}) {
    auto it = s.find(knob);
    f.push_back(lg(double(it == s.end() ? 0 : it->second)));
  }
  // The layer's own launches: 1 on, 0 off, -1 where the kernel has no op
  // that takes them.
  for (const char *knob : {kStagedGemm, kRowLaunch, kGroupReduce}) {
    auto it = s.find(knob);
    f.push_back(it == s.end() ? -1.0f : float(it->second));
  }
  return f;
}

class WholeChipRunner : public search::Runner {
public:
  WholeChipRunner(std::unique_ptr<search::Runner> inner, int units)
      : inner_(std::move(inner)), units_(units) {}
  std::vector<search::TuningRecord>
  run(size_t task, const std::vector<search::Schedule> &schedules) override {
    return inner_->run(task, schedules);
  }
  std::vector<search::SideBySide>
  compare(size_t task,
          const std::vector<search::Schedule> &schedules) override {
    return inner_->compare(task, schedules);
  }
  bool comparesSideBySide() const override {
    return inner_->comparesSideBySide();
  }
  int threads() const override { return units_; }
  size_t batchSize() const override { return inner_->batchSize(); }

private:
  std::unique_ptr<search::Runner> inner_;
  int units_;
};

} // namespace

std::unique_ptr<search::Runner>
onWholeChip(std::unique_ptr<search::Runner> inner, int64_t computeUnits) {
  if (!inner)
    return nullptr;
  return std::make_unique<WholeChipRunner>(
      std::move(inner), int(std::max<int64_t>(1, computeUnits)));
}

void placeKernels(llvm::MutableArrayRef<target::PlacedKernel> kernels,
                  const target::CompileOptions &options,
                  const std::string &device,
                  const std::function<mlir::FailureOr<DeviceKernel>(
                      target::PlacedKernel &, std::string &why)> &compile) {
  for (target::PlacedKernel &k : kernels) {
    std::string why;
    mlir::FailureOr<DeviceKernel> compiled = compile(k, why);
    if (failed(compiled)) {
      k.declined = true;
      if (options.log)
        options.log(k.spec->name + ": host (" + why + ")");
      continue;
    }
    if (options.log)
      options.log(k.spec->name + ": " + compiled->summary);
    target::placeOnDevice(*k.spec, device, std::move(compiled->deviceJson),
                          std::move(compiled->blob),
                          std::move(compiled->scheduleJson));
  }
}

target::TuningTask tuningTask(
    const target::TaskModule &task, const ChipLimits &limits,
    const std::function<search::Schedule(mlir::func::FuncOp)> &defaults) {
  target::TuningTask t;
  t.description = llvm::join(task.summary.opShapes, "; ");
  t.space = gpuScheduleSpace(limits);
  // The search's default is what an untuned compile picks.
  if (auto kernel = mlir::ModuleOp(task.module.get())
                        .lookupSymbol<mlir::func::FuncOp>(task.summary.name))
    t.space.defaults = defaults(kernel);
  // Kernels with ops the layer's own launches take (staged GEMMs, row
  // launches, group reductions) tune those knobs too.
  for (const char *knob : {kStagedGemm, kRowLaunch, kGroupReduce})
    if (t.space.defaults.count(knob))
      t.space.knobs.push_back({knob, {0, 1}});
  KernelSummary summary = task.summary;
  t.features = [summary](const search::Schedule &s) {
    return gpuFeatures(double(summary.flops),
                       double(summary.bytesRead + summary.bytesWritten), s);
  };
  return t;
}

std::vector<search::TuningRecord>
PredictedRunner::run(size_t task,
                     const std::vector<search::Schedule> &schedules) {
  std::vector<search::TuningRecord> records;
  for (const search::Schedule &s : schedules) {
    search::TuningRecord r;
    std::string why;
    mlir::FailureOr<std::optional<double>> ms =
        predict_(kernels_[task], s, why);
    if (failed(ms)) {
      r.status = search::Status::BuildError;
      r.message = why;
    } else if (!*ms) {
      r.status = search::Status::Error;
      r.message = "the chip has no numbers for the analytical model";
    } else {
      r.status = search::Status::Ok;
      r.medianNs = r.minNs = r.p90Ns = **ms * 1e6;
      r.message = kPredictedMessage;
    }
    records.push_back(std::move(r));
  }
  return records;
}

std::unique_ptr<search::Runner>
predictedRunner(const std::vector<const target::TaskModule *> &tasks,
                int64_t computeUnits, PredictedRunner::Predict predict) {
  std::vector<mlir::func::FuncOp> kernels;
  for (const target::TaskModule *t : tasks)
    kernels.push_back(mlir::ModuleOp(t->module.get())
                          .lookupSymbol<mlir::func::FuncOp>(t->summary.name));
  if (llvm::is_contained(kernels, mlir::func::FuncOp()))
    return nullptr;
  return std::make_unique<PredictedRunner>(
      std::move(kernels), int(std::max<int64_t>(1, computeUnits)),
      std::move(predict));
}

} // namespace ign::gpu
