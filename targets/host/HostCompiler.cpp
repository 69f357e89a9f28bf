//===- HostCompiler.cpp - lowering to a host shared object ----------------===//

#include "HostCompiler.h"
#include "HostSchedule.h"

#include "ign/Conversion/Passes.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Target/LaunchPlan.h"
#include "ign/Transforms/KernelTasks.h"
#include "ign/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#include "lld/Common/Driver.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

LLD_HAS_DRIVER(elf)

using namespace mlir;

namespace ign::host {

bool isKnownHostCpu(llvm::StringRef name) {
  if (name == "host")
    return true;
  llvm::InitializeNativeTarget();
  std::string error;
  std::string triple = llvm::sys::getProcessTriple();
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return false;
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(triple, "", ""));
  return sti && sti->isCPUStringValid(name);
}

namespace {

/// The machine the code is generated for.
struct HostTarget {
  std::string triple, cpu, features;
};

/// Copies become linalg.copy, which lowers to plain loops: the kernels then
/// need no MLIR runtime library (memrefCopy) at load time.
LogicalResult linalgCopy(OpBuilder &b, Location loc, Value from, Value to) {
  b.create<linalg::CopyOp>(loc, from, to);
  return success();
}

/// A kernel returning one of its arguments, or one value twice, gets a copy:
/// each result is then a buffer of its own that can be written in place of
/// the output (and upstream's out-param hoisting expects an allocation).
void copyPassedThroughResults(func::FuncOp kernel) {
  auto ret = cast<func::ReturnOp>(kernel.getBody().front().getTerminator());
  OpBuilder b(ret);
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    Value v = ret.getOperand(i);
    bool repeated = llvm::is_contained(ret.getOperands().take_front(i), v);
    if (!isa<BlockArgument>(v) && !repeated)
      continue;
    auto type = cast<RankedTensorType>(v.getType());
    Value empty = b.create<tensor::EmptyOp>(ret.getLoc(), type.getShape(),
                                            type.getElementType());
    ret.setOperand(
        i, b.create<linalg::CopyOp>(ret.getLoc(), v, empty).getResult(0));
  }
}

/// Reference lowering, on tensors.
void buildLoweringPipeline(PassManager &pm) {
  pm.addPass(createConvertIgnToLinalg());
  pm.addPass(createCanonicalizerPass());
}

/// Bufferization; kernel results become out-parameters written in place.
void buildBufferizationPipeline(PassManager &pm) {
  bufferization::OneShotBufferizationOptions bufferization;
  bufferization.memCpyFn = linalgCopy;
  bufferization.bufferizeFunctionBoundaries = true;
  bufferization.allowReturnAllocsFromLoops = true;
  bufferization.setFunctionBoundaryTypeConversion(
      bufferization::LayoutMapOption::IdentityLayoutMap);
  pm.addPass(bufferization::createOneShotBufferizePass(bufferization));
  bufferization::BufferResultsToOutParamsOpts outParams;
  outParams.memCpyFn = linalgCopy;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  // Tiles write their results in place; CSE makes the leftover copy of a
  // tile onto itself visibly a self-copy, which canonicalization erases.
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
}

/// Vector ops of the register tiles become 1-D vector arithmetic: each
/// contraction step an outer product (broadcast times row, FMAs), memory
/// accesses plain vector loads and stores.
void lowerVectorOps(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  {
    RewritePatternSet patterns(ctx);
    vector::populateVectorReductionToContractPatterns(patterns);
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    (void)applyPatternsAndFoldGreedily(module, std::move(patterns));
  }
  RewritePatternSet patterns(ctx);
  vector::VectorTransformsOptions options;
  options.setVectorTransformsOptions(
      vector::VectorContractLowering::OuterProduct);
  vector::populateVectorContractLoweringPatterns(patterns, options);
  vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  vector::populateVectorMultiReductionLoweringPatterns(
      patterns, vector::VectorMultiReductionLowering::InnerParallel);
  vector::populateVectorBroadcastLoweringPatterns(patterns);
  vector::populateVectorShapeCastLoweringPatterns(patterns);
  vector::populateVectorTransposeLoweringPatterns(patterns, options);
  vector::populateVectorTransferLoweringPatterns(patterns, 1);
  (void)applyPatternsAndFoldGreedily(module, std::move(patterns));
}

