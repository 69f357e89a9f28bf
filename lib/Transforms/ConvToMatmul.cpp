//===- ConvToMatmul.cpp - convolutions as matmuls (im2col) ----------------===//
//
// In NCHW a convolution's contiguous output loop is one row of pixels (7 to
// 56 wide), too short for good vector code. As a matmul of the weight
// [F, C*K] with columns [N, C*K, P], the contiguous loop covers all P output
// pixels, and the host schedule register-tiles and vectorizes it. The
// columns are one ign.im2col (padding included), which fusion puts in the
// matmul's kernel; a 1x1 unit-stride unpadded convolution needs no
// columns: the input is the matrix.
//
// A target with direct convolution kernels (the host) keeps its ungrouped
// convolutions instead (directConvolutions): their weights reordered into
// blocks of filters, [F / T, C, k..., T], and the register tile spans the
// filters as lanes and a few pixels of one row, so the row's length no
// longer matters and no columns are formed.
//
// A transposed convolution is the other way round: the matmul of its
// weight, transposed, [F*K, C] with the input [N, C, P] gives columns
// [N, F*K, P] over the input's pixels, which one ign.col2im sums into the
// output. No multiply touches the zeros a strided transposed convolution
// spreads between its input pixels (the direct lowering computes them all).
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/Passes.h"

#include "Activations.h"
#include "WeightConstants.h"

#include "mlir/IR/Builders.h"

namespace ign {
#define GEN_PASS_DEF_CONVTOMATMUL
#include "ign/Transforms/Passes.h.inc"
} // namespace ign

using namespace mlir;

namespace ign {
namespace {

SmallVector<int64_t> values(ArrayAttr a) {
  SmallVector<int64_t> v;
  for (const APInt &x : a.getAsValueRange<IntegerAttr>())
    v.push_back(x.getSExtValue());
  return v;
}

/// One group, static shapes, at least one spatial dim, weights as ONNX
/// has them.
bool isConvertible(ConvOp op) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto w = dyn_cast<RankedTensorType>(op.getWeight().getType());
  return in && w && in.hasStaticShape() && w.hasStaticShape() &&
         op.getGroup() == 1 && in.getRank() >= 3 && op.getFilterBlock() == 0;
}

/// A 1x1 unit-stride unpadded convolution: its input is the matrix.
bool isPointwise(ConvOp op) {
  auto w = cast<RankedTensorType>(op.getWeight().getType());
  auto isOne = [](int64_t v) { return v == 1; };
  return llvm::all_of(w.getShape().drop_front(2), isOne) &&
         llvm::all_of(values(op.getStrides()), isOne) &&
         llvm::all_of(values(op.getPads()), [](int64_t v) { return v == 0; });
}

/// Groups of at least this many channels make a grouped 1x1 unit-stride
/// convolution a batched matmul, one batch per group ([G, F/G, C/G] with
/// [N, G, C/G, P]). ShuffleNet's groups of 34 and 68 channels ran at 9-20
/// GFLOP/s as channel convolutions. Depthwise ones (one channel per group)
/// keep the host's channel-convolution tiles.
constexpr int64_t kMinGroupChannels = 4;

/// A grouped 1x1 unit-stride unpadded convolution with static shapes and at
/// least kMinGroupChannels channels per group.
bool isGroupedPointwise(ConvOp op) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto w = dyn_cast<RankedTensorType>(op.getWeight().getType());
  int64_t g = op.getGroup();
  return in && w && in.hasStaticShape() && w.hasStaticShape() && g > 1 &&
         in.getRank() >= 3 && op.getFilterBlock() == 0 && isPointwise(op) &&
         in.getDimSize(1) % g == 0 && w.getDimSize(0) % g == 0 &&
         in.getDimSize(1) / g >= kMinGroupChannels;
}

/// Filters below this many get no direct convolution: its register tile
/// spans at least one vector of filters.
constexpr int64_t kMinDirectFilters = 16;

