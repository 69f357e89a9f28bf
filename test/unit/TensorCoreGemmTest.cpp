//===- TensorCoreGemmTest.cpp - tensor-core launches, run on the CPU ------===//
//
// The tensor-core launches ignc emits at --precision=fp16
// (targets/cuda/TensorCoreGemm.h), mapped as a CUDA compile maps them and
// run by the GPU interpreter (targets/gpu/GpuInterpreter.h) with
// ldmatrix and mma.sync from the fragment tables: their results must be
// C + A * B exactly (the inputs are small multiples of 1/4, exact in f16,
// and their sums exact in f32). Shapes cover tile edges in m, n and k, a
// batch, a transposed operand and a convolution as an implicit GEMM. The
// interpreter's own checks (a missing barrier is a race) are tested on a
// launch with its barrier taken out. The CUDA-core GEMM launches of fp32
// (the same staging in f32, register tiles of 16 x 16 threads) are checked
// the same way.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreGemm.h"
#include "CudaCompiler.h"

#include "GpuInterpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace mlir;
namespace ig = ign::gpu;
namespace cuda = ign::cuda;

namespace {

/// A kernel computing out = init + contraction(x, y), mapped for the A100
/// at `precision` (an A100 of `computeUnits` SMs where that is not 0: one
/// SM keeps a small grid's blocks at their largest).
struct Mapped {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> source;
  FailureOr<ig::MappedKernel> kernel = failure();
  std::string why;

  Mapped(const std::string &mlir, const std::string &precision,
         int64_t computeUnits = 0) {
    ctx.loadDialect<func::FuncDialect, linalg::LinalgDialect,
                    tensor::TensorDialect, arith::ArithDialect>();
    source = parseSourceString<ModuleOp>(mlir, &ctx);
    if (!source)
      return;
    auto func = *source->getOps<func::FuncOp>().begin();
    std::string chipWhy;
    std::optional<cuda::CudaChip> chip = cuda::cudaChip("a100", chipWhy);
    if (computeUnits)
      chip->gpu.numbers.computeUnits = computeUnits;
    kernel = ig::mapKernelCopy(func, nullptr, cuda::gpuChipAt(*chip, precision),
                               why);
  }
};

std::vector<char> randomBuffer(int64_t elements, std::mt19937 &rng) {
  std::uniform_int_distribution<int> value(-8, 8);
  std::vector<float> f(elements);
  for (float &x : f)
    x = float(value(rng)) / 4;
  std::vector<char> bytes(elements * 4);
  std::memcpy(bytes.data(), f.data(), bytes.size());
  return bytes;
}

float at(const std::vector<char> &b, int64_t i) {
  float f;
  std::memcpy(&f, b.data() + 4 * i, 4);
  return f;
}

int64_t elementsOf(Type t) { return cast<MemRefType>(t).getNumElements(); }

/// Runs `m`'s kernel on random inputs; returns the buffers (inputs, then
/// the output).
std::vector<std::vector<char>> run(Mapped &m, std::string &why) {
  std::mt19937 rng(11);
  std::vector<std::vector<char>> buffers;
  for (Type t : m.kernel->argumentTypes)
    buffers.push_back(randomBuffer(elementsOf(t), rng));
  if (failed(ig::interpretMappedKernel(m.kernel->kernel, buffers, why,
                                       cuda::interpretMmaOp)))
    buffers.clear();
  return buffers;
}

int countTensorCoreLaunches(const ig::MappedKernel &k) {
  return int(llvm::count_if(k.notes, [](const ig::DispatchNote &n) {
    return !n.matrixUnits.empty();
  }));
}

/// Launches staging tiles in shared memory (the GEMM launches; the
/// mapping script's launches use none).
int countSharedMemoryLaunches(ig::MappedKernel &k) {
  int n = 0;
  k.module->walk([&](mlir::gpu::GPUFuncOp f) {
    n += f.getNumWorkgroupAttributions() > 0;
  });
  return n;
}

/// `mlir` mapped at `precision` into `dispatches` dispatches (any number
/// for 0), one on the tensor cores, and run; empty (a failure recorded)
/// where any of that fails.
std::vector<std::vector<char>>
runOnTensorCores(const std::string &mlir, const std::string &precision = "fp16",
                 size_t dispatches = 0) {
  Mapped m(mlir, precision);
  if (failed(m.kernel)) {
    ADD_FAILURE() << m.why;
    return {};
  }
  EXPECT_EQ(countTensorCoreLaunches(*m.kernel), 1);
  if (dispatches)
    EXPECT_EQ(m.kernel->notes.size(), dispatches);
  std::string why;
  std::vector<std::vector<char>> b = run(m, why);
  if (b.empty())
    ADD_FAILURE() << why;
  return b;
}

/// out[b][i][j] = init + sum_k x[b][i][k] * y[b][k][j] for `mlir`'s
/// (batched) matmul, checked exactly.
/// `gemmLaunches`: launches staging in shared memory expected.
void expectMatmul(const std::string &mlir, int64_t batch, int64_t M, int64_t N,
                  int64_t K, bool transposedY, const std::string &precision,
                  int gemmLaunches = 1, int64_t computeUnits = 0) {
  Mapped m(mlir, precision, computeUnits);
  ASSERT_TRUE(succeeded(m.kernel)) << m.why;
  EXPECT_EQ(countTensorCoreLaunches(*m.kernel), precision == "fp32" ? 0 : 1);
  EXPECT_EQ(countSharedMemoryLaunches(*m.kernel), gemmLaunches);
  std::string why;
  std::vector<std::vector<char>> b = run(m, why);
  ASSERT_FALSE(b.empty()) << why;
  const auto &x = b[0], &y = b[1], &init = b[2], &out = b[3];
  for (int64_t s = 0; s < batch; ++s)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double want = at(init, (s * M + i) * N + j);
        for (int64_t k = 0; k < K; ++k)
          want +=
              double(at(x, (s * M + i) * K + k)) *
              at(y, transposedY ? (s * N + j) * K + k : (s * K + k) * N + j);
        ASSERT_EQ(at(out, (s * M + i) * N + j), float(want))
            << "batch " << s << " row " << i << " column " << j;
      }
}

