//===- ImportTensor.cpp - reductions, shape and data-movement nodes -------===//
//
// Shape arguments (Reshape's shape, Slice's starts, Pad's pads, ...) must be
// known at import; when a node's data is known too and small, it is folded
// on the host, which removes the shape sub-graphs exporters emit.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

using namespace mlir;

namespace ign::import {
namespace {

using llvm::SmallVector;

int64_t product(ArrayRef<int64_t> shape) {
  int64_t p = 1;
  for (int64_t d : shape)
    p *= d;
  return p;
}

/// Builds a host tensor of `shape` whose element at each output index is
/// `src`'s element at the linear index `map` returns.
HostTensor hostRemap(const HostTensor &src, ArrayRef<int64_t> shape,
                     const std::function<int64_t(ArrayRef<int64_t>)> &map) {
  HostTensor out;
  out.shape.assign(shape.begin(), shape.end());
  out.elementType = src.elementType;
  out.allocate();
  int64_t total = out.numElements();
  SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t lin = 0; lin < total; ++lin) {
    int64_t j = map(idx);
    if (out.isFloat())
      out.floats[lin] = src.floats[j];
    else
      out.ints[lin] = src.ints[j];
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
  return out;
}

HostTensor hostI64(ArrayRef<int64_t> shape, ArrayRef<int64_t> values,
                   MLIRContext *ctx) {
  HostTensor t;
  t.shape.assign(shape.begin(), shape.end());
  t.elementType = IntegerType::get(ctx, 64);
  t.ints.assign(values.begin(), values.end());
  return t;
}

/// The same data under a new shape: on the host if known, else ign.reshape.
LogicalResult reshapeTo(NodeImporter &n, ArrayRef<int64_t> shape) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  if (product(shape) != type->getNumElements())
    return n.error() << "cannot reshape " << *type << " to "
                     << RankedTensorType::get(shape, type->getElementType());
  if (const HostTensor *t = n.constInput(0)) {
    HostTensor out = *t;
    out.shape.assign(shape.begin(), shape.end());
    return n.setOutput(0, std::move(out));
  }
  auto v = n.input(0);
  if (failed(v))
    return failure();
  return done(n, n.reshape(*v, shape));
}

/// Sorted unique non-negative axes.
FailureOr<SmallVector<int64_t>>
normalizeAxes(NodeImporter &n, ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t a : axes) {
    auto v = normalizeAxis(n, a, rank);
    if (failed(v))
      return failure();
    out.push_back(*v);
  }
  llvm::sort(out);
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    return n.error() << "axes repeat a dim";
  return out;
}

/// Axes from the attribute (older opsets) or the optional input (newer).
FailureOr<SmallVector<int64_t>> axesAttrOrInput(NodeImporter &n,
                                                int64_t inputSinceOpset,
                                                size_t inputIndex,
                                                bool &given) {
  given = false;
  if (n.opset() < inputSinceOpset) {
    given = n.hasAttr("axes");
    return n.attrInts("axes");
  }
  if (!n.hasInput(inputIndex))
    return SmallVector<int64_t>();
  given = true;
  return n.constInts(inputIndex, "axes");
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

template <typename OpT>
LogicalResult importReduce(NodeImporter &n, int64_t axesInputSince) {
  auto type = n.inputType(0);
  auto keep = n.attrInt("keepdims", 1);
  auto noop = n.attrInt("noop_with_empty_axes", 0);
  bool given;
  auto axes = axesAttrOrInput(n, axesInputSince, 1, given);
  if (failed(type) || failed(keep) || failed(noop) || failed(axes))
    return failure();
  auto x = n.input(0);
  if (failed(x))
    return failure();
  if (axes->empty()) {
    if (*noop || type->getRank() == 0)
      return n.setOutput(0, *x);
    for (int64_t d = 0; d < type->getRank(); ++d)
      axes->push_back(d);
  }
  auto norm = normalizeAxes(n, *axes, type->getRank());
  if (failed(norm))
    return failure();
  // Shape arithmetic sometimes multiplies or sums known dims: fold those.
  constexpr bool foldable =
      std::is_same_v<OpT, ReduceSumOp> || std::is_same_v<OpT, ReduceProdOp> ||
      std::is_same_v<OpT, ReduceMaxOp> || std::is_same_v<OpT, ReduceMinOp>;
  if (const HostTensor *t = n.constInput(0); foldable && t) {
    HostTensor out;
    out.elementType = t->elementType;
    SmallVector<int64_t> outStrideShape;
    for (int64_t d = 0; d < type->getRank(); ++d) {
      bool reduced = llvm::is_contained(*norm, d);
      if (!reduced || *keep)
        out.shape.push_back(reduced ? 1 : t->shape[d]);
      outStrideShape.push_back(reduced ? 1 : t->shape[d]);
    }
    out.allocate();
    double init = std::is_same_v<OpT, ReduceProdOp>  ? 1.0
                  : std::is_same_v<OpT, ReduceMaxOp> ? -INFINITY
                  : std::is_same_v<OpT, ReduceMinOp> ? INFINITY
                                                     : 0.0;
    std::vector<double> acc(out.numElements(), init);
    auto inStrides = stridesOf(t->shape),
         outStrides = stridesOf(outStrideShape);
    for (int64_t i = 0; i < t->numElements(); ++i) {
      int64_t o = 0, rem = i;
      for (size_t d = 0; d < t->shape.size(); ++d) {
        int64_t c = rem / inStrides[d];
        rem %= inStrides[d];
        if (outStrideShape[d] != 1)
          o += c * outStrides[d];
      }
      double v = t->getDouble(i);
      if constexpr (std::is_same_v<OpT, ReduceSumOp>)
        acc[o] += v;
      else if constexpr (std::is_same_v<OpT, ReduceProdOp>)
        acc[o] *= v;
      else if constexpr (std::is_same_v<OpT, ReduceMaxOp>)
        acc[o] = std::max(acc[o], v);
      else
        acc[o] = std::min(acc[o], v);
    }
    for (int64_t i = 0; i < out.numElements(); ++i)
      out.set(i, acc[i], out.wrapInt(int64_t(acc[i])));
    return n.setOutput(0, std::move(out));
  }
  return done(n, n.createValue<OpT>(*x, {n.named("axes", n.i64Array(*norm)),
                                         n.namedBool("keepdims", *keep)}));
}

template <typename OpT> LogicalResult importArgReduce(NodeImporter &n) {
  auto type = n.inputType(0);
  auto axis = n.attrInt("axis", 0), keep = n.attrInt("keepdims", 1),
       last = n.attrInt("select_last_index", 0);
  auto x = n.input(0);
  if (failed(type) || failed(axis) || failed(keep) || failed(last) || failed(x))
    return failure();
  auto a = normalizeAxis(n, *axis, type->getRank());
  if (failed(a))
    return failure();
  return done(n,
              n.createValue<OpT>(
                  *x, {n.namedI64("axis", *a), n.namedBool("keepdims", *keep),
                       n.namedBool("select_last_index", *last)}));
}

template <typename OpT> LogicalResult importSoftmax(NodeImporter &n) {
  auto type = n.inputType(0);
  auto x = n.input(0);
  bool legacy = n.opset() < 13;
  auto axis = n.attrInt("axis", legacy ? 1 : -1);
  if (failed(type) || failed(x) || failed(axis))
    return failure();
  int64_t rank = std::max<int64_t>(type->getRank(), 1);
  auto a = normalizeAxis(n, *axis, rank);
  if (failed(a))
    return failure();
  if (type->getRank() == 0)
    return n.error() << "softmax of a scalar";
  if (!legacy || *a == type->getRank() - 1)
    return done(n, n.createValue<OpT>(*x, {n.namedI64("axis", *a)}));
  // Before opset 13 the input is viewed as 2-D [prod(:axis), prod(axis:)].
  auto shape = type->getShape();
  auto flat = n.reshape(
      *x, {product(shape.take_front(*a)), product(shape.drop_front(*a))});
  if (failed(flat))
    return failure();
  auto r = n.createValue<OpT>(*flat, {n.namedI64("axis", 1)});
  if (failed(r))
    return failure();
  return done(n, n.reshape(*r, shape));
}

LogicalResult importCumSum(NodeImporter &n) {
  auto type = n.inputType(0);
  auto axis = n.constInts(1, "axis");
  auto exclusive = n.attrInt("exclusive", 0), reverse = n.attrInt("reverse", 0);
  auto x = n.input(0);
  if (failed(type) || failed(axis) || failed(exclusive) || failed(reverse) ||
      failed(x))
    return failure();
  if (axis->size() != 1)
    return n.error() << "CumSum axis must be a scalar";
  auto a = normalizeAxis(n, (*axis)[0], type->getRank());
  if (failed(a))
    return failure();
  return done(n,
              n.createValue<CumSumOp>(*x, {n.namedI64("axis", *a),
                                           n.namedBool("exclusive", *exclusive),
                                           n.namedBool("reverse", *reverse)}));
}

LogicalResult importTopK(NodeImporter &n) {
  auto type = n.inputType(0);
  auto axis = n.attrInt("axis", -1), largest = n.attrInt("largest", 1),
       sorted = n.attrInt("sorted", 1);
  auto x = n.input(0);
  if (failed(type) || failed(axis) || failed(largest) || failed(sorted) ||
      failed(x))
    return failure();
  int64_t k;
  if (n.opset() < 10) {
    auto kAttr = n.attrInt("k", -1);
    if (failed(kAttr))
      return failure();
    k = *kAttr;
  } else {
    auto kIn = n.constInts(1, "K");
    if (failed(kIn))
      return failure();
    if (kIn->size() != 1)
      return n.error() << "TopK K must hold one value";
    k = (*kIn)[0];
  }
  auto a = normalizeAxis(n, *axis, type->getRank());
  if (failed(a))
    return failure();
  auto op = n.create<TopKOp>(*x, {n.namedI64("k", k), n.namedI64("axis", *a),
                                  n.namedBool("largest", *largest),
                                  n.namedBool("sorted", *sorted)});
  if (failed(op))
    return failure();
  if (failed(n.setOutput(0, op->getValues())))
    return failure();
  return n.setOutput(1, op->getIndices());
}

//===----------------------------------------------------------------------===//
// Shape changes
//===----------------------------------------------------------------------===//

LogicalResult importReshape(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  SmallVector<int64_t> shape;
  if (n.opset() < 5) {
    auto s = n.attrInts("shape");
    if (failed(s))
      return failure();
    shape = *s;
  } else {
    auto s = n.constInts(1, "shape");
    if (failed(s))
      return failure();
    shape = *s;
  }
  auto allowZero = n.attrInt("allowzero", 0);
  if (failed(allowZero))
    return failure();
  int64_t inferred = -1, known = 1;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d == 0 && !*allowZero) {
      if (i >= size_t(type->getRank()))
        return n.error() << "shape dim " << i
                         << " is 0 (copy) but the input has rank "
                         << type->getRank();
      d = type->getDimSize(i);
    }
    if (d == -1) {
      if (inferred >= 0)
        return n.error() << "shape has more than one -1";
      inferred = i;
      continue;
    }
    if (d < 0)
      return n.error() << "shape has invalid dim " << d;
    known *= d;
  }
  if (inferred >= 0) {
    if (known == 0 || type->getNumElements() % known)
      return n.error() << "cannot infer the -1 dim reshaping " << *type;
    shape[inferred] = type->getNumElements() / known;
  }
  return reshapeTo(n, shape);
}

