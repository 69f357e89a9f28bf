"""Quantizes a test model with onnxruntime's static quantizer in the operator
form (QLinearConv / QLinearMatMul with per-channel int8 weights and uint8
activations), compiles and runs it with ignc, and compares every output
with onnxruntime running the same quantized model (or, where onnxruntime's
AVX2 kernels saturate, with ONNX's reference evaluator).

  qoperator.test.py MODEL WORKDIR IGNC NAME=DIMS...   (DIMS like 1x3x48x192)
Prints the quantized operators and, per output, the relative L2 error.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                      QuantType, quantize_static)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from ort_compare import onnx_reference  # noqa: E402

model, work, ignc = sys.argv[1:4]
shapes = {k: [int(d) for d in v.split("x")] for k, v in (a.split("=") for a in sys.argv[4:])}
rng = np.random.default_rng(0)
m = onnx.load(model)
types = {i.name: i.type.tensor_type.elem_type for i in m.graph.input}


def sample():
    feeds = {}
    for name, shape in shapes.items():
        if types[name] == onnx.TensorProto.FLOAT:
            feeds[name] = rng.uniform(-1, 1, shape).astype(np.float32)
        else:
            v = rng.integers(0, 100 if "ids" in name else 2, shape).astype(np.int64)
            if "mask" in name:
                v[..., 0] = 1
            feeds[name] = v
    return feeds


class Calibration(CalibrationDataReader):
    def __init__(self):
        self.it = iter([sample() for _ in range(4)])

    def get_next(self):
        return next(self.it, None)


for i in m.graph.input:  # static shapes for the quantizer's calibration
    for d, n in zip(i.type.tensor_type.shape.dim, shapes[i.name]):
        d.dim_value = n
fixed, quantized = os.path.join(work, "fixed.onnx"), os.path.join(work, "q.onnx")
onnx.save(m, fixed)
quantize_static(fixed, quantized, Calibration(), quant_format=QuantFormat.QOperator,
                per_channel=True, activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8, op_types_to_quantize=["Conv", "MatMul"])
ops = sorted({n.op_type for n in onnx.load(quantized).graph.node if n.op_type.startswith("QLinear")})
print("quantized:", " ".join(ops))

feeds = sample()
args = []
for name, v in feeds.items():
    np.save(os.path.join(work, name + ".npy"), v)
    args += ["--input", f"{name}={os.path.join(work, name + '.npy')}"]
bundle = os.path.join(work, "q.ignb")
subprocess.run([ignc, quantized, "-q", "-o", bundle], check=True)
subprocess.run([ignc, "run", bundle, *args, "--output-dir", work, "-q"], check=True)
session = ort.InferenceSession(quantized, providers=["CPUExecutionProvider"])
reference = []


def relative_l2(got, want):
    return np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)


for i, (out, want) in enumerate(zip(session.get_outputs(), session.run(None, feeds))):
    got = np.load(os.path.join(work, out.name + ".npy"))
    err = relative_l2(got, want)
    if err > 1e-4:
        # onnxruntime's AVX2 u8 x s8 kernels saturate: ONNX's reference
        # evaluator decides (ort_compare.onnx_reference).
        if not reference:
            reference = onnx_reference(quantized, feeds)
        exact = relative_l2(got, reference[i])
        if exact <= 1e-4:
            print(f"{out.name}: match (relative L2 {exact:.2e} to ONNX's reference "
                  f"evaluator; onnxruntime differs from it by "
                  f"{relative_l2(want, reference[i]):.2e})")
            continue
    print(f"{out.name}: {'match' if err <= 1e-4 else 'DIFFERS'} (relative L2 {err:.2e})")
