//===- ImportSignal.cpp - DFT, STFT and MelWeightMatrix -------------------===//
//
// A DFT along one axis is two matrix products with constant tables,
// cos(2 pi j k / n) and sin(2 pi j k / n) of the signal's samples j and the
// output's bins k (n^2 multiply-adds per signal, as a matmul kernel: the
// signals of models are frames of a few hundred samples, where the tables
// fit in cache). The real and imaginary parts are the two matmuls' sums:
//   Y = sum_j X_j exp(s 2 pi i j k / n) * scale, s = -1 (forward) or +1
//   (inverse, scale 1 / n): Yr = Xr C - Xi S, Yi = Xr S + Xi C
// with C = scale cos, S = s scale sin. A one-sided DFT keeps n / 2 + 1
// bins; a signal longer than dft_length is truncated, a shorter one is
// padded with zeros (the table's missing rows). STFT gathers its frames
// (a constant index table), weights them by the window and takes their
// one-sided DFT. MelWeightMatrix is a constant, computed on the host.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include <cmath>

using namespace mlir;

namespace ign::import {
namespace {

/// Elements a table this file builds at import may hold (256 MiB of
/// floats): a dft_length or num_mel_bins past it is a damaged model, not a
/// table to allocate.
constexpr int64_t kTableLimit = int64_t(1) << 26;

/// Whether a [rows, cols] table fits kTableLimit (an error at `n` if not).
LogicalResult checkTable(NodeImporter &n, int64_t rows, int64_t cols,
                         StringRef what) {
  std::optional<int64_t> count = checkedElementCount({rows, cols});
  if (count && *count <= kTableLimit)
    return success();
  return n.error() << what << " would hold " << rows << " x " << cols
                   << " values, more than the " << kTableLimit
                   << " ignc builds at import";
}

struct DftSpec {
  int64_t axis = 1;
  int64_t length = 0; // n: the DFT's length
  bool inverse = false, onesided = false;
};

/// The [rows, bins] table of scale * cos(2 pi j k / n) or
/// scale * sin(2 pi j k / n).
HostTensor dftTable(Type element, int64_t rows, int64_t bins, int64_t n,
                    bool sine, double scale) {
  HostTensor t;
  t.elementType = element;
  t.shape = {rows, bins};
  t.allocate();
  for (int64_t j = 0; j < rows; ++j)
    for (int64_t k = 0; k < bins; ++k) {
      // j * k mod n keeps the angle small: exact tables for long signals.
      double angle = 2.0 * M_PI * double((j * k) % n) / double(n);
      t.floats[j * bins + k] =
          scale * (sine ? std::sin(angle) : std::cos(angle));
    }
  return t;
}

FailureOr<Value> sliceLast(NodeImporter &n, Value v, int64_t start,
                           int64_t size) {
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  SmallVector<int64_t> starts(shape.size(), 0), sizes(shape),
      steps(shape.size(), 1);
  starts.back() = start;
  sizes.back() = size;
  return n.createValue<SliceOp>(v, {n.named("starts", n.i64Array(starts)),
                                    n.named("sizes", n.i64Array(sizes)),
                                    n.named("steps", n.i64Array(steps))});
}

/// Part `part` (0 real, 1 imaginary) of x [..., c], without the last dim,
/// with `axis` moved last and cut to `used` samples.
FailureOr<Value> signalPart(NodeImporter &n, Value x, int64_t part,
                            ArrayRef<int64_t> perm, int64_t used) {
  auto shape = cast<RankedTensorType>(x.getType()).getShape();
  auto v = sliceLast(n, x, part, 1);
  if (failed(v))
    return failure();
  v = n.reshape(*v, shape.drop_back());
  if (failed(v))
    return failure();
  v = n.createValue<TransposeOp>(*v, {n.named("perm", n.i64Array(perm))});
  if (failed(v))
    return failure();
  if (cast<RankedTensorType>(v->getType()).getShape().back() == used)
    return v;
  return sliceLast(n, *v, 0, used);
}

/// The DFT of x [..., c] (c = 1: real, 2: complex) along spec.axis, as
/// [..., 2].
FailureOr<Value> buildDft(NodeImporter &n, Value x, const DftSpec &spec) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), channels = type.getShape().back();
  Type element = type.getElementType();
  if (!isa<FloatType>(element) || rank < 2 || (channels != 1 && channels != 2))
    return n.error() << "DFT input " << type
                     << " must be floats whose last dim is 1 (real) or 2 "
                        "(complex)";
  if (spec.axis == rank - 1)
    return n.error() << "DFT axis " << spec.axis
                     << " is the last dim, which holds the complex parts";
  if (spec.length < 1)
    return n.error() << "dft_length " << spec.length << " must be positive";
  int64_t used = std::min(type.getDimSize(spec.axis), spec.length);
  int64_t bins = spec.onesided ? spec.length / 2 + 1 : spec.length;
  if (failed(checkTable(n, used, bins, "the DFT's cos/sin tables")))
    return failure();
  // Axes of the signal without its last dim, `axis` moved last, and back.
  SmallVector<int64_t> perm, back(rank - 1);
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != spec.axis)
      perm.push_back(d);
  perm.push_back(spec.axis);
  for (int64_t d = 0; d < rank - 1; ++d)
    back[perm[d]] = d;

  double scale = spec.inverse ? 1.0 / double(spec.length) : 1.0;
  double sign = spec.inverse ? 1.0 : -1.0;
  Value cosTable =
      n.constant(dftTable(element, used, bins, spec.length, false, scale));
  Value sinTable = n.constant(
      dftTable(element, used, bins, spec.length, true, sign * scale));
  auto re = signalPart(n, x, 0, perm, used);
  if (failed(re))
    return failure();
  auto yr = n.createValue<MatMulOp>({*re, cosTable});
  auto yi = n.createValue<MatMulOp>({*re, sinTable});
  if (failed(yr) || failed(yi))
    return failure();
  if (channels == 2) {
    auto im = signalPart(n, x, 1, perm, used);
    if (failed(im))
      return failure();
    auto imS = n.createValue<MatMulOp>({*im, sinTable});
    auto imC = n.createValue<MatMulOp>({*im, cosTable});
    if (failed(imS) || failed(imC))
      return failure();
    yr = n.createValue<SubOp>({*yr, *imS});
    yi = n.createValue<AddOp>({*yi, *imC});
    if (failed(yr) || failed(yi))
      return failure();
  }
  SmallVector<Value> parts;
  for (Value y : {*yr, *yi}) {
    auto t = n.createValue<TransposeOp>(y, {n.named("perm", n.i64Array(back))});
    if (failed(t))
      return failure();
    auto shape =
        llvm::to_vector(cast<RankedTensorType>(t->getType()).getShape());
    shape.push_back(1);
    auto r = n.reshape(*t, shape);
    if (failed(r))
      return failure();
    parts.push_back(*r);
  }
  return n.createValue<ConcatOp>(parts, {n.namedI64("axis", rank - 1)});
}

