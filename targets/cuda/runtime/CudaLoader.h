//===- CudaLoader.h - the CUDA driver API, opened at run time ---*- C++ -*-===//
//
// The few CUDA driver API entry points libignrt's CUDA driver uses, with
// their types declared here (no cuda.h, no build-time dependency on the
// toolkit) and resolved from libcuda.so.1 by dlopen at first use, so that a
// machine without an NVIDIA driver gets an error message, not a crash or a
// link failure. IGN_CUDA_DRIVER names another library to open (tests set
// it to a missing file).
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_CUDA_RUNTIME_CUDALOADER_H
#define IGN_TARGETS_CUDA_RUNTIME_CUDALOADER_H

#include <cstddef>
#include <string>

namespace ign::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

// name, return, parameters
#define IGN_CUDA_FUNCTIONS(X)                                                  \
  X(cuInit, (unsigned))                                                        \
  X(cuDeviceGetCount, (int *))                                                 \
  X(cuDeviceGet, (CUdevice *, int))                                            \
  X(cuDeviceGetName, (char *, int, CUdevice))                                  \
  X(cuDeviceGetAttribute, (int *, int, CUdevice))                              \
  X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                         \
  X(cuCtxSetCurrent, (CUcontext))                                              \
  X(cuModuleLoadData, (CUmodule *, const void *))                              \
  X(cuModuleUnload, (CUmodule))                                                \
  X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *))               \
  X(cuMemAlloc_v2, (CUdeviceptr *, size_t))                                    \
  X(cuMemFree_v2, (CUdeviceptr))                                               \
  X(cuMemcpyHtoDAsync_v2, (CUdeviceptr, const void *, size_t, CUstream))       \
  X(cuMemcpyDtoHAsync_v2, (void *, CUdeviceptr, size_t, CUstream))             \
  X(cuLaunchKernel,                                                            \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,   \
     unsigned, CUstream, void **, void **))                                    \
  X(cuStreamCreate, (CUstream *, unsigned))                                    \
  X(cuStreamSynchronize, (CUstream))                                           \
  X(cuEventCreate, (CUevent *, unsigned))                                      \
  X(cuEventRecord, (CUevent, CUstream))                                        \
  X(cuEventSynchronize, (CUevent))                                             \
  X(cuEventElapsedTime, (float *, CUevent, CUevent))                           \
  X(cuGetErrorName, (CUresult, const char **))

struct CudaFunctions {
#define IGN_CUDA_POINTER(name, params) CUresult(*name) params = nullptr;
  IGN_CUDA_FUNCTIONS(IGN_CUDA_POINTER)
#undef IGN_CUDA_POINTER
};

/// The driver API, loaded once per process; null with `why` saying what is
/// missing.
const CudaFunctions *loadCuda(std::string &why);

/// "CUDA_ERROR_OUT_OF_MEMORY (2)" for a result code.
std::string cudaErrorText(const CudaFunctions &cu, CUresult result);

} // namespace ign::cuda

#endif
