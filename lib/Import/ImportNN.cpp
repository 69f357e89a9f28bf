//===- ImportNN.cpp - contractions, normalization, pooling, recurrent -----===//

#include "ImporterImpl.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace ign::import {
namespace {

using llvm::SmallVector;

/// Window attributes shared by Conv, ConvTranspose and the pools, with
/// auto_pad resolved into explicit pads for the static input shape.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};

FailureOr<Window> readWindow(NodeImporter &n, ArrayRef<int64_t> inputShape,
                             ArrayRef<int64_t> kernelFromWeight,
                             bool transposed = false) {
  size_t spatial = inputShape.size() - 2;
  Window w;
  auto kernel = n.attrInts("kernel_shape", kernelFromWeight);
  auto strides = n.attrInts("strides", SmallVector<int64_t>(spatial, 1));
  auto dilations = n.attrInts("dilations", SmallVector<int64_t>(spatial, 1));
  auto pads = n.attrInts("pads", SmallVector<int64_t>(2 * spatial, 0));
  auto autoPad = n.attrString("auto_pad", "NOTSET");
  if (failed(kernel) || failed(strides) || failed(dilations) || failed(pads) ||
      failed(autoPad))
    return failure();
  if (kernel->size() != spatial)
    return n.error() << "kernel_shape has " << kernel->size()
                     << " dims, the input has " << spatial << " spatial dims";
  if (strides->size() != spatial || dilations->size() != spatial ||
      pads->size() != 2 * spatial)
    return n.error() << "strides, dilations and pads must have " << spatial
                     << ", " << spatial << " and " << 2 * spatial << " values";
  for (size_t i = 0; i < spatial; ++i)
    if ((*strides)[i] <= 0 || (*dilations)[i] <= 0 || (*kernel)[i] <= 0)
      return n.error()
             << "kernel_shape, strides and dilations must be positive";
  w.kernel = *kernel;
  w.strides = *strides;
  w.dilations = *dilations;
  w.pads = *pads;
  if (*autoPad == "VALID") {
    w.pads.assign(2 * spatial, 0);
  } else if (*autoPad == "SAME_UPPER" || *autoPad == "SAME_LOWER") {
    if (!transposed)
      for (size_t i = 0; i < spatial; ++i) {
        int64_t in = inputShape[i + 2];
        int64_t out = (in + w.strides[i] - 1) / w.strides[i];
        int64_t total = std::max<int64_t>(
            0, (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] +
                   1 - in);
        int64_t small = total / 2, large = total - small;
        w.pads[i] = *autoPad == "SAME_UPPER" ? small : large;
        w.pads[i + spatial] = *autoPad == "SAME_UPPER" ? large : small;
      }
  } else if (*autoPad != "NOTSET") {
    return n.error() << "unknown auto_pad '" << *autoPad << "'";
  }
  return w;
}

/// The SSA values of the first `count` inputs.
FailureOr<SmallVector<Value>> inputs(NodeImporter &n, size_t count) {
  SmallVector<Value> values;
  for (size_t i = 0; i < count; ++i) {
    auto v = n.input(i);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  return values;
}

LogicalResult importMatMul(NodeImporter &n) {
  auto a = n.input(0), b = n.input(1);
  if (failed(a) || failed(b))
    return failure();
  return done(n, n.createValue<MatMulOp>({*a, *b}));
}

LogicalResult importGemm(NodeImporter &n) {
  auto alpha = n.attrFloat("alpha", 1), beta = n.attrFloat("beta", 1);
  auto ta = n.attrInt("transA", 0), tb = n.attrInt("transB", 0);
  auto a = n.input(0), b = n.input(1);
  if (failed(alpha) || failed(beta) || failed(ta) || failed(tb) || failed(a) ||
      failed(b))
    return failure();
  SmallVector<Value> operands{*a, *b};
  if (n.hasInput(2)) {
    auto c = n.input(2);
    if (failed(c))
      return failure();
    operands.push_back(*c);
  }
  return done(n,
              n.createValue<GemmOp>(operands, {n.namedF32("alpha", *alpha),
                                               n.namedF32("beta", *beta),
                                               n.namedBool("trans_a", *ta),
                                               n.namedBool("trans_b", *tb)}));
}

} // namespace

FailureOr<Value> buildConv(NodeImporter &n, Value input, Value weight,
                           std::optional<Value> bias) {
  auto x = cast<RankedTensorType>(input.getType()),
       w = cast<RankedTensorType>(weight.getType());
  if (x.getRank() < 3 || w.getRank() != x.getRank())
    return n.error() << n.node().op_type() << " input " << x << " and weight "
                     << w << " must have the same rank >= 3";
  auto window = readWindow(n, x.getShape(), w.getShape().drop_front(2));
  auto group = n.attrInt("group", 1);
  if (failed(window) || failed(group))
    return failure();
  if (ArrayRef<int64_t>(window->kernel) != w.getShape().drop_front(2))
    return n.error() << "kernel_shape disagrees with the weight shape";
  SmallVector<Value> operands{input, weight};
  if (bias)
    operands.push_back(*bias);
  return n.createValue<ConvOp>(
      operands, {n.named("strides", n.i64Array(window->strides)),
                 n.named("pads", n.i64Array(window->pads)),
                 n.named("dilations", n.i64Array(window->dilations)),
                 n.namedI64("group", *group)});
}

namespace {

/// MaxUnpool(X, I, output_shape?): zeros of the pooled-from shape the
/// window attributes infer with X's values scattered to I, the flat indices
/// MaxPool gave (over the whole tensor, batch and channels included), then
/// padded with zeros at the end of each dim to output_shape when given.
LogicalResult importMaxUnpool(NodeImporter &n) {
  auto x = n.inputType(0), idx = n.inputType(1);
  auto xv = n.input(0), iv = n.input(1);
  if (failed(x) || failed(idx) || failed(xv) || failed(iv))
    return failure();
  if (x->getRank() < 3 || idx->getShape() != x->getShape())
    return n.error() << "MaxUnpool input " << *x << " and indices " << *idx
                     << " must have the same shape, rank >= 3";
  SmallVector<int64_t> kernel(x->getRank() - 2, 1);
  auto window = readWindow(n, x->getShape(), kernel);
  if (failed(window))
    return failure();
  size_t spatial = x->getRank() - 2;
  SmallVector<int64_t> shape(x->getShape().take_front(2));
  for (size_t i = 0; i < spatial; ++i)
    shape.push_back((x->getDimSize(i + 2) - 1) * window->strides[i] +
                    window->kernel[i] - window->pads[i] -
                    window->pads[i + spatial]);
  SmallVector<int64_t> outShape = shape;
  if (n.hasInput(2)) {
    auto given = n.constInts(2, "output_shape");
    if (failed(given))
      return failure();
    if (given->size() != shape.size())
      return n.error() << "output_shape has " << given->size()
                       << " dims, the input " << shape.size();
    for (size_t d = 0; d < shape.size(); ++d)
      if ((*given)[d] < shape[d])
        return n.error() << "output_shape dim " << d << " (" << (*given)[d]
                         << ") is smaller than the window's " << shape[d];
    outShape.assign(given->begin(), given->end());
  }
  std::optional<int64_t> total = checkedElementCount(shape);
  if (!total || *total < 1)
    return n.error() << "MaxUnpool's output shape is empty or too large";
  int64_t count = x->getNumElements();
  auto zeros =
      n.createValue<ExpandOp>(n.scalarConstant(x->getElementType(), 0.0),
                              {n.named("shape", n.i64Array({*total}))});
  auto flatIdx = n.reshape(*iv, {count});
  auto flatX = n.reshape(*xv, {count});
  if (failed(zeros) || failed(flatIdx) || failed(flatX))
    return failure();
  auto scattered = n.createValue<ScatterElementsOp>(
      {*zeros, *flatIdx, *flatX},
      {n.namedI64("axis", 0), n.namedStr("reduction", "none")});
  if (failed(scattered))
    return failure();
  auto unpooled = n.reshape(*scattered, shape);
  if (failed(unpooled) || outShape == shape)
    return done(n, unpooled);
  SmallVector<int64_t> pads(shape.size(), 0);
  for (size_t d = 0; d < shape.size(); ++d)
    pads.push_back(outShape[d] - shape[d]);
  return done(
      n, n.createValue<PadOp>(
             *unpooled,
             {n.named("pads", n.i64Array(pads)), n.namedStr("mode", "constant"),
              n.named("value", n.builder().getF64FloatAttr(0))}));
}

LogicalResult importConv(NodeImporter &n) {
  auto operands = inputs(n, n.hasInput(2) ? 3 : 2);
  if (failed(operands))
    return failure();
  // ONNX's Conv takes floats (ConvInteger and QLinearConv take integers;
  // ign.conv of bytes accumulates in i32, which Conv's output is not).
  for (Value v : *operands)
    if (auto t = dyn_cast<ShapedType>(v.getType());
        !t || !isa<FloatType>(t.getElementType()))
      return n.error() << "Conv takes float tensors, got " << v.getType();
  std::optional<Value> bias;
  if (operands->size() == 3)
    bias = (*operands)[2];
  return done(n, buildConv(n, (*operands)[0], (*operands)[1], bias));
}

LogicalResult importConvTranspose(NodeImporter &n) {
  auto x = n.inputType(0), w = n.inputType(1);
  if (failed(x) || failed(w))
    return failure();
  if (x->getRank() < 3 || w->getRank() != x->getRank())
    return n.error() << "ConvTranspose input " << *x << " and weight " << *w
                     << " must have the same rank >= 3";
  size_t spatial = x->getRank() - 2;
  auto window = readWindow(n, x->getShape(), w->getShape().drop_front(2),
                           /*transposed=*/true);
  auto group = n.attrInt("group", 1);
  auto outputPadding =
      n.attrInts("output_padding", SmallVector<int64_t>(spatial, 0));
  auto outputShape = n.attrInts("output_shape");
  auto autoPad = n.attrString("auto_pad", "NOTSET");
  if (failed(window) || failed(group) || failed(outputPadding) ||
      failed(outputShape) || failed(autoPad))
    return failure();
  if (outputPadding->size() != spatial)
    return n.error() << "output_padding must have " << spatial << " values";
  SmallVector<int64_t> target;
  if (!outputShape->empty()) {
    // output_shape may or may not include N and C.
    target.assign(outputShape->end() - std::min(outputShape->size(), spatial),
                  outputShape->end());
    if (target.size() != spatial)
      return n.error() << "output_shape must give " << spatial
                       << " spatial dims";
  } else if (*autoPad == "SAME_UPPER" || *autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < spatial; ++i)
      target.push_back(x->getDimSize(i + 2) * window->strides[i]);
  }
  if (!target.empty()) {
    // Pads that make the output exactly `target` (ONNX's rule).
    for (size_t i = 0; i < spatial; ++i) {
      int64_t full = window->strides[i] * (x->getDimSize(i + 2) - 1) +
                     (*outputPadding)[i] +
                     (w->getDimSize(i + 2) - 1) * window->dilations[i] + 1;
      int64_t total = full - target[i];
      if (total < 0) {
        (*outputPadding)[i] -= total;
        total = 0;
      }
      int64_t half = total / 2;
      bool upper = *autoPad == "SAME_UPPER";
      window->pads[i] = upper ? half : total - half;
      window->pads[i + spatial] = upper ? total - half : half;
    }
  }
  auto operands = inputs(n, n.hasInput(2) ? 3 : 2);
  if (failed(operands))
    return failure();
  return done(
      n, n.createValue<ConvTransposeOp>(
             *operands, {n.named("strides", n.i64Array(window->strides)),
                         n.named("pads", n.i64Array(window->pads)),
                         n.named("dilations", n.i64Array(window->dilations)),
                         n.named("output_padding", n.i64Array(*outputPadding)),
                         n.namedI64("group", *group)}));
}

LogicalResult importEinsum(NodeImporter &n) {
  auto eq = n.attrString("equation", "");
  if (failed(eq))
    return failure();
  std::string equation;
  for (char c : *eq)
    if (c != ' ')
      equation.push_back(c);
  if (equation.find("->") == std::string::npos) {
    // Implicit output: "..." then the letters used once, alphabetically.
    std::map<char, int> counts;
    for (char c : equation)
      if (llvm::isAlpha(c))
        ++counts[c];
    equation += "->";
    if (equation.find("...") != std::string::npos)
      equation += "...";
    for (auto [c, k] : counts)
      if (k == 1)
        equation.push_back(c);
  }
  SmallVector<Value> operands;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    auto v = n.input(i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  return done(
      n, n.createValue<EinsumOp>(operands, {n.namedStr("equation", equation)}));
}

LogicalResult importBatchNorm(NodeImporter &n) {
  auto eps = n.attrFloat("epsilon", 1e-5f);
  auto training = n.attrInt("training_mode", 0);
  if (failed(eps) || failed(training))
    return failure();
  if (*training)
    return n.error() << "training_mode=1 is not supported (inference only)";
  if (failed(n.requireUnusedOutputsFrom(1, "training statistics")))
    return failure();
  auto ops = inputs(n, 5);
  if (failed(ops))
    return failure();
  return done(n,
              n.createValue<BatchNormOp>(*ops, {n.namedF32("epsilon", *eps)}));
}

LogicalResult importInstanceNorm(NodeImporter &n) {
  auto eps = n.attrFloat("epsilon", 1e-5f);
  auto ops = inputs(n, 3);
  if (failed(eps) || failed(ops))
    return failure();
  return done(
      n, n.createValue<InstanceNormOp>(*ops, {n.namedF32("epsilon", *eps)}));
}

LogicalResult importLayerNorm(NodeImporter &n) {
  auto eps = n.attrFloat("epsilon", 1e-5f);
  auto axis = n.attrInt("axis", -1);
  auto x = n.inputType(0);
  if (failed(eps) || failed(axis) || failed(x))
    return failure();
  auto a = normalizeAxis(n, *axis, x->getRank());
  if (failed(a))
    return failure();
  auto ops = inputs(n, n.hasInput(2) ? 3 : 2);
  if (failed(ops))
    return failure();
  if (failed(done(
          n, n.createValue<LayerNormOp>(
                 *ops, {n.namedI64("axis", *a), n.namedF32("epsilon", *eps)}))))
    return failure();
  if (!n.outputUsed(1) && !n.outputUsed(2))
    return success();
  // The optional statistics outputs: mean and 1/sqrt(var + eps) over the
  // normalized dims, kept as size-1 dims.
  SmallVector<int64_t> axes;
  for (int64_t d = *a; d < x->getRank(); ++d)
    axes.push_back(d);
  SmallVector<NamedAttribute> reduce{n.named("axes", n.i64Array(axes)),
                                     n.namedBool("keepdims", true)};
  Value in = (*ops)[0];
  auto mean = n.createValue<ReduceMeanOp>(in, reduce);
  if (failed(mean))
    return failure();
  auto centered = n.createValue<SubOp>({in, *mean});
  if (failed(centered))
    return failure();
  auto sq = n.createValue<MulOp>({*centered, *centered});
  if (failed(sq))
    return failure();
  auto var = n.createValue<ReduceMeanOp>(*sq, reduce);
  if (failed(var))
    return failure();
  auto shifted =
      n.createValue<AddOp>({*var, n.scalarConstant(x->getElementType(), *eps)});
  if (failed(shifted))
    return failure();
  auto std = n.createValue<SqrtOp>(*shifted);
  if (failed(std))
    return failure();
  if (failed(n.setOutput(1, *mean)))
    return failure();
  return done(n, n.createValue<ReciprocalOp>(*std), 2);
}

LogicalResult importGroupNorm(NodeImporter &n) {
  auto eps = n.attrFloat("epsilon", 1e-5f);
  auto groups = n.attrInt("num_groups", 0);
  auto x = n.inputType(0), scaleType = n.inputType(1);
  auto ops = inputs(n, 3);
  if (failed(eps) || failed(groups) || failed(x) || failed(scaleType) ||
      failed(ops))
    return failure();
  if (x->getRank() < 2 || *groups <= 0 || x->getDimSize(1) % *groups)
    return n.error() << "num_groups " << *groups << " must divide the "
                     << "channels of " << *x;
  int64_t channels = x->getDimSize(1);
  // Opset 18 gives scale and bias per group; expand them to per channel.
  if (scaleType->getNumElements() == *groups && *groups != channels) {
    for (size_t i = 1; i <= 2; ++i) {
      auto r = n.reshape((*ops)[i], {*groups, 1});
      if (failed(r))
        return failure();
      auto e = n.createValue<ExpandOp>(
          *r, {n.named("shape", n.i64Array({*groups, channels / *groups}))});
      if (failed(e))
        return failure();
      auto flat = n.reshape(*e, {channels});
      if (failed(flat))
        return failure();
      (*ops)[i] = *flat;
    }
  }
  return done(
      n, n.createValue<GroupNormOp>(*ops, {n.namedI64("num_groups", *groups),
                                           n.namedF32("epsilon", *eps)}));
}

LogicalResult importLRN(NodeImporter &n) {
  auto size = n.attrInt("size", 0);
  auto alpha = n.attrFloat("alpha", 1e-4f), beta = n.attrFloat("beta", 0.75f),
       bias = n.attrFloat("bias", 1.0f);
  auto x = n.input(0);
  if (failed(size) || failed(alpha) || failed(beta) || failed(bias) ||
      failed(x))
    return failure();
  return done(n,
              n.createValue<LRNOp>(
                  *x, {n.namedI64("size", *size), n.namedF32("alpha", *alpha),
                       n.namedF32("beta", *beta), n.namedF32("bias", *bias)}));
}

/// MeanVarianceNormalization as ONNX defines it by its function body:
/// (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9).
LogicalResult importMVN(NodeImporter &n) {
  auto x = n.input(0);
  auto type = n.inputType(0);
  auto axes = n.attrInts("axes", {0, 2, 3});
  if (failed(x) || failed(type) || failed(axes))
    return failure();
  SmallVector<int64_t> norm;
  for (int64_t a : *axes) {
    auto v = normalizeAxis(n, a, type->getRank());
    if (failed(v))
      return failure();
    norm.push_back(*v);
  }
  llvm::sort(norm);
  norm.erase(std::unique(norm.begin(), norm.end()), norm.end());
  auto reduceAttrs = SmallVector<NamedAttribute>{
      n.named("axes", n.i64Array(norm)), n.namedBool("keepdims", true)};
  auto mean = n.createValue<ReduceMeanOp>(*x, reduceAttrs);
  auto sq = n.createValue<MulOp>({*x, *x});
  if (failed(mean) || failed(sq))
    return failure();
  auto meanSq = n.createValue<ReduceMeanOp>(*sq, reduceAttrs);
  auto sqMean = n.createValue<MulOp>({*mean, *mean});
  if (failed(meanSq) || failed(sqMean))
    return failure();
  auto var = n.createValue<SubOp>({*meanSq, *sqMean});
  if (failed(var))
    return failure();
  auto std = n.createValue<SqrtOp>(*var);
  if (failed(std))
    return failure();
  auto denom = n.createValue<AddOp>(
      {*std, n.scalarConstant(type->getElementType(), 1e-9)});
  auto centered = n.createValue<SubOp>({*x, *mean});
  if (failed(denom) || failed(centered))
    return failure();
  return done(n, n.createValue<DivOp>({*centered, *denom}));
}

template <typename OpT> LogicalResult importPool(NodeImporter &n) {
  auto x = n.inputType(0);
  if (failed(x))
    return failure();
  if (x->getRank() < 3)
    return n.error() << "pooling input must have rank >= 3, got " << *x;
  if (!n.hasAttr("kernel_shape"))
    return n.error() << "missing required attribute 'kernel_shape'";
  auto window = readWindow(n, x->getShape(), {});
  auto ceil = n.attrInt("ceil_mode", 0);
  if (failed(window) || failed(ceil))
    return failure();
  SmallVector<NamedAttribute> attrs{
      n.named("kernel_shape", n.i64Array(window->kernel)),
      n.named("strides", n.i64Array(window->strides)),
      n.named("pads", n.i64Array(window->pads)),
      n.named("dilations", n.i64Array(window->dilations)),
      n.namedBool("ceil_mode", *ceil)};
  if constexpr (std::is_same_v<OpT, AvgPoolOp>) {
    auto cip = n.attrInt("count_include_pad", 0);
    if (failed(cip))
      return failure();
    attrs.push_back(n.namedBool("count_include_pad", *cip));
  }
  if constexpr (std::is_same_v<OpT, LpPoolOp>) {
    auto p = n.attrInt("p", 2);
    if (failed(p))
      return failure();
    attrs.push_back(n.namedI64("p", *p));
  }
  auto v = n.input(0);
  if (failed(v))
    return failure();
  if constexpr (std::is_same_v<OpT, MaxPoolOp>) {
    if (n.outputUsed(1)) {
      auto order = n.attrInt("storage_order", 0);
      if (failed(order))
        return failure();
      attrs.push_back(n.namedI64("storage_order", *order));
      auto op = n.create<MaxPoolWithIndicesOp>(*v, attrs);
      if (failed(op) || failed(n.setOutput(0, op->getOutput())))
        return failure();
      return n.setOutput(1, op->getIndices());
    }
  }
  return done(n, n.createValue<OpT>(*v, attrs));
}

template <typename ReduceT> LogicalResult importGlobalPool(NodeImporter &n) {
  auto x = n.inputType(0);
  auto v = n.input(0);
  if (failed(x) || failed(v))
    return failure();
  if (x->getRank() < 3)
    return n.error() << "global pooling input must have rank >= 3";
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < x->getRank(); ++d)
    axes.push_back(d);
  return done(n, n.createValue<ReduceT>(*v, {n.named("axes", n.i64Array(axes)),
                                             n.namedBool("keepdims", true)}));
}

/// LSTM / GRU / RNN: reads the shared attributes, converts layout 1 to 0,
/// spells out default activations, and maps the results back.
template <typename OpT>
LogicalResult importRecurrent(NodeImporter &n, size_t numOperands,
                              ArrayRef<const char *> defaultActivations,
                              size_t numResults) {
  auto direction = n.attrString("direction", "forward");
  auto hidden = n.attrInt("hidden_size", 0);
  auto layout = n.attrInt("layout", 0);
  auto acts = n.attrStrings("activations");
  auto alpha = n.attrFloats("activation_alpha");
  auto beta = n.attrFloats("activation_beta");
  if (failed(direction) || failed(hidden) || failed(layout) || failed(acts) ||
      failed(alpha) || failed(beta))
    return failure();
  int64_t dirs = *direction == "bidirectional" ? 2 : 1;
  if (*hidden <= 0) {
    auto r = n.inputType(2);
    if (failed(r))
      return failure();
    if (r->getRank() != 3)
      return n.error() << "R must be [num_directions, gates * hidden, "
                          "hidden], got "
                       << *r;
    *hidden = r->getDimSize(2);
  }
  SmallVector<Attribute> activations;
  if (acts->empty()) {
    for (int64_t d = 0; d < dirs; ++d)
      for (const char *a : defaultActivations)
        activations.push_back(n.builder().getStringAttr(a));
  } else {
    if (acts->size() != defaultActivations.size() * dirs)
      return n.error() << "expected " << defaultActivations.size() * dirs
                       << " activations, got " << acts->size();
    static const char *known[] = {
        "Relu",       "Tanh",        "Sigmoid",
        "Affine",     "LeakyRelu",   "ThresholdedRelu",
        "ScaledTanh", "HardSigmoid", "Elu",
        "Softsign",   "Softplus"};
    for (const std::string &a : *acts) {
      if (!llvm::is_contained(known, llvm::StringRef(a)))
        return n.error() << "unknown activation '" << a << "'";
      activations.push_back(n.builder().getStringAttr(a));
    }
  }
  SmallVector<NamedAttribute> attrs{
      n.namedStr("direction", *direction), n.namedI64("hidden_size", *hidden),
      n.named("activations", n.builder().getArrayAttr(activations)),
      n.named("activation_alpha", n.builder().getF32ArrayAttr(*alpha)),
      n.named("activation_beta", n.builder().getF32ArrayAttr(*beta))};
  if (n.hasAttr("clip")) {
    auto clip = n.attrFloat("clip", 0);
    if (failed(clip))
      return failure();
    attrs.push_back(n.namedF32("clip", *clip));
  }
  if constexpr (std::is_same_v<OpT, LSTMOp>) {
    auto inputForget = n.attrInt("input_forget", 0);
    if (failed(inputForget))
      return failure();
    attrs.push_back(n.namedBool("input_forget", *inputForget));
  }
  if constexpr (std::is_same_v<OpT, GRUOp>) {
    auto lbr = n.attrInt("linear_before_reset", 0);
    if (failed(lbr))
      return failure();
    attrs.push_back(n.namedBool("linear_before_reset", *lbr));
  }
  // Operands: X W R B seq_lens initial_h [initial_c P]; layout 1 puts batch
  // first in X and the states.
  SmallVector<Value> operands;
  SmallVector<int32_t> segments;
  for (size_t i = 0; i < numOperands; ++i) {
    if (!n.hasInput(i)) {
      if (i < 3)
        return n.error() << "missing required input " << i;
      segments.push_back(0);
      continue;
    }
    auto v = n.input(i);
    if (failed(v))
      return failure();
    Value value = *v;
    bool isState = i == 5 || i == 6;
    if (*layout == 1 && (i == 0 || isState)) {
      auto t = n.createValue<TransposeOp>(
          value, {n.named("perm", n.i64Array({1, 0, 2}))});
      if (failed(t))
        return failure();
      value = *t;
    }
    operands.push_back(value);
    segments.push_back(1);
  }
  attrs.push_back(n.named("operandSegmentSizes",
                          n.builder().getDenseI32ArrayAttr(segments)));
  auto op = n.create<OpT>(operands, attrs);
  if (failed(op))
    return failure();
  for (size_t i = 0; i < numResults; ++i) {
    Value r = (*op)->getResult(i);
    if (*layout == 1 && n.outputUsed(i)) {
      SmallVector<int64_t> perm = i == 0 ? SmallVector<int64_t>{2, 0, 1, 3}
                                         : SmallVector<int64_t>{1, 0, 2};
      auto t =
          n.createValue<TransposeOp>(r, {n.named("perm", n.i64Array(perm))});
      if (failed(t))
        return failure();
      r = *t;
    }
    if (failed(n.setOutput(i, r)))
      return failure();
  }
  return success();
}

} // namespace

