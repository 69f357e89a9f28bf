//===- KernelTasks.h - kernels as tuning tasks ------------------*- C++ -*-===//
//
// After outlining, each kernel function is a task: identical kernels share
// one function (and one structural hash), launched once per occurrence.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TRANSFORMS_KERNELTASKS_H
#define IGN_TRANSFORMS_KERNELTASKS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ign {

/// What a kernel computes and moves, for --emit=kernels and the bundle.
struct KernelSummary {
  std::string name;                  // the kernel function
  std::string task;                  // structural hash, 16 hex digits
  unsigned launches = 0;             // occurrences in @main
  std::vector<std::string> ops;      // op names, in order
  std::vector<std::string> opShapes; // per op: "ign.matmul 1x128x768xf32,
                                     // 768x768xf32 -> 1x128x768xf32"
  uint64_t flops = 0;                // arithmetic operations (see opFlops)
  uint64_t bytesRead = 0;            // its arguments (inputs, weights)
  uint64_t bytesWritten = 0;         // its results
};

/// The kernel printed in generic form with no names: two kernels with the
/// same key compute the same thing (same ops, attributes, shapes, dtypes).
std::string structuralKey(mlir::func::FuncOp kernel);

/// Arithmetic operations of one ign op: 2 per multiply-accumulate of a
/// contraction (a recurrent op's steps by W and R included), 1 per output element of a pointwise op, 1 per window
/// element of pooling, 1 per input element of a reduction, 5 per element
/// of a softmax and 8 of a normalization; 0 for data movement.
uint64_t opFlops(mlir::Operation *op);

/// One summary per kernel function of `module` (marked ign.kernel), in the
/// order @main first launches them.
std::vector<KernelSummary> summarizeKernels(mlir::ModuleOp module,
                                            mlir::func::FuncOp main);

/// An argument of a task module's @main that the model binds to a constant
/// f32 weight at every launch of the kernel.
inline constexpr const char kTaskWeightAttr[] = "ign.task_weight";

/// Which arguments of `kernel` every call in `main` passes a constant f32
/// weight.
std::vector<bool> weightArguments(mlir::func::FuncOp main,
                                  mlir::func::FuncOp kernel);

/// Makes every `kTaskWeightAttr` argument of the task module's @main a
/// weight constant of seeded random values (the same in every process), so
/// that a task's candidates and its reference are built, as in the model,
/// with the weights in the bundle rather than as inputs.
void bindTaskWeights(mlir::ModuleOp task);

} // namespace ign

#endif // IGN_TRANSFORMS_KERNELTASKS_H
