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

/// Patterns lowering every ign op to linalg/tensor/arith/math on tensors.
void populateIgnToLinalgPatterns(mlir::RewritePatternSet &patterns);

#define GEN_PASS_DECL
#include "ign/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ign/Conversion/Passes.h.inc"

} // namespace ign

#endif // IGN_CONVERSION_PASSES_H
