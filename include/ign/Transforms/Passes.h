//===- Passes.h - graph-level passes on the ign dialect ---------*- C++ -*-===//
//
// Passes that reshape the ign graph before lowering: kernel outlining now;
// canonicalization and fusion (issue 4) join here.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TRANSFORMS_PASSES_H
#define IGN_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace ign {

/// The attribute marking an outlined kernel function; its value lists the
/// names of the ops the kernel computes.
constexpr llvm::StringLiteral kKernelAttr = "ign.kernel";

/// Outlines every compute op of `main` into a kernel function (see the
/// pass description). Fails, with a diagnostic, on a @main it cannot split.
mlir::LogicalResult outlineKernels(mlir::ModuleOp module,
                                   mlir::func::FuncOp main);

/// Rewrites every padded ign.conv in `func` as ign.pad + unpadded ign.conv.
void splitConvPadding(mlir::func::FuncOp func);

/// Rewrites unpadded, ungrouped ign.conv in `func` as an ign.matmul of the
/// weight with the input (1x1 unit stride) or its im2col columns.
void convToMatmul(mlir::func::FuncOp func);

#define GEN_PASS_DECL
#include "ign/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ign/Transforms/Passes.h.inc"

} // namespace ign

#endif // IGN_TRANSFORMS_PASSES_H
