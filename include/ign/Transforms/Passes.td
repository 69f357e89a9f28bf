//===- Passes.td - graph-level passes on the ign dialect -------------------===//

#ifndef IGN_TRANSFORMS_PASSES_TD
#define IGN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def OutlineKernels : Pass<"ign-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Split @main into kernel functions and a launch sequence";
  let description = [{
    Every compute op of @main moves into a private function of its own (a
    kernel, marked `ign.kernel`) and is replaced by a `func.call`, so @main
    becomes the launch sequence the bundle records. Constants that are not
    weights are cloned into the kernels that use them; weights (resource
    constants) stay in @main and become kernel arguments. `ign.reshape` of
    a computed value stays in @main: it is a view, not a kernel.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def SplitConvPadding : Pass<"ign-split-conv-padding", "mlir::func::FuncOp"> {
  let summary = "Move a convolution's padding into an ign.pad of its own";
  let description = [{
    `ign.conv` with non-zero pads becomes `ign.pad` (constant zero) followed
    by an unpadded `ign.conv`. Each is then a kernel of its own: the
    convolution tiles into parallel workgroups without a serial padding
    prologue (upstream tiling cannot yet fuse `tensor.pad` into tiles).
  }];
}

def PointwiseConvToMatmul
    : Pass<"ign-pointwise-conv-to-matmul", "mlir::func::FuncOp"> {
  let summary = "Rewrite 1x1 stride-1 unpadded convolutions as matmuls";
  let description = [{
    A pointwise convolution of `x: [N, C, spatial...]` with `w: [F, C, 1...]`
    is `matmul(reshape(w, [F, C]), reshape(x, [N, C, P]))` reshaped back to
    `[N, F, spatial...]` (P = the product of the spatial dims), plus the
    bias. Reshapes of buffers are views, so this costs nothing, and the
    matmul is a contraction with plain indexing that the host schedule
    register-tiles and vectorizes along P.
  }];
}

#endif // IGN_TRANSFORMS_PASSES_TD
