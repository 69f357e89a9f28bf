//===- PrepackedPanels.cpp - constant weights in panels at compile time ---===//

#include "PrepackedPanels.h"
#include "TileUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cstring>

using namespace mlir;

namespace ign::host {

Type panelElement(Type source, int64_t group) {
  if (group == 1 &&
      (source.isF32() || source.isInteger(8) || source.isInteger(16)))
    return source;
  if (group == 2 && source.isF32())
    return BFloat16Type::get(source.getContext());
  if ((group == 4 && source.isInteger(8)) ||
      (group == 2 && source.isInteger(16)))
    return source;
  return {};
}

std::vector<int64_t> PanelPlan::shape() const {
  if (!permutation.empty()) {
    std::vector<int64_t> permuted;
    for (int64_t d : permutation)
      permuted.push_back(weightShape[d]);
    permuted.back() += padLast;
    return permuted;
  }
  if (pairDim >= 0) {
    std::vector<int64_t> pairs = weightShape;
    pairs[pairDim] = (pairs[pairDim] + group - 1) / group;
    pairs.push_back(group);
    return pairs;
  }
  return {int64_t(offsets.size()), k / chunk, width / cols, chunk / group,
          cols * group};
}

std::string PanelPlan::dtype() const {
  return intBits ? weightDtype() : group == 2 ? "bf16" : "f32";
}

std::string PanelPlan::weightDtype() const {
  return intBits ? "i" + std::to_string(intBits) : "f32";
}

DictionaryAttr PanelPlan::toAttr(MLIRContext *ctx) const {
  Builder b(ctx);
  return b.getDictionaryAttr({
      b.getNamedAttr("source", b.getI64IntegerAttr(source)),
      b.getNamedAttr("transposed", b.getBoolAttr(transposed)),
      b.getNamedAttr("k", b.getI64IntegerAttr(k)),
      b.getNamedAttr("n", b.getI64IntegerAttr(n)),
      b.getNamedAttr("cols", b.getI64IntegerAttr(cols)),
      b.getNamedAttr("width", b.getI64IntegerAttr(width)),
      b.getNamedAttr("chunk", b.getI64IntegerAttr(chunk)),
      b.getNamedAttr("group", b.getI64IntegerAttr(group)),
      b.getNamedAttr("int_bits", b.getI64IntegerAttr(intBits)),
      b.getNamedAttr("offsets", b.getDenseI64ArrayAttr(offsets)),
      b.getNamedAttr("pair_dim", b.getI64IntegerAttr(pairDim)),
      b.getNamedAttr("weight_shape", b.getDenseI64ArrayAttr(weightShape)),
      b.getNamedAttr("permutation", b.getDenseI64ArrayAttr(permutation)),
      b.getNamedAttr("pad_last", b.getI64IntegerAttr(padLast)),
  });
}

/// A permutation plan from `dict` (PanelPlan::permutation), if it is one.
static std::optional<PanelPlan> permutationFromAttr(DictionaryAttr dict) {
  auto source = dict.getAs<IntegerAttr>("source");
  auto shape = dict.getAs<DenseI64ArrayAttr>("weight_shape");
  auto order = dict.getAs<DenseI64ArrayAttr>("permutation");
  if (!source || !shape || !order || source.getInt() < 0 ||
      order.size() != shape.size() || !isPermutationVector(order.asArrayRef()))
    return std::nullopt;
  PanelPlan p;
  p.source = source.getInt();
  p.group = 2;
  p.weightShape.assign(shape.asArrayRef().begin(), shape.asArrayRef().end());
  p.permutation.assign(order.asArrayRef().begin(), order.asArrayRef().end());
  if (auto pad = dict.getAs<IntegerAttr>("pad_last"))
    p.padLast = pad.getInt();
  if (p.padLast < 0)
    return std::nullopt;
  for (int64_t d : p.weightShape)
    if (d < 1)
      return std::nullopt;
  return p;
}

/// A channel-pair plan from `dict` (PanelPlan::pairDim), if it is one.
static std::optional<PanelPlan> channelPairsFromAttr(DictionaryAttr dict) {
  auto source = dict.getAs<IntegerAttr>("source");
  auto dim = dict.getAs<IntegerAttr>("pair_dim");
  auto shape = dict.getAs<DenseI64ArrayAttr>("weight_shape");
  if (!source || !dim || !shape || dim.getInt() < 0 ||
      dim.getInt() >= int64_t(shape.size()) || source.getInt() < 0)
    return std::nullopt;
  PanelPlan p;
  p.source = source.getInt();
  p.pairDim = dim.getInt();
  p.group = 2;
  if (auto group = dict.getAs<IntegerAttr>("group"))
    p.group = group.getInt();
  if (auto bits = dict.getAs<IntegerAttr>("int_bits"))
    p.intBits = bits.getInt();
  // bfloat16 pairs of an f32 weight, or quads of an int8 one.
  if (!(p.group == 2 && p.intBits == 0) && !(p.group == 4 && p.intBits == 8))
    return std::nullopt;
  p.weightShape.assign(shape.asArrayRef().begin(), shape.asArrayRef().end());
  for (int64_t d : p.weightShape)
    if (d < 1)
      return std::nullopt;
  return p;
}

std::optional<PanelPlan> PanelPlan::fromAttr(Attribute attr) {
  auto dict = dyn_cast_or_null<DictionaryAttr>(attr);
  if (!dict)
    return std::nullopt;
  if (auto dim = dict.getAs<IntegerAttr>("pair_dim"); dim && dim.getInt() >= 0)
    return channelPairsFromAttr(dict);
  if (auto order = dict.getAs<DenseI64ArrayAttr>("permutation");
      order && !order.empty())
    return permutationFromAttr(dict);
  PanelPlan p;
  auto get = [&](const char *name, int64_t &out) {
    auto a = dict.getAs<IntegerAttr>(name);
    if (a)
      out = a.getInt();
    return bool(a);
  };
  auto transposed = dict.getAs<BoolAttr>("transposed");
  auto offsets = dict.getAs<DenseI64ArrayAttr>("offsets");
  if (!get("source", p.source) || !get("k", p.k) || !get("n", p.n) ||
      !get("cols", p.cols) || !get("width", p.width) ||
      !get("chunk", p.chunk) || !transposed || !offsets)
    return std::nullopt;
  p.transposed = transposed.getValue();
  get("group", p.group);
  get("int_bits", p.intBits);
  p.offsets.assign(offsets.asArrayRef().begin(), offsets.asArrayRef().end());
  bool groupFits = p.group == 1 || p.group == (p.intBits == 8 ? 4 : 2);
  if (p.intBits != 0 && p.intBits != 8 && p.intBits != 16)
    return std::nullopt;
  if (p.cols < 1 || p.chunk < 1 || p.width % p.cols || p.k % p.chunk ||
      p.offsets.empty() || !groupFits || p.chunk % p.group)
    return std::nullopt;
  for (int64_t o : p.offsets)
    if (o < 0 || o + p.width > p.n)
      return std::nullopt;
  return p;
}

/// `f` rounded to bfloat16 as VCVTNEPS2BF16 does: to nearest even, zero
/// and denormals to a signed zero, NaNs quieted.
static uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  if ((u & 0x7f800000u) == 0)
    return uint16_t((u >> 16) & 0x8000u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu))
    return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/// The bytes of channel-group plan `p` (PanelPlan::pairDim) from its