/// A known scalar integer input (`what` names it in errors).
FailureOr<int64_t> scalarInt(NodeImporter &n, size_t i, StringRef what) {
  auto values = n.constInts(i, what);
  if (failed(values))
    return failure();
  if (values->size() != 1)
    return n.error() << what << " must be a scalar";
  return (*values)[0];
}

LogicalResult importDft(NodeImporter &n) {
  auto type = n.inputType(0);
  auto x = n.input(0);
  auto inverse = n.attrInt("inverse", 0), onesided = n.attrInt("onesided", 0);
  if (failed(type) || failed(x) || failed(inverse) || failed(onesided))
    return failure();
  // Opset 20 moved the axis from an attribute (default 1) to input 2
  // (default -2).
  int64_t axis = 1;
  if (n.opset() >= 20) {
    axis = -2;
    if (n.hasInput(2)) {
      auto a = scalarInt(n, 2, "axis");
      if (failed(a))
        return failure();
      axis = *a;
    }
  } else {
    auto a = n.attrInt("axis", 1);
    if (failed(a))
      return failure();
    axis = *a;
  }
  auto a = normalizeAxis(n, axis, type->getRank());
  if (failed(a))
    return failure();
  DftSpec spec{*a, type->getDimSize(*a), *inverse != 0, *onesided != 0};
  if (spec.inverse && spec.onesided)
    return n.error() << "an inverse one-sided DFT (irfft) is not supported";
  if (n.hasInput(1)) {
    auto length = scalarInt(n, 1, "dft_length");
    if (failed(length))
      return failure();
    spec.length = *length;
  }
  return done(n, buildDft(n, *x, spec));
}

