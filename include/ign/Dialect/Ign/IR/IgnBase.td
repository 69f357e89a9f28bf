//===- IgnBase.td - ign dialect definition and shared op classes ---------===//
//
// The `ign` dialect: ONNX-level tensor ops on statically shaped tensors. Every
// op infers its result types from operands and attributes, so passes can build
// ops without outside help and the IR checks itself.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_BASE_TD
#define IGN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Ign_Dialect : Dialect {
  let name = "ign";
  let cppNamespace = "::ign";
  let summary = "Tensor-level ops imported from ONNX, with static shapes";
  let hasConstantMaterializer = 1;
  // Attributes live in the attribute dictionary so that type inference can run
  // from an OperationState before the op exists (the importer validates every
  // node that way instead of letting a failed build abort).
  let usePropertiesForAttributes = 0;
}

// Ranked tensors with a fully static shape; rank 0 is a scalar.
def Ign_Tensor : TensorOf<[AnyType]> {
  let predicate = And<[AnyStaticShapeTensor.predicate]>;
  let summary = "statically shaped tensor";
}
def Ign_FloatTensor : Type<And<[AnyStaticShapeTensor.predicate,
                                CPred<"::llvm::isa<::mlir::FloatType>(::llvm::cast<::mlir::ShapedType>($_self).getElementType())">]>,
                           "statically shaped floating-point tensor">;
def Ign_IndexTensor : Type<And<[AnyStaticShapeTensor.predicate,
                                CPred<"::llvm::cast<::mlir::ShapedType>($_self).getElementType().isInteger(32) || ::llvm::cast<::mlir::ShapedType>($_self).getElementType().isInteger(64)">]>,
                           "statically shaped i32 or i64 tensor">;

// A string attribute restricted to a fixed set of spellings.
class Ign_OneOf<list<string> values>
    : AttrConstraint<
          CPred<"::llvm::is_contained(::llvm::ArrayRef<::llvm::StringRef>{"
                # !interleave(!foreach(v, values, "\"" # v # "\""), ", ")
                # "}, ::llvm::cast<::mlir::StringAttr>($_self).getValue())">,
          "one of: " # !interleave(values, ", ")>;
class Ign_StrEnum<list<string> values, string default>
    : DefaultValuedAttr<ConfinedAttr<StrAttr, [Ign_OneOf<values>]>,
                        "\"" # default # "\"">;

def Ign_I64Array : TypedArrayAttrBase<I64Attr, "64-bit integer array">;

// Marks ops computing each output element from the operand elements at the
// same (numpy-broadcast) position; unlike MLIR's Elementwise, operands may
// broadcast. Fusion absorbs such ops into their producers' kernels.
def Ign_Pointwise : NativeOpTrait<"Pointwise"> { let cppNamespace = "::ign"; }

// Every ign op infers its result types; the body of `inferReturnTypes` is
// given by each class or op (C++ in lib/Dialect/Ign/IR).
class Ign_Op<string mnemonic, list<Trait> traits = []>
    : Op<Ign_Dialect, mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor])>;

#endif // IGN_BASE_TD