/// A spatial convolution that gets no direct kernel (fewer filters than a
/// vector, or a count no filter block divides: 24, 40, 72) and has a unit
/// stride (or a small one, kMaxPixelTiledStride) along rows of at least
/// kMinPixelTiledRow pixels stays a
/// convolution, marked kPixelTiledAttr for convToMatmul to leave: the host
/// tiles it as pixels of a row (lanes) by rows, as a depthwise convolution
/// (its weights index no pixel). As an im2col matmul of 8 or 1 filter rows
/// it ran at 0.6-4 GFLOP/s (basic-pitch's heads over 172 x 264 pixels); with
/// 24 filters over 208 x 208 pixels the im2col, an index computation per
/// element, took 20-30 ms of the matmul kernel's, pixel-tiled 8-10 ms
/// (PP-OCRv4's detector 310 -> 165 ms, one thread).
constexpr int64_t kMinPixelTiledRow = 16;
/// Strided rows too, up to this stride (the host reads s x V contiguous
/// lanes and keeps every s-th), unless padded filters take a direct kernel:
/// basic-pitch's 1-filter 256-tap stride-2 convolution over 44098 samples
/// was an im2col of 22 MB and a matrix-vector product, 3.7 -> 0.39 ms; with
/// 24 filters (ShuffleNet's stem) the padded direct kernel is 1.2x faster.
constexpr int64_t kMaxPixelTiledStride = 4;
constexpr llvm::StringLiteral kPixelTiledAttr = "ign.pixel_tiled";

/// A 1x1 unit-stride convolution over more pixels than this stays a matmul:
/// its reduction is short and the matmul's tile streams the pixels
/// contiguously (128 -> 128 channels over 12 x 160 pixels: 0.88 ms as a
/// matmul, 1.33 ms direct; ResNet-50's 64 -> 256 over 56 x 56 with its
/// residual add: 2.1 ms as a matmul, 3.8-4.1 direct, in one-thread kernel
/// profiles; ResNet-50's 256 -> 1024 and 1024 -> 256 over 14 x 14: 0.90
/// and 0.95 ms as matmuls, 1.13 and 1.03 direct). Over fewer (7 x 7 = 49)
/// the pixels do not fill the matmul's tiles (512 -> 2048: 1.03 ms direct,
/// 2.5 as a matmul).
constexpr int64_t kMaxDirectPointwisePixels = 128;

/// The block of filters for `f` filters: `block` (two vectors) or half of it
/// (one vector), whichever divides it first; 0 when neither does. With less
/// than a vector of lanes, tiles of pixels do better (24 and 72 filters with
/// half AVX-512 vectors ran OpenWakeWord's speech embedding 3.7 -> 6.6 ms,
/// measured against im2col matmuls).
int64_t filterBlockFor(int64_t f, int64_t block) {
  for (int64_t t = block; t >= std::max<int64_t>(4, block / 2); t /= 2)
    if (f % t == 0)
      return t;
  return 0;
}

/// `w` [F, C, k...] as [F / T, C, k..., T] (filter f at [f / T, ..., f % T]):
/// reordered now when it is a constant, else by an ign.reshape and an
/// ign.transpose.
Value blockedWeight(OpBuilder &b, Location loc, Value w, int64_t block) {
  auto type = cast<RankedTensorType>(w.getType());
  int64_t rank = type.getRank(), f = type.getDimSize(0);
  // [F / T, T, C, k...] -> [F / T, C, k..., T]
  SmallVector<int64_t> split{f / block, block}, perm{0}, shape;
  llvm::append_range(split, type.getShape().drop_front());
  for (int64_t d = 2; d <= rank; ++d)
    perm.push_back(d);
  perm.push_back(1);
  for (int64_t d : perm)
    shape.push_back(split[d]);
  auto to = RankedTensorType::get(shape, type.getElementType());
  int64_t rest = type.getNumElements() / f;
  auto reorder = [&](const auto &values) {
    std::remove_const_t<std::remove_reference_t<decltype(values)>> t(
        values.size());
    for (int64_t i = 0; i < f; ++i)
      for (int64_t j = 0; j < rest; ++j)
        t[((i / block) * rest + j) * block + i % block] = values[i * rest + j];
    return t;
  };
  // (weightName only for a constant.)
  auto name = [&] { return weightName(w, ".blocked" + std::to_string(block)); };
  if (std::optional<std::vector<float>> values = constantFloats(w))
    return makeWeight(b, loc, to, reorder(*values), name());
  // The int8 filters of a quantized convolution (IntegerMatmuls.cpp).
  if (type.getElementType().isSignlessInteger(8))
    if (std::optional<std::vector<int64_t>> values = constantIntegers(w)) {
      std::vector<int64_t> t = reorder(*values);
      return makeWeight(b, loc, to, std::vector<int8_t>(t.begin(), t.end()),
                        name());
    }
  Value r = b.create<ReshapeOp>(loc, w, b.getI64ArrayAttr(split));
  return b.create<TransposeOp>(loc, to, r, b.getI64ArrayAttr(perm));
}

