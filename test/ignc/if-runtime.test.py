"""Run-time If against onnxruntime: a condition computed from the input and
one that is a model input, branches that read a large weight of the outer
graph, hold their own initializers, return an outer value unchanged, and
nest another If; every combination of the two conditions.

  if-runtime.test.py WORKDIR IGNC
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from ort_compare import CompiledPair  # noqa: E402

work, ignc = sys.argv[1:3]
rng = np.random.default_rng(0)
F = TensorProto.FLOAT


def init(name, shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def graph(name, nodes, outputs, inits=()):
    return helper.make_graph(nodes, name, [], outputs, list(inits))


def out(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


# If 1, on sum(x) > 0: relu(x W + b) (W of the outer graph, b the branch's
# own) or sigmoid(x W2) (W2 the else branch's own, large).
then1 = graph("then1", [helper.make_node("MatMul", ["x", "W"], ["t1"]),
                        helper.make_node("Relu", ["t1"], ["t2"]),
                        helper.make_node("Add", ["t2", "b"], ["r1t"])],
              [out("r1t", [4, 32])], [init("b", [32])])
else1 = graph("else1", [helper.make_node("MatMul", ["x", "W2"], ["e1"]),
                        helper.make_node("Sigmoid", ["e1"], ["r1e"])],
              [out("r1e", [4, 32])], [init("W2", [16, 32])])
# If 2, on the flag input: x itself, or -x.
then2 = graph("then2", [helper.make_node("Identity", ["x"], ["r2t"])], [out("r2t", [4, 16])])
else2 = graph("else2", [helper.make_node("Neg", ["x"], ["r2e"])], [out("r2e", [4, 16])])
# If 3, on sum(x) > 0, with an If on the flag inside: 2x or 3x, else x - 1.
two = numpy_helper.from_array(np.array(2, np.float32), "two")
three = numpy_helper.from_array(np.array(3, np.float32), "three")
one = numpy_helper.from_array(np.array(1, np.float32), "one")
inner_then = graph("inner_then", [helper.make_node("Mul", ["x", "two"], ["it"])],
                   [out("it", [4, 16])], [two])
inner_else = graph("inner_else", [helper.make_node("Mul", ["x", "three"], ["ie"])],
                   [out("ie", [4, 16])], [three])
then3 = graph("then3", [helper.make_node("If", ["flag"], ["r3t"], then_branch=inner_then,
                                         else_branch=inner_else)], [out("r3t", [4, 16])])
else3 = graph("else3", [helper.make_node("Sub", ["x", "one"], ["r3e"])],
              [out("r3e", [4, 16])], [one])
nodes = [
    helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
    helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.float32))),
    helper.make_node("Greater", ["s", "zero"], ["c"]),
    helper.make_node("If", ["c"], ["y1"], then_branch=then1, else_branch=else1),
    helper.make_node("If", ["flag"], ["y2"], then_branch=then2, else_branch=else2),
    helper.make_node("If", ["c"], ["r3"], then_branch=then3, else_branch=else3),
    helper.make_node("Add", ["r3", "y2"], ["y3"]),
]
g = helper.make_graph(nodes, "if_runtime",
                      [helper.make_tensor_value_info("x", F, [4, 16]),
                       helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
                      [out("y1", [4, 32]), out("y2", [4, 16]), out("y3", [4, 16])],
                      [init("W", [16, 32])])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
pair = CompiledPair(model, "if", work, ignc)
for sign in (1, -1):
    for flag in (True, False):
        feeds = {"x": sign * np.abs(rng.standard_normal((4, 16))).astype(np.float32),
                 "flag": np.array(flag)}
        got, want = pair.run(feeds)
        errs = [float(np.abs(g - w).max()) for g, w in zip(got, want)]
        ok = max(errs) <= 1e-5
        print(f"sum {'>' if sign > 0 else '<'} 0, flag {flag}: "
              f"{'match' if ok else 'DIFFERS'} (max abs {max(errs):.1e})")
