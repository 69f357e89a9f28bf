//===- SpirvLowering.cpp - outlined GPU kernels -> SPIR-V modules ---------===//
//
// gpu.modules -> Vulkan SPIR-V, one module per dispatch, and the kernel's
// device descriptor (SpirvLowering.h).
//
//===----------------------------------------------------------------------===//

#include "SpirvLowering.h"

#include "GpuCompile.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Conversion/ArithToSPIRV/ArithToSPIRV.h"
#include "mlir/Conversion/ControlFlowToSPIRV/ControlFlowToSPIRV.h"
#include "mlir/Conversion/FuncToSPIRV/FuncToSPIRV.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRV.h"
#include "mlir/Conversion/IndexToSPIRV/IndexToSPIRV.h"
#include "mlir/Conversion/MathToSPIRV/MathToSPIRV.h"
#include "mlir/Conversion/MemRefToSPIRV/MemRefToSPIRV.h"
#include "mlir/Conversion/SCFToSPIRV/SCFToSPIRV.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/Support/FormatVariadic.h"

#include <nlohmann/json.hpp>

using namespace mlir;

namespace ign::vulkan {

namespace {

/// The launches of `kernel` as dispatches (no SPIR-V yet), and their
/// modules' names in order.
LogicalResult collectDispatches(func::FuncOp kernel, SpirvKernel &out,
                                std::vector<std::string> &modules,
                                std::string &why) {
  FailureOr<gpu::KernelLaunches> launches = gpu::collectLaunches(kernel, why);
  if (failed(launches))
    return failure();
  out.scratchBytes = std::move(launches->scratchBytes);
  out.constants = std::move(launches->constants);
  for (gpu::Launch &l : launches->launches) {
    modules.push_back(l.module);
    out.dispatches.push_back(
        {l.entry, {}, l.groups, l.local, std::move(l.bindings)});
  }
  return success();
}

/// The target environment on each gpu.module, and the Vulkan ABI (entry
/// point workgroup size, binding i for argument i of set 0) on each
/// gpu.func.
LogicalResult attachAbi(ModuleOp module, llvm::StringRef targetEnv,
                        std::string &why) {
  MLIRContext *ctx = module.getContext();
  auto env =
      dyn_cast_or_null<spirv::TargetEnvAttr>(parseAttribute(targetEnv, ctx));
  if (!env) {
    why = "the chip's SPIR-V target environment does not parse";
    return failure();
  }
  bool ok = true;
  module.walk([&](mlir::gpu::GPUModuleOp m) {
    m->setAttr(spirv::getTargetEnvAttrName(), env);
    m.walk([&](mlir::gpu::GPUFuncOp f) {
      std::optional<ArrayRef<int32_t>> block = f.getKnownBlockSize();
      if (!block) {
        ok = false;
        return;
      }
      f->setAttr(spirv::getEntryPointABIAttrName(),
                 spirv::getEntryPointABIAttr(ctx, *block));
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        f.setArgAttr(i, spirv::getInterfaceVarABIAttrName(),
                     spirv::getInterfaceVarABIAttr(0, i, std::nullopt, ctx));
    });
  });
  if (!ok)
    why = "a GPU function without a known workgroup size";
  return success(ok);
}

/// Subgroup reductions as Vulkan's group non-uniform arithmetic: the GPU
/// dialect's canonicalization marks one outside control flow `uniform`,
/// which GPU-to-SPIR-V maps to the Kernel capability's OpGroupFAdd, ...
/// (not Vulkan's). A non-uniform reduction over every thread is the same.
void subgroupReductionsAsNonUniform(Operation *gpuModule) {
  gpuModule->walk([](mlir::gpu::SubgroupReduceOp op) { op.setUniform(false); });
}

/// index -> i64 casts as a zero extension corrected for negative values.
/// Indices are 32 bits in these kernels, and Mesa 22.3's lavapipe
/// miscompiles the OpSConvert to 64 bits that the plain cast becomes
/// (ONNX's test_triu_one_row compared every column as at least 1).
void widenIndicesWithoutSConvert(Operation *gpuModule) {
  gpuModule->walk([](arith::IndexCastOp cast) {
    auto to = dyn_cast<IntegerType>(cast.getType());
    if (!to || to.getWidth() <= 32 || !cast.getIn().getType().isIndex())
      return;
    OpBuilder b(cast);
    Location loc = cast.getLoc();
    Value x = cast.getIn();
    Value zext = b.create<arith::IndexCastUIOp>(loc, to, x);
    Value negative =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, x,
                                b.create<arith::ConstantIndexOp>(loc, 0));
    Value wrapped = b.create<arith::SubIOp>(
        loc, zext,
        b.create<arith::ConstantOp>(loc,
                                    b.getIntegerAttr(to, int64_t(1) << 32)));
    cast.replaceAllUsesWith(
        b.create<arith::SelectOp>(loc, negative, wrapped, zext).getResult());
    cast.erase();
  });
}

/// math.asin/acos/atan -> GLSL.std.450's Asin/Acos/Atan, which MathToSPIRV
/// (LLVM 19) does not map; MLIR's asin polynomial missed ONNX's asin test.
template <typename MathOp, typename GLOp>
struct UnaryGLPattern : OpConversionPattern<MathOp> {
  using OpConversionPattern<MathOp>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MathOp op, typename MathOp::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = this->getTypeConverter()->convertType(op.getType());
    if (!type)
      return failure();
    rewriter.replaceOpWithNewOp<GLOp>(op, type, adaptor.getOperand());
    return success();
  }
};