LogicalResult importFlatten(NodeImporter &n) {
  auto type = n.inputType(0);
  auto axis = n.attrInt("axis", 1);
  if (failed(type) || failed(axis))
    return failure();
  int64_t rank = type->getRank();
  int64_t a = *axis < 0 ? *axis + rank : *axis;
  if (a < 0 || a > rank)
    return n.error() << "Flatten axis " << *axis << " out of range for rank "
                     << rank;
  auto shape = type->getShape();
  return reshapeTo(
      n, {product(shape.take_front(a)), product(shape.drop_front(a))});
}

LogicalResult importSqueeze(NodeImporter &n) {
  auto type = n.inputType(0);
  bool given;
  auto axes = axesAttrOrInput(n, 13, 1, given);
  if (failed(type) || failed(axes))
    return failure();
  auto norm = normalizeAxes(n, *axes, type->getRank());
  if (failed(norm))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type->getRank(); ++d) {
    bool drop =
        norm->empty() ? type->getDimSize(d) == 1 : llvm::is_contained(*norm, d);
    if (drop && type->getDimSize(d) != 1)
      return n.error() << "cannot squeeze dim " << d << " of size "
                       << type->getDimSize(d);
    if (!drop)
      shape.push_back(type->getDimSize(d));
  }
  return reshapeTo(n, shape);
}

LogicalResult importUnsqueeze(NodeImporter &n) {
  auto type = n.inputType(0);
  bool given;
  auto axes = axesAttrOrInput(n, 13, 1, given);
  if (failed(type) || failed(axes))
    return failure();
  int64_t outRank = type->getRank() + axes->size();
  auto norm = normalizeAxes(n, *axes, outRank);
  if (failed(norm))
    return failure();
  SmallVector<int64_t> shape;
  auto in = type->getShape();
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d)
    shape.push_back(llvm::is_contained(*norm, d) ? 1 : in[next++]);
  return reshapeTo(n, shape);
}

LogicalResult importTranspose(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  SmallVector<int64_t> dflt;
  for (int64_t d = type->getRank() - 1; d >= 0; --d)
    dflt.push_back(d);
  auto perm = n.attrInts("perm", dflt);
  if (failed(perm))
    return failure();
  if (const HostTensor *t = n.constInput(0);
      t && t->numElements() <= kHostFoldLimit &&
      perm->size() == t->shape.size()) {
    SmallVector<int64_t> shape;
    for (int64_t p : *perm) {
      if (p < 0 || p >= int64_t(t->shape.size()))
        return n.error() << "perm entry " << p << " out of range";
      shape.push_back(t->shape[p]);
    }
    auto strides = stridesOf(t->shape);
    return n.setOutput(0, hostRemap(*t, shape, [&](ArrayRef<int64_t> idx) {
                         int64_t j = 0;
                         for (size_t d = 0; d < idx.size(); ++d)
                           j += idx[d] * strides[(*perm)[d]];
                         return j;
                       }));
  }
  auto x = n.input(0);
  if (failed(x))
    return failure();
  return done(
      n, n.createValue<TransposeOp>(*x, {n.named("perm", n.i64Array(*perm))}));
}

