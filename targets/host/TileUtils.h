//===- TileUtils.h - tiling steps the host schedule shares ------*- C++ -*-===//

#ifndef IGN_TARGETS_HOST_TILEUTILS_H
#define IGN_TARGETS_HOST_TILEUTILS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
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

/// Splits `op` along `loop` at `point` (linalg::splitOp, which replaces it
/// by the two parts); nullopt when that failed.
inline std::optional<
    std::pair<mlir::linalg::GenericOp, mlir::linalg::GenericOp>>
splitAt(mlir::RewriterBase &rewriter, mlir::linalg::GenericOp op, unsigned loop,
        int64_t point) {
  rewriter.setInsertionPoint(op);
  auto [first, second] = mlir::linalg::splitOp(
      rewriter, mlir::cast<mlir::TilingInterface>(op.getOperation()), loop,
      rewriter.getIndexAttr(point));
  auto a =
      llvm::dyn_cast_or_null<mlir::linalg::GenericOp>(first.getOperation());
  auto b =
      llvm::dyn_cast_or_null<mlir::linalg::GenericOp>(second.getOperation());
  if (!a || !b)
    return std::nullopt;
  return std::make_pair(a, b);
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

/// Whether `e` is a sum of loops times constants plus a constant (what
/// coefficientOf reads).
inline bool isLinear(mlir::AffineExpr e) {
  if (llvm::isa<mlir::AffineDimExpr, mlir::AffineConstantExpr>(e))
    return true;
  auto bin = llvm::dyn_cast<mlir::AffineBinaryOpExpr>(e);
  if (!bin)
    return false;
  if (bin.getKind() == mlir::AffineExprKind::Add)
    return isLinear(bin.getLHS()) && isLinear(bin.getRHS());
  if (bin.getKind() == mlir::AffineExprKind::Mul)
    return (llvm::isa<mlir::AffineConstantExpr>(bin.getRHS()) &&
            isLinear(bin.getLHS())) ||
           (llvm::isa<mlir::AffineConstantExpr>(bin.getLHS()) &&
            isLinear(bin.getRHS()));
  return false;
}

/// `a` + `b` (slice offsets), folded when both are constants.
inline mlir::OpFoldResult addOffsets(mlir::RewriterBase &rewriter,
                                     mlir::Location loc, mlir::OpFoldResult a,
                                     mlir::OpFoldResult b) {
  std::optional<int64_t> x = mlir::getConstantIntValue(a);
  std::optional<int64_t> y = mlir::getConstantIntValue(b);
  if (x && y)
    return rewriter.getIndexAttr(*x + *y);
  if (x && *x == 0)
    return b;
  if (y && *y == 0)
    return a;
  return rewriter
      .create<mlir::arith::AddIOp>(
          loc, mlir::getValueOrCreateConstantIndexOp(rewriter, loc, a),
          mlir::getValueOrCreateConstantIndexOp(rewriter, loc, b))
      .getResult();
}

/// The sum of the offsets of the unit-stride slices that make `v` of
/// `from`, per dim of `from` (rank-preserving slices only); nullopt unless
/// `v` is such a chain.
inline std::optional<llvm::SmallVector<mlir::OpFoldResult>>
offsetsWithin(mlir::RewriterBase &rewriter, mlir::Location loc, mlir::Value v,
              mlir::Value from) {
  auto rank = llvm::cast<mlir::RankedTensorType>(from.getType()).getRank();
  llvm::SmallVector<mlir::OpFoldResult> sum(rank, rewriter.getIndexAttr(0));
  while (v != from) {
    auto slice = v.getDefiningOp<mlir::tensor::ExtractSliceOp>();
    if (!slice || !slice.hasUnitStride() ||
        slice.getSourceType().getRank() != rank ||
        slice.getType().getRank() != rank)
      return std::nullopt;
    for (auto [d, offset] : llvm::enumerate(slice.getMixedOffsets()))
      sum[d] = addOffsets(rewriter, loc, sum[d], offset);
    v = slice.getSource();
  }
  return sum;
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
