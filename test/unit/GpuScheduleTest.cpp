//===- GpuScheduleTest.cpp - the GPU layer's per-op mapping ---------------===//
//
// How the GPU schedule's knobs map linalg ops onto workgroups and threads,
// and where an op gets a register tile (targets/gpu/GpuSchedule.h).
//
//===----------------------------------------------------------------------===//

#include "GpuSchedule.h"
#include "GpuCostModel.h"
#include "GpuMapping.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

/// The first linalg op of `source` (a module), parsed in `ctx`.
struct ParsedOp {
  OwningOpRef<ModuleOp> module;
  linalg::LinalgOp op;
};

ParsedOp parseOp(MLIRContext &ctx, const char *source) {
  ign::gpu::prepareGpuContext(&ctx);
  ctx.loadDialect<func::FuncDialect>();
  ParsedOp p{parseSourceString<ModuleOp>(source, &ctx), nullptr};
  if (p.module)
    p.module->walk([&](linalg::LinalgOp op) {
      if (!p.op)
        p.op = op;
    });
  return p;
}

/// Lavapipe's limits.
ign::gpu::ChipLimits lavapipe() {
  ign::gpu::ChipLimits limits;
  limits.subgroupSize = 8;
  return limits;
}

std::optional<ign::gpu::OpMapping> mapDefault(linalg::LinalgOp op) {
  ign::gpu::ChipLimits limits = lavapipe();
  std::string why;
  return ign::gpu::mapOp(op, ign::gpu::defaultGpuSchedule(limits), limits, why);
}

} // namespace