/// Math functions SPIR-V has no instruction for: expanded into ones it has
/// (tan, the hyperbolic functions), or MLIR's polynomials (erf, atan2), as
/// the host does for erf.
void expandUnsupportedMath(Operation *gpuModule) {
  MLIRContext *ctx = gpuModule->getContext();
  {
    RewritePatternSet patterns(ctx);
    gpu::populateGpuMathExpansions(patterns);
    (void)applyPatternsAndFoldGreedily(gpuModule, std::move(patterns));
  }
  SmallVector<Operation *> ops;
  gpuModule->walk([&](Operation *op) {
    if (isa<math::ErfOp, math::Atan2Op>(op))
      ops.push_back(op);
  });
  RewritePatternSet patterns(ctx);
  populateMathPolynomialApproximationPatterns(patterns);
  GreedyRewriteConfig config;
  config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
  (void)applyOpPatternsAndFold(ops, std::move(patterns), config);
  gpu::markNegativePowNaN(gpuModule);
}

/// Each gpu.func's workgroup attributions (the staged GEMM's tiles,
/// targets/gpu/StagedGemm.h) become memref.allocs in workgroup memory at
/// its start (memory space 3, which the storage-class mapping makes
/// Workgroup): MLIR 19's GPU-to-SPIR-V conversion does not convert
/// attributions; MemRefToSPIRV makes such an alloc a Workgroup variable.
void attributionsAsAllocs(mlir::gpu::GPUModuleOp gpuModule) {
  gpuModule.walk([](mlir::gpu::GPUFuncOp f) {
    unsigned n = f.getNumWorkgroupAttributions();
    if (n == 0)
      return;
    Block &entry = f.getBody().front();
    OpBuilder b(&entry, entry.begin());
    unsigned first = f.getFirstWorkgroupAttributionIndex();
    // Memory space 3: Workgroup in mapMemorySpaceToVulkanStorageClass.
    auto workgroup = b.getI64IntegerAttr(3);
    for (BlockArgument tile : f.getWorkgroupAttributions()) {
      auto type = cast<MemRefType>(tile.getType());
      tile.replaceAllUsesWith(b.create<memref::AllocOp>(
          f.getLoc(), MemRefType::get(type.getShape(), type.getElementType(),
                                      type.getLayout(), workgroup)));
    }
    entry.eraseArguments(first, n);
    f->removeAttr(f.getNumWorkgroupAttributionsAttrName());
  });
}

