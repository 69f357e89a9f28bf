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
    result types. A branch that does not compile for the model's shapes
    (ONNX runtimes only check the branch they take) has no graph but an
    error: taking it fails the run with that message.
  }];
  let arguments = (ins Ign_Tensor:$condition, Variadic<Ign_Tensor>:$captures,
                       OptionalAttr<FlatSymbolRefAttr>:$then_graph,
                       OptionalAttr<FlatSymbolRefAttr>:$else_graph,
                       OptionalAttr<StrAttr>:$then_error,
                       OptionalAttr<StrAttr>:$else_error);
  let results = (outs Variadic<Ign_Tensor>:$results);
  let assemblyFormat = [{
    $condition (`captures` `(` $captures^ `)`)?
    attr-dict `:` type($condition) (`,` type($captures)^)? `->` type($results)
  }];
  let hasVerifier = 1;
}

// An ONNX Loop or Scan, run by the bundle's loop launches. The body is a
// graph function taking (iteration: tensor<i64>, condition, carried values,
// one slice of each scan input, captures) and returning (the next
// condition if `body_cond`, the next carried values, one slice of each scan
// output). The op's results are the final carried values, then each scan
// output: the slices of all iterations stacked along a new first axis, so
// a loop with scan outputs needs `max_trips` and must run all of them.
def Ign_LoopOp : Op<Ign_Dialect, "loop",
                    [Pure, AttrSizedOperandSegments,
                     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run a graph function while a counter and a condition allow";
  let description = [{
    Iteration i (from 0) runs while i < `trip_count` (when given), i <
    `max_trips` (when given) and the condition is nonzero. `condition` is
    the first iteration's; with `body_cond` the body returns the next one,
    without it the condition stays. Scan input k is read one slice (along
    its first axis) per iteration. `must_run_all` (the node's name): the
    condition may stop the loop before `max_trips`, which sizes its scan
    outputs; a run where it does fails, naming the node.
  }];
  let arguments = (ins Optional<Ign_Tensor>:$trip_count,
                       Ign_Tensor:$condition, Variadic<Ign_Tensor>:$inits,
                       Variadic<Ign_Tensor>:$scan_inputs,
                       Variadic<Ign_Tensor>:$captures,
                       FlatSymbolRefAttr:$body,
                       OptionalAttr<I64Attr>:$max_trips, UnitAttr:$body_cond,
                       OptionalAttr<StrAttr>:$must_run_all);
  let results = (outs Variadic<Ign_Tensor>:$results);
  let hasVerifier = 1;
}

#endif // IGN_CONTROL_FLOW_OPS_TD
