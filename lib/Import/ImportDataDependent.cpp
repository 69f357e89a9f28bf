//===- ImportDataDependent.cpp - operators whose output size is data ------===//
//
// NonZero, Compress and Unique have outputs whose size depends on the
// values of their inputs. With those inputs known at import time they fold
// (NonZero to a constant, Compress to a Gather of the kept indices); computed
// at run time, the output gets its upper bound as its static type, the kept
// elements packed to its front (the rest zero: a valid index for whatever
// gathers with it), and an i64 [rank] tensor holding its actual shape
// (GraphImporter::runtimeShapes). The bundle reports that shape with the
// output (docs/bundle-format.md). Packing is a scatter of each kept
// element's position, counted by a cumulative sum, into its slot.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "ImportArith.h"

#include "llvm/ADT/StringSet.h"

namespace ign::import {
namespace {

/// Unique compares every pair of items: at most this many element compares.
constexpr int64_t kUniqueCompareLimit = int64_t(1) << 24;

Type i64Type(NodeImporter &n) { return n.builder().getI64Type(); }

/// A constant of `shape` with every element `v`.
Value splat(NodeImporter &n, Type element, ArrayRef<int64_t> shape, int64_t v) {
  auto type = RankedTensorType::get(shape, element);
  Attribute value = isa<FloatType>(element)
                        ? Attribute(FloatAttr::get(element, double(v)))
                        : Attribute(IntegerAttr::get(element, v));
  return n.builder().create<ConstantOp>(n.loc(), type,
                                        DenseElementsAttr::get(type, value));
}

/// An i64 constant of `values` (shape [size]).
Value constI64(NodeImporter &n, ArrayRef<int64_t> values) {
  HostTensor t;
  t.shape = {int64_t(values.size())};
  t.elementType = i64Type(n);
  t.ints.assign(values.begin(), values.end());
  return n.constant(t);
}

/// i64 [len]: 0, 1, ..., len - 1.
Value iota(Arith &a, int64_t len) {
  NodeImporter &n = a.node();
  return a.attrOp<CumSumOp>(
      splat(n, i64Type(n), {len}, 1),
      {n.namedI64("axis", 0), n.namedBool("exclusive", 1)});
}

/// i64 [len] with values[i] at slot[i] where slot[i] < len (a slot of len
/// drops it), 0 where no value lands.
Value scatterToSlots(Arith &a, Value slot, Value values, int64_t len) {
  NodeImporter &n = a.node();
  if (a.failed())
    return slot;
  auto scattered = n.createValue<ScatterElementsOp>(
      {splat(n, i64Type(n), {len + 1}, 0), slot, values},
      {n.namedI64("axis", 0)});
  if (failed(scattered)) {
    a.fail();
    return slot;
  }
  return a.slice(*scattered, {0}, {len});
}

/// The positions of the true elements of the bool [len] `mask`, packed to
/// the front of an i64 [len] (the rest 0), and how many (i64 [1]).
std::pair<Value, Value> packTrue(Arith &a, Value mask, int64_t len) {
  NodeImporter &n = a.node();
  Value m = a.cast(mask, i64Type(n));
  Value position =
      a.sub(a.attrOp<CumSumOp>(m, {n.namedI64("axis", 0)}), a.i64(1));
  Value slot = a.select(mask, position, a.i64(len));
  return {scatterToSlots(a, slot, iota(a, len), len), a.sum(m, 0)};
}

/// i64 [rank]: `dims` with dim `axis` replaced by the i64 [1] `length`.
Value shapeWith(Arith &a, ArrayRef<int64_t> dims, int64_t axis, Value length) {
  NodeImporter &n = a.node();
  SmallVector<Value> parts;
  if (axis > 0)
    parts.push_back(constI64(n, dims.take_front(axis)));
  parts.push_back(length);
  if (axis + 1 < int64_t(dims.size()))
    parts.push_back(constI64(n, dims.drop_front(axis + 1)));
  if (parts.size() == 1 || a.failed())
    return parts.front();
  auto joined = n.createValue<ConcatOp>(parts, {n.namedI64("axis", 0)});
  if (failed(joined))
    a.fail();
  return failed(joined) ? length : *joined;
}

/// Sets output `out` to the bounded `value` with run-time shape `shape`.
LogicalResult setBounded(Arith &a, size_t out, Value value, Value shape) {
  if (a.failed())
    return failure();
  return a.node().setBoundedOutput(out, value, shape);
}

/// Compress of a known condition: a Gather of the kept indices.
LogicalResult compressKnown(NodeImporter &n, Value data, int64_t axis,
                            const HostTensor &condition) {
  SmallVector<int64_t> kept;
  for (int64_t i = 0; i < condition.numElements(); ++i)
    if (condition.getDouble(i) != 0)
      kept.push_back(i);
  return done(n, n.createValue<GatherOp>({data, constI64(n, kept)},
                                         {n.namedI64("axis", axis)}));
}

/// Compress(input, condition, axis?): the slices along `axis` (of the
/// flattened input without one) whose condition is true.
LogicalResult importCompress(NodeImporter &n) {
  auto type = n.inputType(0), condType = n.inputType(1);
  auto x = n.input(0);
  if (failed(type) || failed(condType) || failed(x))
    return failure();
  Value data = *x;
  int64_t axis = 0;
  if (n.hasAttr("axis")) {
    auto a = n.attrInt("axis", 0);
    if (failed(a))
      return failure();
    auto norm = normalizeAxis(n, *a, type->getRank());
    if (failed(norm))
      return failure();
    axis = *norm;
  } else {
    auto flat = n.reshape(*x, {type->getNumElements()});
    if (failed(flat))
      return failure();
    data = *flat;
  }
  auto dims = cast<RankedTensorType>(data.getType()).getShape();
  int64_t len = condType->getNumElements();
  if (condType->getRank() != 1 || len > dims[axis])
    return n.error() << "Compress condition " << *condType
                     << " must be 1-D with at most " << dims[axis] << " values";
  if (const HostTensor *known = n.constInput(1))
    return compressKnown(n, data, axis, *known);
  auto cond = n.input(1);
  if (failed(cond))
    return failure();
  Arith a(n);
  auto [kept, count] = packTrue(a, a.cast(*cond, n.builder().getI1Type()), len);
  if (a.failed())
    return failure();
  auto gathered =
      n.createValue<GatherOp>({data, kept}, {n.namedI64("axis", axis)});
  if (failed(gathered))
    return failure();
  return setBounded(a, 0, *gathered, shapeWith(a, dims, axis, count));
}

/// NonZero of a known tensor: a constant.
LogicalResult nonZeroKnown(NodeImporter &n, const HostTensor &t) {
  int64_t rank = std::max<int64_t>(int64_t(t.shape.size()), 1);
  std::vector<int64_t> flat;
  for (int64_t i = 0; i < t.numElements(); ++i)
    if (t.getDouble(i) != 0)
      flat.push_back(i);
  int64_t count = int64_t(flat.size());
  HostTensor out;
  out.shape = {rank, count};
  out.elementType = i64Type(n);
  out.ints.resize(size_t(rank * count));
  auto strides = stridesOf(t.shape);
  for (int64_t k = 0; k < count; ++k)
    for (int64_t d = 0; d < rank; ++d)
      out.ints[d * count + k] =
          t.shape.empty() ? 0 : (flat[k] / strides[d]) % t.shape[d];
  return n.setOutput(0, std::move(out));
}

/// NonZero(x): the [rank, count] indices of x's non-zero elements in
/// row-major order. At run time: the flat positions packed, then split into
/// coordinates (position / stride % dim).
LogicalResult importNonZero(NodeImporter &n) {
  if (const HostTensor *known = n.constInput(0))
    return nonZeroKnown(n, *known);
  auto type = n.inputType(0);
  auto x = n.input(0);
  if (failed(type) || failed(x))
    return failure();
  SmallVector<int64_t> dims(type->getShape());
  if (dims.empty())
    dims.push_back(1);
  int64_t len = type->getNumElements(), rank = int64_t(dims.size());
  Arith a(n);
  Value flat = a.reshape(*x, {len});
  auto [positions, count] =
      packTrue(a, a.cast(flat, n.builder().getI1Type()), len);
  SmallVector<Value> rows;
  auto strides = stridesOf(dims);
  for (int64_t d = 0; d < rank; ++d) {
    Value coord = a.op<DivOp>({positions, a.i64(strides[d])});
    coord = a.op<ModOp>({coord, a.i64(dims[d])});
    rows.push_back(a.reshape(coord, {1, len}));
  }
  if (a.failed())
    return failure();
  Value out = rows.front();
  if (rank > 1) {
    auto joined = n.createValue<ConcatOp>(rows, {n.namedI64("axis", 0)});
    if (failed(joined))
      return failure();
    out = *joined;
  }
  return setBounded(a, 0, out, shapeWith(a, {rank, len}, 1, count));
}

/// Unique's items as [items, width]: the slices along `axis` (moved first
/// and flattened), or every element ([numel, 1]) without an axis.
struct UniqueItems {
  Value rows;
  int64_t items, width;
};

FailureOr<UniqueItems> uniqueItems(Arith &a, Value x, RankedTensorType type,
                                   std::optional<int64_t> axis) {
  if (!axis)
    return UniqueItems{a.reshape(x, {type.getNumElements(), 1}),
                       type.getNumElements(), 1};
  NodeImporter &n = a.node();
  SmallVector<int64_t> perm{*axis};
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d != *axis)
      perm.push_back(d);
  Value moved = a.attrOp<TransposeOp>(x, {n.named("perm", n.i64Array(perm))});
  int64_t items = type.getDimSize(*axis);
  int64_t width = items ? type.getNumElements() / items : 0;
  return UniqueItems{a.reshape(moved, {items, width}), items, width};
}

/// Unique(x, axis?, sorted): the distinct items of x (elements, or slices
/// along axis), sorted ascending (lexicographically for slices) or in order
/// of first occurrence; each one's first index, each item's index into them,
/// and their counts. Built from the [items, items] table of which items
/// equal which: item i is the first of its kind when no earlier one equals
/// it, and its slot is the number of first items that order before it.
LogicalResult importUnique(NodeImporter &n) {
  auto type = n.inputType(0);
  auto x = n.input(0);
  auto sorted = n.attrInt("sorted", 1);
  if (failed(type) || failed(x) || failed(sorted))
    return failure();
  std::optional<int64_t> axis;
  if (n.hasAttr("axis")) {
    auto attr = n.attrInt("axis", 0);
    if (failed(attr))
      return failure();
    auto norm = normalizeAxis(n, *attr, type->getRank());
    if (failed(norm))
      return failure();
    axis = *norm;
  }
  Arith a(n);
  auto items = uniqueItems(a, *x, *type, axis);
  if (failed(items) || a.failed())
    return failure();
  int64_t d = items->items, m = items->width;
  if (d == 0 || m == 0)
    return n.error() << "Unique of an empty tensor " << *type
                     << " is not supported";
  if (d > kUniqueCompareLimit / d / m)
    return n.error() << "Unique compares every pair of its " << d
                     << " items of " << m << " elements; ignc supports up to "
                     << kUniqueCompareLimit << " element compares";
  Type i64 = i64Type(n), f32 = n.builder().getF32Type();
  Value lhs = a.reshape(items->rows, {d, 1, m}),
        rhs = a.reshape(items->rows, {1, d, m});
  // differs[i, j, k]: item j's element k differs from item i's.
  Value differs = a.op<NotOp>({a.equal(lhs, rhs)});
  Value diffCount = a.attrOp<ReduceSumOp>(
      a.cast(differs, i64),
      {n.named("axes", n.i64Array({2})), n.namedBool("keepdims", false)});
  Value same = a.equal(diffCount, a.i64(0)); // [d, d]
  Value index = iota(a, d);
  Value before = a.less(a.reshape(index, {1, d}), a.reshape(index, {d, 1}));
  Value first = a.equal(a.attrOp<ReduceSumOp>(a.cast(a.both(same, before), i64),
                                              {n.named("axes", n.i64Array({1})),
                                               n.namedBool("keepdims", false)}),
                        a.i64(0)); // [d]
  // orders[i, j]: item j's kind orders before item i's.
  Value orders;
  if (*sorted) {
    Value firstDiff = a.argmax(a.cast(differs, f32), 2); // [d, d, 1]
    auto lessAt = n.createValue<GatherElementsOp>({a.less(rhs, lhs), firstDiff},
                                                  {n.namedI64("axis", 2)});
    if (failed(lessAt))
      return failure();
    orders = a.both(a.reshape(*lessAt, {d, d}), a.op<NotOp>({same}));
  } else {
    Value firstOf = a.reshape(a.argmax(a.cast(same, f32), 1), {d});
    orders = a.less(a.reshape(firstOf, {1, d}), a.reshape(firstOf, {d, 1}));
  }
  auto rowSum = [&](Value v) {
    return a.attrOp<ReduceSumOp>(
        a.cast(v, i64),
        {n.named("axes", n.i64Array({1})), n.namedBool("keepdims", false)});
  };
  Value inverse = rowSum(a.both(orders, a.reshape(first, {1, d})));
  Value slot = a.select(first, inverse, a.i64(d));
  Value firstIndex = scatterToSlots(a, slot, index, d);
  Value counts = scatterToSlots(a, slot, rowSum(same), d);
  Value kinds = a.sum(a.cast(first, i64), 0);
  if (a.failed())
    return failure();
  Value y;
  Value yShape;
  if (axis) {
    auto gathered =
        n.createValue<GatherOp>({*x, firstIndex}, {n.namedI64("axis", *axis)});
    if (failed(gathered))
      return failure();
    y = *gathered;
    yShape = shapeWith(a, type->getShape(), *axis, kinds);
  } else {
    auto gathered = n.createValue<GatherOp>({a.reshape(*x, {d}), firstIndex},
                                            {n.namedI64("axis", 0)});
    if (failed(gathered))
      return failure();
    y = *gathered;
    yShape = kinds;
  }
  if (failed(setBounded(a, 0, y, yShape)) ||
      failed(setBounded(a, 1, firstIndex, kinds)) ||
      failed(n.setOutput(2, inverse)))
    return failure();
  return setBounded(a, 3, counts, kinds);
}

} // namespace

