//===- HostCompiler.cpp - lowering to a host shared object ----------------===//

#include "HostCompiler.h"
#include "HostSchedule.h"
#include "KeptLoops.h"
#include "PrepackedWeights.h"
#include "TransposeShuffles.h"

#include "ign/Conversion/KernelBufferization.h"
#include "ign/Conversion/Passes.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Target/LaunchPlan.h"
#include "ign/Transforms/KernelTasks.h"
#include "ign/Transforms/Passes.h"

#include "ign/Bundle/BundleFormat.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
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
#include "mlir/Target/LLVMIR/Dialect/AMX/AMXToLLVMIRTranslation.h"
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
#include "llvm/TargetParser/Triple.h"

#include <thread>
#include <unistd.h>

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

/// `vector.extract %v[i]` of a scalar from a 1-D `vector.load %m[..., j]`
/// whose every use is such an extract becomes `memref.load %m[..., j + i]`.
/// A register tile's broadcast operand read contiguously (a direct
/// convolution's pixels of one row) was one vector load whose lanes LLVM
/// broadcast by shuffles from a register kept live beside the
/// accumulators: on AVX2's 16 registers a 6 x 16 tile spilled its
/// accumulators in the reduction loop. Scalar loads fold into broadcasts
/// from memory (vbroadcastss), one register each, used at once.
struct ExtractOfLoadAsScalarLoad : OpRewritePattern<vector::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::ExtractOp op,
                                PatternRewriter &rewriter) const override {
    auto load = op.getVector().getDefiningOp<vector::LoadOp>();
    if (!load || load.getVectorType().getRank() != 1 ||
        load.getMemRefType().getRank() == 0 ||
        isa<VectorType>(load.getMemRefType().getElementType()) ||
        isa<VectorType>(op.getType()) || op.hasDynamicPosition())
      return failure();
    if (!llvm::all_of(load->getUsers(), [](Operation *user) {
          auto e = dyn_cast<vector::ExtractOp>(user);
          return e && !e.hasDynamicPosition() && !isa<VectorType>(e.getType());
        }))
      return failure();
    int64_t lane = op.getStaticPosition()[0];
    if (lane < 0 || lane >= load.getVectorType().getNumElements())
      return failure();
    SmallVector<Value> indices(load.getIndices());
    Location loc = op.getLoc();
    Value offset = rewriter.create<arith::ConstantIndexOp>(loc, lane);
    indices.back() =
        rewriter.create<arith::AddIOp>(loc, indices.back(), offset);
    rewriter.replaceOpWithNewOp<memref::LoadOp>(op, load.getBase(), indices);
    return success();
  }
};

/// Vector ops of the register tiles become 1-D vector arithmetic: each
/// contraction step an outer product (broadcast times row, FMAs), memory
/// accesses plain vector loads and stores, transposes (a direct convolution's
/// tile stored to NCHW) stages of shuffles of `lanes`-wide vectors.
void lowerVectorOps(ModuleOp module, int64_t lanes) {
  MLIRContext *ctx = module.getContext();
  {
    RewritePatternSet patterns(ctx);
    vector::populateVectorMaskLoweringPatternsForSideEffectingOps(patterns);
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
  populateTransposeShufflePatterns(patterns, lanes);
  vector::populateVectorTransposeLoweringPatterns(patterns, options);
  vector::populateVectorTransferLoweringPatterns(patterns, 1);
  (void)applyPatternsAndFoldGreedily(module, std::move(patterns));
  RewritePatternSet scalars(ctx);
  scalars.add<ExtractOfLoadAsScalarLoad>(ctx);
  (void)applyPatternsAndFoldGreedily(module, std::move(scalars));
}

/// exp, erf and tanh as MLIR's polynomial approximations instead of libm
/// calls, and pow with a small constant exponent as multiplies (conformance
/// and the onnxruntime comparisons are unchanged): inline arithmetic that
/// LLVM vectorizes, as onnxruntime's own vectorized exp and erf. Softmax and
/// GELU epilogues were one scalar call per element. Other functions keep libm
/// (MLIR's asin approximation failed ONNX's asin test). The reference schedule
/// keeps libm throughout.
void approximateMathFunctions(ModuleOp module) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<math::ExpOp, math::ErfOp, math::TanhOp, math::PowFOp>(op))
      ops.push_back(op);
  });
  RewritePatternSet patterns(module.getContext());
  populateMathPolynomialApproximationPatterns(patterns);
  // pow with a constant exponent of 2, 3, 0.5, -1, ... becomes multiplies,
  // sqrt or a division: x^3 of GPT-2's GELU and x^2 of a layer norm were a
  // libm powf per lane.
  populateMathAlgebraicSimplificationPatterns(patterns);
  GreedyRewriteConfig config;
  config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
  (void)applyOpPatternsAndFold(ops, std::move(patterns), config);
}

