//===- WeightConstants.h - reading and making weight constants -*- C++ -*-===//
//
// Graph rewrites that change weights at compile time (batch norms folded
// into them, filters transposed for direct convolutions) read a constant's
// f32 values and make a new constant in a blob of its own.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_LIB_TRANSFORMS_WEIGHTCONSTANTS_H
#define IGN_LIB_TRANSFORMS_WEIGHTCONSTANTS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ign {

/// The f32 values of a constant (inline or a weight blob), or nullopt.
std::optional<std::vector<float>> constantFloats(mlir::Value v);

/// The values of an 8- or 32-bit integer constant (inline or a weight
/// blob; unsigned ones zero-extended), or nullopt.
std::optional<std::vector<int64_t>> constantIntegers(mlir::Value v);

/// A new weight constant holding `values`, in a blob of its own.
mlir::Value makeWeight(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::RankedTensorType type, std::vector<float> values,
                       llvm::StringRef name);

/// A new 8-bit integer weight constant holding `values`.
mlir::Value makeWeight(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::RankedTensorType type, std::vector<int8_t> values,
                       llvm::StringRef name);
/// A new 16-bit integer weight constant holding `values`.
mlir::Value makeWeight(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::RankedTensorType type, std::vector<int16_t> values,
                       llvm::StringRef name);

/// A name for a weight derived from constant `v`: its blob's key (or
/// "folded") followed by `suffix`.
std::string weightName(mlir::Value v, llvm::StringRef suffix);

} // namespace ign

#endif // IGN_LIB_TRANSFORMS_WEIGHTCONSTANTS_H
