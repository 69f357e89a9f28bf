//===- CudaDescriptor.h - a CUDA kernel's descriptor ------------*- C++ -*-===//
//
// The contract with the compiler side (CudaCompiler.cpp): the manifest's
// "device" object of a CUDA kernel: its architecture, the module image (a
// slice of the blob: fatbin, cubin or NUL-terminated PTX), scratch sizes,
// constants, and its launches (entry, grid, block, arguments), parsed and
// checked against the call before the GPU is touched.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_CUDA_RUNTIME_CUDADESCRIPTOR_H
#define IGN_TARGETS_CUDA_RUNTIME_CUDADESCRIPTOR_H

#include "DeviceDescriptor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ign::cuda {

struct CudaLaunch {
  std::string entry;
  uint32_t groups[3] = {1, 1, 1}, local[3] = {1, 1, 1};
  std::vector<gpu::rt::Binding> args;
};

struct CudaDescriptor {
  int arch = 0;     // 80 for "sm_80"
  std::string kind; // "fatbin", "cubin" or "ptx"
  gpu::rt::BlobSlice image;
  std::vector<uint64_t> scratch; // byte sizes
  std::vector<gpu::rt::BlobSlice> constants;
  std::vector<CudaLaunch> launches;
};

/// Parses and checks the call's descriptor: false with `error` saying what
/// is wrong; never throws.
bool parseCudaDescriptor(const ignrt_device_call &call, CudaDescriptor &out,
                         std::string &error);

/// Whether a GPU of compute capability `device` (80 for sm_80) runs the
/// kernel's image: a cubin needs the same major version and a minor no
/// newer; PTX (alone or in a fatbin) compiles for any GPU at least as new.
bool checkArchitecture(const CudaDescriptor &kernel, int device,
                       std::string &error);

} // namespace ign::cuda

#endif