/// Moves statically sized memref.alloca ops to the entry block of their
/// function. The vector-to-SCF lowering puts the scratch buffers of the
/// transfers it unrolls at the top of the enclosing scf.for (an allocation
/// scope), and LLVM then grows the stack on every iteration: a 3x3
/// convolution's register tiles over 32x32 pixels with 256 channels
/// overflowed an 8 MiB stack. The buffers are written and read within one
/// iteration, so one per function serves them all.
struct HoistStaticAllocas
    : PassWrapper<HoistStaticAllocas, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HoistStaticAllocas)
  StringRef getArgument() const final { return "ign-hoist-static-allocas"; }
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp f) {
      if (f.isExternal())
        return;
      Block &entry = f.getBody().front();
      SmallVector<memref::AllocaOp> allocas;
      f.walk([&](memref::AllocaOp a) {
        if (a->getBlock() != &entry && a->getNumOperands() == 0)
          allocas.push_back(a);
      });
      for (memref::AllocaOp a : allocas)
        a->moveBefore(&entry, entry.begin());
    });
  }
};

/// Whether no view of `buffer` leaves the iteration it is used in: every
/// use is a view of it (followed), or an op that reads or writes it and
/// returns no buffer and is no terminator (no yield, no return) and no
/// deallocation.
bool staysInIteration(Value buffer) {
  SmallVector<Value> worklist{buffer};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (isa<ViewLikeOpInterface>(user)) {
        worklist.append(user->result_begin(), user->result_end());
        continue;
      }
      if (isa<memref::DeallocOp>(user) ||
          user->hasTrait<OpTrait::IsTerminator>() ||
          llvm::any_of(user->getResultTypes(),
                       [](Type t) { return isa<BaseMemRefType>(t); }))
        return false;
    }
  }
  return true;
}

/// Moves statically sized heap buffers allocated inside loops (workgroup
/// temporaries: an attention kernel's scores, packed panels, row blocks) to
/// the entry of their function, so that one allocation serves every
/// iteration of a call. Allocated per iteration, each buffer larger than
/// glibc's mmap threshold was fresh pages every time: an attention kernel
/// over 1500 tokens spent 41% of its time in page faults (212 ms; 123-141
/// with the allocations kept).
struct HoistStaticAllocations
    : PassWrapper<HoistStaticAllocations, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HoistStaticAllocations)
  StringRef getArgument() const final { return "ign-hoist-static-allocations"; }
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp f) {
      if (f.isExternal())
        return;
      Block &entry = f.getBody().front();
      SmallVector<memref::AllocOp> allocs;
      f.walk([&](memref::AllocOp a) {
        if (a->getNumOperands() == 0 &&
            a->getParentOfType<LoopLikeOpInterface>() &&
            staysInIteration(a.getResult()))
          allocs.push_back(a);
      });
      for (memref::AllocOp a : allocs)
        a->moveBefore(&entry, entry.begin());
    });
  }
};

