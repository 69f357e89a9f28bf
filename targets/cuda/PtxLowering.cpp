//===- PtxLowering.cpp - mapped GPU kernels -> PTX ------------------------===//
//
// gpu.modules -> NVVM -> LLVM IR -> PTX (PtxLowering.h).
//
//===----------------------------------------------------------------------===//

#include "PtxLowering.h"

#include "GpuCompile.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

#include <map>
#include <mutex>

using namespace mlir;

namespace ign::cuda {

namespace {

constexpr const char *kTriple = "nvptx64-nvidia-cuda";

/// Math ops PTX computes with its own instructions (MathToLLVM's
/// intrinsics lower to them); every other one must be expanded first.
bool hasPtxInstruction(Operation *op) {
  return isa<math::SqrtOp, math::RsqrtOp, math::AbsFOp, math::AbsIOp,
             math::FloorOp, math::CeilOp, math::FmaOp, math::CopySignOp,
             math::TruncOp, math::RoundEvenOp, math::RoundOp,
             math::CountLeadingZerosOp, math::CountTrailingZerosOp,
             math::CtPopOp>(op);
}

/// Transcendental functions as MLIR's polynomial approximations (exp, log,
/// tanh, erf, sin, cos, atan, ...; f16 through f32) and expansions into
/// them (tan, the hyperbolic functions, pow, exp2). Fails naming the first
/// math op that is left without a PTX instruction (an f64 exp, say).
LogicalResult expandMath(Operation *gpuModule, std::string &why) {
  gpu::markNegativePowNaN(gpuModule);
  RewritePatternSet patterns(gpuModule->getContext());
  gpu::populateGpuMathExpansions(patterns);
  populateExpandPowFPattern(patterns);
  populateExpandExp2FPattern(patterns);
  populateMathAlgebraicSimplificationPatterns(patterns);
  populateMathPolynomialApproximationPatterns(patterns);
  (void)applyPatternsAndFoldGreedily(gpuModule, std::move(patterns));
  Operation *left = nullptr;
  gpuModule->walk([&](Operation *op) {
    if (!left && isa<math::MathDialect>(op->getDialect()) &&
        !hasPtxInstruction(op))
      left = op;
  });
  if (!left)
    return success();
  llvm::raw_string_ostream os(why);
  os << left->getName() << " on " << left->getResultTypes().front()
     << " has no PTX lowering";
  return failure();
}

/// A warp's width: what gpu.subgroup_size is on every NVIDIA GPU.
struct WarpSize : OpRewritePattern<mlir::gpu::SubgroupSizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(mlir::gpu::SubgroupSizeOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantIndexOp>(op, kWarpSize);
    return success();
  }
  static constexpr int64_t kWarpSize = 32;
};

/// Subgroup ops (the group reductions', GroupReduction.h) as GPU-to-NVVM
/// takes them: the size a constant, reductions butterfly shuffles over
/// the warp (gpu.shuffle, 32 bits at a time).
void lowerSubgroupOps(Operation *gpuModule) {
  RewritePatternSet patterns(gpuModule->getContext());
  patterns.add<WarpSize>(gpuModule->getContext());
  // (MLIR 19 spells it "Pattenrs".)
  populateGpuLowerSubgroupReduceToShufflePattenrs(patterns, WarpSize::kWarpSize,
                                                  /*shuffleBitwidth=*/32);
  (void)applyPatternsAndFoldGreedily(gpuModule, std::move(patterns));
}

/// The math ops GPU-to-NVVM leaves alone (it turns floor, ceil, absf,
/// sqrt, rsqrt and remf into libdevice calls, defineLibdeviceCalls' job)
/// as LLVM intrinsics NVPTX selects.
struct ConvertMathLeftByNvvm
    : PassWrapper<ConvertMathLeftByNvvm,
                  OperationPass<mlir::gpu::GPUModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ConvertMathLeftByNvvm)
  StringRef getArgument() const final { return "ign-convert-math-for-nvvm"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect>();
  }
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalOp<math::FmaOp, math::CopySignOp, math::TruncOp,
                        math::RoundEvenOp, math::RoundOp,
                        math::CountLeadingZerosOp, math::CountTrailingZerosOp,
                        math::CtPopOp, math::AbsIOp>();
    LLVMTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    populateMathToLLVMConversionPatterns(converter, patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

/// gpu.module bodies (loops, memrefs, arith, math) -> the LLVM and NVVM
/// dialects; buffers are bare pointers (static shapes).
void buildNvvmPipeline(OpPassManager &pm) {
  OpPassManager &m = pm.nest<mlir::gpu::GPUModuleOp>();
  m.addPass(memref::createFoldMemRefAliasOpsPass());
  m.addPass(memref::createExpandStridedMetadataPass());
  m.addPass(createLowerAffinePass());
  m.addPass(createConvertSCFToCFPass());
  m.addPass(arith::createArithExpandOpsPass());
  m.addPass(std::make_unique<ConvertMathLeftByNvvm>());
  // Tensor-core launches (TensorCoreGemm.h): ldmatrix and mma.sync.
  m.addPass(createConvertNVGPUToNVVMPass());
  ConvertGpuOpsToNVVMOpsOptions options;
  options.useBarePtrCallConv = true;
  m.addPass(createConvertGpuOpsToNVVMOps(options));
  m.addPass(createReconcileUnrealizedCastsPass());
  m.addPass(createCanonicalizerPass());
  m.addPass(createCSEPass());
}

/// The NVPTX target machine for `chip`.
std::unique_ptr<llvm::TargetMachine> nvptxMachine(const CudaChip &chip,
                                                  std::string &why) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (!target) {
    why = "LLVM has no NVPTX backend: " + error;
    return nullptr;
  }
  // A multiply feeding an add is one FMA, as nvcc's default --fmad=true.
  llvm::TargetOptions options;
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      kTriple, chip.arch(), chip.ptxFeature(), options, std::nullopt,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    why = "LLVM cannot target " + chip.arch();
  return machine;
}