/// A pointwise convolution over one pixel with at least this many channels,
/// a multiple of it, is a Gemm with the weight transposed as stored:
/// [N, C] x [F, C]^T. As the matmul [F, C] x [N, C, 1] its one column left
/// no vector along the output, and MobileNetV3's squeeze-excitation
/// 672 -> 168 ran as scalar dot products (117 us; 168 filters take no
/// direct kernel); as a Gemm it gets the host's dot-product tiles (both
/// operands contiguous along C).
constexpr int64_t kGemvChannels = 16;

bool isOnePixelPointwise(ConvOp op) {
  auto out = cast<RankedTensorType>(op.getType());
  auto in = cast<RankedTensorType>(op.getInput().getType());
  return op.getGroup() == 1 && isPointwise(op) &&
         out.getNumElements() == out.getDimSize(0) * out.getDimSize(1) &&
         in.getDimSize(1) % kGemvChannels == 0;
}

/// `op` (isOnePixelPointwise) as Gemm(x [N, C], w [F, C], bias, transB).
Value onePixelGemm(OpBuilder &b, ConvOp op) {
  Location loc = op.getLoc();
  auto out = cast<RankedTensorType>(op.getType());
  auto in = cast<RankedTensorType>(op.getInput().getType());
  int64_t n = in.getDimSize(0), c = in.getDimSize(1), f = out.getDimSize(1);
  Value x = b.create<ReshapeOp>(loc, op.getInput(), b.getI64ArrayAttr({n, c}));
  Value w = b.create<ReshapeOp>(loc, op.getWeight(), b.getI64ArrayAttr({f, c}));
  Value y = b.create<GemmOp>(loc, x, w, op.getBias(), b.getF32FloatAttr(1),
                             b.getF32FloatAttr(1), b.getBoolAttr(false),
                             b.getBoolAttr(true));
  return b.create<ReshapeOp>(loc, y, b.getI64ArrayAttr(out.getShape()));
}

/// Whether `op` takes a direct kernel given a block of its filters: an
/// ungrouped convolution with at least kMinDirectFilters filters, spatial
/// or over few pixels.
bool takesDirectKernel(ConvOp op) {
  auto out = cast<RankedTensorType>(op.getType());
  int64_t f = out.getDimSize(1);
  int64_t pixels = out.getNumElements() / (f * out.getDimSize(0));
  return isConvertible(op) && f >= kMinDirectFilters &&
         (!isPointwise(op) || pixels <= kMaxDirectPointwisePixels);
}

/// Filters that no block divides (24, 40, 72 on AVX-512) are padded with
/// zero filters up to a multiple of half the block (one vector) when that
/// adds at most this share of multiplies: the convolution then takes the
/// direct kernels, as onnxruntime's NCHWc kernels pad them, instead of an
/// im2col matmul (a strided one: ShuffleNet's 3 -> 24 3x3 stride-2 stem
/// ran at 15 GFLOP/s; 16 -> 40 3x3 stride 2 over 80 x 80 0.78 -> 0.22 ms).
/// Unit-stride ones keep their pixel tiles (PP-OCRv4's 96 -> 24 3x3 over
/// 160 x 160 ran 1.10x slower padded).
constexpr double kMaxPaddedFilters = 1.34;