/// Arith ops LLVM has no instruction for become simpler ones: bf16
/// conversions integer arithmetic (no compiler-rt needed; with
/// `nativeBf16`, a CPU with AVX512-BF16, LLVM converts with its
/// instructions instead), ceil and floor divisions. Unlike upstream's
/// arith-expand, maximumf and minimumf stay LLVM's intrinsics: expanded into
/// compares and selects, the max of a softmax's row was a scalar chain LLVM
/// could not vectorize (one element per 4 cycles).
struct ExpandArithForLLVM
    : PassWrapper<ExpandArithForLLVM, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandArithForLLVM)
  explicit ExpandArithForLLVM(bool nativeBf16) : nativeBf16(nativeBf16) {}
  bool nativeBf16;
  StringRef getArgument() const final { return "ign-expand-arith-for-llvm"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, vector::VectorDialect>();
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateCeilFloorDivExpandOpsPatterns(patterns);
    if (!nativeBf16)
      arith::populateExpandBFloat16Patterns(patterns);
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

/// From buffers to the LLVM dialect.
void buildCodegenPipeline(PassManager &pm, bool nativeBf16) {
  pm.addPass(createForallToForLoopPass());
  pm.addPass(std::make_unique<HoistStaticAllocations>());
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(std::make_unique<HoistStaticAllocas>());
  // Dynamic subviews (recurrent loops, tiles) leave affine maps behind.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createLowerSCFKeepingLoopsPass());
  pm.addPass(std::make_unique<ExpandArithForLLVM>(nativeBf16));
  pm.addPass(createConvertMathToFuncs());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  ConvertVectorToLLVMPassOptions vectorOptions;
  vectorOptions.amx = true; // AmxTiles.h's tiles
  pm.addPass(createConvertVectorToLLVMPass(vectorOptions));
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = true; // defineKernelAllocator
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
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
LogicalResult addPackedEntry(llvm::Module &module, llvm::StringRef name,
                             llvm::StringRef symbol, Location loc) {
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
  args.push_back(entry->getArg(2));
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

/// The machine code is generated for: this one, or a named CPU.
/// Parts a recurrent layer's hidden units split into per direction, so
/// that a step's parts run on the runtime's threads (kTimeStepsAttr): four
/// keep a step's work even on one to four threads; fewer where the parts
/// would be under 32 units.
constexpr int64_t kRecurrentParts = 4;

static HostTarget hostTarget(const std::string &cpu) {
  HostTarget artifact;
  artifact.triple = llvm::sys::getProcessTriple();
  if (cpu == "host") {
    artifact.cpu = llvm::sys::getHostCPUName().str();
    std::vector<std::string> list;
    for (auto &f : llvm::sys::getHostCPUFeatures())
      list.push_back((f.second ? "+" : "-") + f.first().str());
    std::sort(list.begin(), list.end());
    artifact.features = llvm::join(list, ",");
  } else {
    artifact.cpu = cpu;
  }
  return artifact;
}

HostMachine hostMachine(const std::string &cpu) {
  HostTarget t = hostTarget(cpu);
  HostMachine machine;
  if (cpu == "host") {
    machine.cores = std::max(1u, std::thread::hardware_concurrency());
    if (long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE); l1 > 0)
      machine.l1Bytes = l1;
    if (long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); l2 > 0)
      machine.l2Bytes = l2;
  }
  llvm::Triple triple(t.triple);
  if (triple.isAArch64()) {
    machine.vectorRegisters = 32; // NEON: v0-v31, 128 bits
    return machine;
  }
  if (!triple.isX86())
    return machine;
  // A named CPU's features are LLVM's for that CPU; "host" lists its own.
  llvm::InitializeNativeTarget();
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(t.triple, error);
  if (!target)
    return machine;
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(t.triple, t.cpu, t.features));
  if (!sti)
    return machine;
  if (sti->checkFeatures("+avx512f")) {
    machine.vectorBits = 512;
    machine.vectorRegisters = 32;
    machine.hasBf16Dot = sti->checkFeatures("+avx512bf16");
    machine.hasAmxBf16 =
        sti->checkFeatures("+amx-tile") && sti->checkFeatures("+amx-bf16");
    machine.hasVnniDot = sti->checkFeatures("+avx512vnni");
    machine.hasWordDot = sti->checkFeatures("+avx512bw");
  } else if (sti->checkFeatures("+avx")) {
    machine.vectorBits = 256;
    machine.hasWordDot = sti->checkFeatures("+avx2");
  }
  return machine;
}

HostMachine hostMachine(const target::TargetConfig &config) {
  HostMachine machine = hostMachine(config.chip);
  if (config.hostCores > 0)
    machine.cores = config.hostCores;
  // The compile and the search space alike (AMX blocks need their splits).
  machine.bf16 = config.precision == "bf16" && machine.hasBf16Dot;
  return machine;
}

std::string hostFingerprint(const std::string &cpu,
                            llvm::StringRef ignVersion) {
  HostTarget t = hostTarget(cpu);
  std::string text = t.triple + "|" + t.cpu + "|" + t.features + "|" +
                     ignVersion.str() + "|" LLVM_VERSION_STRING;
  return "host/" + t.cpu + "/" +
         llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true);
}

