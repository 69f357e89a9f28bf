//===- CudaLoader.cpp - the CUDA driver API, opened at run time -----------===//

#include "CudaLoader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace ign::cuda {

namespace {

struct Library {
  CudaFunctions fns;
  std::string error; // empty when loaded
};

Library openLibrary() {
  Library lib;
  const char *override = std::getenv("IGN_CUDA_DRIVER");
  const char *path = override && *override ? override : "libcuda.so.1";
  // Never closed: the driver keeps threads that outlive the process's
  // static destructors.
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    lib.error = std::string("cannot load ") + path + " (" +
                (why ? why : "unknown error") +
                "): this machine has no NVIDIA driver; run the bundle on a "
                "machine with an NVIDIA GPU, or compile for another target";
    return lib;
  }
#define IGN_CUDA_RESOLVE(name, params)                                         \
  lib.fns.name = reinterpret_cast<CUresult(*) params>(dlsym(handle, #name));   \
  if (!lib.fns.name) {                                                         \
    lib.error = std::string(path) + " has no " #name                           \
                                    ": it is not a CUDA driver, or too old";   \
    return lib;                                                                \
  }
  IGN_CUDA_FUNCTIONS(IGN_CUDA_RESOLVE)
#undef IGN_CUDA_RESOLVE
  return lib;
}

} // namespace

const CudaFunctions *loadCuda(std::string &why) {
  static std::once_flag once;
  static Library lib;
  std::call_once(once, [] { lib = openLibrary(); });
  if (!lib.error.empty()) {
    why = lib.error;
    return nullptr;
  }
  return &lib.fns;
}

std::string cudaErrorText(const CudaFunctions &cu, CUresult result) {
  const char *name = nullptr;
  if (cu.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = "CUDA error";
  return std::string(name) + " (" + std::to_string(result) + ")";
}

} // namespace ign::cuda
