//===- IgnOps.h - the ign dialect and its ops -------------------*- C++ -*-===//
//
// ONNX-level tensor ops with static shapes; each op infers its result types.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_DIALECT_IGN_IR_IGNOPS_H
#define IGN_DIALECT_IGN_IR_IGNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

#include "ign/Dialect/Ign/IR/IgnDialect.h.inc"

namespace ign {

/// The attribute marking a graph function: a branch or loop body of an ONNX
/// control-flow op (ign.if), imported and compiled like @main.
constexpr llvm::StringLiteral kGraphAttr = "ign.graph";

/// The result attribute of a @main result that holds, as i64 [rank], the
/// actual shape of the output named by the attribute's string: that output's
/// size depends on the data (NonZero, Unique, ...), and its type is an upper
/// bound. libignrt reports the actual shape (docs/bundle-format.md).
constexpr llvm::StringLiteral kShapeOfAttr = "ign.shape_of";

/// On an f32 ign.constant that is a folded DequantizeLinear of an integer
/// weight (ImportQuantization.cpp): a dictionary of `type` (the integer
/// type), `scale` (f32 [C]), `zero_point` (i64 [C]) and, per axis, `axis`.
/// The integer contractions (IntegerMatmuls.cpp) read the integers back.
constexpr llvm::StringLiteral kDequantizedAttr = "ign.dequantized";

/// Trait of ops that compute each output element from the operand elements
/// at the same (numpy-broadcast) position (IgnElementwiseOps.td).
template <typename ConcreteType>
class Pointwise : public mlir::OpTrait::TraitBase<ConcreteType, Pointwise> {};

/// Numpy broadcast of two static shapes; nullopt when they do not broadcast.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// The int64 values of an array attribute of IntegerAttr.
llvm::SmallVector<int64_t> toI64Vector(mlir::ArrayAttr array);

// Shared type inference for op families (see the .td files).
mlir::LogicalResult
inferBroadcastBinary(mlir::MLIRContext *ctx, std::optional<mlir::Location> loc,
                     mlir::Value lhs, mlir::Value rhs, bool isPredicate,
                     llvm::SmallVectorImpl<mlir::Type> &types);
mlir::LogicalResult inferPoolType(std::optional<mlir::Location> loc,
                                  mlir::Value input, mlir::ArrayAttr kernel,
                                  mlir::ArrayAttr strides, mlir::ArrayAttr pads,
                                  mlir::ArrayAttr dilations, bool ceilMode,
                                  llvm::SmallVectorImpl<mlir::Type> &types);
mlir::LogicalResult inferReduceType(std::optional<mlir::Location> loc,
                                    mlir::Value input, mlir::ArrayAttr axes,
                                    bool keepdims,
                                    llvm::SmallVectorImpl<mlir::Type> &types);
mlir::LogicalResult
inferArgReduceType(mlir::MLIRContext *ctx, std::optional<mlir::Location> loc,
                   mlir::Value input, int64_t axis, bool keepdims,
                   llvm::SmallVectorImpl<mlir::Type> &types);
mlir::LogicalResult
inferSameTypeWithAxis(std::optional<mlir::Location> loc, mlir::Value input,
                      int64_t axis, llvm::SmallVectorImpl<mlir::Type> &types);

/// Checks an adaptor's attributes before inference reads them: a missing or
/// mistyped attribute is a diagnostic, never a null dereference.
template <typename AdaptorT>
mlir::LogicalResult verifyAdaptor(mlir::MLIRContext *ctx,
                                  std::optional<mlir::Location> loc,
                                  AdaptorT &adaptor) {
  return adaptor.verify(loc ? *loc : mlir::UnknownLoc::get(ctx));
}

} // namespace ign

#define GET_OP_CLASSES
#include "ign/Dialect/Ign/IR/IgnOps.h.inc"

#endif // IGN_DIALECT_IGN_IR_IGNOPS_H