/// weight: for each element of the groups of G, in order, the weight's
/// element at [..., G i + p, ...] (f32 rounded to bfloat16 in pairs, int8
/// as it is in quads), or 0 past the dim.
static std::string packChannelPairBytes(const PanelPlan &p,
                                        const char *weight) {
  std::vector<int64_t> shape = p.shape();
  int64_t rank = int64_t(p.weightShape.size());
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  std::string bytes(size_t(elements * p.elementBytes()), '\0');
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t e = 0; e < elements; ++e) {
    int64_t flat = 0;
    bool inside = true;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t i = index[d];
      if (d == p.pairDim) {
        i = p.group * i + index[rank];
        inside = i < p.weightShape[d];
      }
      flat = flat * p.weightShape[d] + i;
    }
    if (inside && p.intBits == 8) {
      bytes[size_t(e)] = weight[size_t(flat)];
    } else if (inside) {
      float f;
      std::memcpy(&f, weight + 4 * size_t(flat), sizeof(f));
      uint16_t h = toBf16(f);
      std::memcpy(bytes.data() + 2 * size_t(e), &h, sizeof(h));
    }
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return bytes;
}

/// The bytes of permutation plan `p` (PanelPlan::permutation) from its f32
/// weight: for each element of the permuted shape, in order, the weight's
/// element it holds rounded to bfloat16 (0 in a row's padding).
static std::string packPermutedBytes(const PanelPlan &p, const char *weight) {
  std::vector<int64_t> shape = p.shape();
  int64_t rank = int64_t(shape.size());
  // The weight's stride (in elements) of each dim of the permuted shape.
  std::vector<int64_t> weightStrides(rank, 1), strides(rank);
  for (int64_t d = rank - 2; d >= 0; --d)
    weightStrides[d] = weightStrides[d + 1] * p.weightShape[d + 1];
  int64_t elements = 1;
  for (int64_t d = 0; d < rank; ++d) {
    strides[d] = weightStrides[p.permutation[d]];
    elements *= shape[d];
  }
  std::string bytes(size_t(elements * 2), '\0');
  std::vector<int64_t> index(rank, 0);
  int64_t row = shape.back() - p.padLast;
  for (int64_t e = 0; e < elements; ++e) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d)
      flat += index[d] * strides[d];
    if (index[rank - 1] < row) {
      float f;
      std::memcpy(&f, weight + 4 * size_t(flat), sizeof(f));
      uint16_t h = toBf16(f);
      std::memcpy(bytes.data() + 2 * size_t(e), &h, sizeof(h));
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return bytes;
}

