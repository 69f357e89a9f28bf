#!/usr/bin/env python3
"""Single kernels of benchmarks/results/2026-12-01-epilogues.md as ONNX models with
random constant weights (the shapes of BERT, EfficientNet, MobileNetV3 and an STFT):

  python3 benchmarks/models/epilogue_kernels.py DIR

writes DIR/*.onnx; time them with compare_builds.py (two builds side by side).
Needs numpy and onnx (scripts/setup.sh installs them).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(path, nodes, inputs, outputs, weights):
    graph = helper.make_graph(nodes, os.path.basename(path)[:-5], inputs, outputs, weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def weight(rng, name, shape, scale=0.05):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def matmul(rng, path, m, k, n, gelu):
    """[1, m, k] x [k, n] + bias, with BERT's erf GELU when `gelu`."""
    w = [weight(rng, "w", (k, n)), weight(rng, "b", (n,), 1.0)]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("Add", ["m", "b"], ["a"])]
    out = "a"
    if gelu:
        w += [numpy_helper.from_array(np.array(v, np.float32), name)
              for name, v in (("r2", 1.4142135), ("one", 1.0), ("half", 0.5))]
        nodes += [helper.make_node("Div", ["a", "r2"], ["d"]),
                  helper.make_node("Erf", ["d"], ["e"]),
                  helper.make_node("Add", ["e", "one"], ["e1"]),
                  helper.make_node("Mul", ["a", "e1"], ["g"]),
                  helper.make_node("Mul", ["g", "half"], ["y"])]
        out = "y"
    save(path, nodes, [tensor("x", [1, m, k])], [tensor(out, [1, m, n])], w)


def depthwise(rng, path, c, size, k, silu):
    """A depthwise k x k convolution (stride 1, same padding), with SiLU when `silu`."""
    w = [weight(rng, "w", (c, 1, k, k), 0.1), weight(rng, "b", (c,), 1.0)]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=c,
                              kernel_shape=[k, k], pads=[k // 2] * 4)]
    out = "c"
    if silu:
        nodes += [helper.make_node("Sigmoid", ["c"], ["s"]),
                  helper.make_node("Mul", ["c", "s"], ["y"])]
        out = "y"
    save(path, nodes, [tensor("x", [1, c, size, size])], [tensor(out, [1, c, size, size])], w)


def gemv(rng, path, k, n):
    """A classifier at batch 1: Gemm with transB, constant weights."""
    w = [weight(rng, "w", (n, k)), weight(rng, "b", (n,), 1.0)]
    save(path, [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)],
         [tensor("x", [1, k])], [tensor("y", [1, n])], w)


def stft(rng, path):
    """openWakeWord's STFT as a matmul: 257 x 512 constant frames x 512 x 97 columns."""
    w = [weight(rng, "w", (257, 512))]
    save(path, [helper.make_node("MatMul", ["w", "x"], ["y"])],
         [tensor("x", [512, 97])], [tensor("y", [257, 97])], w)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "epilogue-kernels"
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    matmul(rng, os.path.join(out, "ffn_gelu_128x768x3072.onnx"), 128, 768, 3072, True)
    matmul(rng, os.path.join(out, "matmul_128x768x768.onnx"), 128, 768, 768, False)
    depthwise(rng, os.path.join(out, "dw5x5_672_14.onnx"), 672, 14, 5, False)
    depthwise(rng, os.path.join(out, "dw5x5_672_14_silu.onnx"), 672, 14, 5, True)
    depthwise(rng, os.path.join(out, "dw5x5_1152_7_silu.onnx"), 1152, 7, 5, True)
    depthwise(rng, os.path.join(out, "dw3x3_144_56_silu.onnx"), 144, 56, 3, True)
    gemv(rng, os.path.join(out, "gemv_1280x1000.onnx"), 1280, 1000)
    stft(rng, os.path.join(out, "stft_257x512x97.onnx"))
    print(out)


if __name__ == "__main__":
    main()