std::string matmul(int64_t M, int64_t N, int64_t K) {
  std::string a = "tensor<" + std::to_string(M) + "x" + std::to_string(K) +
                  "xf32>",
              b = "tensor<" + std::to_string(K) + "x" + std::to_string(N) +
                  "xf32>",
              c = "tensor<" + std::to_string(M) + "x" + std::to_string(N) +
                  "xf32>";
  return "func.func @k(%x: " + a + ", %y: " + b + ", %c: " + c + ") -> " + c +
         " {\n  %r = linalg.matmul ins(%x, %y : " + a + ", " + b +
         ") outs(%c : " + c + ") -> " + c + "\n  return %r : " + c + "\n}\n";
}

TEST(TensorCoreGemm, MatmulWithEdgesInEveryDimension) {
  expectMatmul(matmul(100, 72, 96), 1, 100, 72, 96, false, "fp16");
  expectMatmul(matmul(64, 48, 40), 1, 64, 48, 40, false, "fp16");
  expectMatmul(matmul(130, 130, 70), 1, 130, 130, 70, false, "fp16");
}

/// tf32: m16n8k8 on f32 tiles, fragments loaded element by element (the
/// inputs, multiples of 1/4, are exact in tf32).
TEST(TensorCoreGemm, Tf32MatmulWithEdges) {
  expectMatmul(matmul(100, 72, 96), 1, 100, 72, 96, false, "tf32");
  expectMatmul(matmul(70, 40, 44), 1, 70, 40, 44, false, "tf32");
}

/// bf16: nvvm.mma.sync on fragments packed two to a register.
TEST(TensorCoreGemm, Bf16MatmulWithEdges) {
  expectMatmul(matmul(100, 72, 96), 1, 100, 72, 96, false, "bf16");
  expectMatmul(matmul(70, 40, 44), 1, 70, 40, 44, false, "bf16");
}

