//===- Ptxas.h - the CUDA toolkit's assembler, when it is here --*- C++ -*-===//
//
// ignc emits PTX itself (PtxLowering.h). Where the CUDA toolkit is on the
// machine, `ptxas` assembles it for the chip (a cubin) and reports each
// kernel's resources (registers, stack, spills, static shared memory),
// and `fatbinary` packs the cubin with the PTX, so that a driver of a newer
// GPU can compile the PTX itself. Without the toolkit bundles hold PTX
// only, which the CUDA driver compiles when it loads them.
//
// The toolkit is found through IGN_CUDA_PATH (a toolkit's root, or "none"
// to act as if there were none), then `ptxas` on PATH, then CUDA_PATH,
// CUDA_HOME and /usr/local/cuda.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_CUDA_PTXAS_H
#define IGN_TARGETS_CUDA_PTXAS_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace ign::cuda {

struct CudaToolkit {
  std::string ptxas, fatbinary; // executables ("" for a missing fatbinary)
};

/// The toolkit on this machine (looked up once per process).
const std::optional<CudaToolkit> &cudaToolkit();

/// What ptxas -v reports of one kernel (an .entry).
struct KernelResources {
  int64_t registers = 0;
  int64_t stackBytes = 0;
  int64_t spillStoreBytes = 0, spillLoadBytes = 0;
  int64_t sharedBytes = 0; // static shared memory
};

/// Parses ptxas -v output: resources by entry name.
std::map<std::string, KernelResources> parsePtxasInfo(llvm::StringRef log);

struct Assembled {
  std::string image; // a fatbin (cubin + PTX), or the cubin alone
  bool fatbin = false;
  std::map<std::string, KernelResources> resources;
};

/// Assembles `ptx` for `arch` ("sm_80") with `toolkit`, and packs it with
/// the PTX into a fatbin when fatbinary is there. Failure with `why`
/// holding ptxas's message.
std::optional<Assembled> assemblePtx(const CudaToolkit &toolkit,
                                     llvm::StringRef ptx, llvm::StringRef arch,
                                     std::string &why);

} // namespace ign::cuda

#endif // IGN_TARGETS_CUDA_PTXAS_H
