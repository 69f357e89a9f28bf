#!/usr/bin/env python3
"""One quantized (QDQ) convolution as onnxruntime's static quantizer writes
it: uint8 activations per tensor (zero point 128), int8 filters per output
channel, a bias, the output quantized again. For timing a kernel alone
(`ignc bench`) and checking it against onnxruntime.

  python3 benchmarks/models/qdq_conv.py OUT.onnx C F H W K S
      (C input channels, F filters, H x W pixels, a K x K window padded
      K // 2, stride S)

e.g. ResNet-50's 64 -> 64 3x3 convolution: `... conv.onnx 64 64 56 56 3 1`.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    if len(sys.argv) != 8:
        sys.exit(__doc__)
    out = sys.argv[1]
    c, f, h, w, k, s = map(int, sys.argv[2:8])
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.integers(-127, 128, (f, c, k, k)).astype(np.int8), "wq"),
        numpy_helper.from_array((rng.random(f) * 0.01 + 0.001).astype(np.float32), "ws"),
        numpy_helper.from_array(np.zeros(f, np.int8), "wz"),
        numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
        numpy_helper.from_array(np.array(128, np.uint8), "xz"),
        numpy_helper.from_array(np.array(0.05, np.float32), "ys"),
        numpy_helper.from_array(np.array(120, np.uint8), "yz"),
        numpy_helper.from_array(rng.standard_normal(f).astype(np.float32), "b")]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0),
        helper.make_node("Conv", ["xd", "wd", "b"], ["y"], kernel_shape=[k, k],
                         strides=[s, s], pads=[k // 2] * 4),
        helper.make_node("QuantizeLinear", ["y", "ys", "yz"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["z"])]
    ho = (h + 2 * (k // 2) - k) // s + 1
    wo = (w + 2 * (k // 2) - k) // s + 1
    graph = helper.make_graph(
        nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, f, ho, wo])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()