/// exp, erf and tanh as MLIR's polynomial approximations instead of libm
/// calls (conformance and the onnxruntime comparisons are unchanged): inline
/// arithmetic that LLVM vectorizes, as onnxruntime's own vectorized exp and
/// erf. Softmax and GELU epilogues were one scalar call per element. Other
/// functions keep libm (MLIR's asin approximation failed ONNX's asin test). The
/// reference schedule keeps libm throughout.
void approximateMathFunctions(ModuleOp module) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<math::ExpOp, math::ErfOp, math::TanhOp>(op))
      ops.push_back(op);
  });
  RewritePatternSet patterns(module.getContext());
  populateMathPolynomialApproximationPatterns(patterns);
  GreedyRewriteConfig config;
  config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
  (void)applyOpPatternsAndFold(ops, std::move(patterns), config);
}

/// From buffers to the LLVM dialect.
void buildCodegenPipeline(PassManager &pm) {
  pm.addPass(createForallToForLoopPass());
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createConvertVectorToSCFPass());
  // Dynamic subviews (recurrent loops, tiles) leave affine maps behind.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertSCFToCFPass());
  // bf16 conversions become integer arithmetic: no compiler-rt needed.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createConvertMathToFuncs());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// Adds `void symbol(void **args, int64_t wg_begin, int64_t wg_end)`
/// calling the C interface of kernel `name` with args[i] as its i-th
/// descriptor pointer, so the runtime calls every kernel through one
/// function type.
/// `fault` (KernelSchedule::fault) breaks the entry on purpose, for tests.
LogicalResult addPackedEntry(llvm::Module &module, llvm::StringRef name,
                             llvm::StringRef symbol, int64_t fault,
                             Location loc) {
  llvm::Function *target = module.getFunction(("_mlir_ciface_" + name).str());
  if (!target || target->arg_size() < 2)
    return emitError(loc) << "kernel '" << name << "' has no C interface";
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                       {ptr, i64, i64}, false);
  auto *entry = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                       symbol, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  llvm::SmallVector<llvm::Value *> args;
  for (unsigned i = 0; i + 2 < target->arg_size(); ++i)
    args.push_back(
        b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, entry->getArg(0), i)));
  args.push_back(entry->getArg(1));
  llvm::Value *end = entry->getArg(2);
  if (fault == 1) // workgroup 0 is never run (a serial kernel: nothing)
    args.back() =
        b.CreateSelect(b.CreateICmpEQ(args.back(), b.getInt64(0)),
                       b.CreateAdd(args.back(), b.getInt64(1)), args.back());
  if (fault == 2)
    b.CreateIntrinsic(llvm::Intrinsic::trap, {}, {});
  if (fault == 3) { // spins forever (LLVM keeps loops without mustprogress)
    llvm::BasicBlock *spin = llvm::BasicBlock::Create(ctx, "spin", entry);
    b.CreateBr(spin);
    b.SetInsertPoint(spin);
    b.CreateBr(spin);
    return success();
  }
  args.push_back(end);
  if (fault == 1) { // a kernel of one workgroup must not run at all
    llvm::BasicBlock *call = llvm::BasicBlock::Create(ctx, "call", entry);
    llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx, "done", entry);
    b.CreateCondBr(b.CreateICmpSLT(args[args.size() - 2], end), call, done);
    b.SetInsertPoint(call);
    b.CreateCall(target, args);
    b.CreateBr(done);
    b.SetInsertPoint(done);
    b.CreateRetVoid();
    return success();
  }
  b.CreateCall(target, args);
  b.CreateRetVoid();
  return success();
}

/// Links `object` into a shared object with lld, in this process.
FailureOr<std::string> linkSharedObject(llvm::StringRef object, Location loc) {
  llvm::SmallString<128> objPath, soPath;
  int objFd;
  if (llvm::sys::fs::createTemporaryFile("ignc-kernels", "o", objFd, objPath) ||
      llvm::sys::fs::createTemporaryFile("ignc-kernels", "so", soPath))
    return emitError(loc) << "cannot create temporary files for linking";
  {
    llvm::raw_fd_ostream os(objFd, /*shouldClose=*/true);
    os << object;
  }
  std::string linkerOutput;
  llvm::raw_string_ostream linkerOs(linkerOutput);
  const char *args[] = {"ld.lld", "-shared",      "--hash-style=gnu", "-O1",
                        "-o",     soPath.c_str(), objPath.c_str()};
  lld::Result result =
      lld::lldMain(args, linkerOs, linkerOs, {{lld::Gnu, &lld::elf::link}});
  llvm::sys::fs::remove(objPath);
  if (result.retCode != 0) {
    llvm::sys::fs::remove(soPath);
    return emitError(loc) << "linking the kernels failed: " << linkerOutput;
  }
  auto buffer = llvm::MemoryBuffer::getFile(soPath);
  llvm::sys::fs::remove(soPath);
  if (!buffer)
    return emitError(loc) << "cannot read the linked kernels";
  return (*buffer)->getBuffer().str();
}

} // namespace