/// A matmul into a filled tensor (Gemm's beta = 0, MatMul's zeros): one
/// launch that starts from the fill's value.
TEST(TensorCoreGemm, AFillBeforeIsTakenOver) {
  std::vector<std::vector<char>> b = runOnTensorCores(R"(
func.func @k(%x: tensor<40x24xf32>, %y: tensor<24x56xf32>) -> tensor<40x56xf32> {
  %v = arith.constant 0.75 : f32
  %e = tensor.empty() : tensor<40x56xf32>
  %c = linalg.fill ins(%v : f32) outs(%e : tensor<40x56xf32>) -> tensor<40x56xf32>
  %r = linalg.matmul ins(%x, %y : tensor<40x24xf32>, tensor<24x56xf32>) outs(%c : tensor<40x56xf32>) -> tensor<40x56xf32>
  return %r : tensor<40x56xf32>
})",
                                                      "fp16",
                                                      /*dispatches=*/1);
  ASSERT_FALSE(b.empty());
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 56; ++j) {
      double want = 0.75;
      for (int64_t k = 0; k < 24; ++k)
        want += double(at(b[0], i * 24 + k)) * at(b[1], k * 56 + j);
      ASSERT_EQ(at(b[2], i * 56 + j), float(want)) << i << ", " << j;
    }
}

/// Below kMinSimtWork a matmul keeps the mapping script's register tiles.
TEST(TensorCoreGemm, TheInterpreterRunsTheCudaCoresKernelsToo) {
  expectMatmul(matmul(40, 36, 20), 1, 40, 36, 20, false, "fp32",
               /*gemmLaunches=*/0);
}

/// fp32 on the CUDA cores: f32 tiles staged k-major, 16 x 16 threads with
/// register tiles 16 apart. On the A100's 108 SMs small grids halve the
/// blocks to 32 x 32 (2 x 2 outputs a thread); with one SM they stay
/// 128 x 128 (8 x 8). Edges in m, n and k.
TEST(SimtGemm, MatmulWithEdges) {
  expectMatmul(matmul(100, 72, 96), 1, 100, 72, 96, false, "fp32");
  expectMatmul(matmul(130, 136, 40), 1, 130, 136, 40, false, "fp32", 1,
               /*computeUnits=*/1);
}

TEST(SimtGemm, BatchedAndTransposed) {
  expectMatmul(R"(
func.func @k(%x: tensor<2x64x96xf32>, %y: tensor<2x48x96xf32>, %c: tensor<2x64x48xf32>) -> tensor<2x64x48xf32> {
  %r = linalg.batch_matmul_transpose_b ins(%x, %y : tensor<2x64x96xf32>, tensor<2x48x96xf32>) outs(%c : tensor<2x64x48xf32>) -> tensor<2x64x48xf32>
  return %r : tensor<2x64x48xf32>
})",
               2, 64, 48, 96, true, "fp32");
}

/// A strided convolution as an implicit GEMM (its image gathered per
/// staged element), fp32 into 64 x 64 blocks (4 x 4 outputs a thread).
TEST(SimtGemm, ConvolutionAsAnImplicitGemm) {
  Mapped m(R"(
func.func @k(%x: tensor<1x16x33x33xf32>, %w: tensor<64x16x3x3xf32>, %c: tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<1x16x33x33xf32>, tensor<64x16x3x3xf32>) outs(%c : tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
  return %r : tensor<1x64x16x16xf32>
})",
           "fp32", /*computeUnits=*/1);
  ASSERT_TRUE(succeeded(m.kernel)) << m.why;
  EXPECT_EQ(countSharedMemoryLaunches(*m.kernel), 1);
  std::string why;
  std::vector<std::vector<char>> b = run(m, why);
  ASSERT_FALSE(b.empty()) << why;
  for (int64_t o = 0; o < 64; ++o)
    for (int64_t h = 0; h < 16; ++h)
      for (int64_t w = 0; w < 16; ++w) {
        int64_t i = (o * 16 + h) * 16 + w;
        double want = at(b[2], i);
        for (int64_t c = 0; c < 16; ++c)
          for (int64_t kh = 0; kh < 3; ++kh)
            for (int64_t kw = 0; kw < 3; ++kw)
              want +=
                  double(at(b[0], (c * 33 + 2 * h + kh) * 33 + 2 * w + kw)) *
                  at(b[1], ((o * 16 + c) * 3 + kh) * 3 + kw);
        ASSERT_EQ(at(b[3], i), float(want))
            << "o " << o << " h " << h << " w " << w;
      }
}

