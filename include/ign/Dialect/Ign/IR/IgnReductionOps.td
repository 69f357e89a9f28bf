//===- IgnReductionOps.td - reductions, arg-reductions, softmax, top-k ---===//

#ifndef IGN_REDUCTION_OPS_TD
#define IGN_REDUCTION_OPS_TD

include "ign/Dialect/Ign/IR/IgnBase.td"

// Reduces over `axes` (non-negative, sorted, unique, non-empty); the importer
// turns ONNX's "empty means all" and noop_with_empty_axes into explicit form.
class Ign_ReduceOp<string mnemonic> : Ign_Op<mnemonic> {
  let summary = mnemonic # " over a set of axes";
  let arguments = (ins Ign_Tensor:$input, Ign_I64Array:$axes,
                   DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      if (::mlir::failed(::ign::verifyAdaptor(ctx, loc, adaptor)))
        return ::mlir::failure();
      return ::ign::inferReduceType(loc, adaptor.getInput(), adaptor.getAxes(),
                                    adaptor.getKeepdims(), types);
    }
  }];
}

def Ign_ReduceSumOp : Ign_ReduceOp<"reduce_sum">;
def Ign_ReduceMeanOp : Ign_ReduceOp<"reduce_mean">;
def Ign_ReduceMaxOp : Ign_ReduceOp<"reduce_max">;
def Ign_ReduceMinOp : Ign_ReduceOp<"reduce_min">;
def Ign_ReduceProdOp : Ign_ReduceOp<"reduce_prod">;
def Ign_ReduceL1Op : Ign_ReduceOp<"reduce_l1">;
def Ign_ReduceL2Op : Ign_ReduceOp<"reduce_l2">;
def Ign_ReduceLogSumOp : Ign_ReduceOp<"reduce_log_sum">;
def Ign_ReduceLogSumExpOp : Ign_ReduceOp<"reduce_log_sum_exp">;
def Ign_ReduceSumSquareOp : Ign_ReduceOp<"reduce_sum_square">;

// Index (i64) of the max/min along one axis; ties take the first index
// unless select_last_index.
class Ign_ArgReduceOp<string mnemonic> : Ign_Op<mnemonic> {
  let summary = mnemonic # " along one axis";
  let arguments = (ins Ign_Tensor:$input, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                   DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      if (::mlir::failed(::ign::verifyAdaptor(ctx, loc, adaptor)))
        return ::mlir::failure();
      return ::ign::inferArgReduceType(ctx, loc, adaptor.getInput(),
                                       adaptor.getAxis(),
                                       adaptor.getKeepdims(), types);
    }
  }];
}
def Ign_ArgMaxOp : Ign_ArgReduceOp<"arg_max">;
def Ign_ArgMinOp : Ign_ArgReduceOp<"arg_min">;

// Normalizes along one axis (opset-13 semantics; the importer rewrites the
// older "flatten to 2-D" form with reshapes).
class Ign_SoftmaxLikeOp<string mnemonic> : Ign_Op<mnemonic> {
  let summary = mnemonic # " along one axis";
  let arguments = (ins Ign_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      if (::mlir::failed(::ign::verifyAdaptor(ctx, loc, adaptor)))
        return ::mlir::failure();
      return ::ign::inferSameTypeWithAxis(loc, adaptor.getInput(),
                                          adaptor.getAxis(), types);
    }
  }];
}
def Ign_SoftmaxOp : Ign_SoftmaxLikeOp<"softmax">;
def Ign_LogSoftmaxOp : Ign_SoftmaxLikeOp<"log_softmax">;
// 1 at the first maximum along the axis, 0 elsewhere.
def Ign_HardmaxOp : Ign_SoftmaxLikeOp<"hardmax">;

def Ign_CumSumOp : Ign_Op<"cumsum"> {
  let summary = "cumulative sum along one axis";
  let arguments = (ins Ign_Tensor:$input, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                   DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// The k largest (or smallest) elements along an axis and their i64 indices;
// equal values keep the lower index first.
def Ign_TopKOp : Ign_Op<"topk"> {
  let summary = "top-k values and indices along one axis";
  let arguments = (ins Ign_Tensor:$input, I64Attr:$k, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "true">:$largest,
                   DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let results = (outs Ign_Tensor:$values, Ign_Tensor:$indices);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

// NonMaxSuppression's selection, for each batch b and class c: candidates
// taken best score first (equal scores: the lower index first), only those
// scoring above score_threshold, each kept unless a box kept before in its
// class overlaps it by more than iou_threshold (intersection over union;
// empty boxes and intersections overlap nothing), until max_output are
// kept. selected [B, C, width] (width <= N: at most that many are kept,
// max_output's value where it is known) holds at [b, c, r] the index of the
// r-th box kept, -1 after the last. boxes [B, N, 4] f32 as corners
// (y1, x1, y2, x2), y1 <= y2 and x1 <= x2; scores [B, C, N] f32; max_output
// (i64), iou_threshold and score_threshold (f32) 0-d. Scalar loops
// (LowerIndexing.cpp).
def Ign_NonMaxSuppressionOp : Ign_Op<"non_max_suppression"> {
  let summary = "greedy selection of the best boxes that overlap no better one";
  let arguments = (ins Ign_Tensor:$boxes, Ign_Tensor:$scores,
                   Ign_Tensor:$max_output, Ign_Tensor:$iou_threshold,
                   Ign_Tensor:$score_threshold, I64Attr:$width);
  let results = (outs Ign_Tensor:$selected);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

#endif // IGN_REDUCTION_OPS_TD
