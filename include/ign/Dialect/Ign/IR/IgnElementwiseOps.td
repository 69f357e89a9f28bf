//===- IgnElementwiseOps.td - unary, binary and select ops ---------------===//

#ifndef IGN_ELEMENTWISE_OPS_TD
#define IGN_ELEMENTWISE_OPS_TD

include "ign/Dialect/Ign/IR/IgnBase.td"

// Every op of this file computes each output element from the elements at
// the same (broadcast) position of its operands: fusion treats them alike.
class Ign_PointwiseOp<string mnemonic, list<Trait> traits = []>
    : Ign_Op<mnemonic, !listconcat(traits, [Ign_Pointwise])>;

//===----------------------------------------------------------------------===//
// Unary ops: one tensor in, a tensor of the same type out.
//===----------------------------------------------------------------------===//

class Ign_UnaryOp<string mnemonic, Type operandType = Ign_Tensor,
                  dag attrs = (ins)>
    : Ign_PointwiseOp<mnemonic, [Elementwise]> {
  let summary = "elementwise " # mnemonic;
  let arguments = !con((ins operandType:$input), attrs);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location>,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      types.push_back(adaptor.getInput().getType());
      return ::mlir::success();
    }
  }];
}

class Ign_FloatUnaryOp<string mnemonic, dag attrs = (ins)>
    : Ign_UnaryOp<mnemonic, Ign_FloatTensor, attrs>;

def Ign_AbsOp : Ign_UnaryOp<"abs">;
def Ign_NegOp : Ign_UnaryOp<"neg">;
def Ign_SignOp : Ign_UnaryOp<"sign">;
def Ign_ReluOp : Ign_UnaryOp<"relu">;
def Ign_NotOp : Ign_UnaryOp<"not", TensorOf<[I1]>>;
def Ign_ExpOp : Ign_FloatUnaryOp<"exp">;
def Ign_LogOp : Ign_FloatUnaryOp<"log">;
def Ign_SqrtOp : Ign_FloatUnaryOp<"sqrt">;
def Ign_ReciprocalOp : Ign_FloatUnaryOp<"reciprocal">;
def Ign_FloorOp : Ign_FloatUnaryOp<"floor">;
def Ign_CeilOp : Ign_FloatUnaryOp<"ceil">;
// Rounds half to even, as ONNX Round does.
def Ign_RoundOp : Ign_FloatUnaryOp<"round">;
def Ign_SinOp : Ign_FloatUnaryOp<"sin">;
def Ign_CosOp : Ign_FloatUnaryOp<"cos">;
def Ign_TanOp : Ign_FloatUnaryOp<"tan">;
def Ign_AsinOp : Ign_FloatUnaryOp<"asin">;
def Ign_AcosOp : Ign_FloatUnaryOp<"acos">;
def Ign_AtanOp : Ign_FloatUnaryOp<"atan">;
def Ign_SinhOp : Ign_FloatUnaryOp<"sinh">;
def Ign_CoshOp : Ign_FloatUnaryOp<"cosh">;
def Ign_AsinhOp : Ign_FloatUnaryOp<"asinh">;
def Ign_AcoshOp : Ign_FloatUnaryOp<"acosh">;
def Ign_AtanhOp : Ign_FloatUnaryOp<"atanh">;
def Ign_TanhOp : Ign_FloatUnaryOp<"tanh">;
def Ign_SigmoidOp : Ign_FloatUnaryOp<"sigmoid">;
def Ign_ErfOp : Ign_FloatUnaryOp<"erf">;
def Ign_SoftsignOp : Ign_FloatUnaryOp<"softsign">;
def Ign_SoftplusOp : Ign_FloatUnaryOp<"softplus">;
def Ign_MishOp : Ign_FloatUnaryOp<"mish">;
def Ign_HardSwishOp : Ign_FloatUnaryOp<"hard_swish">;
def Ign_GeluOp : Ign_FloatUnaryOp<"gelu",
    (ins Ign_StrEnum<["none", "tanh"], "none">:$approximate)>;
def Ign_HardSigmoidOp : Ign_FloatUnaryOp<"hard_sigmoid",
    (ins DefaultValuedAttr<F32Attr, "0.2">:$alpha,
         DefaultValuedAttr<F32Attr, "0.5">:$beta)>;
def Ign_LeakyReluOp : Ign_FloatUnaryOp<"leaky_relu",
    (ins DefaultValuedAttr<F32Attr, "0.01">:$alpha)>;
def Ign_EluOp : Ign_FloatUnaryOp<"elu",
    (ins DefaultValuedAttr<F32Attr, "1.0">:$alpha)>;
