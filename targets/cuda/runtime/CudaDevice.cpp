//===- CudaDevice.cpp - CUDA as libignrt's cuda driver --------------------===//
//
// One call: check the descriptor (before the GPU is touched), find or load
// the kernel's module, give every bound argument, scratch buffer and
// constant device memory, copy the inputs in, launch on the stream between
// two events, copy the outputs out and wait; intermediates the call marks
// resident stay on the GPU instead (ignrt_device_call::resident). Calls
// are serialized on one mutex; an error the context cannot recover from
// (an illegal address) fails every later call with the same message.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"
#include "CudaDescriptor.h"
#include "CudaLoader.h"

#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace ign::cuda {

namespace {

/// At most this many bundles' weights stay on the GPU (least recently used
/// go first).
constexpr size_t kMaxWeightBundles = 4;
constexpr size_t kMaxCachedKernels = 1024;
// Launches one synchronization covers at most (each has its own timer).
constexpr size_t kMaxDeferredLaunches = 64;

struct Buffer {
  CUdeviceptr ptr = 0;
  size_t capacity = 0;
};

struct Kernel {
  CUmodule module = nullptr;
  std::vector<CUfunction> functions; // per launch
  std::vector<Buffer> args, scratch, constants;
  bool constantsLoaded = false;
  uint64_t lastUse = 0;
};

struct Context {
  const CudaFunctions *cu = nullptr;
  CudaDeviceInfo info;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  /// Per launch of a batch: the events around its kernels (its time).
  std::vector<std::pair<CUevent, CUevent>> timers;
  /// Launches queued on the stream and returned from before they ran
  /// (ignrt_device_call::may_defer): their stats, filled at the next
  /// synchronization, and their timers.
  std::vector<std::pair<ignrt_device_stats *, size_t>> deferred;
  std::string broken; // set after an error the context cannot recover from
  std::map<std::string, std::unique_ptr<Kernel>> kernels;
  // Weights: (epoch, address, bytes) -> buffer; epochs by recency.
  std::map<std::tuple<uint64_t, const void *, size_t>, Buffer> weights;
  std::list<uint64_t> epochs;
  // Intermediates kept on the GPU between launches (the call's `resident`
  // flags).
  gpu::rt::ResidentBuffers<Buffer> resident;
  uint64_t clock = 0;
};

std::mutex &driverMutex() {
  static std::mutex *m = new std::mutex; // outlives static destructors
  return *m;
}

#define IGN_CU(call, step)                                                     \
  if (CUresult r_ = (call); r_ != CUDA_SUCCESS) {                              \
    why = std::string(step) + ": " + cudaErrorText(*ctx.cu, r_);               \
    return false;                                                              \
  }

bool selectDevice(Context &ctx, CUdevice &device, std::string &why) {
  IGN_CU(ctx.cu->cuInit(0), "cuInit");
  int count = 0;
  IGN_CU(ctx.cu->cuDeviceGetCount(&count), "cuDeviceGetCount");
  const char *env = std::getenv("IGN_CUDA_DEVICE");
  int index = env && *env ? std::atoi(env) : 0;
  if (count == 0 || index < 0 || index >= count) {
    why = count == 0
              ? "the NVIDIA driver found no GPU"
              : "IGN_CUDA_DEVICE=" + std::string(env) + " is not one of the " +
                    std::to_string(count) + " GPUs";
    return false;
  }
  IGN_CU(ctx.cu->cuDeviceGet(&device, index), "cuDeviceGet");
  char name[256] = {0};
  IGN_CU(ctx.cu->cuDeviceGetName(name, sizeof name - 1, device),
         "cuDeviceGetName");
  int major = 0, minor = 0;
  IGN_CU(ctx.cu->cuDeviceGetAttribute(
             &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
         "cuDeviceGetAttribute");
  IGN_CU(ctx.cu->cuDeviceGetAttribute(
             &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
         "cuDeviceGetAttribute");
  IGN_CU(ctx.cu->cuDeviceGetAttribute(&ctx.info.multiprocessors,
                                      CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                      device),
         "cuDeviceGetAttribute");
  ctx.info.name = name;
  ctx.info.computeCapability = major * 10 + minor;
  return true;
}

/// Makes the events of timer `i` (and those before it) where missing.
bool timerFor(Context &ctx, size_t i, std::string &why) {
  while (ctx.timers.size() <= i) {
    std::pair<CUevent, CUevent> t{nullptr, nullptr};
    IGN_CU(ctx.cu->cuEventCreate(&t.first, 0), "cuEventCreate");
    IGN_CU(ctx.cu->cuEventCreate(&t.second, 0), "cuEventCreate");
    ctx.timers.push_back(t);
  }
  return true;
}

/// The time of the launch timed by timer `i`, after a synchronization.
bool elapsed(Context &ctx, size_t i, double &ns, std::string &why) {
  float ms = 0;
  IGN_CU(ctx.cu->cuEventElapsedTime(&ms, ctx.timers[i].first,
                                    ctx.timers[i].second),
         "cuEventElapsedTime");
  ns = double(ms) * 1e6;
  return true;
}

/// Waits for the launches queued on the stream and fills the deferred
/// ones' stats. A failure breaks the context: their outputs, which later
/// launches (of any session) read, may not have been made.
bool settle(Context &ctx, std::string &why) {
  CUresult r = ctx.cu->cuStreamSynchronize(ctx.stream);
  bool ok = r == CUDA_SUCCESS;
  if (!ok)
    why = "running the kernels: " + cudaErrorText(*ctx.cu, r);
  for (auto [stats, timer] : ctx.deferred) {
    double ns = 0;
    if (ok && elapsed(ctx, timer, ns, why))
      stats->device_ns = ns;
  }
  ctx.deferred.clear();
  if (!ok && ctx.broken.empty())
    ctx.broken = "an earlier kernel failed on the GPU: " + why;
  return ok;
}

/// Before device memory or a module is freed: the deferred launches that
/// may use it run first.
void settleBeforeFree(Context &ctx) {
  std::string why;
  if (!ctx.deferred.empty())
    settle(ctx, why);
}

bool createContext(Context &ctx, std::string &why) {
  if (!(ctx.cu = loadCuda(why)))
    return false;
  CUdevice device = 0;
  if (!selectDevice(ctx, device, why))
    return false;
  IGN_CU(ctx.cu->cuDevicePrimaryCtxRetain(&ctx.context, device),
         "cuDevicePrimaryCtxRetain");
  IGN_CU(ctx.cu->cuCtxSetCurrent(ctx.context), "cuCtxSetCurrent");
  IGN_CU(ctx.cu->cuStreamCreate(&ctx.stream, 0), "cuStreamCreate");
  return timerFor(ctx, 0, why);
}

/// The process-wide context, made at first use; null with `why`.
/// The process-wide context once made (null before, or when it failed).
Context *madeContext = nullptr;

Context *getContext(std::string &why) {
  Context *&ctx = madeContext;
  static std::string error;
  if (!ctx && error.empty()) {
    auto made = std::make_unique<Context>();
    if (createContext(*made, error))
      ctx = made.release(); // lives as long as the process
  }
  if (!ctx)
    why = error;
  else
    ctx->cu->cuCtxSetCurrent(ctx->context); // this thread's, too
  return ctx;
}

bool grow(Context &ctx, Buffer &b, size_t bytes, std::string &why) {
  bytes = bytes ? bytes : 1;
  if (b.capacity >= bytes)
    return true;
  if (b.ptr) {
    settleBeforeFree(ctx);
    ctx.cu->cuMemFree_v2(b.ptr);
  }
  b = Buffer();
  IGN_CU(ctx.cu->cuMemAlloc_v2(&b.ptr, bytes), "cuMemAlloc");
  b.capacity = bytes;
  return true;
}

void freeKernel(Context &ctx, Kernel &k) {
  settleBeforeFree(ctx);
  for (auto *list : {&k.args, &k.scratch, &k.constants})
    for (Buffer &b : *list)
      if (b.ptr)
        ctx.cu->cuMemFree_v2(b.ptr);
  if (k.module)
    ctx.cu->cuModuleUnload(k.module);
}

bool loadKernel(Context &ctx, const ignrt_device_call &call,
                const CudaDescriptor &desc, Kernel &k, std::string &why) {
  const char *image = static_cast<const char *>(call.blob) + desc.image.offset;
  IGN_CU(ctx.cu->cuModuleLoadData(&k.module, image),
         "loading its " + desc.kind + " for " + ctx.info.name);
  for (const CudaLaunch &l : desc.launches) {
    CUfunction f = nullptr;
    IGN_CU(ctx.cu->cuModuleGetFunction(&f, k.module, l.entry.c_str()),
           "the module has no kernel '" + l.entry + "'");
    k.functions.push_back(f);
  }
  k.args.resize(call.num_args);
  k.scratch.resize(desc.scratch.size());
  k.constants.resize(desc.constants.size());
  return true;
}

Kernel *getKernel(Context &ctx, const ignrt_device_call &call,
                  const CudaDescriptor &desc, std::string &why) {
  std::string key = gpu::rt::kernelCacheKey(call);
  auto it = ctx.kernels.find(key);
  if (it == ctx.kernels.end()) {
    if (ctx.kernels.size() >= kMaxCachedKernels) {
      auto oldest = ctx.kernels.begin();
      for (auto i = ctx.kernels.begin(); i != ctx.kernels.end(); ++i)
        if (i->second->lastUse < oldest->second->lastUse)
          oldest = i;
      freeKernel(ctx, *oldest->second);
      ctx.kernels.erase(oldest);
    }
    auto k = std::make_unique<Kernel>();
    if (!loadKernel(ctx, call, desc, *k, why)) {
      freeKernel(ctx, *k);
      return nullptr;
    }
    it = ctx.kernels.emplace(key, std::move(k)).first;
  }
  it->second->lastUse = ++ctx.clock;
  return it->second.get();
}

bool isWeight(const ignrt_device_call &call, size_t i) {
  return call.weights && call.weights_epoch && call.weights[i] &&
         i < call.num_args - call.results;
}

using gpu::rt::isOutput;
using gpu::rt::residency;

/// Forgets the weights of the least recently used bundle when more than
/// kMaxWeightBundles have some on the GPU; `epoch` becomes the newest.
void touchEpoch(Context &ctx, uint64_t epoch) {
  ctx.epochs.remove(epoch);
  ctx.epochs.push_front(epoch);
  while (ctx.epochs.size() > kMaxWeightBundles) {
    uint64_t old = ctx.epochs.back();
    ctx.epochs.pop_back();
    settleBeforeFree(ctx);
    for (auto it = ctx.weights.begin(); it != ctx.weights.end();)
      if (std::get<0>(it->first) == old) {
        ctx.cu->cuMemFree_v2(it->second.ptr);
        it = ctx.weights.erase(it);
      } else {
        ++it;
      }
  }
}

/// The device copy of weight argument `i`, made at its bundle's first call.
bool weightBuffer(Context &ctx, const ignrt_device_call &call, size_t i,
                  CUdeviceptr &ptr, std::string &why) {
  touchEpoch(ctx, call.weights_epoch);
  auto key = std::make_tuple(call.weights_epoch,
                             static_cast<const void *>(call.data[i]),
                             size_t(call.args[i].bytes));
  auto it = ctx.weights.find(key);
  if (it == ctx.weights.end()) {
    Buffer b;
    if (!grow(ctx, b, call.args[i].bytes, why))
      return false;
    it = ctx.weights.emplace(key, b).first;
    IGN_CU(ctx.cu->cuMemcpyHtoDAsync_v2(b.ptr, call.data[i], call.args[i].bytes,
                                        ctx.stream),
           "copying a weight to the GPU");
  }
  ptr = it->second.ptr;
  return true;
}

/// The GPU's copy of intermediate argument `i` (ResidentBuffers::get).
bool residentBuffer(Context &ctx, const ignrt_device_call &call, size_t i,
                    CUdeviceptr &ptr, std::string &why) {
  Buffer *b = ctx.resident.get(
      call, i, call.args[i].bytes,
      [&](uint64_t bytes, Buffer &out) { return grow(ctx, out, bytes, why); },
      why);
  if (b)
    ptr = b->ptr;
  return b != nullptr;
}

/// The device pointer of binding `b`, its memory allocated and, for an
/// input or constant, filled.
bool bindingPointer(Context &ctx, const ignrt_device_call &call,
                    const CudaDescriptor &desc, Kernel &k,
                    const gpu::rt::Binding &b, CUdeviceptr &ptr,
                    std::string &why) {
  using gpu::rt::Binding;
  if (b.kind == Binding::Arg && isWeight(call, b.index))
    return weightBuffer(ctx, call, b.index, ptr, why);
  if (b.kind == Binding::Arg && residency(call, b.index) != IGNRT_RESIDENT_HOST)
    return residentBuffer(ctx, call, b.index, ptr, why);
  std::vector<Buffer> &list = b.kind == Binding::Arg       ? k.args
                              : b.kind == Binding::Scratch ? k.scratch
                                                           : k.constants;
  size_t bytes = b.kind == Binding::Arg       ? call.args[b.index].bytes
                 : b.kind == Binding::Scratch ? size_t(desc.scratch[b.index])
                                              : desc.constants[b.index].bytes;
  if (!grow(ctx, list[b.index], bytes, why))
    return false;
  ptr = list[b.index].ptr;
  return true;
}

/// Copies the inputs (every argument a launch reads that is not a weight)
/// and, once per kernel, its constants to the GPU.
bool copyIn(Context &ctx, const ignrt_device_call &call,
            const CudaDescriptor &desc, Kernel &k, std::string &why) {
  for (size_t i = 0; i + call.results < call.num_args; ++i)
    if (k.args[i].ptr && !isWeight(call, i) && call.args[i].bytes &&
        residency(call, i) == IGNRT_RESIDENT_HOST)
      IGN_CU(ctx.cu->cuMemcpyHtoDAsync_v2(k.args[i].ptr, call.data[i],
                                          call.args[i].bytes, ctx.stream),
             "copying an input to the GPU");
  if (k.constantsLoaded)
    return true;
  const char *blob = static_cast<const char *>(call.blob);
  for (size_t c = 0; c < desc.constants.size(); ++c)
    if (k.constants[c].ptr && desc.constants[c].bytes)
      IGN_CU(ctx.cu->cuMemcpyHtoDAsync_v2(k.constants[c].ptr,
                                          blob + desc.constants[c].offset,
                                          desc.constants[c].bytes, ctx.stream),
             "copying a constant to the GPU");
  k.constantsLoaded = true;
  return true;
}

bool launchAll(Context &ctx, const CudaDescriptor &desc, Kernel &k,
               std::vector<std::vector<CUdeviceptr>> &pointers, size_t timer,
               std::string &why) {
  IGN_CU(ctx.cu->cuEventRecord(ctx.timers[timer].first, ctx.stream),
         "cuEventRecord");
  for (size_t i = 0; i < desc.launches.size(); ++i) {
    const CudaLaunch &l = desc.launches[i];
    std::vector<void *> params;
    for (CUdeviceptr &p : pointers[i])
      params.push_back(&p);
    IGN_CU(ctx.cu->cuLaunchKernel(k.functions[i], l.groups[0], l.groups[1],
                                  l.groups[2], l.local[0], l.local[1],
                                  l.local[2], 0, ctx.stream, params.data(),
                                  nullptr),
           "launching '" + l.entry + "'");
  }
  IGN_CU(ctx.cu->cuEventRecord(ctx.timers[timer].second, ctx.stream),
         "cuEventRecord");
  return true;
}

/// Copies the outputs back and waits for the stream: this launch's and
/// the deferred ones' stats are filled (settle).
bool copyOutAndWait(Context &ctx, const ignrt_device_call &call, Kernel &k,
                    ignrt_device_stats &stats, size_t timer, std::string &why) {
  for (size_t i = call.num_args - call.results; i < call.num_args; ++i)
    if (k.args[i].ptr && call.args[i].bytes &&
        residency(call, i) == IGNRT_RESIDENT_HOST)
      IGN_CU(ctx.cu->cuMemcpyDtoHAsync_v2(call.data[i], k.args[i].ptr,
                                          call.args[i].bytes, ctx.stream),
             "copying an output from the GPU");
  return settle(ctx, why) && elapsed(ctx, timer, stats.device_ns, why);
}

/// Whether the launch may stay queued when the call returns: the runtime
/// allows it (its outputs stay on the GPU: may_defer) and the batch has
/// room for it and a launch after it.
bool defers(const Context &ctx, const ignrt_device_call &call) {
  if (!call.may_defer || !call.deferred ||
      ctx.deferred.size() + 2 > kMaxDeferredLaunches)
    return false;
  for (size_t i = call.num_args - call.results; i < call.num_args; ++i)
    if (residency(call, i) == IGNRT_RESIDENT_HOST)
      return false;
  // An input copied from the host: cuMemcpyHtoDAsync may read the host's
  // (pageable) bytes after the call returns, when a host kernel may have
  // reused them.
  for (size_t i = 0; i + call.results < call.num_args; ++i)
    if (!isWeight(call, i) && call.args[i].bytes &&
        residency(call, i) == IGNRT_RESIDENT_HOST)
      return false;
  return true;
}

#undef IGN_CU

bool runLocked(const ignrt_device_call &call, ignrt_device_stats &stats,
               std::string &why) {
  CudaDescriptor desc;
  if (!parseCudaDescriptor(call, desc, why))
    return false;
  Context *ctx = getContext(why);
  if (!ctx)
    return false;
  if (!ctx->broken.empty())
    return why = ctx->broken, false;
  if (!checkArchitecture(desc, ctx->info.computeCapability, why))
    return false;
  Kernel *k = getKernel(*ctx, call, desc, why);
  if (!k)
    return false;
  std::vector<std::vector<CUdeviceptr>> pointers(desc.launches.size());
  for (size_t i = 0; i < desc.launches.size(); ++i)
    for (const gpu::rt::Binding &b : desc.launches[i].args)
      if (!bindingPointer(*ctx, call, desc, *k, b, pointers[i].emplace_back(),
                          why))
        return false;
  size_t timer = ctx->deferred.size();
  if (!timerFor(*ctx, timer, why) || !copyIn(*ctx, call, desc, *k, why) ||
      !launchAll(*ctx, desc, *k, pointers, timer, why))
    return false;
  if (defers(*ctx, call)) {
    ctx->deferred.emplace_back(&stats, timer);
    *call.deferred = 1;
  } else if (!copyOutAndWait(*ctx, call, *k, stats, timer, why)) {
    if (ctx->broken.empty())
      ctx->broken = "an earlier kernel failed on the GPU: " + why;
    return false;
  }
  ctx->resident.releaseLastUses(call);
  return true;
}

/// Waits for the queued launches: for the runtime's finishing call, and
/// after a failed call (runDeferring). A process
/// whose context was never made has none (and a failed call does not make
/// it).
bool settleLocked(std::string &why) {
  Context *ctx = madeContext;
  if (ctx)
    ctx->cu->cuCtxSetCurrent(ctx->context); // this thread's, too
  return !ctx || settle(*ctx, why);
}

int cudaDriver(void *, const ignrt_device_call *call, ignrt_device_stats *stats,
               char *error, size_t errorSize) {
  std::string message;
  return gpu::rt::reportResult(runCudaCall(*call, *stats, message), message,
                               error, errorSize);
}

} // namespace

void registerCudaDevice() {
  ignrt_register_device("cuda", cudaDriver, nullptr);
}

bool probeCudaDevice(CudaDeviceInfo &info, std::string &why) {
  std::lock_guard<std::mutex> lock(driverMutex());
  Context *ctx = getContext(why);
  if (ctx)
    info = ctx->info;
  return ctx != nullptr;
}

int runCudaCall(const ignrt_device_call &call, ignrt_device_stats &stats,
                std::string &error) {
  stats = ignrt_device_stats{0, 0.0, 0.0};
  return gpu::rt::runDeferring(
      "cuda", driverMutex(), call, error,
      [&](std::string &why) { return runLocked(call, stats, why); },
      settleLocked);
}

} // namespace ign::cuda
