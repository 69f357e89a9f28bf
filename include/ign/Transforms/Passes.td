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

def ConvToMatmul : Pass<"ign-conv-to-matmul", "mlir::func::FuncOp"> {
  let summary = "Rewrite unpadded, ungrouped convolutions as matmuls";
  let description = [{
    A convolution of `x: [N, C, spatial...]` with `w: [F, C, k...]` (one
    group, no padding: run ign-split-conv-padding first) becomes
    `matmul(reshape(w, [F, C*K]), cols)` reshaped to `[N, F, out...]`, plus
    the bias, where K is the kernel's size. For a 1x1 unit-stride kernel,
    `cols` is the input itself seen as `[N, C, P]` (P = the product of the
    output dims); otherwise it is im2col: one strided slice of the input per
    kernel offset, concatenated to `[N, C, K, out...]` and seen as
    `[N, C*K, P]`. Reshapes of buffers are views, and the matmul is a
    contraction that the host schedule register-tiles and vectorizes.
  }];
}

#endif // IGN_TRANSFORMS_PASSES_TD
