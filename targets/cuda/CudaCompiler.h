//===- CudaCompiler.h - one kernel -> PTX and cubin -------------*- C++ -*-===//
//
// The CUDA target's compile of one kernel: the GPU layer's shared half
// (GpuCompile.h: bufferization, schedule, mapping), PTX by LLVM's NVPTX
// backend (PtxLowering.h), and, where the toolkit is here, ptxas's cubin
// and resources (Ptxas.h). A kernel it cannot map or lower is declined
// (the host runs it) with the reason.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_CUDA_CUDACOMPILER_H
#define IGN_TARGETS_CUDA_CUDACOMPILER_H

#include "CudaChips.h"

#include "GpuTarget.h"

#include "ign/Search/ScheduleSpace.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>

namespace ign::cuda {

/// The descriptor, the module image its blob holds, the schedule and a
/// line for -v; and the analytical model's time of all its dispatches.
struct CompiledKernel : gpu::DeviceKernel {
  std::optional<double> predictedMs;
  int64_t spillBytes = 0; // ptxas's spill stores over its entries
};

/// Whether every tensor of `kernel` has an element type the CUDA kernels
/// store as the runtime does: floats of 16, 32 or 64 bits and integers of
/// 1 (as bytes), 8, 16, 32 or 64 bits.
bool hasCudaTypes(mlir::func::FuncOp kernel, std::string &why);

/// The knobs an untuned compile of `kernel` uses on `chip` at `precision`
/// (the analytical model's pick; the layer's launch knobs only where ops
/// are left for them after the tensor cores').
search::Schedule defaultCudaKnobs(mlir::func::FuncOp kernel,
                                  const CudaChip &chip,
                                  const std::string &precision);

/// What --precision a CUDA compile takes: fp32 (every op on the CUDA
/// cores), or fp16 or tf32 (contractions on the tensor cores, their inputs
/// rounded to f16 or tf32 and their products summed in f32;
/// TensorCoreGemm.h).
/// "" when `precision` is one, else why not.
std::string checkCudaPrecision(const std::string &precision);

/// `chip` as the GPU layer sees it at `precision`: at fp16, bf16 and tf32
/// with the tensor-core launches (TensorCoreGemm.h) as its own; the
/// layer's staged GEMM launch (targets/gpu/StagedGemm.h) on by default.
gpu::GpuChip gpuChipAt(const CudaChip &chip, const std::string &precision);

/// Compiles a copy of `kernel` (ign dialect; left unchanged) for `chip`
/// at `precision` with `tuned`'s knobs, or the model's pick without. With
/// `ptxText`, appends its PTX (--emit=ptx). ptxas assembles it when the
/// toolkit is here and `assemble` is set.
mlir::FailureOr<CompiledKernel>
compileCudaKernel(mlir::func::FuncOp kernel, const search::Schedule *tuned,
                  const CudaChip &chip, const std::string &precision,
                  std::string &why, std::string *ptxText = nullptr,
                  bool assemble = true);

} // namespace ign::cuda

#endif // IGN_TARGETS_CUDA_CUDACOMPILER_H
