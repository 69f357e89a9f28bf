//===- ImportDataDependent.cpp - operators whose output size is data ------===//
//
// NonZero, Compress, Unique and NonMaxSuppression have outputs whose size
// depends on the values of their inputs. With those inputs known at import time
// they fold (NonZero to a constant, Compress to a Gather of the kept indices);
// computed at run time, the output gets its upper bound as its static type, the
// kept elements packed to its front (the rest zero: a valid index for whatever
// gathers with it), and an i64 [rank] tensor holding its actual shape
// (GraphImporter::runtimeShapes). The bundle reports that shape with the
// output (docs/bundle-format.md). Packing is a scatter of each kept
// element's position, counted by a cumulative sum, into its slot.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "ImportArith.h"

#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <array>
#include <limits>

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
LogicalResult setBounded(Arith &a, size_t out, Value value, Value shape,
                         int64_t runTimeDim) {
  if (a.failed())
    return failure();
  return a.node().setBoundedOutput(out, value, shape, {runTimeDim});
}

/// The node's `axis` attribute normalized against `rank`, or nullopt when
/// it has none (Compress and Unique then work on the flattened input).
FailureOr<std::optional<int64_t>> optionalAxis(NodeImporter &n, int64_t rank) {
  if (!n.hasAttr("axis"))
    return std::optional<int64_t>();
  auto attr = n.attrInt("axis", 0);
  if (failed(attr))
    return failure();
  auto norm = normalizeAxis(n, *attr, rank);
  if (failed(norm))
    return failure();
  return std::optional<int64_t>(*norm);
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
  auto given = optionalAxis(n, type->getRank());
  if (failed(given))
    return failure();
  Value data = *x;
  int64_t axis = given->value_or(0);
  if (!*given) {
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
  return setBounded(a, 0, *gathered, shapeWith(a, dims, axis, count), axis);
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
  return setBounded(a, 0, out, shapeWith(a, {rank, len}, 1, count), 1);
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

/// For items [d, m]: which pairs are equal, same[i, j], and (when `lex`)
/// which item j orders lexicographically before item i, less[i, j]: the
/// element where they first differ is smaller in j. One element per item
/// compares directly.
std::pair<Value, Value> compareItems(Arith &a, Value rows, int64_t d, int64_t m,
                                     bool lex) {
  if (m == 1) {
    Value lhs = a.reshape(rows, {d, 1}), rhs = a.reshape(rows, {1, d});
    return {a.equal(lhs, rhs), lex ? a.less(rhs, lhs) : Value()};
  }
  NodeImporter &n = a.node();
  Value lhs = a.reshape(rows, {d, 1, m}), rhs = a.reshape(rows, {1, d, m});
  Value differs = a.op<NotOp>({a.equal(lhs, rhs)}); // [d, d, m]
  Value diffCount = a.attrOp<ReduceSumOp>(
      a.cast(differs, n.builder().getI32Type()),
      {n.named("axes", n.i64Array({2})), n.namedBool("keepdims", false)});
  Value same = a.equal(diffCount, a.scalarOf(n.builder().getI32Type(), 0));
  if (!lex || a.failed())
    return {same, Value()};
  Value firstDiff = a.argmax(a.cast(differs, n.builder().getF32Type()), 2);
  auto lessAt = n.createValue<GatherElementsOp>({a.less(rhs, lhs), firstDiff},
                                                {n.namedI64("axis", 2)});
  if (failed(lessAt)) {
    a.fail();
    return {same, same};
  }
  return {same, a.both(a.reshape(*lessAt, {d, d}), a.op<NotOp>({same}))};
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
  auto optAxis = optionalAxis(n, type->getRank());
  if (failed(optAxis))
    return failure();
  std::optional<int64_t> axis = *optAxis;
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
  auto [same, lexLess] = compareItems(a, items->rows, d, m, *sorted);
  // Counts of up to 2^24 pairs: i32 sums (twice the lanes of i64).
  Type i32 = n.builder().getI32Type();
  auto rowSum = [&](Value v) {
    return a.cast(
        a.attrOp<ReduceSumOp>(a.cast(v, i32), {n.named("axes", n.i64Array({1})),
                                               n.namedBool("keepdims", false)}),
        i64);
  };
  Value index = iota(a, d);
  Value before = a.less(a.reshape(index, {1, d}), a.reshape(index, {d, 1}));
  Value first = a.equal(rowSum(a.both(same, before)), a.i64(0)); // [d]
  // orders[i, j]: item j's kind orders before item i's.
  Value orders = lexLess;
  if (!*sorted) {
    Value firstOf = a.reshape(a.argmax(a.cast(same, f32), 1), {d});
    orders = a.less(a.reshape(firstOf, {1, d}), a.reshape(firstOf, {d, 1}));
  }
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
  if (failed(setBounded(a, 0, y, yShape, axis.value_or(0))) ||
      failed(setBounded(a, 1, firstIndex, kinds, 0)) ||
      failed(n.setOutput(2, inverse)))
    return failure();
  return setBounded(a, 3, counts, kinds, 0);
}

/// A scalar input of NonMaxSuppression as a 0-d tensor of `element`, or
/// `dflt` when absent.
FailureOr<Value> scalarInput(NodeImporter &n, Arith &a, size_t i, Type element,
                             double dflt, llvm::StringRef what) {
  if (!n.hasInput(i))
    return n.scalarConstant(element, dflt);
  auto type = n.inputType(i);
  auto v = n.input(i);
  if (failed(type) || failed(v))
    return failure();
  if (type->getNumElements() != 1)
    return n.error() << "NonMaxSuppression " << what
                     << " must hold one value, got " << *type;
  return a.cast(a.reshape(*v, {}), element);
}

/// The corners (y1, x1, y2, x2, each [B, N]) of boxes [B, N, 4]:
/// corners in either order, or centers and sizes (center_point_box).
std::array<Value, 4> boxCorners(Arith &a, Value boxes, int64_t b, int64_t n,
                                bool center) {
  auto coord = [&](int64_t k) {
    return a.reshape(a.slice(boxes, {0, 0, k}, {b, n, 1}), {b, n});
  };
  Value c0 = coord(0), c1 = coord(1), c2 = coord(2), c3 = coord(3);
  Value y1, x1, y2, x2;
  if (center) { // [x_center, y_center, width, height]
    Value halfW = a.mul(c2, a.c(0.5)), halfH = a.mul(c3, a.c(0.5));
    x1 = a.sub(c0, halfW), x2 = a.add(c0, halfW);
    y1 = a.sub(c1, halfH), y2 = a.add(c1, halfH);
  } else { // [y1, x1, y2, x2], either diagonal
    y1 = a.op<MinOp>({c0, c2}), y2 = a.op<MaxOp>({c0, c2});
    x1 = a.op<MinOp>({c1, c3}), x2 = a.op<MaxOp>({c1, c3});
  }
  return {y1, x1, y2, x2};
}

/// NonMaxSuppression(boxes [B, N, 4], scores [B, C, N], max per class?,
/// iou_threshold?, score_threshold?): for each batch and class, the boxes
/// taken best score first whose score passes the threshold and that overlap
/// no box taken before by more than the IoU threshold, at most max per
/// class; [count, 3] (batch, class, box) rows, by batch, class and score.
/// The boxes as corners, ign.non_max_suppression's selection per class (a
/// [B, C, N] table of kept box indices, -1 after the last), then the kept
/// entries packed.
LogicalResult importNonMaxSuppression(NodeImporter &n) {
  auto boxesType = n.inputType(0), scoresType = n.inputType(1);
  auto boxes = n.input(0), scores = n.input(1);
  auto center = n.attrInt("center_point_box", 0);
  if (failed(boxesType) || failed(scoresType) || failed(boxes) ||
      failed(scores) || failed(center))
    return failure();
  Type f32 = n.builder().getF32Type(), i64 = i64Type(n);
  if (boxesType->getRank() != 3 || boxesType->getDimSize(2) != 4 ||
      scoresType->getRank() != 3 ||
      scoresType->getDimSize(0) != boxesType->getDimSize(0) ||
      scoresType->getDimSize(2) != boxesType->getDimSize(1) ||
      !boxesType->getElementType().isF32() ||
      !scoresType->getElementType().isF32())
    return n.error() << "NonMaxSuppression needs f32 boxes [B, N, 4] and "
                        "scores [B, C, N], got "
                     << *boxesType << " and " << *scoresType;
  int64_t b = boxesType->getDimSize(0), nb = boxesType->getDimSize(1),
          c = scoresType->getDimSize(1);
  if (b * c * nb == 0)
    return n.error() << "NonMaxSuppression of no boxes is not supported";
  Arith a(n);
  auto maxOut = scalarInput(n, a, 2, i64, 0, "max_output_boxes_per_class");
  auto iouLimit = scalarInput(n, a, 3, f32, 0, "iou_threshold");
  auto scoreLimit = scalarInput(
      n, a, 4, f32, -std::numeric_limits<float>::infinity(), "score_threshold");
  if (failed(maxOut) || failed(iouLimit) || failed(scoreLimit))
    return failure();
  auto corners = boxCorners(a, *boxes, b, nb, *center != 0);
  SmallVector<Value> parts;
  for (Value v : corners)
    parts.push_back(a.reshape(v, {b, nb, 1}));
  if (a.failed())
    return failure();
  auto normalized = n.createValue<ConcatOp>(parts, {n.namedI64("axis", 2)});
  if (failed(normalized))
    return failure();
  // At most max per class are kept: the table is that wide where it is
  // known.
  int64_t width = nb;
  if (const HostTensor *known = n.hasInput(2) ? n.constInput(2) : nullptr)
    width = std::clamp<int64_t>(known->getInt(0), 1, nb);
  auto selected = n.createValue<NonMaxSuppressionOp>(
      {*normalized, *scores, *maxOut, *iouLimit, *scoreLimit},
      {n.namedI64("width", width)});
  if (failed(selected))
    return failure();
  int64_t all = b * c * width;
  Value flat = a.reshape(*selected, {all});
  auto [positions, count] =
      packTrue(a, a.op<GreaterEqualOp>({flat, a.i64(0)}), all);
  Value batch = a.op<DivOp>({positions, a.i64(c * width)});
  Value cls = a.op<ModOp>({a.op<DivOp>({positions, a.i64(width)}), a.i64(c)});
  if (a.failed())
    return failure();
  auto box =
      n.createValue<GatherOp>({flat, positions}, {n.namedI64("axis", 0)});
  if (failed(box))
    return failure();
  SmallVector<Value> columns;
  for (Value v : {batch, cls, *box})
    columns.push_back(a.reshape(v, {all, 1}));
  if (a.failed())
    return failure();
  auto rows = n.createValue<ConcatOp>(columns, {n.namedI64("axis", 1)});
  if (failed(rows))
    return failure();
  return setBounded(a, 0, *rows, shapeWith(a, {all, 3}, 0, count), 0);
}

} // namespace

void registerDataDependentHandlers(HandlerMap &m) {
  m["Compress"] = importCompress;
  m["NonZero"] = importNonZero;
  m["Unique"] = importUnique;
  m["NonMaxSuppression"] = importNonMaxSuppression;
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

/// Binary elementwise ops: a run-time-sized operand passes its shape on
/// when the other one broadcasts into it.
bool isBinary(llvm::StringRef op) {
  static const llvm::StringSet<> ops = {
      "Add", "Sub", "Mul",         "Div",           "Pow",  "Max",
      "Min", "And", "Or",          "Equal",         "Less", "Greater",
      "Mod", "Xor", "LessOrEqual", "GreaterOrEqual"};
  return ops.contains(op);
}

/// Whether input `i` of `op` may have a run-time size (propagateRuntimeShapes
/// knows the output's).
bool passesRuntimeShape(llvm::StringRef op, int i) {
  if (i == 0 && (keepsShape(op) || op == "Transpose" || op == "Gather" ||
                 op == "Squeeze" || op == "Unsqueeze"))
    return true;
  return (i == 1 && (op == "Gather" || op == "GatherND")) || isBinary(op);
}

/// Builds shape vectors (i64 [rank]) from pieces of others.
struct ShapeBuilder {
  Arith &a;
  SmallVector<Value> parts;

  /// Dims [from, to) of the shape vector `v`.
  void take(Value v, int64_t from, int64_t to) {
    if (to > from)
      parts.push_back(
          from == 0 && to == cast<RankedTensorType>(v.getType()).getDimSize(0)
              ? v
              : a.slice(v, {from}, {to - from}));
  }
  void add(ArrayRef<int64_t> dims) {
    if (!dims.empty())
      parts.push_back(constI64(a.node(), dims));
  }
  Value build() {
    if (parts.empty())
      return constI64(a.node(), {});
    if (parts.size() == 1 || a.failed())
      return parts.front();
    auto joined =
        a.node().createValue<ConcatOp>(parts, {a.node().namedI64("axis", 0)});
    if (failed(joined))
      a.fail();
    return failed(joined) ? parts.front() : *joined;
  }
};

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

/// Squeeze's or Unsqueeze's axes (an attribute before opset 13, else input
/// 1), normalized against `rank`; Squeeze without them: every unit dim.
FailureOr<SmallVector<int64_t>> unitAxes(NodeImporter &n, RankedTensorType in,
                                         int64_t rank) {
  SmallVector<int64_t> axes;
  if (n.hasAttr("axes")) {
    auto attr = n.attrInts("axes");
    if (failed(attr))
      return failure();
    axes = *attr;
  } else if (n.hasInput(1)) {
    auto known = n.constInts(1, "axes");
    if (failed(known))
      return failure();
    axes = *known;
  } else {
    for (int64_t d = 0; d < in.getRank(); ++d)
      if (in.getDimSize(d) == 1)
        axes.push_back(d);
  }
  for (int64_t &axis : axes) {
    auto norm = normalizeAxis(n, axis, rank);
    if (failed(norm))
      return failure();
    axis = *norm;
  }
  return axes;
}

} // namespace

LogicalResult NodeImporter::setBoundedOutput(size_t i, Value value, Value shape,
                                             llvm::ArrayRef<int64_t> dims) {
  if (i >= size_t(node_.output_size()) || node_.output(i).empty())
    return success();
  SmallVector<bool> dynamic(cast<RankedTensorType>(value.getType()).getRank(),
                            false);
  for (int64_t d : dims)
    dynamic[d] = true;
  graph_.runtimeShapes[value] = {
      shape,
      node_.op_type() + " '" +
          (node_.name().empty() ? node_.output(i) : node_.name()) + "'",
      dynamic};
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
  int bounded = 0;
  for (int i = 0; i < node.input_size(); ++i) {
    auto v = values.find(node.input(i));
    const RuntimeShape *s =
        v == values.end() ? nullptr : runtimeShapeOf(v->second);
    if (!s)
      continue;
    if (!passesRuntimeShape(op, i) || ++bounded > 1)
      return emitError(nodeLoc(node))
             << op << " reads '" << node.input(i)
             << "', whose size is known only at run time (an output of "
             << s->origin
             << "); ignc passes such a value only to graph outputs, "
                "Identity, Cast, the unary ops that keep a shape (Neg, Abs, "
                "Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Not, Floor, Ceil, "
                "Round, Sign, Reciprocal), Transpose, Squeeze, Unsqueeze, "
                "Gather (as data or indices), GatherND (as indices) and "
                "binary elementwise ops with a broadcast operand of static "
                "size";
  }
  return success();
}

/// A value of run-time size as an op sees it: its i64 [rank] shape and
/// which dims are known only at run time.
struct Sized {
  Value shape;
  SmallVector<bool> dynamic;
};

/// The run-time shape of `node`'s output from that of its input `in`, by
/// op; refused (an error) where the op would read the bound as if it were
/// the size: a Gather or Squeeze along a dim of run-time size, GatherND's
/// index tuples of run-time length, a broadcast against such a dim, and a
/// division by a value of run-time size (its padding is 0).
static FailureOr<Sized> outputShape(NodeImporter &n, Arith &a,
                                    llvm::StringMap<Value> &values, Value in,
                                    const Sized &from, Value out) {
  const onnx::NodeProto &node = n.node();
  llvm::StringRef op = node.op_type();
  auto typeOf = [](Value v) { return cast<RankedTensorType>(v.getType()); };
  auto refuse = [&](llvm::StringRef what, llvm::StringRef why = "") {
    auto diag =
        n.error() << op << " " << what << " '"
                  << (values.lookup(node.input(0)) == in ? node.input(0)
                                                         : node.input(1))
                  << "', whose size is known only at run time, is "
                     "not supported";
    if (!why.empty())
      diag << " (" << why << ")";
    return diag;
  };
  ShapeBuilder sb{a, {}};
  SmallVector<bool> dynamic;
  if (op == "Transpose") {
    SmallVector<int64_t> perm;
    for (int64_t d = rankOf(in) - 1; d >= 0; --d)
      perm.push_back(d);
    auto attr = n.attrInts("perm", perm);
    if (failed(attr))
      return failure();
    for (int64_t p : *attr)
      dynamic.push_back(p >= 0 && p < rankOf(in) && from.dynamic[p]);
    auto permuted = n.createValue<GatherOp>({from.shape, constI64(n, *attr)},
                                            {n.namedI64("axis", 0)});
    if (failed(permuted))
      return failure();
    return Sized{*permuted, dynamic};
  }
  if (op == "Gather") {
    Value data = values.lookup(node.input(0));
    if (!data) // the handler built no gather of it (cannot happen today)
      return refuse("on data known at compile time, with indices of");
    auto axis = n.attrInt("axis", 0);
    if (failed(axis))
      return failure();
    auto norm = normalizeAxis(n, *axis, rankOf(data));
    if (failed(norm))
      return failure();
    bool onData = data == in;
    if (onData && from.dynamic[*norm])
      return refuse("along a dim of", "its indices would be checked and "
                                      "wrapped against its upper bound");
    int64_t indexRank = rankOf(out) - rankOf(data) + 1;
    Value dataShape =
        onData ? from.shape : constI64(n, typeOf(data).getShape());
    sb.take(dataShape, 0, *norm);
    if (!onData)
      sb.take(from.shape, 0, indexRank);
    else // static indices (maybe folded on the host)
      sb.add(typeOf(out).getShape().slice(*norm, indexRank));
    sb.take(dataShape, *norm + 1, rankOf(data));
    for (int64_t d = 0; d < rankOf(out); ++d) {
      bool inIndices = d >= *norm && d < *norm + indexRank;
      dynamic.push_back(
          inIndices
              ? !onData && from.dynamic[d - *norm]
              : onData && from.dynamic[d < *norm ? d : d - indexRank + 1]);
    }
    return Sized{sb.build(), dynamic};
  }
  if (op == "GatherND") {
    Value data = values.lookup(node.input(0));
    if (!data)
      return refuse("on data known at compile time, with indices of");
    int64_t q = rankOf(in), r = typeOf(in).getDimSize(q - 1);
    auto batch = n.attrInt("batch_dims", 0);
    if (failed(batch))
      return failure();
    if (*batch != 0 || from.dynamic[q - 1])
      return refuse("with batch_dims, or with index tuples of run-time "
                    "length, in");
    sb.take(from.shape, 0, q - 1);
    sb.add(typeOf(data).getShape().drop_front(r));
    dynamic.assign(from.dynamic.begin(), from.dynamic.end() - 1);
    dynamic.resize(rankOf(out), false);
    return Sized{sb.build(), dynamic};
  }
  if (op == "Squeeze" || op == "Unsqueeze") {
    bool squeeze = op == "Squeeze";
    auto axes = unitAxes(n, typeOf(in), squeeze ? rankOf(in) : rankOf(out));
    if (failed(axes))
      return failure();
    for (int64_t d = 0, from_ = 0; d < (squeeze ? rankOf(in) : rankOf(out));
         ++d) {
      bool unit = llvm::is_contained(*axes, d);
      if (squeeze && unit && from.dynamic[d])
        return refuse("removing a dim of");
      if (!squeeze && unit) {
        sb.add({1});
        dynamic.push_back(false);
      } else if (!unit || !squeeze) {
        sb.take(from.shape, from_, from_ + 1);
        dynamic.push_back(from.dynamic[from_]);
      }
      if (squeeze || !unit)
        ++from_;
    }
    return Sized{sb.build(), dynamic};
  }
  if (isBinary(op)) {
    Value other = values.lookup(node.input(values.lookup(node.input(0)) == in));
    if ((op == "Div" || op == "Mod") && values.lookup(node.input(1)) == in)
      return refuse("by elements of", "past its size, the elements are 0");
    if (typeOf(out).getShape() != typeOf(in).getShape())
      return refuse("broadcasting");
    // The other operand broadcasts into each run-time dim (size 1 or none).
    int64_t shift = rankOf(in) - (other ? rankOf(other) : 0);
    for (int64_t d = std::max<int64_t>(shift, 0); other && d < rankOf(in); ++d)
      if (from.dynamic[d] && typeOf(other).getDimSize(d - shift) != 1)
        return refuse("pairing a static operand with the dims of");
  }
  return from; // the same shape
}

LogicalResult GraphImporter::propagateRuntimeShapes(const onnx::NodeProto &node,
                                                    int64_t nodeOpset) {
  Value in;
  for (const std::string &name : node.input())
    if (auto v = values.find(name);
        !in && v != values.end() && runtimeShapeOf(v->second))
      in = v->second;
  if (!in || node.output_size() == 0 || !values.count(node.output(0)))
    return success();
  Value out = values[node.output(0)];
  NodeImporter n(*this, node, nodeLoc(node), nodeOpset);
  Arith a(n);
  RuntimeShape from = *runtimeShapeOf(in);
  auto sized =
      outputShape(n, a, values, in, Sized{from.shape, from.dynamic}, out);
  if (failed(sized) || a.failed())
    return failure();
  runtimeShapes[out] = {sized->shape, from.origin, sized->dynamic};
  return success();
}

} // namespace ign::import
