//===- IgnKernelOps.td - fused kernels -------------------------------------===//

#ifndef IGN_KERNEL_OPS_TD
#define IGN_KERNEL_OPS_TD

include "ign/Dialect/Ign/IR/IgnBase.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

// The unit that a target compiles, schedules and tunes. ign-fuse-kernels
// groups the ops of @main into kernels; ign-outline-kernels turns each into
// a function and a launch.
def Ign_KernelOp : Op<Ign_Dialect, "kernel", [IsolatedFromAbove, SingleBlock]> {
  let summary = "a fused kernel: ops computed together, isolated from above";
  let description = [{
    The body's block arguments are `inputs` (in order); `ign.yield` gives the
    results. Every value the body uses comes in as an input, except the
    constants it holds, so the kernel can be compiled on its own.
  }];
  let arguments = (ins Variadic<Ign_Tensor>:$inputs);
  let results = (outs Variadic<Ign_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat =
      "($inputs^)? attr-dict `:` functional-type($inputs, results) $body";
  let hasVerifier = 1;
}

def Ign_YieldOp : Op<Ign_Dialect, "yield",
                     [Pure, Terminator, HasParent<"KernelOp">, ReturnLike]> {
  let summary = "the results of an ign.kernel";
  let arguments = (ins Variadic<Ign_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // IGN_KERNEL_OPS_TD
