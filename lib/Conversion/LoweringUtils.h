//===- LoweringUtils.h - helpers shared by the ign -> linalg lowering -----===//

#ifndef IGN_LIB_CONVERSION_LOWERINGUTILS_H
#define IGN_LIB_CONVERSION_LOWERINGUTILS_H

#include "ign/Conversion/Passes.h"
#include "ign/Dialect/Ign/IR/IgnOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

#include <functional>

namespace ign::lowering {

using BodyFn = std::function<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                         mlir::ValueRange)>;

/// A scalar constant of a float or integer type.
mlir::Value scalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                   double value);
/// The most negative / positive value of `type` (-inf / +inf for floats;
/// 0 and all-ones for unsigned integers).
mlir::Value lowest(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                   bool isUnsigned = false);
mlir::Value highest(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                    bool isUnsigned = false);

/// x + y and x * y for float or integer scalars.
mlir::Value addV(mlir::OpBuilder &b, mlir::Location l, mlir::Value x,
                 mlir::Value y);
mlir::Value mulV(mlir::OpBuilder &b, mlir::Location l, mlir::Value x,
                 mlir::Value y);

/// Wraps a possibly negative index (of index type) into [0, dim) and clamps
/// what is still outside, so a bad index never reads or writes out of
/// bounds (ONNX leaves such indices undefined).
mlir::Value safeIndex(mlir::OpBuilder &b, mlir::Location l, mlir::Value i,
                      int64_t dim);

/// tensor.empty of `type` filled with `value`.
mlir::Value filled(mlir::OpBuilder &b, mlir::Location loc,
                   mlir::RankedTensorType type, mlir::Value value);

/// Map from an `outRank` iteration space to an operand of `shape` that
/// broadcasts (numpy rules) to `outShape`.
mlir::AffineMap broadcastMap(mlir::MLIRContext *ctx,
                             llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<int64_t> outShape);

/// linalg.generic computing `body` elementwise over `inputs` broadcast to
/// `outType`.
mlir::Value elementwise(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType outType, mlir::ValueRange inputs,
                        const BodyFn &body);

/// Same elements under a new static shape.
mlir::Value reshape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                    llvm::ArrayRef<int64_t> shape);

/// Converts a scalar between element types with ONNX Cast semantics;
/// `fromUnsigned` / `toUnsigned` give the signedness of integer sides.
mlir::Value castScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                       mlir::Type to, bool fromUnsigned = false,
                       bool toUnsigned = false);

/// Pads with `value` (constant mode), begin pads then end pads per dim.
mlir::Value padConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                        llvm::ArrayRef<int64_t> low,
                        llvm::ArrayRef<int64_t> high, mlir::Value value);

bool isFloat(mlir::Type t);

/// Marks set by the lowering on ops that saw unsigned integers (see
/// makeSignless in IgnToLinalg.cpp).
constexpr llvm::StringLiteral kUnsignedAttr = "ign.unsigned";
constexpr llvm::StringLiteral kUnsignedResultAttr = "ign.unsigned_result";
inline bool isUnsignedOp(mlir::Operation *op) {
  return op->hasAttr(kUnsignedAttr);
}
/// On an ign.matmul of 8- or 16-bit integers: which operands are unsigned (each
/// may differ), as a DenseBoolArrayAttr [lhs, rhs].
constexpr llvm::StringLiteral kUnsignedOperandsAttr = "ign.unsigned_operands";
/// The (statically shaped) type of an op's first result.
inline mlir::RankedTensorType rtype(mlir::Operation *op) {
  return mlir::cast<mlir::RankedTensorType>(op->getResult(0).getType());
}
mlir::RankedTensorType tensorType(mlir::Value v);
llvm::SmallVector<mlir::utils::IteratorType> iterators(int64_t parallel,
                                                       int64_t reduction = 0);

void populateElementwisePatterns(mlir::RewritePatternSet &patterns);
void populateContractionPatterns(mlir::RewritePatternSet &patterns);
void populateReductionPatterns(mlir::RewritePatternSet &patterns);
void populateDataMovementPatterns(mlir::RewritePatternSet &patterns);
void populateResizePatterns(mlir::RewritePatternSet &patterns);
/// LSTM, GRU and RNN: a loop over time, or with `steppedParts` > 0 the
/// stepped form (an scf.forall over steps and parts of the hidden units,
/// marked kTimeStepsAttr) where the op allows it.
void populateRecurrentPatterns(mlir::RewritePatternSet &patterns,
                               int64_t steppedParts);
void populateIndexingPatterns(mlir::RewritePatternSet &patterns);

} // namespace ign::lowering

#endif // IGN_LIB_CONVERSION_LOWERINGUTILS_H
