//===- TransposeShuffles.cpp - register transposes as shuffle stages ------===//

#include "TransposeShuffles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace ign::host {
namespace {

/// Lanes `offset` to `offset + size` of 1-D `v`.
Value lanesOf(PatternRewriter &rewriter, Location loc, Value v, int64_t offset,
              int64_t size) {
  if (offset == 0 && size == cast<VectorType>(v.getType()).getDimSize(0))
    return v;
  SmallVector<int64_t> pick(size);
  for (int64_t i = 0; i < size; ++i)
    pick[i] = offset + i;
  return rewriter.create<vector::ShuffleOp>(loc, v, v, pick);
}

/// Transposes `block` (rows2 vectors of `width` lanes, rows2 a power of two
/// at most `width`) in place: stage s swaps bit s of the vector index with
/// bit s of the lane, so afterwards vector m holds column m + j * rows2 of
/// the block in lanes j * rows2 to (j + 1) * rows2, one row per lane.
void transposeBlock(PatternRewriter &rewriter, Location loc,
                    MutableArrayRef<Value> block, int64_t width) {
  int64_t rows2 = block.size();
  for (int64_t bit = 1; bit < rows2; bit <<= 1) {
    SmallVector<int64_t> low(width), high(width);
    for (int64_t k = 0; k < width; ++k) {
      // Lanes with the bit clear come from the first vector, set from the
      // second (shuffle indices past `width` pick the second operand).
      low[k] = (k & bit) ? width + (k ^ bit) : k;
      high[k] = (k & bit) ? width + k : k ^ bit;
    }
    for (int64_t a = 0; a < rows2; ++a) {
      if (a & bit)
        continue;
      Value first = block[a], second = block[a | bit];
      block[a] = rewriter.create<vector::ShuffleOp>(loc, first, second, low);
      block[a | bit] =
          rewriter.create<vector::ShuffleOp>(loc, first, second, high);
    }
  }
}

struct TransposeByShuffles : OpRewritePattern<vector::TransposeOp> {
  TransposeByShuffles(MLIRContext *ctx, int64_t lanes)
      : OpRewritePattern(ctx, /*benefit=*/2), lanes(lanes) {}

  LogicalResult matchAndRewrite(vector::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    VectorType src = op.getSourceVectorType();
    int64_t rank = src.getRank();
    ArrayRef<int64_t> perm = op.getPermutation();
    if (src.isScalable() || rank < 2 ||
        src.getElementType().getIntOrFloatBitWidth() != 32)
      return failure();
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < rank; ++d)
      if (src.getDimSize(d) != 1)
        dims.push_back(d);
    // The columns are the source's last dim, the rows the result's.
    if (dims.size() != 2 || dims[1] != rank - 1 || perm[rank - 1] != dims[0])
      return failure();
    int64_t rows = src.getDimSize(dims[0]), cols = src.getDimSize(rank - 1);
    int64_t width = std::min(lanes, cols);
    int64_t rows2 = llvm::PowerOf2Ceil(rows);
    if (rows < 2 || !llvm::isPowerOf2_64(width) || cols % width ||
        rows2 > width)
      return failure();
    Location loc = op.getLoc();
    auto row = [&](int64_t i) {
      SmallVector<int64_t> at(rank - 1, 0);
      at[dims[0]] = i;
      return rewriter.create<vector::ExtractOp>(loc, op.getVector(), at);
    };
    VectorType result = op.getResultVectorType();
    Value out = rewriter.create<arith::ConstantOp>(
        loc, result, rewriter.getZeroAttr(result));
    auto blockType = VectorType::get({width}, src.getElementType());
    Value zero = rewriter.create<arith::ConstantOp>(
        loc, blockType, rewriter.getZeroAttr(blockType));
    int64_t colDim = llvm::find(perm, rank - 1) - perm.begin();
    for (int64_t first = 0; first < cols; first += width) {
      SmallVector<Value> block(rows2, zero);
      for (int64_t i = 0; i < rows; ++i)
        block[i] = lanesOf(rewriter, loc, row(i), first, width);
      transposeBlock(rewriter, loc, block, width);
      for (int64_t c = 0; c < width; ++c) {
        Value column =
            lanesOf(rewriter, loc, block[c % rows2], c / rows2 * rows2, rows);
        SmallVector<int64_t> at(rank - 1, 0);
        at[colDim] = first + c;
        out = rewriter.create<vector::InsertOp>(loc, column, out, at);
      }
    }
    rewriter.replaceOp(op, out);
    return success();
  }

  int64_t lanes;
};

} // namespace

void populateTransposeShufflePatterns(RewritePatternSet &patterns,
                                      int64_t lanes) {
  patterns.add<TransposeByShuffles>(patterns.getContext(), lanes);
}

} // namespace ign::host
