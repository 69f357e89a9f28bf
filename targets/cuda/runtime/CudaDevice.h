//===- CudaDevice.h - CUDA as libignrt's cuda driver ------------*- C++ -*-===//
//
// The runtime side of --target=cuda: a libignrt device driver that runs a
// kernel's launches on an NVIDIA GPU through the CUDA driver API. It links
// no CUDA library (libcuda.so.1 is opened at first use, CudaLoader.h), so a
// machine without an NVIDIA driver or GPU gets an error naming the
// bundle's target, never a crash.
//
// Per kernel it loads the module image once (a fatbin or cubin, or PTX the
// driver compiles), keeps device buffers for its arguments and scratch
// between calls, and uploads its constants once; the bundle's weights are
// copied once per opened bundle (the ABI's weights flags and epoch). Inputs
// are copied in and outputs out on every call, on one stream; events time
// the launches.
//
// Environment: IGN_CUDA_DEVICE, the device's index (default 0);
// IGN_CUDA_DRIVER, the library to open instead of libcuda.so.1.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_CUDA_RUNTIME_CUDADEVICE_H
#define IGN_TARGETS_CUDA_RUNTIME_CUDADEVICE_H

#include "ign/Runtime/ignrt.h"

#include <string>

namespace ign::cuda {

struct CudaDeviceInfo {
  std::string name;
  int computeCapability = 0; // 80 for sm_80
  int multiprocessors = 0;
};

/// Registers the driver as libignrt's device "cuda" (idempotent).
void registerCudaDevice();

/// The GPU the driver would use; false with `why` when there is none.
bool probeCudaDevice(CudaDeviceInfo &info, std::string &why);

/// Runs one launch (the body of the registered ignrt_device_fn): 0 on
/// success, else 1 with `error` naming the kernel and what failed.
int runCudaCall(const ignrt_device_call &call, ignrt_device_stats &stats,
                std::string &error);

} // namespace ign::cuda

#endif
