//===- Passes.h - ign conversion passes --------------------------*- C++
//-*-===//
//
// Lowering of the ign dialect to target-neutral MLIR (the "kernel IR").
//
//===----------------------------------------------------------------------===//

#ifndef IGN_CONVERSION_PASSES_H
#define IGN_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace ign {

/// Patterns lowering every ign op to linalg/tensor/arith/math on tensors;
/// `recurrentParts` > 0 lowers recurrent layers in their stepped form
/// (see kTimeStepsAttr), split into up to that many parts per direction.
void populateIgnToLinalgPatterns(mlir::RewritePatternSet &patterns,
                                 int64_t recurrentParts = 0);

/// On a function holding a recurrent layer in its stepped form (an
/// scf.forall over (time step, part)): the number of steps. Iterations of
/// one step are independent; a step reads what the previous steps wrote
/// into the forall's shared outputs, so a step may start only when the one
/// before it is done (its iterations in order, one after the other, is
/// right).
constexpr llvm::StringLiteral kTimeStepsAttr = "ign.time_steps";

#define GEN_PASS_DECL
#include "ign/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ign/Conversion/Passes.h.inc"

} // namespace ign

#endif // IGN_CONVERSION_PASSES_H