/// Dialects and interfaces the host lowering needs.
static void prepareContext(MLIRContext *ctx) {
  registerKernelLoweringInterfaces(ctx);
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerAMXDialectTranslation(registry);
  ctx->appendDialectRegistry(registry);
  ctx->loadDialect<LLVM::LLVMDialect, amx::AMXDialect>();
}

FailureOr<search::ScheduleSpace> hostScheduleSpace(ModuleOp task,
                                                   const HostMachine &machine) {
  MLIRContext *ctx = task.getContext();
  prepareContext(ctx);
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(task->clone()));
  PassManager lowering(ctx);
  buildKernelLoweringPipeline(lowering, kRecurrentParts);
  if (failed(lowering.run(*copy)))
    return failure();
  func::FuncOp kernel;
  copy->walk([&](func::FuncOp f) {
    if (f.getName() != "main")
      kernel = f;
  });
  if (!kernel)
    return task.emitError("the task module has no kernel function");
  return describeScheduleSpace(kernel, machine);
}

/// Marks the host's kernels for bufferization and the C interface, and
/// names their entry symbols.
static void
prepareKernels(MLIRContext *ctx,
               llvm::MutableArrayRef<target::PlacedKernel> kernels) {
  for (target::PlacedKernel &k : kernels) {
    k.spec->symbol = "ign_" + k.spec->name;
    // Kernels never write their arguments: those are the model's inputs,
    // weights (read-only mmapped memory) or other kernels' results.
    for (unsigned i = 0; i < k.kernel.getNumArguments(); ++i)
      k.kernel.setArgAttr(i, "bufferization.writable",
                          BoolAttr::get(ctx, false));
    k.kernel.setPublic();
    k.kernel->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  }
}

/// Names and orders the constants' memref.globals by their first use, the
/// kernels in module order. One-shot bufferization visits functions in an
/// order that a map of pointers sets: the same model compiled twice placed
/// Swin-T's attention masks in other orders (other bundle bytes), and
/// constants of one shape could take each other's names.
static void orderConstantGlobals(ModuleOp module) {
  SmallVector<memref::GlobalOp> order;
  llvm::DenseSet<Operation *> seen;
  module.walk([&](memref::GetGlobalOp get) {
    auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
        get, get.getNameAttr());
    if (global && seen.insert(global).second)
      order.push_back(global);
  });
  Block &body = module.getBodyRegion().front();
  for (auto [i, global] : llvm::enumerate(llvm::reverse(order))) {
    std::string name = "__ign_constant_" + std::to_string(order.size() - 1 - i);
    if (failed(SymbolTable::replaceAllSymbolUses(
            global, StringAttr::get(module.getContext(), name), module)))
      continue;
    global.setSymName(name);
    global->moveBefore(&body, body.begin());
  }
}

/// The schedules on tensors, bufferization, workgroup distribution and
/// codegen down to the LLVM dialect.
static LogicalResult lowerKernels(
    ModuleOp module, llvm::MutableArrayRef<target::PlacedKernel> kernels,
    const HostMachine &machine, bool reference,
    std::vector<KernelSchedule> &schedules, bundle::BundleContents &contents) {
  MLIRContext *ctx = module.getContext();
  PassManager lowering(ctx);
  buildKernelLoweringPipeline(lowering, reference ? 0 : kRecurrentParts);
  if (failed(lowering.run(module)))
    return failure();
  schedules.assign(kernels.size(), KernelSchedule());
  for (auto [k, schedule] : llvm::zip(kernels, schedules)) {
    if (reference) {
      schedule.kind = "reference";
      schedule.serialReason = "reference schedule";
      continue;
    }
    schedule = applySchedule(k.kernel, machine, k.tuned);
  }
  PassManager cleanup(ctx);
  cleanup.addPass(createCanonicalizerPass());
  cleanup.addPass(createCSEPass());
  if (failed(cleanup.run(module)))
    return failure();
  auto panels = bindPrepackedPanels(kernels, contents);
  if (failed(panels))
    return failure();
  for (auto [schedule, count] : llvm::zip(schedules, *panels))
    schedule.prepackedPanels = count;
  for (target::PlacedKernel &k : kernels)
    copyPassedThroughResults(k.kernel);
  PassManager bufferizing(ctx);
  buildKernelBufferizationPipeline(bufferizing);
  if (failed(bufferizing.run(module)))
    return failure();
  orderConstantGlobals(module);
  for (auto [k, schedule] : llvm::zip(kernels, schedules)) {
    func::FuncOp kernel = k.kernel;
    // No kernel argument is written through another one: outputs never
    // share bytes with anything the kernel reads (the launch plan keeps
    // live buffers apart), so LLVM may vectorize without alias checks.
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
      if (isa<BaseMemRefType>(kernel.getArgumentTypes()[i]))
        kernel.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                          UnitAttr::get(ctx));
    distributeWorkgroups(kernel, schedule);
    if (!reference)
      finishSchedule(kernel, machine.lanes());
  }
  lowerVectorOps(module, machine.lanes());
  if (!reference)
    approximateMathFunctions(module);
  PassManager codegen(ctx);
  buildCodegenPipeline(codegen, machine.hasBf16Dot);
  return codegen.run(module);
}