/// The graph part of the host pipeline: convolutions as matmuls (default
/// schedule), padding splits, reshape sinking, fusion and outlining.
static FailureOr<func::FuncOp> formHostKernels(ModuleOp module,
                                               const HostOptions &options) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return module.emitError("the module has no @main function");
  // Graph-level cleanups: identical ops once, dead ops gone, batch norms
  // into weights. (Op folders, run by the reshape sinking's driver below,
  // drop no-op transposes, slices, pads and casts and merge reshape and
  // transpose chains.)
  {
    IRRewriter rewriter(module.getContext());
    DominanceInfo dominance(main);
    eliminateCommonSubExpressions(rewriter, dominance, main);
    for (Operation &op : llvm::make_early_inc_range(
             llvm::reverse(main.getBody().front().getOperations())))
      if (isOpTriviallyDead(&op))
        op.erase();
  }
  foldBatchNorm(main);
  // Ungrouped convolutions become matmuls with their padding in the
  // columns; the padding of the rest becomes a kernel of its own.
  if (options.schedule == "default")
    convToMatmul(main);
  splitConvPadding(main);
  sinkReshapes(main);
  if (failed(formKernels(main, options.fuse, options.separateThinColumns)) ||
      failed(outlineKernels(module, main)))
    return failure();
  return main;
}

FailureOr<std::vector<KernelSummary>>
planHostKernels(ModuleOp module, const HostOptions &options) {
  auto main = formHostKernels(module, options);
  if (failed(main))
    return failure();
  return summarizeKernels(module, *main);
}

/// The machine code is generated for: this one, or a named CPU.
static HostTarget hostTarget(const HostOptions &options) {
  HostTarget artifact;
  artifact.triple = llvm::sys::getProcessTriple();
  if (options.cpu == "host") {
    artifact.cpu = llvm::sys::getHostCPUName().str();
    std::vector<std::string> list;
    for (auto &f : llvm::sys::getHostCPUFeatures())
      list.push_back((f.second ? "+" : "-") + f.first().str());
    std::sort(list.begin(), list.end());
    artifact.features = llvm::join(list, ",");
  } else {
    artifact.cpu = options.cpu;
  }
  return artifact;
}

int64_t hostVectorBits(const HostOptions &options) {
  HostTarget t = hostTarget(options);
  if (llvm::StringRef(t.features).contains("+avx512f"))
    return 512;
  if (llvm::StringRef(t.features).contains("+avx"))
    return 256;
  return 128;
}

std::string hostFingerprint(const HostOptions &options,
                            llvm::StringRef ignVersion) {
  HostTarget t = hostTarget(options);
  std::string text = t.triple + "|" + t.cpu + "|" + t.features + "|" +
                     ignVersion.str() + "|" LLVM_VERSION_STRING;
  return "host/" + t.cpu + "/" +
         llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true);
}

/// Dialects and interfaces the host lowering needs.
static void prepareContext(MLIRContext *ctx) {
  DialectRegistry registry;
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerTilingInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerTilingInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  vector::registerBufferizableOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  ctx->appendDialectRegistry(registry);
  ctx->loadDialect<bufferization::BufferizationDialect, memref::MemRefDialect,
                   scf::SCFDialect, vector::VectorDialect, LLVM::LLVMDialect>();
}