void registerNNHandlers(HandlerMap &m) {
  m["MatMul"] = importMatMul;
  m["Gemm"] = importGemm;
  m["Conv"] = importConv;
  m["ConvTranspose"] = importConvTranspose;
  m["Einsum"] = importEinsum;
  m["BatchNormalization"] = importBatchNorm;
  m["InstanceNormalization"] = importInstanceNorm;
  m["LayerNormalization"] = importLayerNorm;
  m["GroupNormalization"] = importGroupNorm;
  m["LRN"] = importLRN;
  m["MeanVarianceNormalization"] = importMVN;
  m["MaxPool"] = importPool<MaxPoolOp>;
  m["MaxUnpool"] = importMaxUnpool;
  m["AveragePool"] = importPool<AvgPoolOp>;
  m["LpPool"] = importPool<LpPoolOp>;
  m["GlobalAveragePool"] = importGlobalPool<ReduceMeanOp>;
  m["GlobalMaxPool"] = importGlobalPool<ReduceMaxOp>;
  m["LSTM"] = [](NodeImporter &n) {
    return importRecurrent<LSTMOp>(n, 8, {"Sigmoid", "Tanh", "Tanh"}, 3);
  };
  m["GRU"] = [](NodeImporter &n) {
    return importRecurrent<GRUOp>(n, 6, {"Sigmoid", "Tanh"}, 2);
  };
  m["RNN"] = [](NodeImporter &n) {
    return importRecurrent<RNNOp>(n, 6, {"Tanh"}, 2);
  };
}

} // namespace ign::import