std::string packPanelBytes(const PanelPlan &p, const char *weight) {
  if (!p.permutation.empty())
    return packPermutedBytes(p, weight);
  if (p.pairDim >= 0)
    return packChannelPairBytes(p, weight);
  std::vector<int64_t> shape = p.shape();
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  std::string bytes(size_t(elements * p.elementBytes()), '\0');
  size_t size = size_t(p.weightElementBytes());
  auto at = [&](int64_t k, int64_t n) {
    return weight + size * size_t(p.transposed ? n * p.k + k : k * p.n + n);
  };
  char *out = bytes.data();
  for (int64_t o : p.offsets)
    for (int64_t c = 0; c < shape[1]; ++c)
      for (int64_t j = 0; j < shape[2]; ++j)
        for (int64_t kk = 0; kk < shape[3]; ++kk)
          for (int64_t l = 0; l < shape[4]; ++l) {
            int64_t n = o + j * p.cols + l / p.group;
            int64_t k = c * p.chunk + p.group * kk + l % p.group;
            if (p.group == 2 && !p.intBits) {
              float f;
              std::memcpy(&f, at(k, n), sizeof(f));
              uint16_t h = toBf16(f);
              std::memcpy(out, &h, sizeof(h));
            } else {
              std::memcpy(out, at(k, n), size);
            }
            out += p.elementBytes();
          }
  return bytes;
}