/// A matmul whose loops the default tile divides: each of 4x32 threads
/// keeps a 4x4 tile of outputs in registers; the reduction loop is tiled
/// out of the thread's op.
TEST(GpuSchedule, MatmulGetsA4x4RegisterTile) {
  MLIRContext ctx;
  ParsedOp p = parseOp(ctx, R"(
    func.func @f(%a: memref<256x64xf32>, %b: memref<64x512xf32>, %c: memref<256x512xf32>) {
      linalg.matmul ins(%a, %b : memref<256x64xf32>, memref<64x512xf32>) outs(%c : memref<256x512xf32>)
      return
    })");
  ASSERT_TRUE(p.op);
  std::optional<ign::gpu::OpMapping> m = mapDefault(p.op);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->workgroupTile, (std::vector<int64_t>{16, 128, 0}));
  EXPECT_EQ(m->threads, (std::vector<int64_t>{4, 32, 0}));
  EXPECT_EQ(m->reductionTile, (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(m->registerOutputs, 16);
  EXPECT_EQ(m->gridSize, (std::array<int64_t, 3>{4, 16, 1}));
}

/// A 56x56 convolution output: threads chosen to divide the loops (14
/// along x, 8 along y) rather than powers of two that would leave the last
/// workgroup a partial tile and no register tile. The tile spans 4 pixels
/// along x and 4 filters (z), each thread running its 4 filters: each step
/// loads 4 inputs and 4 weights for 16 outputs (4x4 pixels would load 16
/// inputs and one weight).
TEST(GpuSchedule, ConvolutionTilesPixelsAndFilters) {
  MLIRContext ctx;
  ParsedOp p = parseOp(ctx, R"(
    func.func @f(%x: memref<1x8x58x58xf32>, %w: memref<16x8x3x3xf32>, %y: memref<1x16x56x56xf32>) {
      linalg.conv_2d_nchw_fchw ins(%x, %w : memref<1x8x58x58xf32>, memref<16x8x3x3xf32>) outs(%y : memref<1x16x56x56xf32>)
      return
    })");
  ASSERT_TRUE(p.op);
  std::optional<ign::gpu::OpMapping> m = mapDefault(p.op);
  ASSERT_TRUE(m);
  // Loops: n, f, oh, ow, c, kh, kw; x = ow, y = oh, z = f.
  EXPECT_EQ(m->workgroupTile, (std::vector<int64_t>{0, 4, 8, 56, 0, 0, 0}));
  EXPECT_EQ(m->threads, (std::vector<int64_t>{0, 0, 8, 14, 0, 0, 0}));
  EXPECT_EQ(m->reductionTile, (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(m->registerOutputs, 16);
  EXPECT_EQ(m->blockSize, (std::array<int64_t, 3>{14, 8, 1}));
  EXPECT_EQ(m->gridSize, (std::array<int64_t, 3>{1, 7, 4}));
}

/// Loops no element count divides (7x7) take one output per thread: no
/// register tile (the accumulator rewrite still keeps it in a register).
TEST(GpuSchedule, SevenBySevenHasNoRegisterTile) {
  MLIRContext ctx;
  ParsedOp p = parseOp(ctx, R"(
    func.func @f(%a: memref<7x64xf32>, %b: memref<64x7xf32>, %c: memref<7x7xf32>) {
      linalg.matmul ins(%a, %b : memref<7x64xf32>, memref<64x7xf32>) outs(%c : memref<7x7xf32>)
      return
    })");
  ASSERT_TRUE(p.op);
  std::optional<ign::gpu::OpMapping> m = mapDefault(p.op);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->threads, (std::vector<int64_t>{7, 7, 0}));
  EXPECT_TRUE(m->reductionTile.empty());
  EXPECT_EQ(m->registerOutputs, 0);
}

/// An elementwise op takes one element per thread whatever the elements
/// knobs say (they are register tiles): many workgroups for many cores.
TEST(GpuSchedule, ElementwiseTakesOneElementPerThread) {
  MLIRContext ctx;
  ParsedOp p = parseOp(ctx, R"(
    #id = affine_map<(d0, d1) -> (d0, d1)>
    func.func @f(%a: memref<100x100xf32>, %b: memref<100x100xf32>) {
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
          ins(%a : memref<100x100xf32>) outs(%b : memref<100x100xf32>) {
      ^bb0(%in: f32, %out: f32):
        %0 = arith.negf %in : f32
        linalg.yield %0 : f32
      }
      return
    })");
  ASSERT_TRUE(p.op);
  std::optional<ign::gpu::OpMapping> m = mapDefault(p.op);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->workgroupTile, (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(m->threads, (std::vector<int64_t>{4, 32}));
  EXPECT_TRUE(m->reductionTile.empty());
}

/// The space holds the register tiles' sizes, 8x8 (64 outputs) the largest.
TEST(GpuSchedule, SpaceHoldsRegisterTiles) {
  ign::search::ScheduleSpace space = ign::gpu::gpuScheduleSpace(lavapipe());
  for (const auto &knob : space.knobs)
    if (knob.name == ign::gpu::kElemsX)
      EXPECT_EQ(knob.values, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(space.defaults.at(ign::gpu::kElemsX), 4);
  EXPECT_LE(8 * 8, ign::gpu::kMaxRegisterOutputs);
}

namespace {

/// An RTX 4090's public numbers, as the nvidia-vulkan preset has them.
ign::gpu::ChipNumbers ada() {
  ign::gpu::ChipNumbers n;
  n.computeUnits = 128;
  n.clockMHz = 2520;
  n.peakGflops = 82600;
  n.bandwidthGBs = 1008;
  return n;
}

ign::gpu::ChipLimits adaLimits() {
  ign::gpu::ChipLimits limits;
  limits.subgroupSize = 32;
  return limits;
}

const char *kMatmul = R"(
    func.func @f(%a: memref<1024x1024xf32>, %b: memref<1024x1024xf32>, %c: memref<1024x1024xf32>) {
      linalg.matmul ins(%a, %b : memref<1024x1024xf32>, memref<1024x1024xf32>) outs(%c : memref<1024x1024xf32>)
      return
    })";

ign::gpu::DispatchEstimate estimate(linalg::LinalgOp op,
                                    const ign::gpu::GpuSchedule &s) {
  std::string why;
  std::optional<ign::gpu::OpMapping> m =
      ign::gpu::mapOp(op, s, adaLimits(), why);
  return ign::gpu::estimateDispatch(op, m ? &*m : nullptr, adaLimits(), ada());
}

} // namespace

/// The model counts a matmul's FMAs as two flops and predicts a 4x4
/// register tile faster than one output per thread (a quarter of the loads
/// per multiply-add), and both slower than the chip's peak. Without shared
/// memory each workgroup streams its 16 rows and 128 columns from the
/// cache for the whole reduction: memory bound.
TEST(GpuCostModel, RegisterTileBeatsOneOutputPerThread) {
  MLIRContext ctx;
  ParsedOp p = parseOp(ctx, kMatmul);
  ASSERT_TRUE(p.op);
  ign::gpu::GpuSchedule tiled = ign::gpu::defaultGpuSchedule(adaLimits());
  ign::gpu::GpuSchedule single = tiled;
  single.elemsX = single.elemsY = 1;
  ign::gpu::DispatchEstimate a = estimate(p.op, tiled);
  ign::gpu::DispatchEstimate b = estimate(p.op, single);
  EXPECT_DOUBLE_EQ(a.flops, 2.0 * 1024 * 1024 * 1024);
  EXPECT_LT(a.ms, b.ms);
  EXPECT_GT(a.ms, a.flops / (ada().peakGflops * 1e6));
  EXPECT_EQ(a.bound, "memory");
}

/// One thread of one workgroup (a reduction to one element) is predicted
/// far slower than the same work spread over the chip.
TEST(GpuCostModel, OneThreadIsSlow) {
  MLIRContext ctx;
  ParsedOp p = parseOp(ctx, kMatmul);
  ASSERT_TRUE(p.op);
  ign::gpu::DispatchEstimate spread =
      estimate(p.op, ign::gpu::defaultGpuSchedule(adaLimits()));
  ign::gpu::DispatchEstimate alone =
      ign::gpu::estimateDispatch(p.op, nullptr, adaLimits(), ada());
  EXPECT_GT(alone.ms, 1000 * spread.ms);
  EXPECT_LT(alone.utilization, 1e-4);
}

/// A large elementwise op is memory bound at about its bytes over the
/// bandwidth; a tiny one costs about a launch.
TEST(GpuCostModel, ElementwiseIsMemoryBoundAndTinyOpsLaunchBound) {
  MLIRContext ctx;
  ParsedOp big = parseOp(ctx, R"(
    #id = affine_map<(d0, d1) -> (d0, d1)>
    func.func @f(%a: memref<4096x4096xf32>, %b: memref<4096x4096xf32>) {
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
          ins(%a : memref<4096x4096xf32>) outs(%b : memref<4096x4096xf32>) {
      ^bb0(%in: f32, %out: f32):
        %0 = arith.negf %in : f32
        linalg.yield %0 : f32
      }
      return
    })");
  ASSERT_TRUE(big.op);
  ign::gpu::DispatchEstimate e =
      estimate(big.op, ign::gpu::defaultGpuSchedule(adaLimits()));
  EXPECT_EQ(e.bound, "memory");
  double bytes = 2.0 * 4096 * 4096 * 4;
  EXPECT_NEAR(e.ms,
              bytes / (ada().bandwidthGBs * 1e6) +
                  ign::gpu::kLaunchMicroseconds / 1e3,
              1e-6);
  MLIRContext ctx2;
  ParsedOp tiny = parseOp(ctx2, R"(
    func.func @f(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>) {
      linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%c : memref<4x4xf32>)
      return
    })");
  ASSERT_TRUE(tiny.op);
  EXPECT_EQ(estimate(tiny.op, ign::gpu::defaultGpuSchedule(adaLimits())).bound,
            "launch");
}

/// An untuned compile's schedule on a chip with numbers is the model's
/// pick: for a large matmul one predicted faster than the fixed default;
/// where no candidate is predicted 2% faster (an op of one element, which
/// every schedule maps alike), the fixed default.
TEST(GpuCostModel, ModelPicksTheDefault) {
  MLIRContext ctx;
  ParsedOp big = parseOp(ctx, kMatmul);
  ASSERT_TRUE(big.op);
  auto kernel = big.op->getParentOfType<func::FuncOp>();
  ign::gpu::GpuSchedule fixed = ign::gpu::defaultGpuSchedule(adaLimits());
  ign::gpu::GpuSchedule pick =
      ign::gpu::modelDefaultSchedule(kernel, adaLimits(), ada());
  std::optional<double> fixedMs =
      ign::gpu::predictKernel(kernel, fixed, adaLimits(), ada());
  std::optional<double> pickMs =
      ign::gpu::predictKernel(kernel, pick, adaLimits(), ada());
  ASSERT_TRUE(fixedMs && pickMs);
  EXPECT_LT(*pickMs, 0.98 * *fixedMs);
  EXPECT_GT(pick.elemsX * pick.elemsY, 1);

  MLIRContext ctx2;
  ParsedOp tiny = parseOp(ctx2, R"(
    #id = affine_map<(d0) -> (d0)>
    func.func @f(%a: memref<1xf32>, %b: memref<1xf32>) {
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
          ins(%a : memref<1xf32>) outs(%b : memref<1xf32>) {
      ^bb0(%in: f32, %out: f32):
        %0 = arith.negf %in : f32
        linalg.yield %0 : f32
      }
      return
    })");
  ASSERT_TRUE(tiny.op);
  ign::gpu::GpuSchedule tinyPick = ign::gpu::modelDefaultSchedule(
      tiny.op->getParentOfType<func::FuncOp>(), adaLimits(), ada());
  EXPECT_EQ(tinyPick.knobs(), fixed.knobs());
}

/// A large op with a reduction whose y loop no register tile divides (197
/// rows) is split into the rows a tile divides and the rest, one dispatch
/// each; loops that divide, and small ops, are left whole.
TEST(GpuSchedule, PeelsRowsNoTileDivides) {
  MLIRContext ctx;
  ParsedOp p = parseOp(ctx, R"(
    func.func @f(%a: memref<197x64xf32>, %b: memref<64x384xf32>, %c: memref<197x384xf32>,
                 %d: memref<256x64xf32>, %e: memref<256x384xf32>,
                 %g: memref<13x8xf32>, %h: memref<8x8xf32>, %k: memref<13x8xf32>) {
      linalg.matmul ins(%a, %b : memref<197x64xf32>, memref<64x384xf32>) outs(%c : memref<197x384xf32>)
      linalg.matmul ins(%d, %b : memref<256x64xf32>, memref<64x384xf32>) outs(%e : memref<256x384xf32>)
      linalg.matmul ins(%g, %h : memref<13x8xf32>, memref<8x8xf32>) outs(%k : memref<13x8xf32>)
      return
    })");
  ASSERT_TRUE(p.op);
  auto kernel = p.op->getParentOfType<func::FuncOp>();
  ign::gpu::peelForRegisterTiles(kernel);
  std::vector<SmallVector<int64_t>> ranges;
  kernel.walk(
      [&](linalg::LinalgOp op) { ranges.push_back(op.getStaticLoopRanges()); });
  ASSERT_EQ(ranges.size(), 4u);
  EXPECT_EQ(ranges[0], (SmallVector<int64_t>{192, 384, 64}));
  EXPECT_EQ(ranges[1], (SmallVector<int64_t>{5, 384, 64}));
  EXPECT_EQ(ranges[2], (SmallVector<int64_t>{256, 384, 64}));
  EXPECT_EQ(ranges[3], (SmallVector<int64_t>{13, 8, 8}));
  EXPECT_TRUE(succeeded(verify(*p.module)));
}

/// A reduction with few outputs over a long loop is split into partial
/// reductions over chunks (a parallel loop a GPU spreads over threads) and
/// an op combining them; one with many outputs is left whole.
TEST(GpuSchedule, SplitsReductionsWithFewOutputs) {
  MLIRContext ctx;
  ParsedOp p = parseOp(ctx, R"(
    #in = affine_map<(d0, d1) -> (d0, d1)>
    #out = affine_map<(d0, d1) -> (d0)>
    func.func @f(%a: tensor<8x4096xf32>, %i: tensor<8xf32>,
                 %b: tensor<512x4096xf32>, %j: tensor<512xf32>) -> (tensor<8xf32>, tensor<512xf32>) {
      %0 = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
          ins(%a : tensor<8x4096xf32>) outs(%i : tensor<8xf32>) {
      ^bb0(%x: f32, %acc: f32):
        %s = arith.addf %x, %acc : f32
        linalg.yield %s : f32
      } -> tensor<8xf32>
      %1 = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
          ins(%b : tensor<512x4096xf32>) outs(%j : tensor<512xf32>) {
      ^bb0(%x: f32, %acc: f32):
        %s = arith.addf %x, %acc : f32
        linalg.yield %s : f32
      } -> tensor<512xf32>
      return %0, %1 : tensor<8xf32>, tensor<512xf32>
    })");
  ASSERT_TRUE(p.op);
  auto kernel = p.op->getParentOfType<func::FuncOp>();
  ign::gpu::splitSmallReductions(kernel);
  std::vector<SmallVector<int64_t>> ranges;
  kernel.walk([&](linalg::GenericOp op) {
    ranges.push_back(op.getStaticLoopRanges());
  });
  ASSERT_EQ(ranges.size(), 3u);
  // 64 chunks of 64, the chunk loop innermost among the parallel ones.
  EXPECT_EQ(ranges[0], (SmallVector<int64_t>{8, 64, 64}));
  EXPECT_EQ(ranges[1], (SmallVector<int64_t>{8, 64})); // the partials combined
  EXPECT_EQ(ranges[2], (SmallVector<int64_t>{512, 4096}));
  EXPECT_TRUE(succeeded(verify(*p.module)));
}