/// Marks the buffer pointers of kernel `name` (each memref argument's
/// allocated and aligned pointer) noalias. The `llvm.noalias` of the MLIR
/// kernel reaches only the C wrapper's descriptor pointers, so LLVM could
/// not tell a kernel's output from its inputs: short copy loops it unrolled
/// stayed scalar (a padding kernel copied a float at a time). The launch
/// plan never lets a kernel write a buffer it also reads; buffers that are
/// only read may be the same.
static void markBuffersNoAlias(llvm::Module &module, llvm::StringRef name) {
  llvm::Function *f = module.getFunction(name);
  if (!f)
    return;
  for (llvm::Argument &arg : f->args())
    if (arg.getType()->isPointerTy())
      arg.addAttr(llvm::Attribute::NoAlias);
}

/// LLVM's own loops (elementwise chains, reductions, a softmax's passes)
/// vectorize with 512-bit vectors on AVX-512, as the register tiles and
/// onnxruntime's kernels do: LLVM prefers 256 bits for such CPUs by default
/// (against clock throttling the register tiles' FMAs already incur).
/// Measured over nine zoo models at one thread: 0.98-1.15x, EfficientNet-B0
/// 29.2 -> 25.4 ms, MobileNetV3 13.8 -> 12.8.
static void preferWidestVectors(llvm::Module &module,
                                llvm::TargetMachine &machine) {
  if (!machine.getMCSubtargetInfo()->checkFeatures("+avx512f"))
    return;
  for (llvm::Function &f : module)
    if (!f.isDeclaration())
      f.addFnAttr("prefer-vector-width", "512");
}

/// Defines the functions the kernels allocate and free their temporaries
/// with (MLIR's generic `_mlir_memref_to_llvm_alloc` and `..._free`): each
/// calls through the artifact's allocator table (BundleFormat.h's
/// kKernelAllocatorSymbol, which libignrt fills after loading it), or malloc
/// and free while the table is empty.
static void defineKernelAllocator(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *size = llvm::Type::getInt64Ty(ctx);
  auto *table = new llvm::GlobalVariable(
      module, llvm::ArrayType::get(ptr, 2), /*isConstant=*/false,
      llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantAggregateZero::get(llvm::ArrayType::get(ptr, 2)),
      bundle::kKernelAllocatorSymbol);
  auto define = [&](llvm::StringRef name, llvm::FunctionType *type,
                    llvm::StringRef fallback, unsigned slot) {
    llvm::Function *f = module.getFunction(name);
    if (!f || !f->isDeclaration())
      return;
    f->setLinkage(llvm::GlobalValue::InternalLinkage);
    if (!f->getReturnType()->isVoidTy())
      f->addRetAttr(llvm::Attribute::NoAlias);
    auto *entry = llvm::BasicBlock::Create(ctx, "entry", f);
    auto *viaTable = llvm::BasicBlock::Create(ctx, "table", f);
    auto *viaLibc = llvm::BasicBlock::Create(ctx, "libc", f);
    llvm::IRBuilder<> b(entry);
    llvm::Value *fn =
        b.CreateLoad(ptr, b.CreateConstInBoundsGEP2_32(table->getValueType(),
                                                       table, 0, slot));
    b.CreateCondBr(b.CreateIsNull(fn), viaLibc, viaTable);
    llvm::SmallVector<llvm::Value *> args;
    for (llvm::Argument &a : f->args())
      args.push_back(&a);
    for (auto [block, callee] :
         {std::pair(viaTable, fn),
          std::pair(viaLibc,
                    module.getOrInsertFunction(fallback, type).getCallee())}) {
      b.SetInsertPoint(block);
      llvm::CallInst *call = b.CreateCall(type, callee, args);
      if (type->getReturnType()->isVoidTy()) {
        b.CreateRetVoid();
        continue;
      }
      // A fresh block, as malloc's: loops writing a temporary need no alias
      // checks against the kernel's arguments (UNet's convolutions ran 3-7%
      // slower through the table without it).
      call->addRetAttr(llvm::Attribute::NoAlias);
      b.CreateRet(call);
    }
  };
  define("_mlir_memref_to_llvm_alloc",
         llvm::FunctionType::get(ptr, size, false), "malloc", 0);
  define("_mlir_memref_to_llvm_free",
         llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), ptr, false),
         "free", 1);
}