/// The filters `op` is padded to (kMaxPaddedFilters), or 0: only with a
/// constant weight and bias, at least kMinDirectFilters filters and none of
/// the blocks dividing them.
int64_t paddedFilterCount(ConvOp op, int64_t block) {
  int64_t f = cast<RankedTensorType>(op.getType()).getDimSize(1);
  int64_t vector = block / 2;
  if (vector < 4 || !takesDirectKernel(op) || isOnePixelPointwise(op) ||
      filterBlockFor(f, block) || !constantFloats(op.getWeight()) ||
      (op.getBias() && !constantFloats(op.getBias())))
    return 0;
  int64_t padded = llvm::alignTo(f, vector);
  return padded <= kMaxPaddedFilters * f ? padded : 0;
}

/// `values` of `v` ([F, ...]) followed by zeros up to `padded` rows.
Value zeroPadded(OpBuilder &b, Location loc, Value v, int64_t padded) {
  auto type = cast<RankedTensorType>(v.getType());
  std::vector<float> values = *constantFloats(v);
  values.resize(values.size() / type.getDimSize(0) * padded, 0.0f);
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = padded;
  return makeWeight(b, loc, RankedTensorType::get(shape, type.getElementType()),
                    std::move(values),
                    weightName(v, ".padded" + std::to_string(padded)));
}

/// Replaces `op` by a convolution of `padded` filters (the extra ones zero)
/// followed by its activations and a split keeping the first F channels (at
/// batch 1 a view of the convolution's buffer, LaunchPlan's splitInPlace).
ConvOp padFilters(ConvOp op, int64_t padded) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(op.getType());
  SmallVector<int64_t> shape(type.getShape());
  int64_t f = shape[1];
  shape[1] = padded;
  Value w = zeroPadded(b, loc, op.getWeight(), padded);
  Value bias =
      op.getBias() ? zeroPadded(b, loc, op.getBias(), padded) : Value();
  auto conv = b.create<ConvOp>(
      loc, RankedTensorType::get(shape, type.getElementType()), op.getInput(),
      w, bias, op.getStrides(), op.getPads(), op.getDilations(),
      op.getGroupAttr(), op.getFilterBlockAttr());
  SmallVector<Operation *> moved = activationsOf(op.getResult());
  Value y = applyActivations(b, op.getResult(), conv.getResult(), moved);
  Operation *last = moved.empty() ? op.getOperation() : moved.back();
  SmallVector<int64_t> rest(shape);
  rest[1] = padded - f;
  auto split = b.create<SplitOp>(
      loc,
      TypeRange{last->getResult(0).getType(),
                RankedTensorType::get(rest, type.getElementType())},
      y, b.getI64IntegerAttr(1), b.getI64ArrayAttr({f, padded - f}));
  last->getResult(0).replaceAllUsesWith(split.getResult(0));
  for (Operation *a : llvm::reverse(moved))
    a->erase();
  op.erase();
  return conv;
}

/// `op` (an ungrouped 1x1 unpadded convolution with a stride above 1) as a
/// strided slice of its input (a kernel of its own: 1/s^2 of the input's
/// bytes) and a unit-stride convolution of it, which is then pointwise: a
/// matmul over many pixels, or a direct kernel over all its pixels in one
/// row (flattenPixels). ResNet-50's downsampling 1024 -> 2048 over 7 x 7
/// output pixels ran its register tiles as 6 + 1 pixels per row.
void subsampleStrided(ConvOp op) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto w = cast<RankedTensorType>(op.getWeight().getType());
  auto out = cast<RankedTensorType>(op.getType());
  SmallVector<int64_t> strides = values(op.getStrides());
  auto isOne = [](int64_t v) { return v == 1; };
  if (!isConvertible(op) || llvm::all_of(strides, isOne) ||
      !llvm::all_of(w.getShape().drop_front(2), isOne) ||
      !llvm::all_of(values(op.getPads()), [](int64_t v) { return v == 0; }))
    return;
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<int64_t> starts(in.getRank(), 0),
      sizes{in.getDimSize(0), in.getDimSize(1)}, steps{1, 1};
  llvm::append_range(sizes, out.getShape().drop_front(2));
  llvm::append_range(steps, strides);
  Value x =
      b.create<SliceOp>(loc, RankedTensorType::get(sizes, in.getElementType()),
                        op.getInput(), b.getI64ArrayAttr(starts),
                        b.getI64ArrayAttr(sizes), b.getI64ArrayAttr(steps));
  SmallVector<int64_t> unit(strides.size(), 1);
  op.getInputMutable().assign(x);
  op.setStridesAttr(b.getI64ArrayAttr(unit));
}