namespace {

/// An index `constant + coeff * iv`, for at most one loop's induction
/// variable `iv` (null: a constant).
struct LinearIndex {
  int64_t constant = 0, coeff = 0;
  Value iv;
};

/// A loop's constant bounds for its induction variable `iv`.
struct LoopRange {
  int64_t lb = 0, ub = 0, step = 1;
  int64_t trips() const { return (ub - lb + step - 1) / step; }
};

std::optional<LoopRange> rangeOf(Value iv) {
  auto arg = dyn_cast<BlockArgument>(iv);
  if (!arg)
    return std::nullopt;
  Operation *owner = arg.getOwner()->getParentOp();
  std::optional<int64_t> lb, ub, step;
  if (auto f = dyn_cast<scf::ForOp>(owner)) {
    if (f.getInductionVar() != iv)
      return std::nullopt;
    lb = getConstantIntValue(f.getLowerBound());
    ub = getConstantIntValue(f.getUpperBound());
    step = getConstantIntValue(f.getStep());
  } else if (auto f = dyn_cast<scf::ForallOp>(owner)) {
    unsigned d = arg.getArgNumber();
    if (d >= f.getRank())
      return std::nullopt;
    lb = getConstantIntValue(f.getMixedLowerBound()[d]);
    ub = getConstantIntValue(f.getMixedUpperBound()[d]);
    step = getConstantIntValue(f.getMixedStep()[d]);
  }
  if (!lb || !ub || !step || *step < 1 || *ub <= *lb)
    return std::nullopt;
  return LoopRange{*lb, *ub, *step};
}

/// `li` with no induction variable when its coefficient is zero.
LinearIndex normalized(LinearIndex li) {
  if (li.coeff == 0)
    li.iv = {};
  return li;
}

std::optional<LinearIndex> add(LinearIndex a, LinearIndex b) {
  if (a.iv && b.iv && a.iv != b.iv)
    return std::nullopt;
  return normalized(LinearIndex{a.constant + b.constant, a.coeff + b.coeff,
                                a.iv ? a.iv : b.iv});
}

/// `v` as a LinearIndex: constants, loop induction variables, sums and
/// products by constants of them, and affine maps without divisions.
std::optional<LinearIndex> linearIndex(OpFoldResult v, int depth = 0) {
  if (auto c = getConstantIntValue(v))
    return LinearIndex{*c, 0, {}};
  Value value = dyn_cast<Value>(v);
  if (!value || depth > 8)
    return std::nullopt;
  if (rangeOf(value))
    return LinearIndex{0, 1, value};
  if (auto sum = value.getDefiningOp<arith::AddIOp>()) {
    auto a = linearIndex(sum.getLhs(), depth + 1);
    auto b = linearIndex(sum.getRhs(), depth + 1);
    return a && b ? add(*a, *b) : std::nullopt;
  }
  if (auto product = value.getDefiningOp<arith::MulIOp>()) {
    auto a = linearIndex(product.getLhs(), depth + 1);
    auto b = linearIndex(product.getRhs(), depth + 1);
    if (!a || !b || (a->iv && b->iv))
      return std::nullopt;
    if (b->iv)
      std::swap(a, b);
    return normalized(
        LinearIndex{a->constant * b->constant, a->coeff * b->constant, a->iv});
  }
  auto apply = value.getDefiningOp<affine::AffineApplyOp>();
  if (!apply || apply.getMapOperands().size() != 1 ||
      apply.getAffineMap().getNumSymbols() != 0)
    return std::nullopt;
  AffineExpr e = apply.getAffineMap().getResult(0);
  bool linear = true;
  e.walk([&](AffineExpr sub) {
    linear &= sub.getKind() != AffineExprKind::Mod &&
              sub.getKind() != AffineExprKind::FloorDiv &&
              sub.getKind() != AffineExprKind::CeilDiv;
  });
  auto inner = linearIndex(apply.getMapOperands().front(), depth + 1);
  if (!linear || !inner)
    return std::nullopt;
  // e(x) = e(0) + (e(1) - e(0)) x for a map without divisions.
  auto at = [&](int64_t x) {
    SmallVector<int64_t> r = apply.getAffineMap().compose({x});
    return r.front();
  };
  int64_t e0 = at(0), slope = at(1) - e0;
  return normalized(LinearIndex{e0 + slope * inner->constant,
                                slope * inner->coeff, inner->iv});
}

/// The `ign.weight` argument `source` slices, with the offsets of the
/// slice along each of its two dims; nullopt unless every slice on the way
/// has unit strides and rank 2.
std::optional<std::pair<BlockArgument, std::array<LinearIndex, 2>>>
weightOffsets(Value source, func::FuncOp kernel) {
  std::array<LinearIndex, 2> offsets;
  Value v = source;
  while (auto slice = v.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (!slice.hasUnitStride() || slice.getSourceType().getRank() != 2 ||
        slice.getType().getRank() != 2)
      return std::nullopt;
    for (int d = 0; d < 2; ++d) {
      auto li = linearIndex(slice.getMixedOffsets()[d]);
      auto sum = li ? add(offsets[d], *li) : std::nullopt;
      if (!sum)
        return std::nullopt;
      offsets[d] = *sum;
    }
    v = slice.getSource();
  }
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &kernel.getBody().front() ||
      !kernel.getArgAttr(arg.getArgNumber(), kWeightArgAttr))
    return std::nullopt;
  return std::make_pair(arg, offsets);
}