FailureOr<std::vector<HostTask>> extractHostTasks(ModuleOp module,
                                                  const HostOptions &options) {
  auto main = formHostKernels(module, options);
  if (failed(main))
    return failure();
  std::vector<HostTask> tasks;
  OpBuilder b(module.getContext());
  for (KernelSummary &summary : summarizeKernels(module, *main)) {
    auto kernel = module.lookupSymbol<func::FuncOp>(summary.name);
    Location loc = kernel.getLoc();
    HostTask task;
    task.module = ModuleOp::create(loc);
    b.setInsertionPointToEnd(task.module->getBody());
    b.clone(*kernel);
    FunctionType type = kernel.getFunctionType();
    auto entry = b.create<func::FuncOp>(loc, "main", type);
    OpBuilder body = OpBuilder::atBlockEnd(entry.addEntryBlock());
    for (unsigned i = 0; i < type.getNumInputs(); ++i)
      entry.setArgAttr(i, "ign.name",
                       b.getStringAttr("arg" + std::to_string(i)));
    auto call = body.create<func::CallOp>(loc, kernel, entry.getArguments());
    body.create<func::ReturnOp>(loc, call.getResults());
    for (unsigned i = 0; i < type.getNumResults(); ++i)
      entry.setResultAttr(i, "ign.name",
                          b.getStringAttr("out" + std::to_string(i)));
    task.summary = std::move(summary);
    tasks.push_back(std::move(task));
  }
  return tasks;
}

FailureOr<search::ScheduleSpace> hostScheduleSpace(ModuleOp task) {
  MLIRContext *ctx = task.getContext();
  prepareContext(ctx);
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(task->clone()));
  PassManager lowering(ctx);
  buildLoweringPipeline(lowering);
  if (failed(lowering.run(*copy)))
    return failure();
  func::FuncOp kernel;
  copy->walk([&](func::FuncOp f) {
    if (f.getName() != "main")
      kernel = f;
  });
  if (!kernel)
    return task.emitError("the task module has no kernel function");
  return describeScheduleSpace(kernel, hostVectorBits({}));
}