/// `op` (a pointwise convolution over two or more spatial dims) as one
/// over a single dim of all its pixels, between reshapes (views at batch
/// 1; sinkReshapes moves its epilogue above the output's): the register
/// tile's rows then run across rows of pixels. ResNet-50's 7 x 7 pixels
/// were tiles of 6 + 1 pixels per row on AVX2, the 1-pixel tile's two
/// accumulators a chain of dependent FMAs (40-43% of the FMA peak).
ConvOp flattenPixels(ConvOp op) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto out = cast<RankedTensorType>(op.getType());
  if (in.getRank() <= 3 || !isPointwise(op))
    return op;
  OpBuilder b(op);
  Location loc = op.getLoc();
  int64_t n = in.getDimSize(0), c = in.getDimSize(1), f = out.getDimSize(1);
  int64_t p = out.getNumElements() / (n * f);
  Value x =
      b.create<ReshapeOp>(loc, op.getInput(), b.getI64ArrayAttr({n, c, p}));
  Value w = op.getWeight();
  auto wType = RankedTensorType::get(
      {f, c, 1}, cast<RankedTensorType>(w.getType()).getElementType());
  if (std::optional<std::vector<float>> values = constantFloats(w))
    w = makeWeight(b, loc, wType, std::move(*values), weightName(w, ".1d"));
  else
    w = b.create<ReshapeOp>(loc, w, b.getI64ArrayAttr({f, c, 1}));
  auto conv = b.create<ConvOp>(
      loc, RankedTensorType::get({n, f, p}, out.getElementType()), x, w,
      op.getBias(), b.getI64ArrayAttr({1}), b.getI64ArrayAttr({0, 0}),
      b.getI64ArrayAttr({1}), op.getGroupAttr(), op.getFilterBlockAttr());
  Value y = b.create<ReshapeOp>(loc, conv.getResult(),
                                b.getI64ArrayAttr(out.getShape()));
  op.replaceAllUsesWith(y);
  op.erase();
  return conv;
}

/// `op` (a 2-D convolution over columns of one pixel: input [N, C, H, 1],
/// window [kh, 1], nothing padded or strided along the width) as a 1-D
/// convolution over H between reshapes (views): its rows then hold H
/// pixels, not one. Magika's 5 x 1 convolution over 512 x 1 pixels ran its
/// tiles one pixel wide (5.3 of its 6.3 ms; no AMX blocks under 4).
void squeezeUnitColumns(ConvOp op) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto w = dyn_cast<RankedTensorType>(op.getWeight().getType());
  auto out = cast<RankedTensorType>(op.getType());
  if (!in || !w || !in.hasStaticShape() || !w.hasStaticShape() ||
      !out.hasStaticShape() || in.getRank() != 4 || in.getDimSize(3) != 1 ||
      w.getDimSize(3) != 1 || op.getFilterBlock() != 0)
    return;
  SmallVector<int64_t> strides = values(op.getStrides()),
                       pads = values(op.getPads()),
                       dilations = values(op.getDilations());
  if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2 ||
      strides[1] != 1 || pads[1] != 0 || pads[3] != 0)
    return;
  OpBuilder b(op);
  Location loc = op.getLoc();
  int64_t n = in.getDimSize(0), c = in.getDimSize(1), h = in.getDimSize(2);
  int64_t f = w.getDimSize(0), cg = w.getDimSize(1), kh = w.getDimSize(2);
  Value x =
      b.create<ReshapeOp>(loc, op.getInput(), b.getI64ArrayAttr({n, c, h}));
  Value weight = op.getWeight();
  auto wType = RankedTensorType::get({f, cg, kh}, w.getElementType());
  if (std::optional<std::vector<float>> values = constantFloats(weight))
    weight = makeWeight(b, loc, wType, std::move(*values),
                        weightName(weight, ".1d"));
  else
    weight = b.create<ReshapeOp>(loc, weight, b.getI64ArrayAttr({f, cg, kh}));
  auto conv = b.create<ConvOp>(
      loc,
      RankedTensorType::get({n, f, out.getDimSize(2)}, out.getElementType()), x,
      weight, op.getBias(), b.getI64ArrayAttr({strides[0]}),
      b.getI64ArrayAttr({pads[0], pads[2]}), b.getI64ArrayAttr({dilations[0]}),
      op.getGroupAttr(), op.getFilterBlockAttr());
  Value y = b.create<ReshapeOp>(loc, conv.getResult(),
                                b.getI64ArrayAttr(out.getShape()));
  op.replaceAllUsesWith(y);
  op.erase();
}

} // namespace

