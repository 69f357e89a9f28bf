//===- KernelBufferization.h - kernels from ign to buffers ------*- C++ -*-===//
//
// The target-neutral steps every target's kernel compile starts with: the
// reference lowering of a kernel's ign ops to linalg on tensors, and
// bufferization with the kernel's results as out-parameters written in
// place. The host and the GPU targets then apply their schedules.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_CONVERSION_KERNELBUFFERIZATION_H
#define IGN_CONVERSION_KERNELBUFFERIZATION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

namespace ign {

/// Registers the bufferization and tiling interfaces of the dialects a
/// kernel holds after the reference lowering, and loads the dialects the
/// lowering creates.
void registerKernelLoweringInterfaces(mlir::MLIRContext *ctx);

/// ign -> linalg on tensors (the reference lowering), then canonicalization;
/// `recurrentParts` > 0: recurrent layers in their stepped form (the host's
/// schedules; see kTimeStepsAttr in ign/Conversion/Passes.h).
void buildKernelLoweringPipeline(mlir::PassManager &pm,
                                 int64_t recurrentParts = 0);

/// A kernel returning one of its arguments, or one value twice, gets a
/// copy: each result is then a buffer of its own that can be written in
/// place of the output.
void copyPassedThroughResults(mlir::func::FuncOp kernel);

/// One-shot bufferization across function boundaries (identity layouts);
/// kernel results become out-parameters, copies become linalg.copy.
void buildKernelBufferizationPipeline(mlir::PassManager &pm);

} // namespace ign

#endif // IGN_CONVERSION_KERNELBUFFERIZATION_H
