//===- IgnDataMovementOps.td - constants, shape and index ops -------------===//

#ifndef IGN_DATA_MOVEMENT_OPS_TD
#define IGN_DATA_MOVEMENT_OPS_TD

include "ign/Dialect/Ign/IR/IgnBase.td"

def Ign_ConstantOp : Ign_Op<"constant", [ConstantLike]> {
  let summary = "a constant tensor (weights live in dense_resource blobs)";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

// Shape arguments of the ops below are attributes: the importer folds the
// shape arithmetic of a model, so every shape here is static and known.

def Ign_ReshapeOp : Ign_Op<"reshape"> {
  let summary = "same elements, new static shape";
  let arguments = (ins Ign_Tensor:$input, Ign_I64Array:$shape);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Ign_TransposeOp : Ign_Op<"transpose"> {
  let summary = "permutes dims: output dim i is input dim perm[i]";
  let arguments = (ins Ign_Tensor:$input, Ign_I64Array:$perm);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Ign_ConcatOp : Ign_Op<"concat"> {
  let summary = "joins tensors along one axis";
  let arguments = (ins Variadic<Ign_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
}

def Ign_SplitOp : Ign_Op<"split"> {
  let summary = "splits a tensor along one axis into pieces of given sizes";
  let arguments = (ins Ign_Tensor:$input, I64Attr:$axis, Ign_I64Array:$sizes);
  let results = (outs Variadic<Ign_Tensor>:$outputs);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

// Normalized strided slice: per dim, the first index, the element count and
// the (non-zero, possibly negative) step.
def Ign_SliceOp : Ign_Op<"slice"> {
  let summary = "strided slice with static, in-bounds starts";
  let arguments = (ins Ign_Tensor:$input, Ign_I64Array:$starts,
                   Ign_I64Array:$sizes, Ign_I64Array:$steps);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

// Negative indices count from the end of the dim (as in ONNX).
def Ign_GatherOp : Ign_Op<"gather"> {
  let summary = "takes slices along an axis at the given indices";
  let arguments = (ins Ign_Tensor:$data, Ign_IndexTensor:$indices,
                   I64Attr:$axis);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Ign_GatherElementsOp : Ign_Op<"gather_elements"> {
  let summary = "element-wise gather along an axis";
  let arguments = (ins Ign_Tensor:$data, Ign_IndexTensor:$indices,
                   I64Attr:$axis);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Ign_GatherNDOp : Ign_Op<"gather_nd"> {
  let summary = "gathers slices addressed by index tuples";
  let arguments = (ins Ign_Tensor:$data, Ign_IndexTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Ign_ScatterElementsOp : Ign_Op<"scatter_elements"> {
  let summary = "data with updates written (or combined) at indices";
  let arguments = (ins Ign_Tensor:$data, Ign_IndexTensor:$indices,
                   Ign_Tensor:$updates, I64Attr:$axis,
                   Ign_StrEnum<["none", "add", "mul", "max", "min"], "none">:$reduction);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Ign_ScatterNDOp : Ign_Op<"scatter_nd"> {
  let summary = "data with update slices written at index tuples";
  let arguments = (ins Ign_Tensor:$data, Ign_IndexTensor:$indices,
                   Ign_Tensor:$updates,
                   Ign_StrEnum<["none", "add", "mul", "max", "min"], "none">:$reduction);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

// Broadcasts to `shape`, which the importer has already combined with the
// input shape (ONNX Expand broadcasts both ways).
def Ign_ExpandOp : Ign_Op<"expand"> {
  let summary = "numpy broadcast to a static shape";
  let arguments = (ins Ign_Tensor:$input, Ign_I64Array:$shape);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Ign_TileOp : Ign_Op<"tile"> {
  let summary = "repeats the tensor along each dim";
  let arguments = (ins Ign_Tensor:$input, Ign_I64Array:$repeats);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

// `pads` holds all begin pads then all end pads; negative pads crop.
def Ign_PadOp : Ign_Op<"pad"> {
  let summary = "pads with a constant, a reflection, the edge, or wrap-around";
  let arguments = (ins Ign_Tensor:$input, Ign_I64Array:$pads,
                   Ign_StrEnum<["constant", "reflect", "edge", "wrap"], "constant">:$mode,
                   DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

// Resize to the static `sizes`; `scales` are the per-dim scale factors the
// coordinate transformation uses (given or output/input). Folds to its input
// where every size and scale is unchanged and the transformation maps each
// pixel onto itself.
def Ign_ResizeOp : Ign_Op<"resize"> {
  let summary = "nearest, linear or cubic resampling over any dims";
  let arguments = (ins Ign_Tensor:$input, Ign_I64Array:$sizes,
                   F64ArrayAttr:$scales,
                   Ign_StrEnum<["nearest", "linear", "cubic"], "nearest">:$mode,
                   Ign_StrEnum<["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                "align_corners", "asymmetric", "tf_crop_and_resize",
                                "tf_half_pixel_for_nn"],
                               "half_pixel">:$coordinate_transformation_mode,
                   Ign_StrEnum<["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"],
                               "round_prefer_floor">:$nearest_mode,
                   DefaultValuedAttr<F32Attr, "-0.75">:$cubic_coeff_a,
                   DefaultValuedAttr<BoolAttr, "false">:$exclude_outside,
                   DefaultValuedAttr<F32Attr, "0.0">:$extrapolation_value,
                   OptionalAttr<F64ArrayAttr>:$roi);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Ign_TriluOp : Ign_Op<"trilu"> {
  let summary = "keeps the upper or lower triangle of the last two dims";
  let arguments = (ins Ign_Tensor:$input,
                   DefaultValuedAttr<BoolAttr, "true">:$upper,
                   DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// values = [off, on]; negative indices count from depth.
def Ign_OneHotOp : Ign_Op<"one_hot"> {
  let summary = "one-hot encoding along a new axis";
  let arguments = (ins Ign_IndexTensor:$indices, Ign_Tensor:$values,
                   I64Attr:$depth, I64Attr:$axis);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$indices `,` $values attr-dict `:` functional-type(operands, results)";
}

#endif // IGN_DATA_MOVEMENT_OPS_TD
