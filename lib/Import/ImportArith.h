//===- ImportArith.h - tensor arithmetic for importers ----------*- C++ -*-===//
//
// Operators ONNX defines by an algorithm rather than one op (GridSample,
// RoiAlign, Det) import as ign arithmetic built with Arith.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_LIB_IMPORT_IMPORTARITH_H
#define IGN_LIB_IMPORT_IMPORTARITH_H

#include "ImporterImpl.h"

namespace ign::import {

using namespace mlir;

/// Builds elementwise arithmetic on f32 tensors, remembering a failure
/// (already reported at the node) instead of returning it from every call.
class Arith {
public:
  explicit Arith(NodeImporter &n) : n(n), f32(n.builder().getF32Type()) {}
  bool failed() const { return bad; }
  /// Records a failure the caller reported while building outside Arith.
  void fail() { bad = true; }

  Value c(double v) { return n.scalarConstant(f32, v); }
  /// A scalar of `type` (integer or float).
  Value scalarOf(Type type, double v) { return n.scalarConstant(type, v); }
  Value i64(int64_t v) {
    return n.scalarConstant(IntegerType::get(f32.getContext(), 64), double(v));
  }
  template <typename OpT> Value op(ValueRange operands) {
    if (bad)
      return operands[0];
    auto r = n.createValue<OpT>(operands);
    if (mlir::failed(r)) {
      bad = true;
      return operands[0];
    }
    return *r;
  }
  Value add(Value a, Value b) { return op<AddOp>({a, b}); }
  Value sub(Value a, Value b) { return op<SubOp>({a, b}); }
  Value mul(Value a, Value b) { return op<MulOp>({a, b}); }
  Value div(Value a, Value b) { return op<DivOp>({a, b}); }
  Value floor(Value a) { return op<FloorOp>({a}); }
  Value less(Value a, Value b) { return op<LessOp>({a, b}); }
  Value greater(Value a, Value b) { return op<GreaterOp>({a, b}); }
  Value either(Value a, Value b) { return op<OrOp>({a, b}); }
  Value both(Value a, Value b) { return op<AndOp>({a, b}); }
  Value select(Value cond, Value a, Value b) {
    return op<SelectOp>({cond, a, b});
  }
  Value clamp(Value v, double lo, double hi) {
    return select(less(v, c(lo)), c(lo), select(greater(v, c(hi)), c(hi), v));
  }
  Value round(Value a) { return op<RoundOp>({a}); }
  Value abs(Value a) { return op<AbsOp>({a}); }
  Value equal(Value a, Value b) { return op<EqualOp>({a, b}); }
  /// `a` with `sizes` elements from `starts` (unit steps).
  Value slice(Value a, ArrayRef<int64_t> starts, ArrayRef<int64_t> sizes) {
    return attrOp<SliceOp>(
        a,
        {n.named("starts", n.i64Array(starts)),
         n.named("sizes", n.i64Array(sizes)),
         n.named("steps", n.i64Array(SmallVector<int64_t>(sizes.size(), 1)))});
  }
  Value sum(Value a, int64_t axis) {
    return attrOp<ReduceSumOp>(a, {n.named("axes", n.i64Array({axis})),
                                   n.namedBool("keepdims", true)});
  }
  Value argmax(Value a, int64_t axis) {
    return attrOp<ArgMaxOp>(
        a, {n.namedI64("axis", axis), n.namedBool("keepdims", true)});
  }
  Value cast(Value a, Type to) {
    if (llvm::cast<ShapedType>(a.getType()).getElementType() == to)
      return a;
    return attrOp<CastOp>(a, {n.named("to", TypeAttr::get(to))});
  }
  template <typename OpT>
  Value attrOp(Value a, ArrayRef<NamedAttribute> attrs) {
    if (bad)
      return a;
    auto r = n.createValue<OpT>(a, attrs);
    bad |= mlir::failed(r);
    return bad ? a : *r;
  }
  Value reshape(Value a, ArrayRef<int64_t> shape) {
    if (bad)
      return a;
    auto r = n.reshape(a, shape);
    bad |= mlir::failed(r);
    return bad ? a : *r;
  }
  NodeImporter &node() { return n; }

private:
  NodeImporter &n;
  Type f32;
  bool bad = false;
};

} // namespace ign::import

#endif // IGN_LIB_IMPORT_IMPORTARITH_H
