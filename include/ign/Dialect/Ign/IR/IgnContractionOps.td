//===- IgnContractionOps.td - matmul, gemm, conv, einsum -----------------===//

#ifndef IGN_CONTRACTION_OPS_TD
#define IGN_CONTRACTION_OPS_TD

include "ign/Dialect/Ign/IR/IgnBase.td"

// numpy matmul: 1-D operands are promoted and the promoted dim dropped;
// batch dims broadcast.
def Ign_MatMulOp : Ign_Op<"matmul"> {
  let summary = "numpy-style batched matrix product";
  let description = [{
    Operands of one element type, the result of it too; or 8-bit integers
    of either signedness each (ui8 activations by si8 weights, as quantized
    models multiply), whose products accumulate exactly in an i32 result.
  }];
  let arguments = (ins Ign_Tensor:$lhs, Ign_Tensor:$rhs);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

// alpha * op(a) * op(b) + beta * c, c broadcasting to [M, N].
def Ign_GemmOp : Ign_Op<"gemm"> {
  let summary = "general matrix multiply with optional transposes and bias";
  let arguments = (ins Ign_Tensor:$a, Ign_Tensor:$b, Optional<Ign_Tensor>:$c,
                   DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                   DefaultValuedAttr<F32Attr, "1.0">:$beta,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$a `,` $b (`,` $c^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

// N-d convolution, NC[D]HW layout. `pads` holds all begin pads then all end
// pads (ONNX order); auto_pad is resolved into explicit pads at import. The
// weight is [F, C / group, k...] as in ONNX, or with `filter_block` T > 0
// (one group only) blocked filters-last, [F / T, C, k..., T]: filter f is
// w[f / T, c, k..., f % T]. The host's direct convolutions then read a
// vector of filters at each step of the reduction, and each block of T
// filters is one contiguous panel (ign-conv-to-matmul reorders constant
// weights at compile time). Input and weight of one element type, the
// result of it too; or 8-bit integers of either signedness each (the
// bytes of quantized activations by int8 filters), whose products
// accumulate exactly in an i32 result.
def Ign_ConvOp : Ign_Op<"conv"> {
  let summary = "grouped, strided, dilated convolution";
  let arguments = (ins Ign_Tensor:$input, Ign_Tensor:$weight,
                   Optional<Ign_Tensor>:$bias, Ign_I64Array:$strides,
                   Ign_I64Array:$pads, Ign_I64Array:$dilations,
                   DefaultValuedAttr<I64Attr, "1">:$group,
                   DefaultValuedAttr<I64Attr, "0">:$filter_block);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

// The columns of an ungrouped convolution (im2col), padding included:
// output[n, c * K + k, p] is the input pixel that kernel offset k (row-major
// over kernel_shape, K offsets) multiplies at output position p (row-major
// over the output's spatial dims), or 0 where it falls into the padding. A
// convolution is then the matmul of its weight, seen as [F, C * K], with
// these columns. Not an ONNX op: ign-conv-to-matmul makes it.
def Ign_Im2ColOp : Ign_Op<"im2col"> {
  let summary = "convolution columns [N, C*K, P] of a padded, strided window";
  let arguments = (ins Ign_Tensor:$input, Ign_I64Array:$kernel_shape,
                   Ign_I64Array:$strides, Ign_I64Array:$pads,
                   Ign_I64Array:$dilations);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

// The other half of a transposed convolution as a matmul (ConvToMatmul):
// columns [N, F*K, P], the matmul of the transposed weight [F*K, C] with
// the input [N, C, P] (P over the input's pixels), summed into the output
// [N, F, O...]: out[n, f, o] = bias[f] + sum over the window offsets k of
// columns[n, f*K + k, i] where i * stride = o + pad - k * dilation.
def Ign_Col2ImOp : Ign_Op<"col2im"> {
  let summary = "sums transposed-convolution columns [N, F*K, P] into [N, F, O...]";
  let arguments = (ins Ign_Tensor:$input, Optional<Ign_Tensor>:$bias,
                   Ign_I64Array:$input_shape, Ign_I64Array:$output_shape,
                   Ign_I64Array:$kernel_shape, Ign_I64Array:$strides,
                   Ign_I64Array:$pads, Ign_I64Array:$dilations);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

// Transposed convolution; weight is [C_in, C_out / group, k...].
def Ign_ConvTransposeOp : Ign_Op<"conv_transpose"> {
  let summary = "grouped, strided, dilated transposed convolution";
  let arguments = (ins Ign_Tensor:$input, Ign_Tensor:$weight,
                   Optional<Ign_Tensor>:$bias, Ign_I64Array:$strides,
                   Ign_I64Array:$pads, Ign_I64Array:$dilations,
                   Ign_I64Array:$output_padding,
                   DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

// Explicit-output einsum, e.g. "bij,bjk->bik" (the importer adds "->..."
// when the model leaves it implicit). "..." stands for broadcast dims.
def Ign_EinsumOp : Ign_Op<"einsum"> {
  let summary = "Einstein summation";
  let arguments = (ins Variadic<Ign_Tensor>:$inputs, StrAttr:$equation);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type(operands, results)";
}

#endif // IGN_CONTRACTION_OPS_TD
