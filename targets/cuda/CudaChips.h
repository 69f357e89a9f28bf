//===- CudaChips.h - the NVIDIA GPUs --target=cuda compiles for -*- C++ -*-===//
//
// Presets of NVIDIA data-center and desktop GPUs with their compute
// capability, limits and public numbers (SM count, boost clock, peaks per
// data type, memory bandwidth, registers and shared memory per SM). Each
// gives the GPU layer's chip limits, the analytical model's numbers and
// the NVPTX target (sm_XX and the PTX ISA version).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_CUDA_CUDACHIPS_H
#define IGN_TARGETS_CUDA_CUDACHIPS_H

#include "GpuCompile.h"

#include <optional>
#include <string>
#include <vector>

namespace ign::cuda {

struct CudaChip {
  std::string name, summary;
  int smVersion = 80;  // compute capability x 10: 80 for sm_80
  int ptxVersion = 70; // the PTX ISA the kernels declare (7.0 = 70)
  gpu::GpuChip gpu;    // limits and the analytical model's numbers
  int64_t registersPerSM = 65536;
  int64_t maxRegistersPerThread = 255;
  int64_t maxThreadsPerSM = 2048;
  int64_t maxBlocksPerSM = 32;
  int64_t sharedPerSMBytes = 0; // what the SM has (a block's is in limits)
  int64_t memoryBytes = 0;
  /// Dense peaks in GFLOP/s (GOP/s for int8) by data type, tensor cores
  /// where the chip has them.
  double peakFp16 = 0, peakBf16 = 0, peakTf32 = 0, peakInt8 = 0;
  /// The GPU this machine has ("device"): kernels for it are measured
  /// there when tuning; a preset is compiled for, its candidates ranked by
  /// the model.
  bool runsHere = false;
  std::string deviceName;

  /// "sm_80".
  std::string arch() const { return "sm_" + std::to_string(smVersion); }
  /// "+ptx70".
  std::string ptxFeature() const { return "+ptx" + std::to_string(ptxVersion); }
};

/// "device" and the presets, in `ignc targets` order.
std::vector<std::string> cudaChipNames();

/// The chip `name`; nullopt with `why` set for an unknown name, or for
/// "device" on a machine without an NVIDIA GPU. "device" is the GPU the
/// driver finds (CudaDevice.h): its architecture and SM count, the other
/// numbers those of the preset it names (an "H200" is the h200) or of its
/// architecture's.
std::optional<CudaChip> cudaChip(const std::string &name, std::string &why);

/// The chip a `--target=` spelling stands for: sm80 (or sm_80) -> a100,
/// sm86 -> a10, sm89 -> l4, sm90 -> h100.
std::optional<std::string> chipForArch(llvm::StringRef spelling);

} // namespace ign::cuda

#endif // IGN_TARGETS_CUDA_CUDACHIPS_H
