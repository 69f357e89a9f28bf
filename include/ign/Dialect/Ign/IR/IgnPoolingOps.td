//===- IgnPoolingOps.td - max, average and Lp pooling --------------------===//

#ifndef IGN_POOLING_OPS_TD
#define IGN_POOLING_OPS_TD

include "ign/Dialect/Ign/IR/IgnBase.td"

// Pooling windows over the spatial dims of an NC[D]HW tensor. `pads` holds
// begin pads then end pads; auto_pad is resolved at import.
class Ign_PoolOp<string mnemonic, dag extraAttrs = (ins)>
    : Ign_Op<mnemonic> {
  let arguments = !con((ins Ign_Tensor:$input, Ign_I64Array:$kernel_shape,
                            Ign_I64Array:$strides, Ign_I64Array:$pads,
                            Ign_I64Array:$dilations,
                            DefaultValuedAttr<BoolAttr, "false">:$ceil_mode),
                       extraAttrs);
  let results = (outs Ign_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      if (::mlir::failed(::ign::verifyAdaptor(ctx, loc, adaptor)))
        return ::mlir::failure();
      return ::ign::inferPoolType(loc, adaptor.getInput(),
                                  adaptor.getKernelShape(),
                                  adaptor.getStrides(), adaptor.getPads(),
                                  adaptor.getDilations(),
                                  adaptor.getCeilMode(), types);
    }
  }];
}

def Ign_MaxPoolOp : Ign_PoolOp<"max_pool"> {
  let summary = "max over each window (padding never wins)";
}
// MaxPool with its Indices output: flat i64 indices into the input
// (row-major over N, C and spatial dims; storage_order 1 is column-major
// over the spatial dims).
def Ign_MaxPoolWithIndicesOp : Ign_PoolOp<"max_pool_with_indices",
    (ins DefaultValuedAttr<I64Attr, "0">:$storage_order)> {
  let summary = "max over each window, with the flat index of each max";
  let results = (outs Ign_Tensor:$output, Ign_Tensor:$indices);
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      if (::mlir::failed(::ign::verifyAdaptor(ctx, loc, adaptor)) ||
          ::mlir::failed(::ign::inferPoolType(
              loc, adaptor.getInput(), adaptor.getKernelShape(),
              adaptor.getStrides(), adaptor.getPads(), adaptor.getDilations(),
              adaptor.getCeilMode(), types)))
        return ::mlir::failure();
      types.push_back(::llvm::cast<::mlir::RankedTensorType>(types.front())
                          .clone(::mlir::IntegerType::get(ctx, 64)));
      return ::mlir::success();
    }
  }];
}
def Ign_AvgPoolOp : Ign_PoolOp<"avg_pool",
    (ins DefaultValuedAttr<BoolAttr, "false">:$count_include_pad)> {
  let summary = "mean over each window";
}
def Ign_LpPoolOp : Ign_PoolOp<"lp_pool",
    (ins DefaultValuedAttr<I64Attr, "2">:$p)> {
  let summary = "(sum |x|^p)^(1/p) over each window";
}

#endif // IGN_POOLING_OPS_TD