void registerDataDependentHandlers(HandlerMap &m) {
  m["Compress"] = importCompress;
  m["NonZero"] = importNonZero;
  m["Unique"] = importUnique;
}

} // namespace ign::import

// How values of run-time size flow: GraphImporter's side.
namespace ign::import {
namespace {

/// Ops whose output has their first input's shape.
bool keepsShape(llvm::StringRef op) {
  static const llvm::StringSet<> ops = {
      "Identity", "Cast",  "Neg",  "Abs",       "Relu", "Sigmoid",
      "Tanh",     "Exp",   "Log",  "Sqrt",      "Not",  "Floor",
      "Ceil",     "Round", "Sign", "Reciprocal"};
  return ops.contains(op);
}

/// The i64 [rank] run-time shape of Gather(data, indices) from the indices'.
Value gatherShape(Arith &a, RankedTensorType data, int64_t axis,
                  Value indicesShape) {
  NodeImporter &n = a.node();
  auto dims = data.getShape();
  SmallVector<Value> parts;
  if (axis > 0)
    parts.push_back(constI64(n, dims.take_front(axis)));
  parts.push_back(indicesShape);
  if (axis + 1 < int64_t(dims.size()))
    parts.push_back(constI64(n, dims.drop_front(axis + 1)));
  if (parts.size() == 1)
    return indicesShape;
  auto joined = n.createValue<ConcatOp>(parts, {n.namedI64("axis", 0)});
  if (failed(joined))
    a.fail();
  return failed(joined) ? indicesShape : *joined;
}

} // namespace

LogicalResult NodeImporter::setBoundedOutput(size_t i, Value value,
                                             Value shape) {
  if (i >= size_t(node_.output_size()) || node_.output(i).empty())
    return success();
  graph_.runtimeShapes[value] = {
      shape, node_.op_type() + " '" +
                 (node_.name().empty() ? node_.output(i) : node_.name()) + "'"};
  return setOutput(i, value);
}

const GraphImporter::RuntimeShape *
GraphImporter::runtimeShapeOf(Value value) const {
  auto it = runtimeShapes.find(value);
  return it == runtimeShapes.end() ? nullptr : &it->second;
}

LogicalResult
GraphImporter::checkRuntimeShapedInputs(const onnx::NodeProto &node) {
  llvm::StringRef op = node.op_type();
  for (int i = 0; i < node.input_size(); ++i) {
    auto v = values.find(node.input(i));
    const RuntimeShape *s =
        v == values.end() ? nullptr : runtimeShapeOf(v->second);
    if (!s)
      continue;
    bool passes = (i == 0 && (keepsShape(op) || op == "Transpose")) ||
                  (i == 1 && (op == "Gather" || op == "GatherND"));
    if (!passes)
      return emitError(nodeLoc(node))
             << op << " reads '" << node.input(i)
             << "', whose size is known only at run time (an output of "
             << s->origin
             << "); ignc passes such a value only to graph outputs, "
                "Identity, Cast, unary elementwise ops, Transpose, and as the "
                "indices of Gather and GatherND";
  }
  return success();
}

LogicalResult GraphImporter::propagateRuntimeShapes(const onnx::NodeProto &node,
                                                    int64_t nodeOpset) {
  int bounded = -1;
  for (int i = 0; i < node.input_size() && bounded < 0; ++i)
    if (auto v = values.find(node.input(i));
        v != values.end() && runtimeShapeOf(v->second))
      bounded = i;
  if (bounded < 0 || node.output_size() == 0 || !values.count(node.output(0)))
    return success();
  Value in = values[node.input(bounded)], out = values[node.output(0)];
  Value shape = runtimeShapeOf(in)->shape;
  NodeImporter n(*this, node, nodeLoc(node), nodeOpset);
  Arith a(n);
  llvm::StringRef op = node.op_type();
  if (op == "Transpose") {
    int64_t rank = cast<RankedTensorType>(in.getType()).getRank();
    SmallVector<int64_t> reversed;
    for (int64_t d = rank - 1; d >= 0; --d)
      reversed.push_back(d);
    auto perm = n.attrInts("perm", reversed);
    if (failed(perm))
      return failure();
    auto permuted = n.createValue<GatherOp>({shape, constI64(n, *perm)},
                                            {n.namedI64("axis", 0)});
    if (failed(permuted))
      return failure();
    shape = *permuted;
  } else if (op == "Gather") {
    auto data = cast<RankedTensorType>(values[node.input(0)].getType());
    auto axis = n.attrInt("axis", 0);
    if (failed(axis))
      return failure();
    auto norm = normalizeAxis(n, *axis, data.getRank());
    if (failed(norm))
      return failure();
    shape = gatherShape(a, data, *norm, shape);
  } else if (op == "GatherND") {
    auto data = cast<RankedTensorType>(values[node.input(0)].getType());
    auto indices = cast<RankedTensorType>(in.getType());
    int64_t q = indices.getRank(), r = indices.getDimSize(q - 1);
    auto batch = n.attrInt("batch_dims", 0);
    if (failed(batch))
      return failure();
    if (*batch != 0)
      return n.error() << "GatherND with batch_dims over indices of run-time "
                          "size is not supported";
    shape = a.slice(shape, {0}, {q - 1});
    if (r < data.getRank()) {
      auto joined = n.createValue<ConcatOp>(
          {shape, constI64(n, data.getShape().drop_front(r))},
          {n.namedI64("axis", 0)});
      if (failed(joined))
        return failure();
      shape = *joined;
    }
  }
  if (a.failed())
    return failure();
  runtimeShapes[out] = {shape, runtimeShapeOf(in)->origin};
  return success();
}

} // namespace ign::import