TEST(TensorCoreGemm, BatchedAndTransposed) {
  expectMatmul(R"(
func.func @k(%x: tensor<3x40x48xf32>, %y: tensor<3x48x24xf32>, %c: tensor<3x40x24xf32>) -> tensor<3x40x24xf32> {
  %r = linalg.batch_matmul ins(%x, %y : tensor<3x40x48xf32>, tensor<3x48x24xf32>) outs(%c : tensor<3x40x24xf32>) -> tensor<3x40x24xf32>
  return %r : tensor<3x40x24xf32>
})",
               3, 40, 24, 48, false, "fp16");
  expectMatmul(R"(
func.func @k(%x: tensor<1x70x33xf32>, %y: tensor<1x50x33xf32>, %c: tensor<1x70x50xf32>) -> tensor<1x70x50xf32> {
  %r = linalg.batch_matmul_transpose_b ins(%x, %y : tensor<1x70x33xf32>, tensor<1x50x33xf32>) outs(%c : tensor<1x70x50xf32>) -> tensor<1x70x50xf32>
  return %r : tensor<1x70x50xf32>
})",
               1, 70, 50, 33, true, "fp16");
  expectMatmul(R"(
func.func @k(%x: tensor<3x40x48xf32>, %y: tensor<3x48x24xf32>, %c: tensor<3x40x24xf32>) -> tensor<3x40x24xf32> {
  %r = linalg.batch_matmul ins(%x, %y : tensor<3x40x48xf32>, tensor<3x48x24xf32>) outs(%c : tensor<3x40x24xf32>) -> tensor<3x40x24xf32>
  return %r : tensor<3x40x24xf32>
})",
               3, 40, 24, 48, false, "tf32");
}

TEST(TensorCoreGemm, ConvolutionAsAnImplicitGemm) {
  std::vector<std::vector<char>> b = runOnTensorCores(R"(
func.func @k(%x: tensor<2x8x12x12xf32>, %w: tensor<16x8x3x3xf32>, %c: tensor<2x16x5x5xf32>) -> tensor<2x16x5x5xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<2x8x12x12xf32>, tensor<16x8x3x3xf32>) outs(%c : tensor<2x16x5x5xf32>) -> tensor<2x16x5x5xf32>
  return %r : tensor<2x16x5x5xf32>
})");
  ASSERT_FALSE(b.empty());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t o = 0; o < 16; ++o)
      for (int64_t h = 0; h < 5; ++h)
        for (int64_t w = 0; w < 5; ++w) {
          int64_t i = ((n * 16 + o) * 5 + h) * 5 + w;
          double want = at(b[2], i);
          for (int64_t c = 0; c < 8; ++c)
            for (int64_t kh = 0; kh < 3; ++kh)
              for (int64_t kw = 0; kw < 3; ++kw)
                want += double(at(b[0], ((n * 8 + c) * 12 + 2 * h + kh) * 12 +
                                            2 * w + kw)) *
                        at(b[1], ((o * 8 + c) * 3 + kh) * 3 + kw);
          ASSERT_EQ(at(b[3], i), float(want))
              << "n " << n << " o " << o << " h " << h << " w " << w;
        }
}