void directConvolutions(func::FuncOp func, int64_t filterBlock,
                        int64_t padFiltersFirst) {
  SmallVector<ConvOp> columns;
  func.walk([&](ConvOp op) { columns.push_back(op); });
  for (ConvOp op : columns)
    squeezeUnitColumns(op);
  func.walk([](ConvOp op) { subsampleStrided(op); });
  SmallVector<std::pair<ConvOp, int64_t>> convs, padded;
  func.walk([&](ConvOp op) {
    auto out = cast<RankedTensorType>(op.getType());
    int64_t f = out.getDimSize(1), block = filterBlockFor(f, filterBlock);
    bool rows = isConvertible(op) && !isPointwise(op) &&
                out.getShape().back() >= kMinPixelTiledRow;
    int64_t stride = values(op.getStrides()).back();
    // With a matrix unit or bf16 pairs, 24 filters padded to 32 take their
    // blocks: PP-OCRv4 det's 96 -> 24 3x3 convolutions over 160 x 160 ran
    // pixel tiles in fp32 at 113 GFLOP/s (9.4 ms each, a third of the model).
    int64_t channels =
        cast<RankedTensorType>(op.getInput().getType()).getDimSize(1);
    int64_t first = padFiltersFirst > 0 && channels % padFiltersFirst == 0
                        ? paddedFilterCount(op, filterBlock)
                        : 0;
    if (takesDirectKernel(op) && block)
      convs.push_back({op, block});
    else if (first)
      padded.push_back({op, first});
    else if (rows && stride == 1)
      op->setAttr(kPixelTiledAttr, UnitAttr::get(op.getContext()));
    else if (int64_t p = paddedFilterCount(op, filterBlock))
      padded.push_back({op, p});
    else if (rows && stride <= kMaxPixelTiledStride)
      op->setAttr(kPixelTiledAttr, UnitAttr::get(op.getContext()));
  });
  for (auto [op, f] : padded)
    convs.push_back({padFilters(op, f), filterBlockFor(f, filterBlock)});
  for (auto [conv, block] : convs) {
    ConvOp op = flattenPixels(conv);
    OpBuilder b(op);
    Value w = blockedWeight(b, op.getLoc(), op.getWeight(), block);
    op.getWeightMutable().assign(w);
    op.setFilterBlock(block);
  }
}