/// Each outlined module's kernel takes the module's (unique) name: the
/// outlining names every module's function after its kernel, and the
/// modules are linked into one.
LogicalResult nameEntriesAfterModules(ModuleOp module,
                                      gpu::KernelLaunches &launches,
                                      std::string &why) {
  for (auto m : module.getOps<mlir::gpu::GPUModuleOp>()) {
    auto funcs = llvm::to_vector(m.getOps<mlir::gpu::GPUFuncOp>());
    if (funcs.size() != 1) {
      why = "GPU module '" + m.getName().str() + "' has " +
            std::to_string(funcs.size()) + " functions, not one kernel";
      return failure();
    }
    funcs.front().setName(m.getName());
  }
  for (gpu::Launch &l : launches.launches)
    l.entry = l.module;
  return success();
}

/// Every gpu.module of `module` as LLVM IR, linked into one module.
std::unique_ptr<llvm::Module> translateAndLink(ModuleOp module,
                                               llvm::LLVMContext &context,
                                               std::string &why) {
  std::unique_ptr<llvm::Module> linked;
  for (auto m : module.getOps<mlir::gpu::GPUModuleOp>()) {
    std::unique_ptr<llvm::Module> one =
        translateModuleToLLVMIR(m, context, m.getName());
    if (!one) {
      why = "translation of '" + m.getName().str() + "' to LLVM IR failed";
      return nullptr;
    }
    if (!linked)
      linked = std::move(one);
    else if (llvm::Linker::linkModules(*linked, std::move(one))) {
      why = "linking '" + m.getName().str() + "' failed";
      return nullptr;
    }
  }
  if (!linked)
    why = "no GPU module";
  return linked;
}

