//===- FaultTarget.cpp - a test-only target that fails on request ---------===//
//
// Target "fault" proves the Target seam and the validator: it is added to a
// test build of ignc (ignc-fault) by one registration line, and compiles,
// tunes and runs models through the same code paths as the real targets.
// It claims every kernel without a contraction, compiles each through the
// host target into a shared object of its own (its device blob), and runs it
// from its own libignrt driver. Its space is the host's plus `fault.mode`:
//   0  the kernel runs as compiled
//   1  wrong: the kernel is not run (outputs keep their poison)
//   2  crash: the driver traps
//   3  hang: the driver never returns
// Wrong, crashing and hanging candidates must be recorded as such and never
// win.
//
//===----------------------------------------------------------------------===//

#include "FaultTarget.h"
#include "ign/Runtime/ignrt.h"
#include "ign/Target/TargetRegistry.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace ign::fault {

namespace {

constexpr const char *kMode = "fault.mode";

const target::Target &host() { return *target::fallbackTarget(); }

target::TargetConfig hostConfig(const target::TargetConfig &config) {
  return {host().defaultChip(), config.schedule, config.fuse};
}

/// The schedule without the fault knob: what the host compiles.
search::Schedule hostKnobs(const search::Schedule &s) {
  search::Schedule out = s;
  out.erase(kMode);
  return out;
}

/// Compiles one kernel through the host target into a shared object.
mlir::LogicalResult compileOne(target::PlacedKernel &k,
                               const target::CompileOptions &options) {
  mlir::OpBuilder b(k.kernel.getContext());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(k.kernel.getLoc());
  b.setInsertionPointToEnd(module->getBody());
  auto clone = mlir::cast<mlir::func::FuncOp>(b.clone(*k.kernel));
  bundle::KernelSpec spec = *k.spec;
  search::Schedule knobs = k.tuned ? hostKnobs(*k.tuned) : search::Schedule();
  int64_t mode = 0;
  if (k.tuned)
    if (auto it = k.tuned->find(kMode); it != k.tuned->end())
      mode = it->second;
  target::PlacedKernel placed{clone, k.summary, k.tuned ? &knobs : nullptr,
                              &spec};
  target::CompileOptions hostOptions = options;
  hostOptions.config = hostConfig(options.config);
  bundle::BundleContents artifact;
  if (failed(host().compileKernels(*module, placed, hostOptions, artifact)))
    return mlir::failure();
  nlohmann::json schedule = nlohmann::json::parse(spec.scheduleJson);
  schedule["knobs"][kMode] = mode;
  k.spec->symbol = "";
  k.spec->device = "fault";
  k.spec->scheduleJson = schedule.dump();
  k.spec->deviceJson = nlohmann::json{
      {"symbol", spec.symbol},
      {"workgroups", spec.workgroups},
      {"mode", mode}}.dump();
  k.spec->deviceBlob = std::move(artifact.artifact);
  return mlir::success();
}

using KernelFn = void (*)(void **, int64_t, int64_t);

/// The shared object of a blob, loaded once per process from a memfd.
void *loadBlob(const void *blob, size_t bytes, std::string &error) {
  static std::mutex mutex;
  static std::map<const void *, void *> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(blob); it != loaded.end())
    return it->second;
  int fd = memfd_create("ignc-fault-kernel", 0);
  if (fd < 0 || write(fd, blob, bytes) != ssize_t(bytes)) {
    error = "cannot stage the kernel's shared object";
    return nullptr;
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  close(fd);
  if (!handle) {
    error = dlerror();
    return nullptr;
  }
  return loaded[blob] = handle;
}

/// libignrt's driver for "fault": runs the kernel's host code, or fails
/// as its mode says.
int faultDriver(void *, const ignrt_device_call *call, ignrt_device_stats *,
                char *error, size_t errorSize) {
  auto fail = [&](const std::string &message) {
    std::snprintf(error, errorSize, "%s", message.c_str());
    return 1;
  };
  nlohmann::json desc = nlohmann::json::parse(call->descriptor, nullptr, false);
  if (!desc.is_object() || !desc.contains("symbol"))
    return fail("the fault kernel's descriptor is damaged");
  int64_t mode = desc.value("mode", int64_t(0));
  if (mode == 1)
    return 0;
  if (mode == 2)
    __builtin_trap();
  if (mode == 3)
    for (;;)
      pause();
  std::string message;
  void *handle = loadBlob(call->blob, call->blob_bytes, message);
  if (!handle)
    return fail(message);
  auto fn = reinterpret_cast<KernelFn>(
      dlsym(handle, desc["symbol"].get<std::string>().c_str()));
  if (!fn)
    return fail("no kernel symbol in the fault kernel's blob");
  // MLIR's ranked descriptors: {allocated, aligned, offset, sizes, strides}.
  std::vector<std::vector<int64_t>> words(call->num_args);
  std::vector<void *> args(call->num_args);
  for (size_t i = 0; i < call->num_args; ++i) {
    const ignrt_tensor_info &info = call->args[i];
    std::vector<int64_t> &w = words[i];
    w.assign(3 + 2 * info.rank, 0);
    std::memcpy(&w[0], &call->data[i], sizeof(void *));
    std::memcpy(&w[1], &call->data[i], sizeof(void *));
    int64_t stride = 1;
    for (size_t d = info.rank; d-- > 0;) {
      w[3 + d] = info.dims[d];
      w[3 + info.rank + d] = stride;
      stride *= info.dims[d];
    }
    args[i] = w.data();
  }
  fn(args.data(), 0, desc.value("workgroups", int64_t(1)));
  return 0;
}

class FaultTarget : public target::Target {
public:
  std::string name() const override { return "fault"; }
  std::string description() const override {
    return "test only: kernels without a contraction run on the host's code "
           "through a driver that fails on request (fault.mode)";
  }
  std::vector<target::ChipInfo> chips() const override {
    target::ChipInfo c;
    c.name = "faulty";
    c.summary = "this CPU, one thread";
    c.cores = 1;
    return {c};
  }
  std::string defaultChip() const override { return "faulty"; }
  std::string fingerprint(const target::TargetConfig &config) const override {
    // What the host's code depends on, under this target's name.
    std::string host = fault::host().fingerprint(hostConfig(config));
    return "fault/" + config.chip + host.substr(host.rfind('/'));
  }
  bool claims(mlir::func::FuncOp kernel, const target::TargetConfig &,
              std::string &why) const override {
    bool contraction = false;
    kernel.walk([&](mlir::Operation *op) {
      llvm::StringRef name = op->getName().getStringRef();
      contraction |= name == "ign.matmul" || name == "ign.gemm" ||
                     name == "ign.conv" || name == "ign.batch_matmul";
    });
    if (contraction)
      why = "a contraction";
    return !contraction;
  }
  mlir::LogicalResult
  compileKernels(mlir::ModuleOp,
                 llvm::MutableArrayRef<target::PlacedKernel> kernels,
                 const target::CompileOptions &options,
                 bundle::BundleContents &) const override {
    for (target::PlacedKernel &k : kernels)
      if (failed(compileOne(k, options)))
        return mlir::failure();
    return mlir::success();
  }
  mlir::FailureOr<target::TuningTask>
  tuningTask(const target::TaskModule &task, const target::TargetConfig &config,
             const target::RunnerContext &context) const override {
    auto t = host().tuningTask(task, hostConfig(config), context);
    if (failed(t))
      return mlir::failure();
    t->space.knobs.push_back({kMode, {0, 1, 2, 3}});
    t->space.defaults[kMode] = 0;
    auto hostFeatures = t->features;
    t->features = [hostFeatures](const search::Schedule &s) {
      std::vector<float> f = hostFeatures(hostKnobs(s));
      auto it = s.find(kMode);
      f.push_back(float(it == s.end() ? 0 : it->second));
      return f;
    };
    return t;
  }
  std::unique_ptr<target::Runner>
  createRunner(const std::vector<const target::TaskModule *> &tasks,
               const target::TargetConfig &config,
               const target::RunnerContext &context) const override {
    // The host's worker runner; the workers build for this target (the
    // context's target arguments name it).
    return host().createRunner(tasks, hostConfig(config), context);
  }
  void registerRuntimeDriver() const override {
    ignrt_register_device("fault", faultDriver, nullptr);
  }
};

} // namespace

void registerFaultTarget() {
  target::registerTarget(std::make_unique<FaultTarget>());
}

} // namespace ign::fault
