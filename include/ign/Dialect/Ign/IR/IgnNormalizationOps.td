//===- IgnNormalizationOps.td - batch/instance/layer/group norm, LRN -----===//

#ifndef IGN_NORMALIZATION_OPS_TD
#define IGN_NORMALIZATION_OPS_TD

include "ign/Dialect/Ign/IR/IgnBase.td"

// Inference-mode batch normalization over channel dim 1.
def Ign_BatchNormOp : Ign_Op<"batch_norm"> {
  let summary = "(x - mean) / sqrt(var + epsilon) * scale + bias, per channel";
  let arguments = (ins Ign_FloatTensor:$input, Ign_Tensor:$scale,
                   Ign_Tensor:$bias, Ign_Tensor:$mean, Ign_Tensor:$variance,
                   DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Ign_InstanceNormOp : Ign_Op<"instance_norm"> {
  let summary = "normalization over the spatial dims of each (n, c)";
  let arguments = (ins Ign_FloatTensor:$input, Ign_Tensor:$scale,
                   Ign_Tensor:$bias,
                   DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

// Normalizes over dims [axis, rank); scale and bias broadcast to those dims.
def Ign_LayerNormOp : Ign_Op<"layer_norm"> {
  let summary = "layer normalization over the trailing dims from axis";
  let arguments = (ins Ign_FloatTensor:$input, Ign_Tensor:$scale,
                   Optional<Ign_Tensor>:$bias, I64Attr:$axis,
                   DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input `,` $scale (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

// Channels split into num_groups groups, each normalized over its channels
// and spatial dims; scale and bias are per channel.
def Ign_GroupNormOp : Ign_Op<"group_norm"> {
  let summary = "group normalization with per-channel scale and bias";
  let arguments = (ins Ign_FloatTensor:$input, Ign_Tensor:$scale,
                   Ign_Tensor:$bias, I64Attr:$num_groups,
                   DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Ign_LRNOp : Ign_Op<"lrn"> {
  let summary = "local response normalization across channels";
  let arguments = (ins Ign_FloatTensor:$input, I64Attr:$size,
                   DefaultValuedAttr<F32Attr, "0.0001">:$alpha,
                   DefaultValuedAttr<F32Attr, "0.75">:$beta,
                   DefaultValuedAttr<F32Attr, "1.0">:$bias);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

#endif // IGN_NORMALIZATION_OPS_TD