/// The libdevice functions GPU-to-NVVM calls for math PTX has an
/// instruction for get bodies of their own (an LLVM intrinsic, inlined):
/// the PTX needs no libdevice. Fails naming any other libdevice call.
LogicalResult defineLibdeviceCalls(llvm::Module &module, std::string &why) {
  for (llvm::Function &f : module.functions()) {
    if (!f.isDeclaration() || !f.getName().starts_with("__nv_"))
      continue;
    std::string base = f.getName().drop_front(5).str();
    bool f32 =
        !base.empty() && base.back() == 'f' && base != "fabs" && base != "fmod";
    if (f32)
      base.pop_back();
    static const std::map<std::string, llvm::Intrinsic::ID> kIntrinsics = {
        {"fabs", llvm::Intrinsic::fabs},
        {"ceil", llvm::Intrinsic::ceil},
        {"floor", llvm::Intrinsic::floor},
        {"sqrt", llvm::Intrinsic::sqrt},
        {"rsqrt", llvm::Intrinsic::sqrt}};
    auto it = kIntrinsics.find(base);
    if (it == kIntrinsics.end() && base != "fmod") {
      why = "calls libdevice's " + f.getName().str() +
            ", which ignc does "
            "not link";
      return failure();
    }
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(module.getContext(), "", &f));
    llvm::Value *x = f.getArg(0), *result = nullptr;
    if (base == "fmod") {
      result = b.CreateFRem(x, f.getArg(1));
    } else {
      result = b.CreateUnaryIntrinsic(it->second, x);
      if (base == "rsqrt")
        result = b.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), result);
    }
    b.CreateRet(result);
    f.setLinkage(llvm::GlobalValue::InternalLinkage);
    f.addFnAttr(llvm::Attribute::AlwaysInline);
  }
  return success();
}

/// The optimized module as PTX text.
FailureOr<std::string> emitPtx(llvm::Module &module,
                               llvm::TargetMachine &machine, std::string &why) {
  module.setTargetTriple(kTriple);
  module.setDataLayout(machine.createDataLayout());
  if (llvm::Error err = makeOptimizingTransformer(3, 0, &machine)(&module)) {
    why = "LLVM optimization failed: " + llvm::toString(std::move(err));
    return failure();
  }
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, os, nullptr,
                                  llvm::CodeGenFileType::AssemblyFile)) {
    why = "the NVPTX backend cannot emit PTX";
    return failure();
  }
  passes.run(module);
  return std::string(ptx.str());
}

} // namespace

void prepareNvptxContext(MLIRContext *ctx) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  ctx->appendDialectRegistry(registry);
  ctx->loadDialect<NVVM::NVVMDialect, LLVM::LLVMDialect>();
}

FailureOr<PtxKernel> lowerToPtx(ModuleOp module, func::FuncOp kernel,
                                const CudaChip &chip, std::string &why) {
  MLIRContext *ctx = module.getContext();
  prepareNvptxContext(ctx);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && diagnostics.empty())
      diagnostics = d.str();
    return success();
  });
  FailureOr<gpu::KernelLaunches> launches = gpu::collectLaunches(kernel, why);
  if (failed(launches))
    return failure();
  kernel.erase();
  if (failed(nameEntriesAfterModules(module, *launches, why)))
    return failure();
  for (auto m : module.getOps<mlir::gpu::GPUModuleOp>()) {
    lowerSubgroupOps(m);
    if (failed(expandMath(m, why)))
      return failure();
  }
  PassManager pm(ctx);
  buildNvvmPipeline(pm);
  if (failed(pm.run(module))) {
    why = "NVVM conversion failed: " + diagnostics;
    return failure();
  }
  std::unique_ptr<llvm::TargetMachine> machine = nvptxMachine(chip, why);
  if (!machine)
    return failure();
  // LLVM's default handler exits the process on an error.
  llvm::LLVMContext context;
  std::string llvmError;
  context.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo *info, void *error) {
        auto &message = *static_cast<std::string *>(error);
        if (info->getSeverity() != llvm::DS_Error || !message.empty())
          return;
        llvm::raw_string_ostream os(message);
        llvm::DiagnosticPrinterRawOStream printer(os);
        info->print(printer);
      },
      &llvmError);
  std::unique_ptr<llvm::Module> linked = translateAndLink(module, context, why);
  if (!linked || !llvmError.empty()) {
    why += llvmError.empty() ? "" : ": " + llvmError;
    return failure();
  }
  if (failed(defineLibdeviceCalls(*linked, why)))
    return failure();
  FailureOr<std::string> ptx = emitPtx(*linked, *machine, why);
  if (failed(ptx) || !llvmError.empty()) {
    why = llvmError.empty() ? why : "the NVPTX backend failed: " + llvmError;
    return failure();
  }
  return PtxKernel{std::move(*launches), std::move(*ptx)};
}

} // namespace ign::cuda
