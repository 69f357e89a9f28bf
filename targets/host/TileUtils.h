//===- TileUtils.h - tiling steps the host schedule shares ------*- C++ -*-===//

#ifndef IGN_TARGETS_HOST_TILEUTILS_H
#define IGN_TARGETS_HOST_TILEUTILS_H

#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace ign::host {

/// Tiles `op` into static tiles `tile` (0: the loop is not tiled) with the
/// tile loops nested in `order` (outermost first), and replaces it by the
/// loops' results. Fails, changing nothing, when tiling does.
inline mlir::FailureOr<mlir::scf::SCFTilingResult>
tileInPlace(mlir::RewriterBase &rewriter, mlir::Operation *op,
            llvm::ArrayRef<int64_t> tile, llvm::ArrayRef<int64_t> order) {
  llvm::SmallVector<mlir::OpFoldResult> sizes;
  for (int64_t t : tile)
    sizes.push_back(rewriter.getIndexAttr(t));
  mlir::scf::SCFTilingOptions options;
  options.setTileSizes(sizes).setInterchange(order);
  rewriter.setInsertionPoint(op);
  auto tiled = mlir::scf::tileUsingSCF(
      rewriter, mlir::cast<mlir::TilingInterface>(op), options);
  if (mlir::failed(tiled))
    return mlir::failure();
  rewriter.replaceOp(op, tiled->replacements);
  return tiled;
}

/// Tiles loop `loop` of `op` (of `loops` loops) into chunks of `size`, in
/// place: the op left inside the chunks' loop, or null when tiling fails
/// (changing nothing). A reduction's chunks accumulate into the output.
inline mlir::Operation *chunkLoop(mlir::RewriterBase &rewriter,
                                  mlir::Operation *op, unsigned loops,
                                  unsigned loop, int64_t size) {
  llvm::SmallVector<int64_t> tile(loops, 0);
  tile[loop] = size;
  auto tiled = tileInPlace(rewriter, op, tile, {});
  return mlir::succeeded(tiled) ? tiled->tiledOps.back() : nullptr;
}

/// The coefficient of loop `d` in linear expression `e` (of `dims` loops).
inline int64_t coefficientOf(mlir::AffineExpr e, unsigned d, unsigned dims) {
  mlir::MLIRContext *ctx = e.getContext();
  llvm::SmallVector<mlir::AffineExpr> zero(dims,
                                           mlir::getAffineConstantExpr(0, ctx));
  llvm::SmallVector<mlir::AffineExpr> one(zero);
  one[d] = mlir::getAffineConstantExpr(1, ctx);
  auto at = [&](llvm::ArrayRef<mlir::AffineExpr> values) -> int64_t {
    auto c = llvm::dyn_cast<mlir::AffineConstantExpr>(
        mlir::simplifyAffineExpr(e.replaceDims(values), dims, 0));
    return c ? c.getValue() : 0;
  };
  return at(one) - at(zero);
}

} // namespace ign::host

#endif // IGN_TARGETS_HOST_TILEUTILS_H