def Ign_SeluOp : Ign_FloatUnaryOp<"selu",
    (ins DefaultValuedAttr<F32Attr, "1.67326319217681884765625">:$alpha,
         DefaultValuedAttr<F32Attr, "1.05070102214813232421875">:$gamma)>;
def Ign_CeluOp : Ign_FloatUnaryOp<"celu",
    (ins DefaultValuedAttr<F32Attr, "1.0">:$alpha)>;
def Ign_ThresholdedReluOp : Ign_FloatUnaryOp<"thresholded_relu",
    (ins DefaultValuedAttr<F32Attr, "1.0">:$alpha)>;

// Clamps to [min, max]; an absent bound does not clamp.
def Ign_ClipOp : Ign_UnaryOp<"clip", Ign_Tensor,
    (ins OptionalAttr<F64Attr>:$min, OptionalAttr<F64Attr>:$max)>;

// Predicates: a float tensor in, an i1 tensor of the same shape out.
def Ign_IsNaNOp : Ign_PointwiseOp<"is_nan", [Elementwise]> {
  let summary = "true where the element is NaN";
  let arguments = (ins Ign_FloatTensor:$input);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}
def Ign_IsInfOp : Ign_PointwiseOp<"is_inf", [Elementwise]> {
  let summary = "true where the element is an infinity of a selected sign";
  let arguments = (ins Ign_FloatTensor:$input,
                   DefaultValuedAttr<BoolAttr, "true">:$detect_positive,
                   DefaultValuedAttr<BoolAttr, "true">:$detect_negative);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// Element type conversion; float to integer truncates toward zero, and
// anything to i1 is `!= 0`.
def Ign_CastOp : Ign_PointwiseOp<"cast", [Elementwise]> {
  let summary = "elementwise conversion to another element type";
  let arguments = (ins Ign_Tensor:$input, TypeAttr:$to);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` $to";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Binary ops with numpy-style (multidirectional) broadcasting.
//===----------------------------------------------------------------------===//

class Ign_BinaryOp<string mnemonic, bit isPredicate = 0, dag attrs = (ins)>
    : Ign_PointwiseOp<mnemonic, []> {
  let summary = "broadcasting elementwise " # mnemonic;
  let arguments = !con((ins Ign_Tensor:$lhs, Ign_Tensor:$rhs), attrs);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::ign::inferBroadcastBinary(ctx, loc, adaptor.getLhs(),
                                         adaptor.getRhs(), }] #
      !if(isPredicate, "true", "false") # [{, types);
    }
  }];
}

def Ign_AddOp : Ign_BinaryOp<"add">;
def Ign_SubOp : Ign_BinaryOp<"sub">;
def Ign_MulOp : Ign_BinaryOp<"mul">;
// Integer division truncates toward zero.
def Ign_DivOp : Ign_BinaryOp<"div">;
def Ign_PowOp : Ign_BinaryOp<"pow">;
// `fmod = false`: the result takes the divisor's sign (Python %);
// `fmod = true`: the dividend's sign (C fmod).
def Ign_ModOp : Ign_BinaryOp<"mod", 0,
    (ins DefaultValuedAttr<BoolAttr, "false">:$fmod)>;
def Ign_MaxOp : Ign_BinaryOp<"max">;
def Ign_MinOp : Ign_BinaryOp<"min">;
def Ign_AndOp : Ign_BinaryOp<"and">;
def Ign_OrOp : Ign_BinaryOp<"or">;
def Ign_XorOp : Ign_BinaryOp<"xor">;
// Unsigned integers shifted left (`left = true`) or right by rhs bits; a
// shift by the element's width or more gives 0.
def Ign_BitShiftOp : Ign_BinaryOp<"bit_shift", 0,
    (ins DefaultValuedAttr<BoolAttr, "true">:$left)>;
// x where x >= 0, slope * x elsewhere (slope broadcasts to x).
def Ign_PReluOp : Ign_BinaryOp<"prelu">;
def Ign_EqualOp : Ign_BinaryOp<"equal", 1>;
def Ign_LessOp : Ign_BinaryOp<"less", 1>;
def Ign_LessEqualOp : Ign_BinaryOp<"less_equal", 1>;
def Ign_GreaterOp : Ign_BinaryOp<"greater", 1>;
def Ign_GreaterEqualOp : Ign_BinaryOp<"greater_equal", 1>;

// `condition ? lhs : rhs`, all three broadcast together.
def Ign_SelectOp : Ign_PointwiseOp<"select", []> {
  let summary = "broadcasting elementwise selection";
  let arguments = (ins TensorOf<[I1]>:$condition, Ign_Tensor:$lhs,
                   Ign_Tensor:$rhs);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat =
      "$condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

#endif // IGN_ELEMENTWISE_OPS_TD