/// The index of the piece the loop around `li` is at: (iv - lb) / step.
Value pieceIndex(RewriterBase &rewriter, Location loc, const LinearIndex &li) {
  if (!li.iv)
    return rewriter.create<arith::ConstantIndexOp>(loc, 0);
  LoopRange r = *rangeOf(li.iv);
  Value lb = rewriter.create<arith::ConstantIndexOp>(loc, r.lb);
  Value step = rewriter.create<arith::ConstantIndexOp>(loc, r.step);
  return rewriter.create<arith::DivUIOp>(
      loc, rewriter.create<arith::SubIOp>(loc, li.iv, lb), step);
}

/// The plan of the panels of a [k, n]-slice of the weight at `offsets`
/// (along k and n), or nullopt unless the loops step the column offset
/// through whole pieces inside the weight and the reduction offset through
/// chunks that tile it exactly.
std::optional<PanelPlan> planPanels(const LinearIndex &kOffset,
                                    const LinearIndex &nOffset, int64_t k,
                                    int64_t n, int64_t sliceK, int64_t sliceN) {
  PanelPlan p;
  p.k = k, p.n = n, p.width = sliceN, p.chunk = sliceK;
  if (!nOffset.iv) {
    p.offsets.push_back(nOffset.constant);
  } else {
    LoopRange r = *rangeOf(nOffset.iv);
    for (int64_t t = 0; t < r.trips(); ++t)
      p.offsets.push_back(nOffset.constant +
                          nOffset.coeff * (r.lb + t * r.step));
  }
  for (int64_t o : p.offsets)
    if (o < 0 || o + sliceN > n)
      return std::nullopt;
  if (!kOffset.iv)
    return kOffset.constant == 0 && sliceK == k ? std::optional(p)
                                                : std::nullopt;
  LoopRange r = *rangeOf(kOffset.iv);
  if (kOffset.constant + kOffset.coeff * r.lb != 0 ||
      kOffset.coeff * r.step != sliceK || r.trips() * sliceK != k)
    return std::nullopt;
  return p;
}

/// The kernel's `ign.panels` argument for `plan`: an existing one with the
/// same plan, or a new last argument.
BlockArgument panelsArgument(func::FuncOp kernel, const PanelPlan &plan) {
  MLIRContext *ctx = kernel.getContext();
  DictionaryAttr attr = plan.toAttr(ctx);
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
    if (kernel.getArgAttr(i, kPanelsArgAttr) == attr)
      return kernel.getArgument(i);
  unsigned index = kernel.getNumArguments();
  Type element =
      panelElement(plan.intBits ? Type(IntegerType::get(ctx, plan.intBits))
                                : Type(Float32Type::get(ctx)),
                   plan.group);
  auto type = RankedTensorType::get(plan.shape(), element);
  Builder b(ctx);
  DictionaryAttr attrs = b.getDictionaryAttr(
      {b.getNamedAttr(kPanelsArgAttr, attr),
       b.getNamedAttr("bufferization.writable", b.getBoolAttr(false))});
  kernel.insertArgument(index, type, attrs, kernel.getLoc());
  return kernel.getArgument(index);
}

} // namespace

