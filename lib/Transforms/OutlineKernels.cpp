//===- OutlineKernels.cpp - split @main into kernels and launches ---------===//
//
// The unit a target compiles, schedules and times is a kernel; the bundle
// records @main as an ordered list of kernel launches over buffers. Each
// ign.kernel (see FuseKernels.cpp) becomes a function; compute ops outside
// kernels become kernels of their own.
//
//===----------------------------------------------------------------------===//

#include "KernelGrouping.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"
#include "ign/Transforms/KernelTasks.h"
#include "ign/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"

namespace ign {
#define GEN_PASS_DEF_OUTLINEKERNELS
#include "ign/Transforms/Passes.h.inc"
} // namespace ign

using namespace mlir;

namespace ign {
namespace {

std::string kernelName(unsigned index, Operation *anchor) {
  std::string name = "k" + std::to_string(index) + "_";
  for (char c : anchor->getName().getStringRef())
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

/// The index after every outlined kernel's (`k<index>_...`): the graphs of
/// a module are outlined one after another into the one symbol table.
unsigned firstFreeKernelIndex(ModuleOp module) {
  unsigned next = 0;
  for (auto f : module.getOps<func::FuncOp>()) {
    unsigned index = 0;
    llvm::StringRef name = f.getSymName();
    if (f->hasAttr(kKernelAttr) && name.consume_front("k") &&
        !name.consumeInteger(10, index))
      next = std::max(next, index + 1);
  }
  return next;
}

/// Moves the body of `kernel` into a new private function and calls it
/// from where the kernel was.
void outlineOne(ModuleOp module, KernelOp kernel, unsigned index) {
  Block &body = kernel.getBody().front();
  SmallVector<Attribute> ops;
  for (Operation &op : body.without_terminator())
    if (!isa<ConstantOp>(op))
      ops.push_back(
          StringAttr::get(op.getContext(), op.getName().getStringRef()));
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto type =
      b.getFunctionType(kernel.getInputs().getTypes(), kernel.getResultTypes());
  auto func = b.create<func::FuncOp>(
      kernel.getLoc(), kernelName(index, kernelAnchor(body)), type);
  func.setPrivate();
  func->setAttr(kKernelAttr, b.getArrayAttr(ops));
  func.getBody().takeBody(kernel.getBody());
  auto yield = cast<YieldOp>(func.getBody().front().getTerminator());
  b.setInsertionPoint(yield);
  b.create<func::ReturnOp>(yield.getLoc(), yield.getValues());
  yield.erase();

  OpBuilder atKernel(kernel);
  auto call =
      atKernel.create<func::CallOp>(kernel.getLoc(), func, kernel.getInputs());
  kernel.replaceAllUsesWith(call.getResults());
  kernel.erase();
}

/// Kernels that compute the same thing (same ops, attributes, shapes and
/// dtypes; names and locations aside) become one function launched several
/// times: compiled once, and later tuned once as one task.
void deduplicateKernels(ModuleOp module, func::FuncOp main) {
  llvm::StringMap<func::FuncOp> byBody;
  llvm::DenseMap<StringAttr, StringAttr> replacement;
  SmallVector<func::FuncOp> duplicates;
  for (auto kernel : module.getOps<func::FuncOp>()) {
    if (!kernel->hasAttr(kKernelAttr))
      continue;
    StringAttr name = kernel.getSymNameAttr();
    auto [it, inserted] = byBody.try_emplace(structuralKey(kernel), kernel);
    if (!inserted) {
      replacement[name] = it->second.getSymNameAttr();
      duplicates.push_back(kernel);
    }
  }
  main.walk([&](func::CallOp call) {
    if (auto to = replacement.lookup(call.getCalleeAttr().getAttr()))
      call.setCalleeAttr(FlatSymbolRefAttr::get(to));
  });
  for (func::FuncOp f : duplicates)
    f.erase();
}

struct OutlineKernelsPass
    : public impl::OutlineKernelsBase<OutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main) {
      module.emitError("the module has no @main function");
      return signalPassFailure();
    }
    if (failed(outlineKernels(module, main)))
      signalPassFailure();
  }
};

} // namespace

LogicalResult outlineKernels(ModuleOp module, func::FuncOp main) {
  // Ops not fused into a kernel yet are kernels of their own.
  if (failed(formKernels(main, /*fuse=*/false)))
    return failure();
  SmallVector<KernelOp> kernels(main.getBody().front().getOps<KernelOp>());
  unsigned index = firstFreeKernelIndex(module);
  for (KernelOp kernel : kernels)
    outlineOne(module, kernel, index++);
  deduplicateKernels(module, main);
  // Inline constants now live in the kernels that use them.
  for (Operation &op : llvm::make_early_inc_range(
           llvm::reverse(main.getBody().front().getOperations())))
    if (isa<ConstantOp>(op) && op.use_empty())
      op.erase();
  return success();
}

} // namespace ign
