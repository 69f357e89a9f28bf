//===- OutlineKernels.cpp - split @main into kernels and launches ---------===//
//
// The unit a target compiles, schedules and times is a kernel; the bundle
// records @main as an ordered list of kernel launches over buffers. Until
// fusion exists, each compute op is a kernel of its own.
//
//===----------------------------------------------------------------------===//

#include "ign/Dialect/Ign/IR/IgnOps.h"
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

bool isWeight(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  return c && isa<DenseResourceElementsAttr>(c.getValue());
}

bool isInlineConstant(Value v) {
  return v.getDefiningOp<ConstantOp>() && !isWeight(v);
}

bool isReturned(Operation *op) {
  return llvm::any_of(op->getUsers(),
                      [](Operation *u) { return isa<func::ReturnOp>(u); });
}

/// A reshape of a value that lives in a buffer is a view of that buffer; a
/// returned constant, or a reshape of an inline constant, has no buffer and
/// needs a kernel to materialize it.
bool needsKernel(Operation *op) {
  if (isa<ConstantOp>(op))
    return isReturned(op);
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return isInlineConstant(reshape.getInput());
  return !isa<func::ReturnOp>(op);
}

std::string kernelName(unsigned index, Operation *op) {
  std::string name = "k" + std::to_string(index) + "_";
  for (char c : op->getName().getStringRef())
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

/// Moves `op` into a new private function and calls it from where it was.
LogicalResult outlineOne(ModuleOp module, Operation *op, unsigned index) {
  if (op->getNumRegions() != 0)
    return op->emitError("cannot outline an op with regions into a kernel");
  // Operands: inline constants are cloned into the kernel; everything else
  // (inputs, weights, other kernels' results) is an argument, once each.
  SmallVector<Value> args;
  for (Value v : op->getOperands())
    if (!isInlineConstant(v) && !llvm::is_contained(args, v))
      args.push_back(v);

  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto type =
      b.getFunctionType(ValueRange(args).getTypes(), op->getResultTypes());
  auto func = b.create<func::FuncOp>(op->getLoc(), kernelName(index, op), type);
  func.setPrivate();
  func->setAttr(kKernelAttr, b.getStrArrayAttr({op->getName().getStringRef()}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);
  IRMapping map;
  for (auto [outer, inner] : llvm::zip(args, body->getArguments()))
    map.map(outer, inner);
  for (Value v : op->getOperands())
    if (isInlineConstant(v) && !map.contains(v))
      map.map(v, b.clone(*v.getDefiningOp())->getResult(0));
  Operation *clone = b.clone(*op, map);
  b.create<func::ReturnOp>(op->getLoc(), clone->getResults());

  OpBuilder atOp(op);
  auto call = atOp.create<func::CallOp>(op->getLoc(), func, args);
  op->replaceAllUsesWith(call.getResults());
  op->erase();
  return success();
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
    std::string key;
    llvm::raw_string_ostream os(key);
    StringAttr name = kernel.getSymNameAttr();
    kernel.setSymName("kernel");
    kernel.print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
    kernel.setSymNameAttr(name);
    auto [it, inserted] = byBody.try_emplace(key, kernel);
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
  if (!main.getBody().hasOneBlock())
    return main.emitError("@main must have a single block to be outlined");
  SmallVector<Operation *> compute;
  for (Operation &op : main.getBody().front())
    if (needsKernel(&op))
      compute.push_back(&op);
  unsigned index = 0;
  for (Operation *op : compute)
    if (failed(outlineOne(module, op, index++)))
      return failure();
  deduplicateKernels(module, main);
  // Inline constants now live in the kernels that use them.
  for (Operation &op : llvm::make_early_inc_range(
           llvm::reverse(main.getBody().front().getOperations())))
    if (isa<ConstantOp>(op) && op.use_empty())
      op.erase();
  return success();
}

} // namespace ign