Value prepackedPanels(RewriterBase &rewriter, Value source, bool transposed,
                      int64_t cols, Operation *outer, int64_t group) {
  auto kernel = outer->getParentOfType<func::FuncOp>();
  auto type = dyn_cast<RankedTensorType>(source.getType());
  if (!kernel || !type || type.getRank() != 2 || !type.hasStaticShape() ||
      !panelElement(type.getElementType(), group))
    return {};
  auto found = weightOffsets(source, kernel);
  if (!found)
    return {};
  auto [weight, offsets] = *found;
  auto weightType = cast<RankedTensorType>(weight.getType());
  if (!weightType.hasStaticShape() ||
      weightType.getElementType() != type.getElementType())
    return {};
  int nDim = transposed ? 0 : 1, kDim = 1 - nDim;
  int64_t sliceN = type.getDimSize(nDim), sliceK = type.getDimSize(kDim);
  if (cols < 1 || sliceN % cols || sliceK % group)
    return {};
  auto plan =
      planPanels(offsets[kDim], offsets[nDim], weightType.getDimSize(kDim),
                 weightType.getDimSize(nDim), sliceK, sliceN);
  if (!plan)
    return {};
  plan->source = weight.getArgNumber();
  plan->transposed = transposed;
  plan->cols = cols;
  plan->group = group;
  if (auto integer = dyn_cast<IntegerType>(type.getElementType()))
    plan->intBits = integer.getWidth();
  BlockArgument panels = panelsArgument(kernel, *plan);
  if (!panels)
    return {};

  // The piece and chunk the loops around `outer` are at, and their panels.
  Location loc = outer->getLoc();
  rewriter.setInsertionPoint(outer);
  Value piece = pieceIndex(rewriter, loc, offsets[nDim]);
  Value chunk = pieceIndex(rewriter, loc, offsets[kDim]);
  std::vector<int64_t> shape = plan->shape();
  SmallVector<OpFoldResult> at{piece, chunk, rewriter.getIndexAttr(0),
                               rewriter.getIndexAttr(0),
                               rewriter.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{
      rewriter.getIndexAttr(1), rewriter.getIndexAttr(1),
      rewriter.getIndexAttr(shape[2]), rewriter.getIndexAttr(shape[3]),
      rewriter.getIndexAttr(shape[4])};
  SmallVector<OpFoldResult> strides(5, rewriter.getIndexAttr(1));
  auto sliceType = RankedTensorType::get(
      {shape[2], shape[3], shape[4]},
      cast<RankedTensorType>(panels.getType()).getElementType());
  return rewriter.create<tensor::ExtractSliceOp>(loc, sliceType, panels, at,
                                                 sizes, strides);
}

/// Whether `li` is a multiple of `g` wherever its loop takes it.
bool alwaysMultipleOf(const LinearIndex &li, int64_t g) {
  if (!li.iv)
    return li.constant % g == 0;
  std::optional<LoopRange> r = rangeOf(li.iv);
  return r && (li.constant + li.coeff * r->lb) % g == 0 &&
         (li.coeff * r->step) % g == 0;
}

Value prepackedChannelPairs(RewriterBase &rewriter, Value source, unsigned dim,
                            int64_t group) {
  OpBuilder::InsertionGuard guard(rewriter);
  auto slice = source.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || dim >= unsigned(slice.getType().getRank()))
    return {};
  // Slices of slices (a workgroup's filters, then a chunk of the channels)
  // of one rank, the paired dim's offsets summed as a LinearIndex.
  int64_t rank = slice.getType().getRank();
  LinearIndex pairOffset;
  Value v = source;
  while (auto s = v.getDefiningOp<tensor::ExtractSliceOp>()) {
    auto li = linearIndex(s.getMixedOffsets()[dim]);
    auto total = li ? add(pairOffset, *li) : std::nullopt;
    if (!s.hasUnitStride() || s.getSourceType().getRank() != rank || !total)
      return {};
    pairOffset = *total;
    v = s.getSource();
  }
  auto arg = dyn_cast<BlockArgument>(v);
  auto kernel = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                    : func::FuncOp();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  // Whole groups: an offset a multiple of the group (all the channels, or
  // a chunk of them stepping by such a size) and such a size.
  bool element = group == 2 ? type && type.getElementType().isF32()
                            : type && type.getElementType().isInteger(8);
  if (!kernel || arg.getOwner() != &kernel.getBody().front() ||
      !kernel.getArgAttr(arg.getArgNumber(), kWeightArgAttr) || !type ||
      !type.hasStaticShape() || !element || (group != 2 && group != 4) ||
      slice.getType().getDimSize(dim) % group != 0 ||
      !alwaysMultipleOf(pairOffset, group))
    return {};
  Location loc = slice.getLoc();
  rewriter.setInsertionPoint(slice);
  auto within = offsetsWithin(rewriter, loc, source, v);
  if (!within)
    return {};
  SmallVector<OpFoldResult> offsets = *within;
  PanelPlan plan;
  plan.source = arg.getArgNumber();
  plan.pairDim = dim;
  plan.group = group;
  plan.intBits = group == 4 ? 8 : 0;
  plan.weightShape.assign(type.getShape().begin(), type.getShape().end());
  BlockArgument pairs = panelsArgument(kernel, plan);
  SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
  offsets[dim] = affine::makeComposedFoldedAffineApply(
      rewriter, loc, rewriter.getAffineDimExpr(0).floorDiv(group),
      {offsets[dim]});
  offsets.push_back(rewriter.getIndexAttr(0));
  sizes[dim] = rewriter.getIndexAttr(slice.getType().getDimSize(dim) / group);
  sizes.push_back(rewriter.getIndexAttr(group));
  SmallVector<OpFoldResult> strides(sizes.size(), rewriter.getIndexAttr(1));
  return rewriter.create<tensor::ExtractSliceOp>(loc, pairs, offsets, sizes,
                                                 strides);
}

