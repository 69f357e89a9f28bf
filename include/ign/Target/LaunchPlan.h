//===- LaunchPlan.h - @main's call sequence as bundle launches --*- C++ -*-===//
//
// After kernel outlining, @main is a sequence of kernel calls over tensors.
// The launch plan turns it into what the bundle records for every target:
// the model's inputs, outputs and weights, the ordered launches with the
// buffer each argument lives in, and the arena that holds the intermediates
// (packed by liveness).
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGET_LAUNCHPLAN_H
#define IGN_TARGET_LAUNCHPLAN_H

#include "ign/Bundle/BundleWriter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace ign {

struct LaunchPlan {
  std::vector<bundle::TensorSpec> inputs, outputs;
  /// Weights and their bytes (owned by the module's resource blobs).
  std::vector<std::pair<bundle::TensorSpec, llvm::ArrayRef<char>>> weights;
  /// The kernel functions, in the order of their first launch; a launch's
  /// `kernel` indexes this list.
  std::vector<std::string> kernels;
  std::vector<bundle::LaunchSpec> launches;
  uint64_t arenaBytes = 0;
};

/// Builds the plan of an outlined @main (only kernel calls, weights,
/// reshapes and the return). Emits a diagnostic and fails on anything else.
/// With `piecesInPlace`, a kernel that only concatenates or splits whole
/// intermediates of @main along an axis whose pieces are contiguous runs
/// no launch: a concat's inputs are written in place in its result's
/// buffer, a split's results are views of its input's (at byte offsets
/// that need not be aligned beyond the element: for targets whose kernels
/// take any such address).
mlir::FailureOr<LaunchPlan> buildLaunchPlan(mlir::func::FuncOp main,
                                            bool piecesInPlace = false);

/// Short dtype name of an element type ("f32", "i64", "bool", "u8", ...).
std::string dtypeName(mlir::Type element);

} // namespace ign

#endif // IGN_TARGET_LAUNCHPLAN_H