/// One gpu.module -> spirv.module (in place): memory spaces to storage
/// classes, then every dialect the kernel bodies hold.
LogicalResult convertModule(mlir::gpu::GPUModuleOp gpuModule) {
  MLIRContext *ctx = gpuModule.getContext();
  attributionsAsAllocs(gpuModule);
  expandUnsupportedMath(gpuModule);
  widenIndicesWithoutSConvert(gpuModule);
  subgroupReductionsAsNonUniform(gpuModule);
  spirv::MemorySpaceToStorageClassConverter storage(
      spirv::mapMemorySpaceToVulkanStorageClass);
  spirv::convertMemRefTypesAndAttrs(gpuModule, storage);
  spirv::TargetEnvAttr env = spirv::lookupTargetEnvOrDefault(gpuModule);
  std::unique_ptr<ConversionTarget> target = SPIRVConversionTarget::get(env);
  SPIRVConversionOptions options;
  // Narrow types must keep their widths in buffers: the runtime hands the
  // kernel the bundle's bytes as they are.
  options.emulateLT32BitScalarTypes = false;
  SPIRVTypeConverter types(env, options);
  RewritePatternSet patterns(ctx);
  populateGPUToSPIRVPatterns(types, patterns);
  ScfToSPIRVContext scf;
  populateSCFToSPIRVPatterns(types, scf, patterns);
  arith::populateArithToSPIRVPatterns(types, patterns);
  populateMathToSPIRVPatterns(types, patterns);
  patterns.add<UnaryGLPattern<math::AsinOp, spirv::GLAsinOp>,
               UnaryGLPattern<math::AcosOp, spirv::GLAcosOp>,
               UnaryGLPattern<math::AtanOp, spirv::GLAtanOp>>(types, ctx);
  populateMemRefToSPIRVPatterns(types, patterns);
  populateFuncToSPIRVPatterns(types, patterns);
  cf::populateControlFlowToSPIRVPatterns(types, patterns);
  index::populateIndexToSPIRVPatterns(types, patterns);
  return applyFullConversion(gpuModule, *target, std::move(patterns));
}

} // namespace

FailureOr<SpirvKernel> lowerToSpirv(ModuleOp module, func::FuncOp kernel,
                                    llvm::StringRef targetEnv,
                                    std::string &why) {
  MLIRContext *ctx = module.getContext();
  ctx->loadDialect<spirv::SPIRVDialect>();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && diagnostics.empty())
      diagnostics = d.str();
    return success();
  });
  SpirvKernel out;
  std::vector<std::string> moduleNames;
  if (failed(collectDispatches(kernel, out, moduleNames, why)) ||
      failed(attachAbi(module, targetEnv, why)))
    return failure();
  kernel.erase();
  SmallVector<mlir::gpu::GPUModuleOp> gpuModules(
      module.getOps<mlir::gpu::GPUModuleOp>());
  for (mlir::gpu::GPUModuleOp m : gpuModules)
    if (failed(convertModule(m))) {
      why = "SPIR-V conversion failed: " + diagnostics;
      return failure();
    }
  PassManager pm(ctx);
  OpPassManager &spv = pm.nest<spirv::ModuleOp>();
  spv.addPass(spirv::createSPIRVLowerABIAttributesPass());
  spv.addPass(spirv::createSPIRVUpdateVCEPass());
  if (failed(pm.run(module))) {
    why = "SPIR-V ABI lowering failed: " + diagnostics;
    return failure();
  }
  for (auto [d, name] : llvm::zip(out.dispatches, moduleNames)) {
    auto spv = module.lookupSymbol<spirv::ModuleOp>("__spv__" + name);
    SmallVector<uint32_t> words;
    if (!spv || failed(spirv::serialize(spv, words))) {
      why = "SPIR-V serialization of '" + name + "' failed: " + diagnostics;
      return failure();
    }
    d.words.assign(words.begin(), words.end());
  }
  return out;
}

std::string SpirvKernel::descriptorJson(std::string &blob) const {
  static const char *kKeys[] = {"arg", "scratch", "const"};
  nlohmann::json dispatchList = nlohmann::json::array();
  for (const SpirvDispatch &d : dispatches) {
    nlohmann::json bindings = nlohmann::json::array();
    for (const Binding &b : d.bindings)
      bindings.push_back({{kKeys[b.kind], b.index}});
    size_t bytes = d.words.size() * sizeof(uint32_t);
    dispatchList.push_back({{"entry", d.entry},
                            {"offset", blob.size()},
                            {"bytes", bytes},
                            {"groups", d.groups},
                            {"local", d.local},
                            {"bindings", bindings}});
    blob.append(reinterpret_cast<const char *>(d.words.data()), bytes);
  }
  nlohmann::json constantList = nlohmann::json::array();
  for (const std::string &c : constants) {
    constantList.push_back({{"offset", blob.size()}, {"bytes", c.size()}});
    blob += c;
  }
  return nlohmann::json{{"format", "spirv"},
                        {"scratch", scratchBytes},
                        {"constants", constantList},
                        {"dispatches", dispatchList}}
      .dump();
}

} // namespace ign::vulkan
