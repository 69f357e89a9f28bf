//===- ImportLinearAlgebra.cpp - Det
//---------------------------------------===//
//
// Det ([..., M, M] -> [...]) imports as Gaussian elimination with partial
// pivoting, unrolled over the M columns in ign arithmetic on the whole batch
// at once: per column the largest remaining |pivot| is found (ArgMax), its
// row swapped with the column's (a one-hot blend, so every batch entry
// swaps its own rows), the pivot multiplied into the determinant (negated
// for a swap) and the rows below eliminated. It computes in f32 (other
// float types are cast to it and back). M is at most 32: the unrolled steps
// grow with M.
//
//===----------------------------------------------------------------------===//

#include "ImportArith.h"

using namespace mlir;

namespace ign::import {
namespace {

constexpr int64_t kMaxDetSize = 32;

/// A [1, M, 1] f32 constant: `value(i)` per row i.
Value rowConstant(NodeImporter &n, int64_t m,
                  llvm::function_ref<double(int64_t)> value, Type element) {
  HostTensor t;
  t.shape = {1, m, 1};
  t.elementType = element;
  t.allocate();
  for (int64_t i = 0; i < m; ++i)
    t.set(i, value(i), int64_t(value(i)));
  return n.constant(t);
}

/// One elimination step of column k of `a` ([B, M, M]): swaps the pivot
/// row in, multiplies the pivot (and the swap's sign) into `det` ([B, 1, 1])
/// and eliminates below it.
void eliminateColumn(Arith &ar, NodeImporter &n, Value &a, Value &det,
                     int64_t b, int64_t m, int64_t k) {
  Type f32 = ar.node().builder().getF32Type();
  Type i64 = ar.node().builder().getI64Type();
  // Rows before k are done: never a pivot.
  Value remaining = rowConstant(
      n, m, [&](int64_t i) { return i >= k; }, ar.node().builder().getI1Type());
  Value column = ar.slice(a, {0, 0, k}, {b, m, 1});
  Value candidates = ar.select(remaining, ar.abs(column), ar.c(-1));
  Value pivotRow = ar.argmax(candidates, 1); // [B, 1, 1]
  Value rows = rowConstant(
      n, m, [](int64_t i) { return double(i); }, i64);
  Value picked = ar.cast(ar.equal(rows, pivotRow), f32); // [B, M, 1]
  Value rowP = ar.sum(ar.mul(a, picked), 1);             // [B, 1, M]
  Value rowK = ar.slice(a, {0, k, 0}, {b, 1, m});
  Value atK = rowConstant(
      n, m, [&](int64_t i) { return i == k; }, f32);
  a = ar.add(a, ar.add(ar.mul(atK, ar.sub(rowP, rowK)),
                       ar.mul(picked, ar.sub(rowK, rowP))));
  // picked[k] is 1 without a swap: the sign 2 picked[k] - 1.
  Value stayed = ar.slice(picked, {0, k, 0}, {b, 1, 1});
  Value sign = ar.sub(ar.mul(ar.c(2), stayed), ar.c(1));
  Value pivot = ar.slice(a, {0, k, k}, {b, 1, 1});
  det = ar.mul(det, ar.mul(pivot, sign));
  if (k + 1 == m)
    return;
  // A zero pivot makes the determinant 0 already; divide by 1 instead.
  Value safe = ar.select(ar.equal(pivot, ar.c(0)), ar.c(1), pivot);
  Value below = rowConstant(
      n, m, [&](int64_t i) { return i > k; }, f32);
  Value factors =
      ar.mul(ar.div(ar.slice(a, {0, 0, k}, {b, m, 1}), safe), below);
  a = ar.sub(a, ar.mul(factors, ar.slice(a, {0, k, 0}, {b, 1, m})));
}

LogicalResult importDet(NodeImporter &n) {
  auto x = n.input(0);
  auto type = n.inputType(0);
  if (failed(x) || failed(type))
    return failure();
  int64_t rank = type->getRank();
  if (rank < 2 || type->getDimSize(rank - 1) != type->getDimSize(rank - 2))
    return n.error() << "Det needs square matrices [..., M, M], got " << *type;
  Type element = type->getElementType();
  if (!isa<FloatType>(element))
    return n.error() << "Det of " << element << " is not supported (floats)";
  int64_t m = type->getDimSize(rank - 1);
  if (m < 1 || m > kMaxDetSize)
    return n.error() << "Det of " << m << " x " << m
                     << " matrices is not supported (1 to " << kMaxDetSize
                     << ": the elimination is unrolled per column)";
  auto batchShape = type->getShape().drop_back(2);
  int64_t b = 1;
  for (int64_t d : batchShape)
    b *= d;
  Arith ar(n);
  Type f32 = n.builder().getF32Type();
  Value a = ar.reshape(element.isF32() ? *x : ar.cast(*x, f32), {b, m, m});
  HostTensor ones;
  ones.shape = {b, 1, 1};
  ones.elementType = f32;
  ones.allocate();
  for (int64_t i = 0; i < b; ++i)
    ones.set(i, 1.0, 1);
  Value det = n.constant(ones);
  for (int64_t k = 0; k < m; ++k)
    eliminateColumn(ar, n, a, det, b, m, k);
  Value y = ar.reshape(det, batchShape);
  if (!element.isF32())
    y = ar.cast(y, element);
  if (ar.failed())
    return failure();
  return n.setOutput(0, y);
}

} // namespace

void registerLinearAlgebraHandlers(HandlerMap &m) { m["Det"] = importDet; }

} // namespace ign::import
