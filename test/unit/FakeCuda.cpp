//===- FakeCuda.cpp - a CUDA driver library without a GPU, for tests ------===//
//
// Implements the CUDA driver API entry points libignrt's CUDA driver
// resolves (targets/cuda/runtime/CudaLoader.h) on the CPU: device memory is
// host memory, a module is PTX text whose ".entry NAME" lines name its
// kernels, and a launch runs the test kernel of that name below (fake_*)
// over every thread of the grid. It checks what the driver does around the
// kernels: arguments, copies, caching, errors. Counters tell the tests how
// often memory was allocated, copied and modules loaded.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>

namespace {

using Kernel = void (*)(uint64_t threads, void **params);

float *arg(void **params, int i) {
  return reinterpret_cast<float *>(*static_cast<uintptr_t *>(params[i]));
}

void fakeAdd(uint64_t n, void **p) { // c = a + b
  for (uint64_t t = 0; t < n; ++t)
    arg(p, 2)[t] = arg(p, 0)[t] + arg(p, 1)[t];
}

void fakeDouble(uint64_t n, void **p) { // c = 2a
  for (uint64_t t = 0; t < n; ++t)
    arg(p, 1)[t] = 2 * arg(p, 0)[t];
}

const std::map<std::string, Kernel> kKernels = {{"fake_add", fakeAdd},
                                                {"fake_double", fakeDouble}};

struct Module {
  std::set<std::string> entries;
};

struct Counters {
  long allocations = 0, frees = 0, copiesIn = 0, bytesIn = 0, copiesOut = 0,
       launches = 0, moduleLoads = 0, synchronizations = 0;
} counters;

} // namespace

extern "C" {

/// allocations, frees, copies in, bytes in, copies out, launches, module
/// loads, stream synchronizations.
void ign_fake_cuda_counters(long out[8]) {
  long values[] = {counters.allocations, counters.frees,
                   counters.copiesIn,    counters.bytesIn,
                   counters.copiesOut,   counters.launches,
                   counters.moduleLoads, counters.synchronizations};
  std::memcpy(out, values, sizeof values);
}

int cuInit(unsigned) { return 0; }
int cuDeviceGetCount(int *n) {
  *n = 1;
  return 0;
}
int cuDeviceGet(int *d, int i) {
  *d = i;
  return 0;
}
int cuDeviceGetName(char *name, int len, int) {
  std::strncpy(name, "Fake GPU", size_t(len));
  return 0;
}
int cuDeviceGetAttribute(int *v, int attribute, int) {
  *v = attribute == 75 ? 8 : attribute == 76 ? 0 : 4; // sm_80, 4 SMs
  return 0;
}
int cuDevicePrimaryCtxRetain(void **ctx, int) {
  static int context;
  *ctx = &context;
  return 0;
}
int cuCtxSetCurrent(void *) { return 0; }

int cuModuleLoadData(void **module, const void *image) {
  const char *text = static_cast<const char *>(image);
  if (std::strncmp(text, "//", 2) != 0)
    return 200; // CUDA_ERROR_INVALID_IMAGE
  auto *m = new Module;
  for (const char *p = std::strstr(text, ".entry "); p;
       p = std::strstr(p + 1, ".entry ")) {
    const char *begin = p + 7, *end = begin;
    while (*end && *end != '(' && *end != '\n' && *end != ' ')
      ++end;
    m->entries.insert(std::string(begin, end));
  }
  ++counters.moduleLoads;
  *module = m;
  return 0;
}
int cuModuleUnload(void *module) {
  delete static_cast<Module *>(module);
  return 0;
}
int cuModuleGetFunction(void **f, void *module, const char *name) {
  auto *m = static_cast<Module *>(module);
  auto k = kKernels.find(name);
  if (!m->entries.count(name) || k == kKernels.end())
    return 500; // CUDA_ERROR_NOT_FOUND
  *f = reinterpret_cast<void *>(k->second);
  return 0;
}

int cuMemAlloc_v2(unsigned long long *ptr, size_t bytes) {
  ++counters.allocations;
  *ptr = reinterpret_cast<uintptr_t>(std::calloc(1, bytes));
  return *ptr ? 0 : 2; // CUDA_ERROR_OUT_OF_MEMORY
}
int cuMemFree_v2(unsigned long long ptr) {
  ++counters.frees;
  std::free(reinterpret_cast<void *>(ptr));
  return 0;
}
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t n,
                         void *) {
  ++counters.copiesIn;
  counters.bytesIn += long(n);
  std::memcpy(reinterpret_cast<void *>(dst), src, n);
  return 0;
}
int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t n, void *) {
  ++counters.copiesOut;
  std::memcpy(dst, reinterpret_cast<void *>(src), n);
  return 0;
}

int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned, void *, void **params,
                   void **) {
  ++counters.launches;
  uint64_t threads = uint64_t(gx) * gy * gz * bx * by * bz;
  reinterpret_cast<Kernel>(f)(threads, params);
  return 0;
}

int cuStreamCreate(void **s, unsigned) {
  static int stream;
  *s = &stream;
  return 0;
}
int cuStreamSynchronize(void *) {
  ++counters.synchronizations;
  return 0;
}
int cuEventCreate(void **e, unsigned) {
  static int events[2], next;
  *e = &events[next++ % 2];
  return 0;
}
int cuEventRecord(void *, void *) { return 0; }
int cuEventSynchronize(void *) { return 0; }
int cuEventElapsedTime(float *ms, void *, void *) {
  *ms = 0.25f;
  return 0;
}
int cuGetErrorName(int result, const char **name) {
  *name = result == 200   ? "CUDA_ERROR_INVALID_IMAGE"
          : result == 500 ? "CUDA_ERROR_NOT_FOUND"
          : result == 2   ? "CUDA_ERROR_OUT_OF_MEMORY"
                          : "CUDA_ERROR_UNKNOWN";
  return 0;
}

} // extern "C"