void convToMatmul(func::FuncOp func) {
  SmallVector<ConvOp> convs;
  func.walk([&](ConvOp op) {
    if ((isConvertible(op) && !op->hasAttr(kPixelTiledAttr)) ||
        isGroupedPointwise(op))
      convs.push_back(op);
  });
  for (ConvOp op : convs) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto in = cast<RankedTensorType>(op.getInput().getType());
    auto out = cast<RankedTensorType>(op.getType());
    auto w = cast<RankedTensorType>(op.getWeight().getType());
    int64_t n = in.getDimSize(0), c = in.getDimSize(1), f = out.getDimSize(1),
            k = 1, p = 1;
    for (int64_t d : w.getShape().drop_front(2))
      k *= d;
    for (int64_t d : out.getShape().drop_front(2))
      p *= d;
    if (isOnePixelPointwise(op)) {
      op.replaceAllUsesWith(onePixelGemm(b, op));
      op.erase();
      continue;
    }
    Value y;
    int64_t g = op.getGroup();
    if (g > 1) {
      // Grouped and pointwise: one matmul per group, batched.
      Value x = b.create<ReshapeOp>(loc, op.getInput(),
                                    b.getI64ArrayAttr({n, g, c / g, p}));
      Value wm = b.create<ReshapeOp>(loc, op.getWeight(),
                                     b.getI64ArrayAttr({g, f / g, c / g}));
      y = b.create<MatMulOp>(loc, wm, x);
    } else {
      Value x = isPointwise(op)
                    ? b.create<ReshapeOp>(loc, op.getInput(),
                                          b.getI64ArrayAttr({n, c, p}))
                          .getResult()
                    : b.create<Im2ColOp>(
                           loc, op.getInput(),
                           b.getI64ArrayAttr(w.getShape().drop_front(2)),
                           op.getStrides(), op.getPads(), op.getDilations())
                          .getResult();
      Value wm = b.create<ReshapeOp>(loc, op.getWeight(),
                                     b.getI64ArrayAttr({f, c * k}));
      y = b.create<MatMulOp>(loc, wm, x);
    }
    if (Value bias = op.getBias()) {
      SmallVector<int64_t> column{f, 1};
      if (g > 1)
        column = {g, f / g, 1};
      Value col = b.create<ReshapeOp>(loc, bias, b.getI64ArrayAttr(column));
      y = b.create<AddOp>(loc, y, col);
    }
    SmallVector<int64_t> shape(out.getShape());
    Value result = b.create<ReshapeOp>(loc, y, b.getI64ArrayAttr(shape));
    op.replaceAllUsesWith(result);
    op.erase();
  }
}

namespace {

/// One group, static shapes, at least one spatial dim, batch 1 (a Gemm
/// reads the weight transposed in place).
bool isConvertible(ConvTransposeOp op) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto w = dyn_cast<RankedTensorType>(op.getWeight().getType());
  auto out = dyn_cast<RankedTensorType>(op.getType());
  return in && w && out && in.hasStaticShape() && w.hasStaticShape() &&
         out.hasStaticShape() && op.getGroup() == 1 && in.getRank() >= 3 &&
         in.getDimSize(0) == 1;
}

void rewriteConvTranspose(ConvTransposeOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto out = cast<RankedTensorType>(op.getType());
  auto w = cast<RankedTensorType>(op.getWeight().getType());
  int64_t c = in.getDimSize(1), f = out.getDimSize(1), k = 1, p = 1;
  for (int64_t d : w.getShape().drop_front(2))
    k *= d;
  for (int64_t d : in.getShape().drop_front(2))
    p *= d;
  Value x = b.create<ReshapeOp>(loc, op.getInput(), b.getI64ArrayAttr({c, p}));
  Value wm =
      b.create<ReshapeOp>(loc, op.getWeight(), b.getI64ArrayAttr({c, f * k}));
  Value cols = b.create<GemmOp>(loc, wm, x, Value(), b.getF32FloatAttr(1),
                                b.getF32FloatAttr(1), b.getBoolAttr(true),
                                b.getBoolAttr(false));
  cols = b.create<ReshapeOp>(loc, cols, b.getI64ArrayAttr({1, f * k, p}));
  Value y = b.create<Col2ImOp>(
      loc, cols, op.getBias(), b.getI64ArrayAttr(in.getShape().drop_front(2)),
      b.getI64ArrayAttr(out.getShape().drop_front(2)),
      b.getI64ArrayAttr(w.getShape().drop_front(2)), op.getStrides(),
      op.getPads(), op.getDilations());
  op.replaceAllUsesWith(y);
  op.erase();
}

} // namespace

void convTransposeToMatmul(func::FuncOp func) {
  SmallVector<ConvTransposeOp> ops;
  func.walk([&](ConvTransposeOp op) {
    if (isConvertible(op))
      ops.push_back(op);
  });
  for (ConvTransposeOp op : ops)
    rewriteConvTranspose(op);
}

namespace {
struct ConvToMatmulPass : public impl::ConvToMatmulBase<ConvToMatmulPass> {
  void runOnOperation() override {
    convToMatmul(getOperation());
    convTransposeToMatmul(getOperation());
  }
};
} // namespace

} // namespace ign
