//===- KernelGrouping.h - what goes into kernels (internal) -----*- C++ -*-===//

#ifndef IGN_LIB_TRANSFORMS_KERNELGROUPING_H
#define IGN_LIB_TRANSFORMS_KERNELGROUPING_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Value.h"

namespace ign {

/// A constant held in a dense_resource blob: a weight, passed by buffer.
bool isWeight(mlir::Value v);
/// Any other constant: cloned into the kernels that use it.
bool isInlineConstant(mlir::Value v);
/// Whether `op` of @main computes something and so belongs in a kernel. A
/// reshape of a value that lives in a buffer is a view of that buffer; a
/// returned constant, or a reshape of an inline constant, has no buffer and
/// needs a kernel to materialize it.
bool needsKernel(mlir::Operation *op);
/// The op a kernel is named after: its first contraction, softmax,
/// reduction or other non-pointwise op (a padding it took in aside), else
/// its first op.
mlir::Operation *kernelAnchor(mlir::Block &body);

} // namespace ign

#endif // IGN_LIB_TRANSFORMS_KERNELGROUPING_H
