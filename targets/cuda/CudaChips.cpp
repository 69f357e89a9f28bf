//===- CudaChips.cpp - the NVIDIA GPUs --target=cuda compiles for ---------===//
//
// Numbers are NVIDIA's public figures (data sheets and architecture
// whitepapers): fp32 peak with FMA at boost clock, dense tensor-core peaks
// (no sparsity), memory bandwidth; limits are the CUDA programming guide's
// per compute capability.
//
//===----------------------------------------------------------------------===//

#include "CudaChips.h"

#include "CudaDevice.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

namespace ign::cuda {

namespace {

struct Numbers {
  int64_t sms;
  double mhz, fp32, fp16, bf16, tf32, int8, gbs;
  int64_t memoryGiB;
};

CudaChip preset(std::string name, std::string summary, int sm, int ptx,
                const Numbers &n, int64_t sharedPerSMKiB,
                int64_t threadsPerSM) {
  // Resident blocks per SM by compute capability (the CUDA programming
  // guide's table): 16 on 8.6, 24 on 8.9, 32 on 8.0 and 9.0.
  int64_t blocksPerSM = sm == 86 ? 16 : sm == 89 ? 24 : 32;
  CudaChip c;
  c.name = std::move(name);
  c.summary = std::move(summary);
  c.smVersion = sm;
  c.ptxVersion = ptx;
  gpu::ChipLimits &l = c.gpu.limits;
  l.subgroupSize = 32;
  l.maxInvocations = 1024;
  l.maxWorkgroupSize = {1024, 1024, 64};
  l.maxWorkgroupCount = {2147483647, 65535, 65535};
  // Static shared memory of a block; more needs an opt-in per kernel.
  l.sharedMemoryBytes = 48 * 1024;
  // Kernel parameters are pointers (the bare-pointer convention) in 4 KiB.
  l.maxStorageBuffers = 4096 / 8;
  l.maxStorageBufferBytes = n.memoryGiB << 30;
  c.gpu.numbers = {n.sms, n.mhz, n.fp32, n.gbs};
  c.sharedPerSMBytes = sharedPerSMKiB * 1024;
  c.maxThreadsPerSM = threadsPerSM;
  c.maxBlocksPerSM = blocksPerSM;
  c.memoryBytes = n.memoryGiB << 30;
  c.peakFp16 = n.fp16;
  c.peakBf16 = n.bf16;
  c.peakTf32 = n.tf32;
  c.peakInt8 = n.int8;
  return c;
}

std::vector<CudaChip> presets() {
  return {
      preset("a100", "NVIDIA A100 SXM4 80GB (Ampere, sm_80)", 80, 70,
             {108, 1410, 19500, 312000, 312000, 156000, 624000, 2039, 80}, 164,
             2048),
      preset("a10", "NVIDIA A10 (Ampere, sm_86)", 86, 71,
             {72, 1695, 31200, 125000, 125000, 62500, 250000, 600, 24}, 100,
             1536),
      preset("rtx3090", "NVIDIA GeForce RTX 3090 (Ampere, sm_86)", 86, 71,
             {82, 1695, 35600, 71000, 71000, 35600, 284000, 936, 24}, 100,
             1536),
      preset("l4", "NVIDIA L4 (Ada, sm_89)", 89, 78,
             {58, 2040, 30300, 121000, 121000, 60000, 242000, 300, 24}, 100,
             1536),
      preset("rtx4090", "NVIDIA GeForce RTX 4090 (Ada, sm_89)", 89, 78,
             {128, 2520, 82600, 165200, 165200, 82600, 660600, 1008, 24}, 100,
             1536),
      preset("h100", "NVIDIA H100 SXM5 80GB (Hopper, sm_90)", 90, 78,
             {132, 1980, 67000, 989000, 989000, 494000, 1979000, 3350, 80}, 228,
             2048),
      preset("h200", "NVIDIA H200 SXM 141GB (Hopper, sm_90)", 90, 78,
             {132, 1980, 67000, 989000, 989000, 494000, 1979000, 4800, 141},
             228, 2048),
  };
}

/// The preset the probed GPU is, by name ("NVIDIA H200" -> h200), else
/// its architecture's.
CudaChip presetOf(const CudaDeviceInfo &info) {
  std::vector<CudaChip> all = presets();
  std::string name = llvm::StringRef(info.name).lower();
  name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
  for (const CudaChip &c : all)
    if (name.find(c.name) != std::string::npos)
      return c;
  std::string arch = "sm" + std::to_string(info.computeCapability);
  std::optional<std::string> named = chipForArch(arch);
  for (const CudaChip &c : all)
    if (named && c.name == *named)
      return c;
  return all.front();
}

std::optional<CudaChip> probedChip(std::string &why) {
  CudaDeviceInfo info;
  if (!probeCudaDevice(info, why)) {
    why = "--chip=device needs this machine's NVIDIA GPU: " + why +
          "; compile for a preset instead (--chip " +
          llvm::join(llvm::drop_begin(cudaChipNames()), ", ") + ")";
    return std::nullopt;
  }
  CudaChip c = presetOf(info);
  c.name = "device";
  c.summary = "this machine's GPU: " + info.name + " (sm_" +
              std::to_string(info.computeCapability) + ")";
  c.smVersion = info.computeCapability;
  c.gpu.numbers.computeUnits = info.multiprocessors;
  c.runsHere = true;
  c.deviceName = info.name;
  return c;
}

} // namespace

std::vector<std::string> cudaChipNames() {
  std::vector<std::string> names = {"device"};
  for (const CudaChip &c : presets())
    names.push_back(c.name);
  return names;
}

std::optional<CudaChip> cudaChip(const std::string &name, std::string &why) {
  if (name == "device")
    return probedChip(why);
  for (CudaChip &c : presets())
    if (c.name == name)
      return c;
  why = "unknown cuda chip '" + name +
        "' (known: " + llvm::join(cudaChipNames(), ", ") + ")";
  return std::nullopt;
}

std::optional<std::string> chipForArch(llvm::StringRef spelling) {
  std::string s = spelling.lower();
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s == "sm80")
    return "a100";
  if (s == "sm86")
    return "a10";
  if (s == "sm89")
    return "l4";
  if (s == "sm90")
    return "h100";
  return std::nullopt;
}

} // namespace ign::cuda