// STFT(signal [batch, length, c], frame_step, window?, frame_length?)
LogicalResult importStft(NodeImporter &n) {
  auto type = n.inputType(0);
  auto signal = n.input(0);
  auto step = scalarInt(n, 1, "frame_step");
  auto onesided = n.attrInt("onesided", 1);
  if (failed(type) || failed(signal) || failed(step) || failed(onesided))
    return failure();
  if (type->getRank() != 3)
    return n.error() << "STFT signal " << *type
                     << " must be [batch, length, 1 or 2]";
  int64_t length = type->getDimSize(1), frameLength = length;
  std::optional<Value> window;
  if (n.hasInput(2)) {
    auto w = n.input(2);
    auto wType = n.inputType(2);
    if (failed(w) || failed(wType))
      return failure();
    if (wType->getRank() != 1)
      return n.error() << "STFT window must be 1-D, got " << *wType;
    frameLength = wType->getDimSize(0);
    window = *w;
  }
  if (n.hasInput(3)) {
    auto fl = scalarInt(n, 3, "frame_length");
    if (failed(fl))
      return failure();
    if (window && *fl != frameLength)
      return n.error() << "frame_length " << *fl
                       << " differs from the window's " << frameLength
                       << " values";
    frameLength = *fl;
  }
  if (*step < 1 || frameLength < 1 || frameLength > length)
    return n.error() << "STFT frames of " << frameLength << " samples every "
                     << *step << " do not fit a signal of " << length;
  int64_t frames = 1 + (length - frameLength) / *step;
  if (failed(checkTable(n, frames, frameLength, "the STFT's frame indices")))
    return failure();
  HostTensor index;
  index.elementType = n.builder().getI64Type();
  index.shape = {frames, frameLength};
  index.allocate();
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < frameLength; ++j)
      index.ints[f * frameLength + j] = f * *step + j;
  auto framed = n.createValue<GatherOp>({*signal, n.constant(index)},
                                        {n.namedI64("axis", 1)});
  if (failed(framed))
    return failure();
  if (window) {
    auto w = n.reshape(*window, {frameLength, 1});
    if (failed(w))
      return failure();
    framed = n.createValue<MulOp>({*framed, *w});
    if (failed(framed))
      return failure();
  }
  DftSpec spec{2, frameLength, false, *onesided != 0};
  return done(n, buildDft(n, *framed, spec));
}

/// A known scalar input as a double.
FailureOr<double> scalarValue(NodeImporter &n, size_t i, StringRef what) {
  auto t = n.requireConstInput(i, what);
  if (failed(t))
    return failure();
  if ((*t)->numElements() != 1)
    return n.error() << what << " must be a scalar";
  return (*t)->getDouble(0);
}

// MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
// upper_edge_hertz): [dft_length / 2 + 1, num_mel_bins] triangular filters,
// as ONNX's reference builds them.
LogicalResult importMelWeightMatrix(NodeImporter &n) {
  auto bins = scalarValue(n, 0, "num_mel_bins");
  auto dft = scalarValue(n, 1, "dft_length");
  auto rate = scalarValue(n, 2, "sample_rate");
  auto lower = scalarValue(n, 3, "lower_edge_hertz");
  auto upper = scalarValue(n, 4, "upper_edge_hertz");
  auto dtype = n.attrInt("output_datatype", 1);
  if (failed(bins) || failed(dft) || failed(rate) || failed(lower) ||
      failed(upper) || failed(dtype))
    return failure();
  int64_t mels = saturatingInt(*bins), length = saturatingInt(*dft);
  if (mels < 1 || length < 1 || *rate <= 0 || *lower < 0 || *upper <= *lower)
    return n.error() << "MelWeightMatrix needs num_mel_bins, dft_length and "
                        "sample_rate > 0 and 0 <= lower_edge_hertz < "
                        "upper_edge_hertz";
  HostTensor out;
  out.elementType = convertElementType(n.ctx(), int32_t(*dtype));
  if (!out.elementType || !isa<FloatType>(out.elementType))
    return n.error() << "output_datatype " << *dtype
                     << " is not a floating-point type";
  int64_t spectrogramBins = length / 2 + 1;
  if (failed(checkTable(n, spectrogramBins, mels, "MelWeightMatrix")))
    return failure();
  out.shape = {spectrogramBins, mels};
  out.allocate();
  // Spelled as ONNX's reference spells them: a last-bit difference would
  // move a filter's edge by a bin.
  auto toMel = [](double hz) {
    return 2595.0 * std::log1p(hz / 700.0) / std::log(10.0);
  };
  double low = toMel(*lower), step = (toMel(*upper) - low) / double(mels + 2);
  std::vector<int64_t> edges(mels + 2);
  for (int64_t i = 0; i < mels + 2; ++i) {
    double hz =
        700.0 * std::expm1((double(i) * step + low) / 2595.0 * std::log(10.0));
    edges[i] = saturatingInt(std::floor(double(length + 1) * hz / *rate));
  }
  auto at = [&](int64_t j, int64_t i) -> double & {
    return out.floats[j * mels + i];
  };
  for (int64_t i = 0; i < mels; ++i) {
    int64_t left = edges[i], center = edges[i + 1], right = edges[i + 2];
    if (left < 0 || right >= spectrogramBins + 1 || center >= spectrogramBins)
      return n.error() << "mel filter " << i << " spans bins " << left << ".."
                       << right << ", outside the " << spectrogramBins
                       << " spectrogram bins";
    if (center == left)
      at(center, i) = 1.0;
    else
      for (int64_t j = left; j <= center; ++j)
        at(j, i) = double(j - left) / double(center - left);
    for (int64_t j = center; j < right; ++j)
      at(j, i) = double(right - j) / double(right - center);
  }
  return n.setOutput(0, std::move(out));
}

} // namespace

void registerSignalHandlers(HandlerMap &m) {
  m["DFT"] = importDft;
  m["STFT"] = importStft;
  m["MelWeightMatrix"] = importMelWeightMatrix;
}

} // namespace ign::import
