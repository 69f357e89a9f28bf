//===- SpirvLowering.cpp - outlined GPU kernels -> SPIR-V modules ---------===//
//
// gpu.modules -> Vulkan SPIR-V, one module per dispatch, and the kernel's
// device descriptor (SpirvLowering.h).
//
//===----------------------------------------------------------------------===//

#include "SpirvLowering.h"

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
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/Support/FormatVariadic.h"

#include <nlohmann/json.hpp>

using namespace mlir;

namespace ign::vulkan {

namespace {

std::optional<int64_t> constantOf(Value v) {
  return getConstantIntValue(getAsOpFoldResult(v));
}

/// The bytes of a constant buffer as SPIR-V reads them: row-major
/// elements of their own width, booleans as bytes.
std::optional<std::string> constantBytes(memref::GetGlobalOp get) {
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      get, get.getNameAttr());
  Attribute initial = global ? global.getInitialValueAttr() : nullptr;
  // Large constants are resources: their blob holds the bytes as stored.
  if (auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(initial)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || resource.getElementType().isInteger(1))
      return std::nullopt;
    ArrayRef<char> data = blob->getData();
    return std::string(data.begin(), data.end());
  }
  auto value = dyn_cast_or_null<DenseElementsAttr>(initial);
  if (!value)
    return std::nullopt;
  std::string bytes;
  auto append = [&](const APInt &bits) {
    int64_t n = std::max<int64_t>(1, (bits.getBitWidth() + 7) / 8);
    for (int64_t i = 0; i < n; ++i)
      bytes.push_back(char(bits.extractBitsAsZExtValue(
          std::min<int64_t>(8, bits.getBitWidth() - 8 * i), 8 * i)));
  };
  if (isa<FloatType>(value.getElementType()))
    for (const APFloat &f : value.getValues<APFloat>())
      append(f.bitcastToAPInt());
  else if (value.getElementType().isIntOrIndex())
    for (const APInt &i : value.getValues<APInt>())
      append(i);
  else
    return std::nullopt;
  return bytes;
}

/// The binding of launch argument `v`: a kernel argument, a scratch buffer
/// (an allocation) or a constant (a global).
std::optional<Binding> bindingOf(Value v, func::FuncOp kernel, SpirvKernel &out,
                                 llvm::DenseMap<Operation *, int64_t> &seen,
                                 std::string &why) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.hasStaticShape()) {
    why = "a launch argument that is not a buffer of static shape";
    return std::nullopt;
  }
  if (auto arg = dyn_cast<BlockArgument>(v))
    if (arg.getOwner()->getParentOp() == kernel.getOperation())
      return Binding{Binding::Arg, arg.getArgNumber()};
  Operation *def = v.getDefiningOp();
  if (auto it = seen.find(def); it != seen.end())
    return Binding{isa<memref::AllocOp>(def) ? Binding::Scratch
                                             : Binding::Const,
                   it->second};
  if (isa_and_nonnull<memref::AllocOp>(def)) {
    out.scratchBytes.push_back(storageBytes(type));
    return Binding{Binding::Scratch, seen[def] = out.scratchBytes.size() - 1};
  }
  if (auto get = dyn_cast_or_null<memref::GetGlobalOp>(def)) {
    std::optional<std::string> bytes = constantBytes(get);
    if (!bytes) {
      why = "a constant whose bytes are not in the module";
      return std::nullopt;
    }
    out.constants.push_back(std::move(*bytes));
    return Binding{Binding::Const, seen[def] = out.constants.size() - 1};
  }
  why = "a launch argument that is neither a kernel argument, a scratch "
        "buffer nor a constant";
  return std::nullopt;
}

/// One dispatch per gpu.launch_func of `kernel`, in order (no SPIR-V yet);
/// allocations become the kernel's scratch buffers, globals its constants.
LogicalResult collectDispatches(func::FuncOp kernel, SpirvKernel &out,
                                std::vector<std::string> &modules,
                                std::string &why) {
  llvm::DenseMap<Operation *, int64_t> seen;
  for (auto launch : kernel.getOps<mlir::gpu::LaunchFuncOp>()) {
    SpirvDispatch d;
    d.entry = launch.getKernelName().str();
    mlir::gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    mlir::gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    Value sizes[6] = {grid.x, grid.y, grid.z, block.x, block.y, block.z};
    for (int i = 0; i < 6; ++i) {
      std::optional<int64_t> c = constantOf(sizes[i]);
      if (!c || *c < 1) {
        why = "a launch whose size is not a constant";
        return failure();
      }
      (i < 3 ? d.groups : d.local)[i % 3] = *c;
    }
    for (Value v : launch.getKernelOperands()) {
      std::optional<Binding> b = bindingOf(v, kernel, out, seen, why);
      if (!b)
        return failure();
      d.bindings.push_back(*b);
    }
    modules.push_back(launch.getKernelModuleName().str());
    out.dispatches.push_back(std::move(d));
  }
  if (out.dispatches.empty()) {
    why = "no launch";
    return failure();
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

/// powf of a negative base and a non-integer exponent is NaN (GLSL's Pow
/// leaves it undefined, and MathToSPIRV returns |x|^y).
void markNegativePowNaN(Operation *gpuModule) {
  gpuModule->walk([](math::PowFOp pow) {
    OpBuilder b(pow->getContext());
    b.setInsertionPointAfter(pow);
    Location loc = pow.getLoc();
    Type t = pow.getType();
    Value x = pow.getLhs(), y = pow.getRhs();
    Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(t));
    Value negative =
        b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x, zero);
    Value fraction = b.create<arith::CmpFOp>(
        loc, arith::CmpFPredicate::ONE, b.create<math::FloorOp>(loc, y), y);
    Value nanCase = b.create<arith::AndIOp>(loc, negative, fraction);
    auto floatType = cast<FloatType>(t);
    Value nan = b.create<arith::ConstantOp>(
        loc, b.getFloatAttr(t, APFloat::getNaN(floatType.getFloatSemantics())));
    auto select = b.create<arith::SelectOp>(loc, nanCase, nan, pow);
    pow.getResult().replaceAllUsesExcept(select, select);
  });
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
    populateExpandTanPattern(patterns);
    populateExpandSinhPattern(patterns);
    populateExpandCoshPattern(patterns);
    populateExpandAsinhPattern(patterns);
    populateExpandAcoshPattern(patterns);
    populateExpandAtanhPattern(patterns);
    populateExpandFPowIPattern(patterns);
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
  markNegativePowNaN(gpuModule);
}

/// One gpu.module -> spirv.module (in place): memory spaces to storage
/// classes, then every dialect the kernel bodies hold.
LogicalResult convertModule(mlir::gpu::GPUModuleOp gpuModule) {
  MLIRContext *ctx = gpuModule.getContext();
  expandUnsupportedMath(gpuModule);
  widenIndicesWithoutSConvert(gpuModule);
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

int64_t storageBytes(MemRefType type) {
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * std::max<int64_t>(1, (bits + 7) / 8);
}

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