Value prepackedPermutation(RewriterBase &rewriter, Value source,
                           ArrayRef<int64_t> permutation, int64_t padLast) {
  OpBuilder::InsertionGuard guard(rewriter);
  // A slice of the weight, or all of it.
  auto slice = source.getDefiningOp<tensor::ExtractSliceOp>();
  if (slice && !slice.hasUnitStride())
    return {};
  auto arg = dyn_cast<BlockArgument>(slice ? slice.getSource() : source);
  if (!arg)
    return {};
  auto kernel = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  auto type = dyn_cast<RankedTensorType>(arg.getType());
  if (!kernel || arg.getOwner() != &kernel.getBody().front() ||
      !kernel.getArgAttr(arg.getArgNumber(), kWeightArgAttr) || !type ||
      !type.hasStaticShape() || !type.getElementType().isF32() ||
      cast<RankedTensorType>(source.getType()).getRank() != type.getRank() ||
      permutation.size() != size_t(type.getRank()) ||
      !isPermutationVector(permutation) || padLast < 0)
    return {};
  PanelPlan plan;
  plan.source = arg.getArgNumber();
  plan.group = 2;
  plan.weightShape.assign(type.getShape().begin(), type.getShape().end());
  plan.permutation.assign(permutation.begin(), permutation.end());
  plan.padLast = padLast;
  BlockArgument permuted = panelsArgument(kernel, plan);
  SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes;
  for (int64_t d : type.getShape())
    sizes.push_back(rewriter.getIndexAttr(d));
  if (slice) {
    offsets = slice.getMixedOffsets();
    sizes = slice.getMixedSizes();
    rewriter.setInsertionPoint(slice);
  } else {
    rewriter.setInsertionPointToStart(&kernel.getBody().front());
  }
  SmallVector<OpFoldResult> at, size;
  for (int64_t d : permutation) {
    at.push_back(offsets[d]);
    size.push_back(sizes[d]);
  }
  SmallVector<OpFoldResult> strides(size.size(), rewriter.getIndexAttr(1));
  return rewriter.create<tensor::ExtractSliceOp>(source.getLoc(), permuted, at,
                                                 size, strides);
}

} // namespace ign::host
