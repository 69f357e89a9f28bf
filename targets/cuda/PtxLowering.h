//===- PtxLowering.h - mapped GPU kernels -> PTX ----------------*- C++ -*-===//
//
// The CUDA backend's own step after the shared GPU mapping: the outlined
// gpu.modules of a kernel are lowered to the NVVM dialect (memrefs passed
// as bare pointers), translated to LLVM IR, linked into one module and
// compiled by LLVM's NVPTX backend to PTX for the chip's sm_XX. Math
// functions become MLIR's polynomial approximations and expansions, or
// instructions PTX has (sqrt, fma, floor, ...): the PTX calls no libdevice
// function, so it loads without the CUDA toolkit.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_CUDA_PTXLOWERING_H
#define IGN_TARGETS_CUDA_PTXLOWERING_H

#include "CudaChips.h"
#include "GpuLaunches.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace ign::cuda {

struct PtxKernel {
  gpu::KernelLaunches launches; // one per entry of the PTX, in order
  std::string ptx;              // text, every launch's .entry
};

/// The dialects and LLVM IR translations the lowering uses.
void prepareNvptxContext(mlir::MLIRContext *ctx);

/// Lowers the outlined launches of `kernel` (in `module`, as
/// gpu::mapKernelCopy leaves them) to PTX for `chip`. `kernel` and the
/// gpu.modules are consumed. Failure with `why` set: a math function with
/// no PTX lowering names itself.
mlir::FailureOr<PtxKernel> lowerToPtx(mlir::ModuleOp module,
                                      mlir::func::FuncOp kernel,
                                      const CudaChip &chip, std::string &why);

} // namespace ign::cuda

#endif // IGN_TARGETS_CUDA_PTXLOWERING_H