FailureOr<bundle::BundleContents> compileForHost(ModuleOp module,
                                                 const HostOptions &options) {
  MLIRContext *ctx = module.getContext();
  prepareContext(ctx);
  if (options.schedule != "default" && options.schedule != "reference")
    return module.emitError("unknown host schedule '")
           << options.schedule << "' (default or reference)";

  FailureOr<func::FuncOp> main =
      options.kernelsFormed
          ? FailureOr<func::FuncOp>(module.lookupSymbol<func::FuncOp>("main"))
          : formHostKernels(module, options);
  if (failed(main) || !*main)
    return module.emitError("no @main function to compile");
  std::vector<KernelSummary> summaries = summarizeKernels(module, *main);
  llvm::StringMap<const KernelSummary *> summaryOf;
  for (const KernelSummary &s : summaries)
    summaryOf[s.name] = &s;
  auto plan = buildLaunchPlan(*main);
  if (failed(plan))
    return failure();
  // @main now lives on as the bundle's launch list; only kernels remain.
  main->erase();

  bundle::BundleContents contents;
  contents.targetName = options.targetName;
  contents.inputs = plan->inputs;
  contents.outputs = plan->outputs;
  for (auto &[spec, bytes] : plan->weights)
    contents.weights.push_back(
        {spec, std::string_view(bytes.data(), bytes.size())});
  contents.launches = plan->launches;
  contents.arenaBytes = plan->arenaBytes;

  SmallVector<func::FuncOp> kernels;
  // contents.kernels indices of the kernels compiled for the host.
  std::vector<size_t> hostIndex;
  SmallVector<func::FuncOp> offloaded;
  for (const std::string &name : plan->kernels) {
    auto kernel = module.lookupSymbol<func::FuncOp>(name);
    bundle::KernelSpec spec;
    spec.name = name;
    spec.symbol = "ign_" + name;
    spec.results = kernel.getNumResults();
    const KernelSummary *summary = nullptr;
    if (auto it = summaryOf.find(name); it != summaryOf.end()) {
      summary = it->second;
      const KernelSummary &s = *it->second;
      spec.ops = s.ops;
      spec.opShapes = s.opShapes;
      spec.task = s.task;
      spec.flops = s.flops;
      spec.bytesRead = s.bytesRead;
      spec.bytesWritten = s.bytesWritten;
    }
    if (options.offload) {
      auto claimed = options.offload(kernel, summary);
      if (failed(claimed))
        return failure();
      if (*claimed) {
        spec.symbol = "";
        spec.device = (*claimed)->device;
        spec.deviceJson = std::move((*claimed)->deviceJson);
        spec.deviceBlob = std::move((*claimed)->blob);
        spec.scheduleJson = std::move((*claimed)->scheduleJson);
        contents.kernels.push_back(std::move(spec));
        offloaded.push_back(kernel);
        continue;
      }
    }
    hostIndex.push_back(contents.kernels.size());
    contents.kernels.push_back(std::move(spec));
    // Kernels never write their arguments: those are the model's inputs,
    // weights (read-only mmapped memory) or other kernels' results.
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
      kernel.setArgAttr(i, "bufferization.writable", BoolAttr::get(ctx, false));
    kernel.setPublic();
    kernel->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
    kernels.push_back(kernel);
  }
  for (func::FuncOp kernel : offloaded)
    kernel.erase();
  HostTarget artifact = hostTarget(options);
  contents.triple = artifact.triple;
  contents.cpu = artifact.cpu;
  llvm::SmallVector<llvm::StringRef> features;
  llvm::StringRef(artifact.features).split(features, ',', -1, false);
  for (llvm::StringRef f : features)
    contents.features.push_back(f.str());
  if (kernels.empty())
    return contents; // every kernel runs on a device: no host artifact
  std::vector<bundle::KernelSpec *> hostSpecs;
  for (size_t i : hostIndex)
    hostSpecs.push_back(&contents.kernels[i]);

  PassManager lowering(ctx);
  buildLoweringPipeline(lowering);
  if (failed(lowering.run(module)))
    return failure();
  std::vector<KernelSchedule> schedules(kernels.size());
  for (auto [kernel, schedule, specPtr] :
       llvm::zip(kernels, schedules, hostSpecs)) {
    bundle::KernelSpec &spec = *specPtr;
    if (options.schedule != "default") {
      schedule.kind = "reference";
      schedule.serialReason = "reference schedule";
      continue;
    }
    const search::Schedule *tuned = nullptr;
    if (options.scheduleFor)
      if (auto it = summaryOf.find(spec.name); it != summaryOf.end())
        tuned = options.scheduleFor(*it->second);
    schedule = applySchedule(kernel, tuned);
  }
  PassManager cleanup(ctx);
  cleanup.addPass(createCanonicalizerPass());
  cleanup.addPass(createCSEPass());
  if (failed(cleanup.run(module)))
    return failure();
  for (func::FuncOp kernel : kernels)
    copyPassedThroughResults(kernel);
  PassManager bufferizing(ctx);
  buildBufferizationPipeline(bufferizing);
  if (failed(bufferizing.run(module)))
    return failure();
  for (auto [kernel, schedule] : llvm::zip(kernels, schedules)) {
    // No kernel argument is written through another one: outputs never
    // share bytes with anything the kernel reads (the launch plan keeps
    // live buffers apart), so LLVM may vectorize without alias checks.
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
      if (isa<BaseMemRefType>(kernel.getArgumentTypes()[i]))
        kernel.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                          UnitAttr::get(ctx));
    distributeWorkgroups(kernel, schedule);
    if (options.schedule == "default")
      finishSchedule(kernel);
  }
  lowerVectorOps(module);
  if (options.schedule == "default")
    approximateMathFunctions(module);
  PassManager codegen(ctx);
  buildCodegenPipeline(codegen);
  if (failed(codegen.run(module)))
    return failure();

  // The kernel functions are LLVM functions now; only the specs remain.
  kernels.clear();
  for (auto [spec, schedule] : llvm::zip(hostSpecs, schedules)) {
    spec->scheduleJson = schedule.toJson();
    spec->workgroups = schedule.workgroups;
  }

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext llvmContext;
  auto llvmModule = translateModuleToLLVMIR(module, llvmContext, "ign_kernels");
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed");

  for (auto [k, schedule] : llvm::zip(hostSpecs, schedules))
    if (failed(addPackedEntry(*llvmModule, k->name, k->symbol, schedule.fault,
                              module.getLoc())))
      return failure();
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(artifact.triple, error);
  if (!target)
    return module.emitError("no LLVM target for ")
           << artifact.triple << ": " << error;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      artifact.triple, artifact.cpu, artifact.features, llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return module.emitError("cannot create a target machine for CPU '")
           << artifact.cpu << "'";
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(artifact.triple);
  if (auto err =
          makeOptimizingTransformer(3, 0, machine.get())(llvmModule.get()))
    return module.emitError("LLVM optimization failed: ")
           << llvm::toString(std::move(err));
  if (options.llvmIR) {
    llvm::raw_string_ostream os(*options.llvmIR);
    llvmModule->print(os, nullptr);
  }

  llvm::SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return module.emitError("the target cannot emit object files");
    codegen.run(*llvmModule);
  }
  auto so = linkSharedObject(llvm::StringRef(object.data(), object.size()),
                             module.getLoc());
  if (failed(so))
    return failure();
  contents.artifact = std::move(*so);
  return contents;
}

} // namespace ign::host
