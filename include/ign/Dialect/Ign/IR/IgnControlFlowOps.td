//===- IgnControlFlowOps.td - run-time control flow ------------------------===//

#ifndef IGN_CONTROL_FLOW_OPS_TD
#define IGN_CONTROL_FLOW_OPS_TD

include "ign/Dialect/Ign/IR/IgnBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// An ONNX If whose condition is known only at run time. The branches are
// graph functions of their own (func.func with the `ign.graph` attribute):
// each takes the captured values as arguments and returns the results, and
// the graph pipeline fuses and outlines them like @main. The launch plan
// turns the op into a conditional jump over the two branches' launches
// (docs/bundle-format.md).
def Ign_IfOp : Op<Ign_Dialect, "if",
                  [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run one of two graph functions on a run-time condition";
  let description = [{
    `condition` holds one element (bool or integer, nonzero: the then
    branch). Both branches take `captures` and return values of the op's
    result types.
  }];
  let arguments = (ins Ign_Tensor:$condition, Variadic<Ign_Tensor>:$captures,
                       FlatSymbolRefAttr:$then_graph,
                       FlatSymbolRefAttr:$else_graph);
  let results = (outs Variadic<Ign_Tensor>:$results);
  let assemblyFormat = [{
    $condition `then` $then_graph `else` $else_graph (`captures` `(` $captures^ `)`)?
    attr-dict `:` type($condition) (`,` type($captures)^)? `->` type($results)
  }];
  let hasVerifier = 1;
}

#endif // IGN_CONTROL_FLOW_OPS_TD
