"""Loop and Scan against onnxruntime: a while loop whose trip count is a
model input and whose condition the body computes, reading its step's row
with a run-time Gather; a for loop with scan outputs; carried values that
swap places every iteration; a Scan over the second axis backwards, with
an output stacked along its second axis; trip counts 0, 1 and 6.

  loop-scan.test.py WORKDIR IGNC
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from ort_compare import CompiledPair  # noqa: E402

work, ignc = sys.argv[1:3]
rng = np.random.default_rng(0)
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, array):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(array))


W = numpy_helper.from_array((0.3 * rng.standard_normal((8, 8))).astype(np.float32), "W")
# While loop: h = tanh(h W + X[i]) while i < n and sum(h) < 3.
while_body = helper.make_graph(
    [helper.make_node("Gather", ["X", "i"], ["xt"], axis=0),
     helper.make_node("MatMul", ["h_in", "W"], ["hw"]),
     helper.make_node("Add", ["hw", "xt"], ["pre"]),
     helper.make_node("Tanh", ["pre"], ["h_out"]),
     helper.make_node("ReduceSum", ["h_out"], ["s"], keepdims=0),
     const("limit", np.array(3, np.float32)),
     helper.make_node("Less", ["s", "limit"], ["c_out"])],
    "while_body", [vi("i", I64, []), vi("c_in", B, []), vi("h_in", F, [1, 8])],
    [vi("c_out", B, []), vi("h_out", F, [1, 8])])
# For loop of 4 with scan outputs; carried (a, b) -> (b, a + b) and a counter.
for_body = helper.make_graph(
    [helper.make_node("Add", ["a", "b"], ["ab"]),
     helper.make_node("Identity", ["b"], ["a_out"]),
     helper.make_node("Identity", ["ab"], ["b_out"]),
     helper.make_node("Cast", ["j"], ["jf"], to=F),
     helper.make_node("Mul", ["ab", "jf"], ["scan"]),
     helper.make_node("Identity", ["c"], ["c_out"])],
    "for_body", [vi("j", I64, []), vi("c", B, []), vi("a", F, [3]), vi("b", F, [3])],
    [vi("c_out", B, []), vi("a_out", F, [3]), vi("b_out", F, [3]), vi("scan", F, [3])])
# Scan: running sum over the second axis of Y, backwards.
scan_body = helper.make_graph(
    [helper.make_node("Add", ["acc", "y"], ["acc_out"]),
     helper.make_node("Relu", ["acc_out"], ["r"])],
    "scan_body", [vi("acc", F, [2]), vi("y", F, [2])],
    [vi("acc_out", F, [2]), vi("r", F, [2])])
nodes = [
    const("h0", np.zeros((1, 8), np.float32)),
    const("true", np.array(True)),
    helper.make_node("Loop", ["n", "true", "h0"], ["h"], body=while_body),
    const("four", np.array(4, np.int64)),
    helper.make_node("Loop", ["four", "", "a0", "b0"], ["a", "b", "stacked"], body=for_body),
    helper.make_node("Scan", ["acc0", "Y"], ["acc", "runs"], body=scan_body, num_scan_inputs=1,
                     scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1]),
]
g = helper.make_graph(
    nodes, "loops",
    [vi("n", I64, []), vi("X", F, [6, 8]), vi("a0", F, [3]), vi("b0", F, [3]),
     vi("acc0", F, [2]), vi("Y", F, [2, 5])],
    [vi("h", F, [1, 8]), vi("a", F, [3]), vi("b", F, [3]), vi("stacked", F, [4, 3]),
     vi("acc", F, [2]), vi("runs", F, [2, 5])], [W])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
pair = CompiledPair(model, "loops", work, ignc)
names = [o.name for o in pair.session.get_outputs()]
for n, scale in [(0, 1.0), (1, 1.0), (6, 0.2), (6, 3.0)]:
    feeds = {"n": np.array(n, np.int64),
             "X": (scale * rng.standard_normal((6, 8))).astype(np.float32),
             "a0": rng.standard_normal(3).astype(np.float32),
             "b0": rng.standard_normal(3).astype(np.float32),
             "acc0": rng.standard_normal(2).astype(np.float32),
             "Y": rng.standard_normal((2, 5)).astype(np.float32)}
    got, want = pair.run(feeds)
    errs = {k: float(np.abs(g - w).max()) for k, g, w in zip(names, got, want)}
    worst = max(errs.values())
    print(f"n={n} scale={scale}: {'match' if worst <= 1e-5 else 'DIFFERS'} "
          f"(max abs {worst:.1e}; {errs})")
