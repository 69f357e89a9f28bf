//===- KernelBufferization.cpp - kernels from ign to buffers --------------===//
//
// The reference lowering and bufferization shared by every target's kernel
// compile (ign/Conversion/KernelBufferization.h).
//
//===----------------------------------------------------------------------===//

#include "ign/Conversion/KernelBufferization.h"
#include "ign/Conversion/Passes.h"

#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace ign {

namespace {

/// Copies become linalg.copy, which lowers to plain loops: the kernels then
/// need no MLIR runtime library (memrefCopy) at load time.
LogicalResult linalgCopy(OpBuilder &b, Location loc, Value from, Value to) {
  b.create<linalg::CopyOp>(loc, from, to);
  return success();
}

/// A kernel whose result is a view of a buffer (a reduction's [1, C]
/// expanded to [1, C, 1, 1], a grouped convolution's [1, G, F / G, ...]
/// collapsed to [1, F, ...]) computes into that buffer and then copies the
/// view into its out parameter. The buffer becomes the out parameter seen
/// through the inverse view, and the copy goes: the workgroups write the
/// result in place, and no copy sits beside the workgroup loop (a
/// squeeze-and-excitation block's mean ran on one thread).
struct WriteViewedResultsInPlace
    : PassWrapper<WriteViewedResultsInPlace, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(WriteViewedResultsInPlace)
  StringRef getArgument() const final {
    return "ign-write-viewed-results-in-place";
  }
  void runOnOperation() override {
    SmallVector<linalg::CopyOp> copies;
    getOperation().walk([&](linalg::CopyOp copy) { copies.push_back(copy); });
    for (linalg::CopyOp copy : copies)
      forward(copy);
  }

  /// copy(expand_shape(%alloc), %out) -> %alloc := collapse_shape(%out),
  /// and collapse_shape likewise.
  static void forward(linalg::CopyOp copy) {
    auto out = dyn_cast<BlockArgument>(copy.getOutputs()[0]);
    Operation *view = copy.getInputs()[0].getDefiningOp();
    if (!out || !view ||
        !isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(view))
      return;
    auto alloc = view->getOperand(0).getDefiningOp<memref::AllocOp>();
    auto outType = dyn_cast<MemRefType>(out.getType());
    if (!alloc || !outType || !out.hasOneUse() || !view->hasOneUse() ||
        !alloc.getType().getLayout().isIdentity() ||
        !alloc.getType().hasStaticShape() ||
        !outType.getLayout().isIdentity() ||
        outType != view->getResult(0).getType() ||
        alloc->getBlock() != out.getOwner())
      return;
    OpBuilder b(alloc);
    Value inverse;
    if (auto expand = dyn_cast<memref::ExpandShapeOp>(view))
      inverse = b.create<memref::CollapseShapeOp>(
          alloc.getLoc(), out, expand.getReassociationIndices());
    else
      inverse = b.create<memref::ExpandShapeOp>(
          alloc.getLoc(), alloc.getType(), out,
          cast<memref::CollapseShapeOp>(view).getReassociationIndices());
    if (inverse.getType() != alloc.getType())
      return inverse.getDefiningOp()->erase();
    copy->erase();
    view->erase();
    alloc->replaceAllUsesWith(ValueRange{inverse});
    alloc->erase();
  }
};

} // namespace

void registerKernelLoweringInterfaces(MLIRContext *ctx) {
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
  ctx->appendDialectRegistry(registry);
  ctx->loadDialect<bufferization::BufferizationDialect, memref::MemRefDialect,
                   scf::SCFDialect, vector::VectorDialect>();
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
void buildKernelLoweringPipeline(PassManager &pm, int64_t recurrentParts) {
  pm.addPass(createConvertIgnToLinalg({recurrentParts}));
  pm.addPass(createCanonicalizerPass());
}

/// Bufferization; kernel results become out-parameters written in place.
void buildKernelBufferizationPipeline(PassManager &pm) {
  bufferization::OneShotBufferizationOptions bufferization;
  bufferization.memCpyFn = linalgCopy;
  bufferization.bufferizeFunctionBoundaries = true;
  bufferization.allowReturnAllocsFromLoops = true;
  bufferization.setFunctionBoundaryTypeConversion(
      bufferization::LayoutMapOption::IdentityLayoutMap);
  // A tensor.empty whose computation is inserted into another tensor
  // (an uneven split's pieces: canonicalization folds a slice of an empty
  // tensor into an empty tensor of its own) is computed in that tensor's
  // slice, not in a buffer of its own copied over.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createOneShotBufferizePass(bufferization));
  bufferization::BufferResultsToOutParamsOpts outParams;
  outParams.memCpyFn = linalgCopy;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(std::make_unique<WriteViewedResultsInPlace>());
  // Tiles write their results in place; CSE makes the leftover copy of a
  // tile onto itself visibly a self-copy, which canonicalization erases.
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
}

} // namespace ign
