//===- HostCompiler.cpp - lowering to a host shared object ----------------===//

#include "HostCompiler.h"

#include "ign/Conversion/Passes.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"

#include "mlir/Conversion/Passes.h"
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
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "lld/Common/Driver.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

LLD_HAS_DRIVER(elf)

using namespace mlir;

namespace ign::host {

std::string dtypeName(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isF64())
    return "f64";
  if (t.isF16())
    return "f16";
  if (t.isBF16())
    return "bf16";
  if (t.isInteger(1))
    return "bool";
  if (auto it = dyn_cast<IntegerType>(t))
    return (it.isUnsigned() ? "u" : "i") + std::to_string(it.getWidth());
  return "unknown";
}

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

TensorDesc describe(Type type, llvm::StringRef name) {
  auto t = cast<ShapedType>(type);
  return {name.str(), dtypeName(t.getElementType()),
          std::vector<int64_t>(t.getShape().begin(), t.getShape().end())};
}

/// Replaces resource-backed constants of @main by trailing arguments, so
/// the runtime passes weights from the bundle (mmapped) instead of copying
/// them into the code.
void externalizeWeights(func::FuncOp main, HostArtifact &artifact) {
  Block &entry = main.getBody().front();
  SmallVector<ConstantOp> weights;
  main.walk([&](ConstantOp c) {
    if (isa<DenseResourceElementsAttr>(c.getValue()))
      weights.push_back(c);
  });
  for (ConstantOp c : weights) {
    auto attr = cast<DenseResourceElementsAttr>(c.getValue());
    AsmResourceBlob *blob = attr.getRawHandle().getBlob();
    if (!blob)
      continue;
    unsigned index = main.getNumArguments();
    main.insertArgument(index, c.getType(), {}, c.getLoc());
    main.setArgAttr(
        index, "ign.weight",
        StringAttr::get(main.getContext(), attr.getRawHandle().getKey()));
    c.getResult().replaceAllUsesWith(entry.getArgument(index));
    artifact.weights.push_back(
        {describe(c.getType(), attr.getRawHandle().getKey()), blob->getData()});
    c.erase();
  }
}

/// Copies become linalg.copy, which lowers to plain loops: the kernels then
/// need no MLIR runtime library (memrefCopy) at load time.
LogicalResult linalgCopy(OpBuilder &b, Location loc, Value from, Value to) {
  b.create<linalg::CopyOp>(loc, from, to);
  return success();
}

void buildPipeline(PassManager &pm) {
  pm.addPass(createConvertIgnToLinalg());
  pm.addPass(createCanonicalizerPass());
  bufferization::OneShotBufferizationOptions bufferization;
  bufferization.memCpyFn = linalgCopy;
  bufferization.bufferizeFunctionBoundaries = true;
  bufferization.allowReturnAllocsFromLoops = true;
  bufferization.setFunctionBoundaryTypeConversion(
      bufferization::LayoutMapOption::IdentityLayoutMap);
  pm.addPass(bufferization::createOneShotBufferizePass(bufferization));
  bufferization::BufferResultsToOutParamsOpts outParams;
  outParams.memCpyFn = linalgCopy;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // Dynamic subviews (recurrent loops) leave affine maps behind.
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
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// Adds `void ign_entry(void **args)` calling the C interface of @main with
/// args[i] as its i-th descriptor pointer, so the runtime can call any
/// signature through one function type.
LogicalResult addPackedEntry(llvm::Module &module, llvm::StringRef name,
                             Location loc) {
  llvm::Function *target = module.getFunction("_mlir_ciface_main");
  if (!target)
    return emitError(loc) << "the kernels have no C interface for @main";
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
  auto *entry = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                       name, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  llvm::SmallVector<llvm::Value *> args;
  for (unsigned i = 0; i < target->arg_size(); ++i)
    args.push_back(
        b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, entry->getArg(0), i)));
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

FailureOr<HostArtifact> compileForHost(ModuleOp module,
                                       const HostOptions &options) {
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  ctx->appendDialectRegistry(registry);
  ctx->loadDialect<bufferization::BufferizationDialect, memref::MemRefDialect,
                   scf::SCFDialect, LLVM::LLVMDialect>();

  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return module.emitError("the module has no @main function");
  HostArtifact artifact;
  artifact.entry = "ign_entry";
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto name = main.getArgAttrOfType<StringAttr>(i, "ign.name");
    artifact.inputs.push_back(
        describe(main.getArgumentTypes()[i], name ? name.getValue() : ""));
  }
  for (unsigned i = 0; i < main.getNumResults(); ++i) {
    auto name = main.getResultAttrOfType<StringAttr>(i, "ign.name");
    artifact.outputs.push_back(
        describe(main.getResultTypes()[i], name ? name.getValue() : ""));
  }
  externalizeWeights(main, artifact);
  // Names are in the artifact now; LLVM has no use for them.
  for (unsigned i = 0; i < main.getNumArguments(); ++i)
    main.setArgAttrs(i, DictionaryAttr::get(ctx));
  for (unsigned i = 0; i < main.getNumResults(); ++i)
    main.setResultAttrs(i, DictionaryAttr::get(ctx));
  main->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));

  PassManager pm(ctx);
  buildPipeline(pm);
  if (failed(pm.run(module)))
    return failure();

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext llvmContext;
  auto llvmModule = translateModuleToLLVMIR(module, llvmContext, "ign_kernels");
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed");

  if (failed(addPackedEntry(*llvmModule, artifact.entry, module.getLoc())))
    return failure();
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
  artifact.sharedObject = std::move(*so);
  return artifact;
}

} // namespace ign::host