/// LLVM IR of the lowered module, optimized for `artifact`, as an object
/// file; `llvmIR` receives the optimized IR when set.
static FailureOr<std::string>
emitObject(ModuleOp module, llvm::ArrayRef<bundle::KernelSpec *> specs,
           const HostTarget &artifact, std::string *llvmIR) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext llvmContext;
  auto llvmModule = translateModuleToLLVMIR(module, llvmContext, "ign_kernels");
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed");
  for (bundle::KernelSpec *k : specs) {
    markBuffersNoAlias(*llvmModule, k->name);
    if (failed(
            addPackedEntry(*llvmModule, k->name, k->symbol, module.getLoc())))
      return failure();
  }
  defineKernelAllocator(*llvmModule);
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
  preferWidestVectors(*llvmModule, *machine);
  if (auto err =
          makeOptimizingTransformer(3, 0, machine.get())(llvmModule.get()))
    return module.emitError("LLVM optimization failed: ")
           << llvm::toString(std::move(err));
  if (llvmIR) {
    llvm::raw_string_ostream os(*llvmIR);
    llvmModule->print(os, nullptr);
  }
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return module.emitError("the target cannot emit object files");
  passes.run(*llvmModule);
  return std::string(object.data(), object.size());
}

LogicalResult compileHostKernels(
    ModuleOp module, llvm::MutableArrayRef<target::PlacedKernel> kernels,
    const target::CompileOptions &options, bundle::BundleContents &contents) {
  MLIRContext *ctx = module.getContext();
  prepareContext(ctx);
  const target::TargetConfig &config = options.config;
  if (config.schedule != "default" && config.schedule != "reference")
    return module.emitError("unknown host schedule '")
           << config.schedule << "' (default or reference)";
  HostTarget artifact = hostTarget(config.chip);
  contents.triple = artifact.triple;
  contents.cpu = artifact.cpu;
  llvm::SmallVector<llvm::StringRef> features;
  llvm::StringRef(artifact.features).split(features, ',', -1, false);
  for (llvm::StringRef f : features)
    contents.features.push_back(f.str());
  if (kernels.empty())
    return success(); // every kernel runs on a device: no host artifact
  prepareKernels(ctx, kernels);
  HostMachine machine = hostMachine(config);
  if (config.precision == "bf16" && !machine.hasBf16Dot &&
      config.schedule != "reference")
    llvm::errs() << "ignc: warning: --precision=bf16: CPU '" << artifact.cpu
                 << "' has no AVX512-BF16; the kernels compute in fp32\n";
  markWeightArguments(kernels, contents);
  std::vector<KernelSchedule> schedules;
  if (failed(lowerKernels(module, kernels, machine,
                          config.schedule == "reference", schedules, contents)))
    return failure();
  // The kernel functions are LLVM functions now; only the specs remain.
  std::vector<bundle::KernelSpec *> specs;
  for (auto [k, schedule] : llvm::zip(kernels, schedules)) {
    k.spec->scheduleJson = schedule.toJson();
    k.spec->workgroups = schedule.workgroups;
    k.spec->steps = schedule.timeSteps;
    k.kernel = nullptr;
    specs.push_back(k.spec);
  }
  auto object = emitObject(module, specs, artifact, options.lowLevelIR);
  if (failed(object))
    return failure();
  auto so = linkSharedObject(*object, module.getLoc());
  if (failed(so))
    return failure();
  contents.artifact = std::move(*so);
  return success();
}

} // namespace ign::host