LogicalResult importConcat(NodeImporter &n) {
  auto first = n.inputType(0);
  auto axis = n.attrInt("axis", n.opset() < 4 ? 1 : 0);
  if (failed(first) || failed(axis))
    return failure();
  auto a = normalizeAxis(n, *axis, first->getRank());
  if (failed(a))
    return failure();
  SmallVector<const HostTensor *> known;
  SmallVector<Value> operands;
  bool allKnown = true;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    if (!n.hasInput(i))
      continue;
    const HostTensor *t = n.constInput(i);
    allKnown &= t != nullptr;
    known.push_back(t);
  }
  if (allKnown && !known.empty()) {
    HostTensor out;
    out.elementType = known[0]->elementType;
    out.shape = known[0]->shape;
    out.shape[*a] = 0;
    for (const HostTensor *t : known) {
      if (t->shape.size() != out.shape.size() ||
          t->elementType != out.elementType)
        return n.error() << "Concat inputs differ in rank or element type";
      out.shape[*a] += t->shape[*a];
    }
    if (out.numElements() <= kHostFoldLimit) {
      out.allocate();
      int64_t outer = product(ArrayRef<int64_t>(out.shape).take_front(*a));
      int64_t pos = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (const HostTensor *t : known) {
          int64_t chunk = product(ArrayRef<int64_t>(t->shape).drop_front(*a));
          for (int64_t k = 0; k < chunk; ++k, ++pos) {
            if (out.isFloat())
              out.floats[pos] = t->floats[o * chunk + k];
            else
              out.ints[pos] = t->ints[o * chunk + k];
          }
        }
      return n.setOutput(0, std::move(out));
    }
  }
  for (size_t i = 0; i < n.numInputs(); ++i) {
    if (!n.hasInput(i))
      continue;
    auto v = n.input(i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  for (Value v : operands)
    if (cast<RankedTensorType>(v.getType()).getRank() !=
        cast<RankedTensorType>(operands[0].getType()).getRank())
      return n.error() << "Concat inputs differ in rank: "
                       << operands[0].getType() << " and " << v.getType();
  // Inputs with no elements along the axis add nothing (exporters emit them
  // around dynamic shapes); keep them all when every input is such.
  SmallVector<Value> nonEmpty;
  for (Value v : operands)
    if (cast<RankedTensorType>(v.getType()).getDimSize(*a) != 0)
      nonEmpty.push_back(v);
  if (!nonEmpty.empty())
    operands = nonEmpty;
  if (operands.size() == 1)
    return n.setOutput(0, operands[0]);
  return done(n, n.createValue<ConcatOp>(operands, {n.namedI64("axis", *a)}));
}

LogicalResult importSplit(NodeImporter &n) {
  auto type = n.inputType(0);
  auto axis = n.attrInt("axis", 0);
  auto x = n.input(0);
  if (failed(type) || failed(axis) || failed(x))
    return failure();
  auto a = normalizeAxis(n, *axis, type->getRank());
  if (failed(a))
    return failure();
  int64_t dim = type->getDimSize(*a);
  SmallVector<int64_t> sizes;
  if (n.opset() < 13 && n.hasAttr("split")) {
    auto s = n.attrInts("split");
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (n.opset() >= 13 && n.hasInput(1)) {
    auto s = n.constInts(1, "split");
    if (failed(s))
      return failure();
    sizes = *s;
  } else {
    int64_t parts = n.numOutputs();
    if (n.hasAttr("num_outputs")) {
      auto no = n.attrInt("num_outputs", parts);
      if (failed(no))
        return failure();
      parts = *no;
    }
    if (parts <= 0)
      return n.error() << "Split into " << parts << " outputs";
    // Equal chunks; with num_outputs the last may be smaller.
    int64_t chunk = (dim + parts - 1) / parts;
    if (!n.hasAttr("num_outputs") && dim % parts)
      return n.error() << "dim " << dim << " does not split evenly into "
                       << parts << " outputs";
    for (int64_t i = 0, left = dim; i < parts; ++i) {
      sizes.push_back(std::min(chunk, left));
      left -= sizes.back();
    }
  }
  if (sizes.size() != n.numOutputs())
    return n.error() << "Split gives " << sizes.size() << " sizes for "
                     << n.numOutputs() << " outputs";
  if (const HostTensor *t = n.constInput(0)) {
    int64_t total = 0;
    for (int64_t sz : sizes)
      total += sz;
    if (total != dim)
      return n.error() << "split sizes add up to " << total << ", not " << dim;
    auto strides = stridesOf(t->shape);
    int64_t offset = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      SmallVector<int64_t> shape(t->shape);
      shape[*a] = sizes[i];
      if (failed(n.setOutput(
              i, hostRemap(*t, shape, [&](ArrayRef<int64_t> idx) {
                int64_t j = 0;
                for (size_t d = 0; d < idx.size(); ++d)
                  j += (idx[d] + (int64_t(d) == *a ? offset : 0)) * strides[d];
                return j;
              }))))
        return failure();
      offset += sizes[i];
    }
    return success();
  }
  auto op = n.create<SplitOp>(
      *x, {n.namedI64("axis", *a), n.named("sizes", n.i64Array(sizes))});
  if (failed(op))
    return failure();
  for (size_t i = 0; i < sizes.size(); ++i)
    if (failed(n.setOutput(i, (*op)->getResult(i))))
      return failure();
  return success();
}

LogicalResult importSlice(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  int64_t rank = type->getRank();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    auto s = n.attrInts("starts"), e = n.attrInts("ends"),
         a = n.attrInts("axes");
    if (failed(s) || failed(e) || failed(a))
      return failure();
    starts = *s;
    ends = *e;
    axes = *a;
  } else {
    auto s = n.constInts(1, "starts"), e = n.constInts(2, "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (n.hasInput(3)) {
      auto a = n.constInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (n.hasInput(4)) {
      auto st = n.constInts(4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return n.error() << "Slice starts, ends, axes and steps differ in length";
  SmallVector<int64_t> outStarts(rank, 0), sizes(type->getShape()),
      outSteps(rank, 1);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    auto ax = normalizeAxis(n, axes[i], rank);
    if (failed(ax))
      return failure();
    if (seen[*ax])
      return n.error() << "Slice axes repeat dim " << *ax;
    seen[*ax] = true;
    int64_t dim = type->getDimSize(*ax), step = steps[i];
    if (step == 0)
      return n.error() << "Slice step is 0";
    auto clampIdx = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0)
        v = v <= std::numeric_limits<int64_t>::min() / 2 ? lo : v + dim;
      return std::clamp(v, lo, hi);
    };
    int64_t start, end, count;
    if (step > 0) {
      start = clampIdx(starts[i], 0, dim);
      end = clampIdx(ends[i], 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else if (dim == 0) {
      start = end = count = 0; // no clamping range: nothing to take
    } else {
      // ONNX: a start steps back from [0, dim - 1] (INT64_MIN: from 0, one
      // element), an end down to -1 (exclusive: through element 0).
      start = clampIdx(starts[i], 0, dim - 1);
      end = clampIdx(ends[i], -1, dim - 1);
      count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
    }
    outStarts[*ax] = count ? start : 0;
    sizes[*ax] = count;
    outSteps[*ax] = step;
  }
  if (const HostTensor *t = n.constInput(0);
      t && product(sizes) <= kHostFoldLimit) {
    auto strides = stridesOf(t->shape);
    return n.setOutput(0, hostRemap(*t, sizes, [&](ArrayRef<int64_t> idx) {
                         int64_t j = 0;
                         for (int64_t d = 0; d < rank; ++d)
                           j += (outStarts[d] + idx[d] * outSteps[d]) *
                                strides[d];
                         return j;
                       }));
  }
  auto x = n.input(0);
  if (failed(x))
    return failure();
  if (ArrayRef<int64_t>(sizes) == type->getShape() &&
      llvm::all_of(outSteps, [](int64_t s) { return s == 1; }))
    return n.setOutput(0, *x);
  return done(
      n, n.createValue<SliceOp>(*x, {n.named("starts", n.i64Array(outStarts)),
                                     n.named("sizes", n.i64Array(sizes)),
                                     n.named("steps", n.i64Array(outSteps))}));
}

LogicalResult importGather(NodeImporter &n) {
  auto type = n.inputType(0), idxType = n.inputType(1);
  auto axis = n.attrInt("axis", 0);
  if (failed(type) || failed(idxType) || failed(axis))
    return failure();
  auto a = normalizeAxis(n, *axis, type->getRank());
  if (failed(a))
    return failure();
  const HostTensor *data = n.constInput(0), *indices = n.constInput(1);
  if (data && indices && !indices->isFloat()) {
    SmallVector<int64_t> shape(data->shape.begin(), data->shape.begin() + *a);
    llvm::append_range(shape, indices->shape);
    shape.append(data->shape.begin() + *a + 1, data->shape.end());
    if (product(shape) <= kHostFoldLimit) {
      int64_t dim = data->shape[*a];
      for (int64_t v : indices->ints)
        if (v < -dim || v >= dim)
          return n.error() << "Gather index " << v << " out of range for dim "
                           << dim;
      auto strides = stridesOf(data->shape);
      auto idxStrides = stridesOf(indices->shape);
      size_t q = indices->shape.size();
      return n.setOutput(0, hostRemap(*data, shape, [&](ArrayRef<int64_t> idx) {
                           int64_t j = 0, k = 0;
                           for (int64_t d = 0; d < *a; ++d)
                             j += idx[d] * strides[d];
                           for (size_t d = 0; d < q; ++d)
                             k += idx[*a + d] * idxStrides[d];
                           int64_t v = indices->ints[k];
                           j += (v < 0 ? v + dim : v) * strides[*a];
                           for (size_t d = *a + 1; d < data->shape.size(); ++d)
                             j += idx[d - 1 + q] * strides[d];
                           return j;
                         }));
    }
  }
  auto x = n.input(0), idx = n.input(1);
  if (failed(x) || failed(idx))
    return failure();
  return done(n, n.createValue<GatherOp>({*x, *idx}, {n.namedI64("axis", *a)}));
}

/// ReverseSequence(x, sequence_lens): along time_axis, the first
/// sequence_lens[b] elements of each batch b reversed, the rest kept. A
/// GatherElements of index t < len[b] ? len[b] - 1 - t : t.
LogicalResult importReverseSequence(NodeImporter &n) {
  auto type = n.inputType(0), lensType = n.inputType(1);
  auto x = n.input(0), lens = n.input(1);
  auto batchAxis = n.attrInt("batch_axis", 1),
       timeAxis = n.attrInt("time_axis", 0);
  if (failed(type) || failed(lensType) || failed(x) || failed(lens) ||
      failed(batchAxis) || failed(timeAxis))
    return failure();
  int64_t ba = *batchAxis, ta = *timeAxis, rank = type->getRank();
  if (rank < 2 || ba == ta || ba < 0 || ba > 1 || ta < 0 || ta > 1)
    return n.error() << "ReverseSequence needs rank >= 2 and batch_axis, "
                        "time_axis one each of 0 and 1";
  int64_t batch = type->getDimSize(ba), time = type->getDimSize(ta);
  if (lensType->getRank() != 1 || lensType->getDimSize(0) != batch)
    return n.error() << "sequence_lens " << *lensType << " must hold " << batch
                     << " lengths";
  Type i64 = n.builder().getI64Type();
  SmallVector<int64_t> timeShape(rank, 1), batchShape(rank, 1);
  timeShape[ta] = time;
  batchShape[ba] = batch;
  std::vector<int64_t> iota(time);
  for (int64_t t = 0; t < time; ++t)
    iota[t] = t;
  Value t = n.constant(hostI64(timeShape, iota, n.ctx()));
  auto len = n.createValue<CastOp>(*lens, {n.named("to", TypeAttr::get(i64))});
  if (failed(len))
    return failure();
  len = n.reshape(*len, batchShape);
  if (failed(len))
    return failure();
  auto last = n.createValue<SubOp>({*len, n.scalarConstant(i64, 1)});
  if (failed(last))
    return failure();
  auto reversed = n.createValue<SubOp>({*last, t});
  auto inside = n.createValue<LessOp>({t, *len});
  if (failed(reversed) || failed(inside))
    return failure();
  auto index = n.createValue<SelectOp>({*inside, *reversed, t});
  if (failed(index))
    return failure();
  auto full = n.createValue<ExpandOp>(
      *index, {n.named("shape", n.i64Array(type->getShape()))});
  if (failed(full))
    return failure();
  return done(n, n.createValue<GatherElementsOp>({*x, *full},
                                                 {n.namedI64("axis", ta)}));
}

LogicalResult importGatherElements(NodeImporter &n) {
  auto type = n.inputType(0);
  auto axis = n.attrInt("axis", 0);
  auto x = n.input(0), idx = n.input(1);
  if (failed(type) || failed(axis) || failed(x) || failed(idx))
    return failure();
  auto a = normalizeAxis(n, *axis, type->getRank());
  if (failed(a))
    return failure();
  return done(
      n, n.createValue<GatherElementsOp>({*x, *idx}, {n.namedI64("axis", *a)}));
}

LogicalResult importGatherND(NodeImporter &n) {
  auto b = n.attrInt("batch_dims", 0);
  auto x = n.input(0), idx = n.input(1);
  if (failed(b) || failed(x) || failed(idx))
    return failure();
  return done(
      n, n.createValue<GatherNDOp>({*x, *idx}, {n.namedI64("batch_dims", *b)}));
}

LogicalResult importScatterElements(NodeImporter &n) {
  auto type = n.inputType(0);
  auto axis = n.attrInt("axis", 0);
  auto reduction = n.attrString("reduction", "none");
  auto x = n.input(0), idx = n.input(1), upd = n.input(2);
  if (failed(type) || failed(axis) || failed(reduction) || failed(x) ||
      failed(idx) || failed(upd))
    return failure();
  auto a = normalizeAxis(n, *axis, type->getRank());
  if (failed(a))
    return failure();
  return done(n, n.createValue<ScatterElementsOp>(
                     {*x, *idx, *upd}, {n.namedI64("axis", *a),
                                        n.namedStr("reduction", *reduction)}));
}

/// The reductions of the scatter ops.
constexpr llvm::StringLiteral kScatterReductions[] = {"none", "add", "mul",
                                                      "max", "min"};

/// `acc` combined with `v` by a scatter's reduction: integers wrap (in
/// unsigned arithmetic, the caller narrows), NaN wins a float max or min.
template <typename T> T combineKnown(StringRef reduction, T acc, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if ((reduction == "max" || reduction == "min") && (acc != acc || v != v))
      return acc + v;
    if (reduction == "add")
      return acc + v;
    if (reduction == "mul")
      return acc * v;
  } else {
    if (reduction == "add")
      return T(uint64_t(acc) + uint64_t(v));
    if (reduction == "mul")
      return T(uint64_t(acc) * uint64_t(v));
  }
  if (reduction == "max")
    return std::max(acc, v);
  if (reduction == "min")
    return std::min(acc, v);
  return v; // none: the last write wins
}

/// ScatterND of tensors known at import time (Swin's shifted-window
/// attention masks are built so, from constants), or nullopt where the
/// shapes do not fit (the op's verifier then names the error). Indices
/// wrap and clamp as the lowering's do.
std::optional<HostTensor> foldScatterND(const HostTensor &data,
                                        const HostTensor &idx,
                                        const HostTensor &upd,
                                        StringRef reduction) {
  size_t q = idx.shape.size();
  if (q == 0 || idx.isFloat() || upd.elementType != data.elementType ||
      data.numElements() > kHostFoldLimit)
    return std::nullopt;
  // Unsigned and bool elements with a reduction are left to the kernel
  // (its max and min compare them unsigned; bool adds wrap).
  if (reduction != "none" && !data.isFloat() &&
      (data.elementType.isUnsignedInteger() ||
       data.elementType.getIntOrFloatBitWidth() == 1))
    return std::nullopt;
  int64_t k = idx.shape.back();
  if (k < 1 || k > int64_t(data.shape.size()))
    return std::nullopt;
  SmallVector<int64_t> uShape(idx.shape.begin(), idx.shape.end() - 1);
  uShape.append(data.shape.begin() + k, data.shape.end());
  if (upd.shape != uShape)
    return std::nullopt;
  HostTensor out = data;
  if (out.numElements() == 0)
    return out;
  auto strides = stridesOf(data.shape);
  int64_t slice = strides[k - 1], count = idx.numElements() / k;
  for (int64_t j = 0; j < count; ++j) {
    int64_t at = 0;
    for (int64_t c = 0; c < k; ++c) {
      int64_t dim = data.shape[c], i = idx.ints[j * k + c];
      at += std::clamp(i < 0 ? i + dim : i, int64_t(0), dim - 1) * strides[c];
    }
    for (int64_t e = at, u = j * slice; e < at + slice; ++e, ++u) {
      if (out.isFloat())
        out.floats[e] = combineKnown(reduction, out.floats[e], upd.floats[u]);
      else
        out.ints[e] =
            out.wrapInt(combineKnown(reduction, out.ints[e], upd.ints[u]));
    }
  }
  return out;
}

LogicalResult importScatterND(NodeImporter &n) {
  auto reduction = n.attrString("reduction", "none");
  if (failed(reduction))
    return failure();
  // Folded only with a reduction the op accepts (its verifier names any
  // other), the indices first (no float blob read for nothing).
  const HostTensor *idxKnown = n.constInput(1);
  if (idxKnown && llvm::is_contained(kScatterReductions, *reduction)) {
    const HostTensor *x = n.constInput(0, kHostFoldLimit, /*floatsToo=*/true);
    const HostTensor *u = x ? n.constInput(2, kHostFoldLimit, true) : nullptr;
    if (u)
      if (auto out = foldScatterND(*x, *idxKnown, *u, *reduction))
        return n.setOutput(0, std::move(*out));
  }
  auto x = n.input(0), idx = n.input(1), upd = n.input(2);
  if (failed(x) || failed(idx) || failed(upd))
    return failure();
  return done(n, n.createValue<ScatterNDOp>(
                     {*x, *idx, *upd}, {n.namedStr("reduction", *reduction)}));
}

LogicalResult importExpand(NodeImporter &n) {
  auto type = n.inputType(0);
  auto shape = n.constInts(1, "shape");
  if (failed(type) || failed(shape))
    return failure();
  auto result = broadcastShapes(type->getShape(), *shape);
  if (!result)
    return n.error() << "cannot expand " << *type << " to shape ["
                     << llvm::make_range(shape->begin(), shape->end()) << "]";
  if (const HostTensor *t = n.constInput(0);
      t && product(*result) <= kHostFoldLimit) {
    auto strides = stridesOf(t->shape);
    size_t offset = result->size() - t->shape.size();
    return n.setOutput(0, hostRemap(*t, *result, [&](ArrayRef<int64_t> idx) {
                         int64_t j = 0;
                         for (size_t d = 0; d < t->shape.size(); ++d)
                           if (t->shape[d] != 1)
                             j += idx[d + offset] * strides[d];
                         return j;
                       }));
  }
  auto x = n.input(0);
  if (failed(x))
    return failure();
  if (ArrayRef<int64_t>(*result) == type->getShape())
    return n.setOutput(0, *x);
  return done(
      n, n.createValue<ExpandOp>(*x, {n.named("shape", n.i64Array(*result))}));
}

LogicalResult importTile(NodeImporter &n) {
  auto repeats = n.constInts(1, "repeats");
  if (failed(repeats))
    return failure();
  if (const HostTensor *t = n.constInput(0);
      t && repeats->size() == t->shape.size()) {
    SmallVector<int64_t> shape;
    for (size_t d = 0; d < t->shape.size(); ++d) {
      if ((*repeats)[d] < 0)
        return n.error() << "Tile repeats must be non-negative";
      shape.push_back(t->shape[d] * (*repeats)[d]);
    }
    if (product(shape) <= kHostFoldLimit) {
      auto strides = stridesOf(t->shape);
      return n.setOutput(0, hostRemap(*t, shape, [&](ArrayRef<int64_t> idx) {
                           int64_t j = 0;
                           for (size_t d = 0; d < idx.size(); ++d)
                             j += (idx[d] % t->shape[d]) * strides[d];
                           return j;
                         }));
    }
  }
  auto x = n.input(0);
  if (failed(x))
    return failure();
  return done(
      n, n.createValue<TileOp>(*x, {n.named("repeats", n.i64Array(*repeats))}));
}

LogicalResult importPad(NodeImporter &n) {
  auto type = n.inputType(0);
  auto mode = n.attrString("mode", "constant");
  if (failed(type) || failed(mode))
    return failure();
  int64_t rank = type->getRank();
  SmallVector<int64_t> pads;
  double value = 0;
  if (n.opset() < 11) {
    auto p = n.attrInts(n.hasAttr("paddings") ? "paddings" : "pads");
    auto v = n.attrFloat("value", 0);
    if (failed(p) || failed(v))
      return failure();
    pads = *p;
    value = *v;
  } else {
    auto p = n.constInts(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (n.hasInput(2)) {
      auto c = n.requireConstInput(2, "constant_value");
      if (failed(c))
        return failure();
      if ((*c)->numElements() > 0)
        value = (*c)->getDouble(0);
    }
    if (n.hasInput(3)) {
      auto axes = n.constInts(3, "axes");
      if (failed(axes))
        return failure();
      if (pads.size() != 2 * axes->size())
        return n.error() << "Pad needs 2 pads per axis";
      SmallVector<int64_t> full(2 * rank, 0);
      for (auto [i, ax] : llvm::enumerate(*axes)) {
        auto a = normalizeAxis(n, ax, rank);
        if (failed(a))
          return failure();
        full[*a] = pads[i];
        full[*a + rank] = pads[i + axes->size()];
      }
      pads = full;
    }
  }
  if (int64_t(pads.size()) != 2 * rank)
    return n.error() << "Pad needs " << 2 * rank << " pads for rank " << rank
                     << ", got " << pads.size();
  auto x = n.input(0);
  if (failed(x))
    return failure();
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return n.setOutput(0, *x);
  return done(
      n, n.createValue<PadOp>(
             *x, {n.named("pads", n.i64Array(pads)), n.namedStr("mode", *mode),
                  n.named("value", n.builder().getF64FloatAttr(value))}));
}

/// Resize's sizes given for `axes` as sizes of every dim, adjusted by
/// keep_aspect_ratio_policy (which then sets the scales too).
LogicalResult expandResizeSizes(NodeImporter &n, RankedTensorType type,
                                ArrayRef<int64_t> axes, StringRef policy,
                                SmallVectorImpl<int64_t> &sizes,
                                SmallVectorImpl<double> &scales) {
  int64_t rank = type.getRank();
  if (sizes.size() != axes.size())
    return n.error() << "Resize sizes need one value per axis";
  SmallVector<int64_t> full(type.getShape());
  for (auto [i, ax] : llvm::enumerate(axes)) {
    auto na = normalizeAxis(n, ax, rank);
    if (failed(na))
      return failure();
    full[*na] = sizes[i];
  }
  if (policy != "stretch") {
    double s = policy == "not_larger" ? 1e300 : 0;
    for (int64_t ax : axes) {
      int64_t a2 = ax < 0 ? ax + rank : ax;
      double r = double(full[a2]) / type.getDimSize(a2);
      s = policy == "not_larger" ? std::min(s, r) : std::max(s, r);
    }
    for (int64_t ax : axes) {
      int64_t a2 = ax < 0 ? ax + rank : ax;
      full[a2] = saturatingInt(std::round(s * type.getDimSize(a2)));
    }
    scales.assign(rank, 1.0);
    for (int64_t ax : axes)
      scales[ax < 0 ? ax + rank : ax] = s;
  }
  sizes.assign(full.begin(), full.end());
  return success();
}

/// Resize (opset 10+) and Upsample: output sizes and scales resolved here.
LogicalResult importResize(NodeImporter &n, bool upsample) {
  auto type = n.inputType(0);
  auto mode = n.attrString("mode", "nearest");
  if (failed(type) || failed(mode))
    return failure();
  int64_t rank = type->getRank();
  std::string m =
      *mode == "bilinear" || *mode == "trilinear" ? "linear" : *mode;
  std::string ctm = "asymmetric", nearest = "floor";
  float cubicA = -0.75f, extrapolation = 0;
  bool exclude = false;
  SmallVector<double> scales;
  SmallVector<int64_t> sizes, axes;
  SmallVector<double> roi;
  bool legacy = upsample || n.opset() < 11;
  if (upsample && n.opset() < 9) {
    auto s = n.attrFloats("scales");
    if (failed(s))
      return failure();
    scales.assign(s->begin(), s->end());
  } else if (legacy) {
    auto s = n.requireConstInput(1, "scales");
    if (failed(s))
      return failure();
    for (int64_t i = 0; i < (*s)->numElements(); ++i)
      scales.push_back((*s)->getDouble(i));
  } else {
    auto c = n.attrString("coordinate_transformation_mode", "half_pixel");
    auto nm = n.attrString("nearest_mode", "round_prefer_floor");
    auto a = n.attrFloat("cubic_coeff_a", -0.75f);
    auto ex = n.attrInt("exclude_outside", 0);
    auto ev = n.attrFloat("extrapolation_value", 0);
    auto anti = n.attrInt("antialias", 0);
    auto ax = n.attrInts("axes");
    auto policy = n.attrString("keep_aspect_ratio_policy", "stretch");
    if (failed(c) || failed(nm) || failed(a) || failed(ex) || failed(ev) ||
        failed(anti) || failed(ax) || failed(policy))
      return failure();
    if (*anti)
      return n.error() << "antialias=1 is not supported";
    ctm = *c;
    nearest = *nm;
    cubicA = *a;
    exclude = *ex;
    extrapolation = *ev;
    axes = *ax;
    // roi matters only to tf_crop_and_resize, which needs it known.
    if (n.hasInput(1) && ctm == "tf_crop_and_resize") {
      auto r = n.requireConstInput(1, "roi");
      if (failed(r))
        return failure();
      for (int64_t i = 0; i < (*r)->numElements(); ++i)
        roi.push_back((*r)->getDouble(i));
    }
    if (n.hasInput(3)) {
      auto s = n.constInts(3, "sizes");
      if (failed(s))
        return failure();
      sizes = *s;
    }
    if (sizes.empty() && n.hasInput(2)) {
      auto s = n.requireConstInput(2, "scales");
      if (failed(s))
        return failure();
      for (int64_t i = 0; i < (*s)->numElements(); ++i)
        scales.push_back((*s)->getDouble(i));
    }
    if (scales.empty() && sizes.empty())
      return n.error() << "Resize needs scales or sizes";
    if (axes.empty())
      for (int64_t d = 0; d < rank; ++d)
        axes.push_back(d);
    // Expand per-axis values to every dim.
    auto expandTo = [&](auto &vals, auto fill) -> LogicalResult {
      if (vals.empty())
        return success();
      if (vals.size() != axes.size())
        return n.error() << "Resize scales/sizes need one value per axis";
      std::decay_t<decltype(vals)> full(rank, fill);
      for (auto [i, ax] : llvm::enumerate(axes)) {
        auto na = normalizeAxis(n, ax, rank);
        if (failed(na))
          return failure();
        full[*na] = vals[i];
      }
      vals = full;
      return success();
    };
    if (!sizes.empty()) {
      if (failed(expandResizeSizes(n, *type, axes, *policy, sizes, scales)))
        return failure();
    } else if (failed(expandTo(scales, 1.0))) {
      return failure();
    }
  }
  if (sizes.empty()) {
    if (int64_t(scales.size()) != rank)
      return n.error() << "Resize needs " << rank << " scales, got "
                       << scales.size();
    for (int64_t d = 0; d < rank; ++d) {
      // tf_crop_and_resize: the spec multiplies by the roi extent, but
      // onnxruntime, ONNX's reference and shape inference do not
      // (onnx/onnx#5783); follow them so outputs match what users compare to.
      if (scales[d] <= 0)
        return n.error() << "Resize scale must be positive";
      sizes.push_back(
          saturatingInt(std::floor(type->getDimSize(d) * scales[d])));
    }
  } else if (scales.empty()) {
    for (int64_t d = 0; d < rank; ++d)
      scales.push_back(double(sizes[d]) / type->getDimSize(d));
  }
  if (int64_t(sizes.size()) != rank)
    return n.error() << "Resize needs " << rank << " sizes, got "
                     << sizes.size();
  auto x = n.input(0);
  if (failed(x))
    return failure();
  SmallVector<NamedAttribute> attrs{
      n.named("sizes", n.i64Array(sizes)),
      n.named("scales", n.builder().getF64ArrayAttr(scales)),
      n.namedStr("mode", m),
      n.namedStr("coordinate_transformation_mode", ctm),
      n.namedStr("nearest_mode", nearest),
      n.namedF32("cubic_coeff_a", cubicA),
      n.namedBool("exclude_outside", exclude),
      n.namedF32("extrapolation_value", extrapolation)};
  if (!roi.empty())
    attrs.push_back(n.named("roi", n.builder().getF64ArrayAttr(roi)));
  return done(n, n.createValue<ResizeOp>(*x, attrs));
}

/// DepthToSpace / SpaceToDepth as reshape -> transpose -> reshape.
LogicalResult importDepthSpace(NodeImporter &n, bool toSpace) {
  auto type = n.inputType(0);
  auto block = n.attrInt("blocksize", 0);
  auto mode = n.attrString("mode", "DCR");
  auto x = n.input(0);
  if (failed(type) || failed(block) || failed(mode) || failed(x))
    return failure();
  if (type->getRank() != 4 || *block <= 0)
    return n.error() << "needs a 4-D input and a positive blocksize";
  int64_t b = *block, N = type->getDimSize(0), C = type->getDimSize(1),
          H = type->getDimSize(2), W = type->getDimSize(3);
  SmallVector<int64_t> first, perm, last;
  if (toSpace) {
    if (C % (b * b))
      return n.error() << "channels " << C << " not divisible by blocksize^2";
    if (*mode == "CRD") {
      first = {N, C / (b * b), b, b, H, W};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      first = {N, b, b, C / (b * b), H, W};
      perm = {0, 3, 4, 1, 5, 2};
    }
    last = {N, C / (b * b), H * b, W * b};
  } else {
    if (H % b || W % b)
      return n.error() << "spatial dims not divisible by blocksize";
    first = {N, C, H / b, b, W / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    last = {N, C * b * b, H / b, W / b};
  }
  auto r = n.reshape(*x, first);
  if (failed(r))
    return failure();
  auto t = n.createValue<TransposeOp>(*r, {n.named("perm", n.i64Array(perm))});
  if (failed(t))
    return failure();
  return done(n, n.reshape(*t, last));
}

LogicalResult importTrilu(NodeImporter &n) {
  auto upper = n.attrInt("upper", 1);
  auto x = n.input(0);
  if (failed(upper) || failed(x))
    return failure();
  int64_t k = 0;
  if (n.hasInput(1)) {
    auto kv = n.constInts(1, "k");
    if (failed(kv))
      return failure();
    if (kv->size() != 1)
      return n.error() << "Trilu k must be a scalar";
    k = (*kv)[0];
  }
  return done(n, n.createValue<TriluOp>(
                     *x, {n.namedBool("upper", *upper), n.namedI64("k", k)}));
}

LogicalResult importOneHot(NodeImporter &n) {
  auto idxType = n.inputType(0);
  auto depth = n.requireConstInput(1, "depth");
  auto axis = n.attrInt("axis", -1);
  auto idx = n.input(0), values = n.input(2);
  if (failed(idxType) || failed(depth) || failed(axis) || failed(idx) ||
      failed(values))
    return failure();
  if ((*depth)->numElements() != 1)
    return n.error() << "OneHot depth must be a scalar";
  auto a = normalizeAxis(n, *axis, idxType->getRank() + 1);
  if (failed(a))
    return failure();
  Value indices = *idx;
  Type et = idxType->getElementType();
  if (!et.isInteger(64) && !et.isInteger(32)) {
    auto c = n.createValue<CastOp>(
        indices, {n.named("to", TypeAttr::get(n.builder().getI64Type()))});
    if (failed(c))
      return failure();
    indices = *c;
  }
  return done(n, n.createValue<OneHotOp>(
                     {indices, *values},
                     {n.namedI64("depth", int64_t((*depth)->getDouble(0))),
                      n.namedI64("axis", *a)}));
}

//===----------------------------------------------------------------------===//
// Nodes that are always constants at import
//===----------------------------------------------------------------------===//

LogicalResult importShape(NodeImporter &n) {
  auto type = n.inputType(0);
  auto start = n.attrInt("start", 0);
  auto end = n.attrInt("end", INT64_MAX);
  if (failed(type) || failed(start) || failed(end))
    return failure();
  int64_t rank = type->getRank();
  auto clampIdx = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t s = clampIdx(*start), e = clampIdx(*end);
  SmallVector<int64_t> dims;
  for (int64_t d = s; d < e; ++d)
    dims.push_back(type->getDimSize(d));
  return n.setOutput(0, hostI64({int64_t(dims.size())}, dims, n.ctx()));
}

LogicalResult importSize(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  return n.setOutput(0, hostI64({}, {type->getNumElements()}, n.ctx()));
}

LogicalResult importConstant(NodeImporter &n) {
  auto kind = [&](const char *name) { return n.attr(name); };
  if (kind("sparse_value") || kind("value_string") || kind("value_strings"))
    return n.error() << "sparse and string constants are not supported";
  if (const onnx::AttributeProto *a = kind("value")) {
    if (!a->has_t())
      return n.error() << "attribute 'value' must be a tensor";
    return n.setOutputTensor(0, const_cast<onnx::TensorProto &>(a->t()));
  }
  HostTensor t;
  if (const onnx::AttributeProto *a = kind("value_float")) {
    t.elementType = n.builder().getF32Type();
    t.floats = {a->f()};
  } else if (const onnx::AttributeProto *a = kind("value_floats")) {
    t.elementType = n.builder().getF32Type();
    t.floats.assign(a->floats().begin(), a->floats().end());
    t.shape = {int64_t(t.floats.size())};
  } else if (const onnx::AttributeProto *a = kind("value_int")) {
    t.elementType = n.builder().getI64Type();
    t.ints = {a->i()};
  } else if (const onnx::AttributeProto *a = kind("value_ints")) {
    t.elementType = n.builder().getI64Type();
    t.ints.assign(a->ints().begin(), a->ints().end());
    t.shape = {int64_t(t.ints.size())};
  } else {
    return n.error() << "Constant has no value attribute";
  }
  return n.setOutput(0, std::move(t));
}

LogicalResult importConstantOfShape(NodeImporter &n) {
  auto shape = n.constInts(0, "shape");
  if (failed(shape))
    return failure();
  for (int64_t d : *shape)
    if (d < 0)
      return n.error() << "ConstantOfShape with a negative dim";
  HostTensor fill;
  fill.elementType = n.builder().getF32Type();
  fill.floats = {0.0};
  if (const onnx::AttributeProto *a = n.attr("value")) {
    if (!a->has_t())
      return n.error() << "attribute 'value' must be a tensor";
    auto decoded = n.decodeTensor(a->t());
    if (failed(decoded))
      return failure();
    if (decoded->numElements() != 1)
      return n.error() << "ConstantOfShape value must hold one element";
    fill = std::move(*decoded);
  }
  HostTensor out;
  out.shape = *shape;
  out.elementType = fill.elementType;
  if (out.numElements() <= kHostFoldLimit) {
    out.allocate();
    for (int64_t i = 0; i < out.numElements(); ++i)
      out.set(i, fill.isFloat() ? fill.floats[0] : 0,
              fill.isFloat() ? 0 : fill.ints[0]);
    return n.setOutput(0, std::move(out));
  }
  // Large fills stay a splat in the IR.
  fill.shape = {};
  auto splat = DenseElementsAttr::get(out.type(),
                                      fill.toAttr().getSplatValue<Attribute>());
  return done(n, n.createValue<ConstantOp>({}, {n.named("value", splat)}));
}

LogicalResult importRange(NodeImporter &n) {
  auto start = n.requireConstInput(0, "start"),
       limit = n.requireConstInput(1, "limit"),
       delta = n.requireConstInput(2, "delta");
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  if ((*start)->numElements() != 1 || (*limit)->numElements() != 1 ||
      (*delta)->numElements() != 1)
    return n.error() << "Range inputs must be scalars";
  HostTensor out;
  out.elementType = (*start)->elementType;
  double s = (*start)->getDouble(0), l = (*limit)->getDouble(0),
         d = (*delta)->getDouble(0);
  if (d == 0)
    return n.error() << "Range delta is 0";
  int64_t count = std::max<int64_t>(saturatingInt(std::ceil((l - s) / d)), 0);
  if (!out.isFloat()) {
    int64_t si = (*start)->getInt(0), li = (*limit)->getInt(0),
            di = (*delta)->getInt(0);
    // In 128 bits: limits near the int64 range's ends overflow 64.
    __int128 c = (__int128(li) - si + di + (di > 0 ? -1 : 1)) / di;
    count = c < 0 ? 0 : c > INT64_MAX ? INT64_MAX : int64_t(c);
  }
  out.shape = {count};
  if (count > kHostFoldLimit * 16)
    return n.error() << "Range of " << count << " elements is too large";
  out.allocate();
  for (int64_t i = 0; i < count; ++i)
    out.set(i, s + i * d,
            int64_t(uint64_t((*start)->getInt(0)) +
                    uint64_t(i) * uint64_t((*delta)->getInt(0))));
  return n.setOutput(0, std::move(out));
}

LogicalResult importEyeLike(NodeImporter &n) {
  auto type = n.inputType(0);
  auto k = n.attrInt("k", 0);
  if (failed(type) || failed(k))
    return failure();
  if (type->getRank() != 2)
    return n.error() << "EyeLike needs a 2-D input";
  Type element = type->getElementType();
  if (n.hasAttr("dtype")) {
    auto dt = n.attrInt("dtype", 0);
    if (failed(dt))
      return failure();
    element = convertElementType(n.ctx(), int32_t(*dt));
    if (!element)
      return n.error() << "unsupported dtype " << *dt;
  }
  HostTensor out;
  out.shape.assign(type->getShape().begin(), type->getShape().end());
  out.elementType = element;
  if (out.numElements() > kHostFoldLimit * 16)
    return n.error() << "EyeLike output is too large";
  out.allocate();
  for (int64_t r = 0; r < out.shape[0]; ++r) {
    int64_t c = r + *k;
    if (c >= 0 && c < out.shape[1])
      out.set(r * out.shape[1] + c, 1.0, 1);
  }
  return n.setOutput(0, std::move(out));
}

} // namespace

void registerTensorHandlers(HandlerMap &m) {
  m["ReduceSum"] = [](NodeImporter &n) {
    return importReduce<ReduceSumOp>(n, 13);
  };
  m["ReduceMean"] = [](NodeImporter &n) {
    return importReduce<ReduceMeanOp>(n, 18);
  };
  m["ReduceMax"] = [](NodeImporter &n) {
    return importReduce<ReduceMaxOp>(n, 18);
  };
  m["ReduceMin"] = [](NodeImporter &n) {
    return importReduce<ReduceMinOp>(n, 18);
  };
  m["ReduceProd"] = [](NodeImporter &n) {
    return importReduce<ReduceProdOp>(n, 18);
  };
  m["ReduceL1"] = [](NodeImporter &n) {
    return importReduce<ReduceL1Op>(n, 18);
  };
  m["ReduceL2"] = [](NodeImporter &n) {
    return importReduce<ReduceL2Op>(n, 18);
  };
  m["ReduceLogSum"] = [](NodeImporter &n) {
    return importReduce<ReduceLogSumOp>(n, 18);
  };
  m["ReduceLogSumExp"] = [](NodeImporter &n) {
    return importReduce<ReduceLogSumExpOp>(n, 18);
  };
  m["ReduceSumSquare"] = [](NodeImporter &n) {
    return importReduce<ReduceSumSquareOp>(n, 18);
  };
  m["ArgMax"] = importArgReduce<ArgMaxOp>;
  m["ArgMin"] = importArgReduce<ArgMinOp>;
  m["Softmax"] = importSoftmax<SoftmaxOp>;
  m["LogSoftmax"] = importSoftmax<LogSoftmaxOp>;
  m["Hardmax"] = importSoftmax<HardmaxOp>;
  m["CumSum"] = importCumSum;
  m["TopK"] = importTopK;
  m["Reshape"] = importReshape;
  m["Flatten"] = importFlatten;
  m["Squeeze"] = importSqueeze;
  m["Unsqueeze"] = importUnsqueeze;
  m["Transpose"] = importTranspose;
  m["Concat"] = importConcat;
  m["Split"] = importSplit;
  m["Slice"] = importSlice;
  m["Gather"] = importGather;
  m["ReverseSequence"] = importReverseSequence;
  m["GatherElements"] = importGatherElements;
  m["GatherND"] = importGatherND;
  m["ScatterElements"] = importScatterElements;
  m["Scatter"] = importScatterElements;
  m["ScatterND"] = importScatterND;
  m["Expand"] = importExpand;
  m["Tile"] = importTile;
  m["Pad"] = importPad;
  m["Resize"] = [](NodeImporter &n) { return importResize(n, false); };
  m["Upsample"] = [](NodeImporter &n) { return importResize(n, true); };
  m["DepthToSpace"] = [](NodeImporter &n) { return importDepthSpace(n, true); };
  m["SpaceToDepth"] = [](NodeImporter &n) {
    return importDepthSpace(n, false);
  };
  m["Trilu"] = importTrilu;
  m["OneHot"] = importOneHot;
  m["Shape"] = importShape;
  m["Size"] = importSize;
  m["Constant"] = importConstant;
  m["ConstantOfShape"] = importConstantOfShape;
  m["Range"] = importRange;
  m["EyeLike"] = importEyeLike;
}

} // namespace ign::import
