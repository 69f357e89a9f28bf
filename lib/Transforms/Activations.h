//===- Activations.h - activations moved with a convolution -*- C++ -*-===//
//
// Graph rewrites that put a data movement op after a convolution (a pixel
// shuffle, a split of padded filters) move the convolution's activations
// before it, so that they stay in the convolution's kernel.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_LIB_TRANSFORMS_ACTIVATIONS_H
#define IGN_LIB_TRANSFORMS_ACTIVATIONS_H

#include "ign/Dialect/Ign/IR/IgnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace ign {

/// Whether `op` is a pointwise op of one result of `type` without regions.
inline bool isPointwiseOf(mlir::Operation *op, mlir::Type type) {
  return op->hasTrait<Pointwise>() && op->getNumResults() == 1 &&
         op->getNumRegions() == 0 && op->getResult(0).getType() == type;
}

/// The activations that alone read `v`, in order: one-operand pointwise ops
/// and SiLU pairs (s = sigmoid-like(x) read only by m = x * s), each of
/// `v`'s type, ending at the value that the rest of the graph reads.
inline llvm::SmallVector<mlir::Operation *> activationsOf(mlir::Value v) {
  llvm::SmallVector<mlir::Operation *> chain;
  mlir::Type type = v.getType();
  while (!v.use_empty()) {
    llvm::SmallVector<mlir::Operation *> users(v.getUsers());
    if (users.size() == 1 && isPointwiseOf(users[0], type) &&
        users[0]->getNumOperands() == 1) {
      chain.push_back(users[0]);
      v = users[0]->getResult(0);
      continue;
    }
    if (users.size() != 2)
      break;
    mlir::Operation *s = users[0], *m = users[1];
    if (s->getNumOperands() != 1)
      std::swap(s, m);
    if (!isPointwiseOf(s, type) || !isPointwiseOf(m, type) ||
        s->getNumOperands() != 1 || m->getNumOperands() != 2 ||
        !s->getResult(0).hasOneUse() || *s->getUsers().begin() != m)
      break;
    chain.append({s, m});
    v = m->getResult(0);
  }
  return chain;
}

/// `chain` (activationsOf some value x) applied to `y` instead of x, built
/// with `b`; each op takes `y`'s type.
inline mlir::Value applyActivations(mlir::OpBuilder &b, mlir::Value x,
                                    mlir::Value y,
                                    llvm::ArrayRef<mlir::Operation *> chain) {
  mlir::IRMapping map;
  map.map(x, y);
  for (mlir::Operation *op : chain) {
    mlir::Operation *copy = b.clone(*op, map);
    copy->getResult(0).setType(y.getType());
    map.map(op->getResult(0), copy->getResult(0));
  }
  return chain.empty() ? y : map.lookup(chain.back()->getResult(0));
}

} // namespace ign

#endif // IGN_LIB_TRANSFORMS_ACTIVATIONS_H