/// The reference lowering's convolutions: one input (the weight), the
/// image gathered inside the body at indices of the loops, zero where the
/// window leaves it (a 3x3 window, padding 1: the gather is B, its rows
/// the output pixels).
/// (fp16, bf16 and tf32.)
TEST(TensorCoreGemm, ConvolutionGatheredInTheBody) {
  const char *kernel = R"(
func.func @k(%img: tensor<1x8x10x10xf32>, %w: tensor<16x72xf32>, %c: tensor<1x16x100xf32>) -> tensor<1x16x100xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c9 = arith.constant 9 : index
  %c10 = arith.constant 10 : index
  %zero = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%w : tensor<16x72xf32>) outs(%c : tensor<1x16x100xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 0 : index
    %p = linalg.index 2 : index
    %k = linalg.index 3 : index
    %ic = arith.divui %k, %c9 : index
    %r9 = arith.remui %k, %c9 : index
    %kh = arith.divui %r9, %c3 : index
    %kw = arith.remui %r9, %c3 : index
    %oh = arith.divui %p, %c10 : index
    %ow = arith.remui %p, %c10 : index
    %h1 = arith.addi %oh, %kh : index
    %h = arith.subi %h1, %c1 : index
    %hin = arith.cmpi ult, %h, %c10 : index
    %hs = arith.select %hin, %h, %c0 : index
    %w1 = arith.addi %ow, %kw : index
    %ww = arith.subi %w1, %c1 : index
    %win = arith.cmpi ult, %ww, %c10 : index
    %ws = arith.select %win, %ww, %c0 : index
    %inside = arith.andi %hin, %win : i1
    %v = tensor.extract %img[%n, %ic, %hs, %ws] : tensor<1x8x10x10xf32>
    %x = arith.select %inside, %v, %zero : f32
    %prod = arith.mulf %in, %x : f32
    %sum = arith.addf %out, %prod : f32
    linalg.yield %sum : f32
  } -> tensor<1x16x100xf32>
  return %r : tensor<1x16x100xf32>
})";
  for (const char *precision : {"fp16", "bf16", "tf32"}) {
    SCOPED_TRACE(precision);
    std::vector<std::vector<char>> b = runOnTensorCores(kernel, precision);
    ASSERT_FALSE(b.empty());
    for (int64_t o = 0; o < 16; ++o)
      for (int64_t h = 0; h < 10; ++h)
        for (int64_t w = 0; w < 10; ++w) {
          int64_t i = (o * 10 + h) * 10 + w;
          double want = at(b[2], i);
          for (int64_t c = 0; c < 8; ++c)
            for (int64_t kh = 0; kh < 3; ++kh)
              for (int64_t kw = 0; kw < 3; ++kw) {
                int64_t y = h + kh - 1, x = w + kw - 1;
                if (y >= 0 && y < 10 && x >= 0 && x < 10)
                  want += double(at(b[1], o * 72 + c * 9 + kh * 3 + kw)) *
                          at(b[0], (c * 10 + y) * 10 + x);
              }
          ASSERT_EQ(at(b[3], i), float(want))
              << "o " << o << " h " << h << " w " << w;
        }
  }
}

TEST(TensorCoreGemm, SmallContractionsStayOnTheCudaCores) {
  Mapped m(matmul(8, 64, 64), "fp16");
  ASSERT_TRUE(succeeded(m.kernel)) << m.why;
  EXPECT_EQ(countTensorCoreLaunches(*m.kernel), 0);
}

/// (fp16 and the CUDA cores' fp32.)
TEST(TensorCoreGemm, AMissingBarrierIsARace) {
  for (const char *precision : {"fp16", "fp32"}) {
    SCOPED_TRACE(precision);
    Mapped m(matmul(64, 64, 64), precision);
    ASSERT_TRUE(succeeded(m.kernel)) << m.why;
    // The barrier after the mma steps: the next step's stores would
    // overwrite tiles other warps still read.
    mlir::gpu::BarrierOp last;
    m.kernel->module->walk([&](mlir::gpu::BarrierOp b) { last = b; });
    ASSERT_TRUE(last);
    last->erase();
    std::string why;
    EXPECT_TRUE(run(m, why).empty());
    EXPECT_NE(why.find("another thread used since the last barrier"),
              std::string::npos)
        << why;
  }
}

} // namespace
