//===- Passes.td - graph-level passes on the ign dialect -------------------===//

#ifndef IGN_TRANSFORMS_PASSES_TD
#define IGN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FoldBatchNorm : Pass<"ign-fold-batch-norm", "mlir::func::FuncOp"> {
  let summary = "Fold batch norms into the convolution or gemm before them";
  let description = [{
    `batch_norm(conv(x, W, b))` with constant weights and parameters, the
    convolution feeding nothing else, becomes `conv(x, W', b')` with
    `W'[f] = W[f] * s[f]` and `b' = b * s + t`, where
    `s = scale / sqrt(var + eps)` and `t = bias - mean * s`; likewise for
    a gemm's output columns. The new weights are blobs of their own.
  }];
}

def ConstantDivisions : Pass<"ign-constant-divisions", "mlir::func::FuncOp"> {
  let summary = "Float divisions by constants as products with reciprocals";
  let description = [{
    `x / c` with a constant f32 divisor `c` becomes `x * (1 / c)`, the
    reciprocals computed at compile time (within an ulp of the quotient);
    a divisor with an element whose reciprocal is not a normal finite float
    keeps its division.
  }];
}

def IntegerMatmuls : Pass<"ign-integer-matmuls", "mlir::func::FuncOp"> {
  let summary = "Compute quantized contractions in integers";
  let description = [{
    `matmul((cast(aq) - za) * sa, W)` where `aq` is ui8 or int8 (per
    tensor) and `W` a constant folded from a symmetric int8 weight (per
    tensor or per output channel, marked `ign.dequantized`) becomes
    `cast(matmul(aq, wq) - za * colsum(wq)) * (sa * sw)`: an 8-bit matmul
    accumulating exactly in i32, then a per-channel epilogue; likewise a
    gemm (trans_b weights transposed), a 1x1 convolution, and the i32 form
    `matmul(cast(aq) - za, cast(wq))` of MatMulInteger and QLinearMatMul.
    An i32 convolution of centered bytes by a constant weight (ConvInteger,
    QLinearConv) whose partial sums stay below 2^24 becomes the f32
    convolution of the same values. Anything that does not convert back
    exactly stays as it is. With `words`, the integer matmuls read the same
    integers as 16-bit words (AVX2's vpmaddwd pairs). (The host runs byte
    matmuls on CPUs with VNNI, word matmuls on other CPUs with AVX2, the
    f32 convolutions everywhere.)
  }];
  let options = [
    Option<"words", "words", "bool", /*default=*/"false",
           "16-bit word operands (vpmaddwd) instead of bytes (VNNI)">
  ];
}

def HoistRecurrentProjections
    : Pass<"ign-hoist-recurrent-projections", "mlir::func::FuncOp"> {
  let summary = "Compute recurrent layers' input projections as Gemms";
  let description = [{
    An LSTM, GRU or RNN with static shapes and more than one step gets its
    input projections `X . W[d]^T + Wb[d]` of all steps as one `ign.gemm`
    per direction (concatenated along the last axis when bidirectional);
    the op then reads them as `projected_input` and keeps only R. The Gemm
    is a kernel of its own, split over threads with its weight packed at
    compile time. A cell unrolled in the graph (torch's LSTMCell called in
    a loop: every step `gemm(gather(x, t), W, b)`) likewise: the steps that
    share x, W, b and cover at least half of x's steps are one Gemm over x,
    each step's product a gather of its rows.
  }];
}

def SinkReshapes : Pass<"ign-sink-reshapes", "mlir::func::FuncOp"> {
  let summary = "Move pointwise ops above the reshapes they read";
  let description = [{
    `f(reshape(x), y)` becomes `reshape(f(x, reshape(y)))` when the reshape
    is full-shaped in f and every other operand maps to x's layout (it is
    full-shaped, or broadcast along whole groups of merged dims). f then
    reads x directly and fusion can put it into x's kernel; the reshapes
    are views.
  }];
}

def FuseKernels : Pass<"ign-fuse-kernels", "mlir::ModuleOp"> {
  let summary = "Group the compute ops of @main into ign.kernel regions";
  let description = [{
    Pointwise ops join the kernel of the producer whose full-shaped result
    they read (epilogues: bias, activations, residual adds); contractions,
    softmax, pooling, reductions and normalizations absorb producers made
    only of pointwise ops and transposes that feed nothing else; attention
    (matmul, scale/mask, softmax, matmul) becomes one kernel. Groups never
    form cycles. With `fuse=false`, every compute op is a kernel of its own.
  }];
  let options = [
    Option<"fuse", "fuse", "bool", /*default=*/"true",
           "group ops (false: one op per kernel)">
  ];
}

def OutlineKernels : Pass<"ign-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Split @main into kernel functions and a launch sequence";
  let description = [{
    Every ign.kernel region of @main, and every compute op outside one,
    moves into a private function of its own (a kernel, marked
    `ign.kernel` with the names of its ops) and is replaced by a
    `func.call`, so @main
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
  let summary = "Rewrite ungrouped convolutions as matmuls";
  let description = [{
    A convolution of `x: [N, C, spatial...]` with `w: [F, C, k...]` (one
    group) becomes `matmul(reshape(w, [F, C*K]), cols)` plus the bias,
    computed as `[N, F, P]` and reshaped to `[N, F, out...]`, where K is the
    kernel's size and P the product of the output dims. For a 1x1
    unit-stride unpadded kernel, `cols` is the input itself seen as
    `[N, C, P]`; otherwise it is `ign.im2col` (padding, strides and
    dilations included). Reshapes of buffers are views, and the matmul is a
    contraction that the host schedule register-tiles and vectorizes.
  }];
}

def GraphPipeline : Pass<"ign-graph-pipeline", "mlir::ModuleOp"> {
  let summary = "The graph stage of every target: @main into outlined kernels";
  let description = [{
    CSE and dead-op removal on @main, batch norms folded into weights,
    ungrouped convolutions as matmuls (`conv-to-matmul`), padding split off,
    reshapes sunk, fusion into kernels (`fuse`) and outlining: the module
    every target's compiler starts from. The options are a target's graph
    policy (ign/Transforms/GraphPipeline.h).
  }];
  let options = [
    Option<"fuse", "fuse", "bool", /*default=*/"true",
           "group ops (false: one op per kernel)">,
    Option<"convToMatmul", "conv-to-matmul", "bool", /*default=*/"true",
           "rewrite ungrouped convolutions as matmuls">,
    Option<"directConvFilterBlock", "direct-conv-filter-block", "int64_t",
           /*default=*/"0",
           "keep spatial convolutions, their weights blocked filters-last "
           "in blocks of this many filters (0: im2col matmuls)">,
    Option<"untransposeWeights", "untranspose-weights", "bool",
           /*default=*/"false",
           "transpose the constant weights of Gemms with transB at compile "
           "time">,
    Option<"separateThinColumns", "separate-thin-columns", "bool",
           /*default=*/"true",
           "keep im2col columns with few pixels a kernel of their own">
  ];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

#endif // IGN_TRANSFORMS_PASSES_TD
