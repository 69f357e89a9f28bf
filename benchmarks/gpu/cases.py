"""The cases of the CUDA device check (benchmarks/gpu/device-check.sh), shared
by its two halves: prepare_device_check.py compiles them here (no GPU), and
device_check.py runs them on the GPU machine.

- micro: single kernels (GEMM, convolution, attention) whose operands are all
  inputs, so that their bundles are small; each has a torch peer.
- e2e: the e2e test models (test/models), weights inside.
- zoo: ResNet-50 and BERT-base (benchmarks/models/gen_zoo.py, seeded). Their
  weights (100-440 MB) cannot travel to the device machine (64 MiB in all),
  so they are compiled with the weights as graph inputs, and the device
  regenerates the same models and feeds the weights as inputs. ResNet-50's
  batch norms are folded into its convolutions first, as ignc folds them
  when the weights are constants, so the kernels are the deployed ones.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "models"))


def _onnx():
    import onnx
    from onnx import TensorProto, helper
    return onnx, TensorProto, helper


def _model(name, inputs, outputs, nodes, initializers=()):
    onnx, TensorProto, helper = _onnx()
    vi = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
    graph = helper.make_graph(nodes, name, [vi(n, s) for n, s in inputs],
                              [vi(n, s) for n, s in outputs], list(initializers))
    # IR 8 (opset 17's): the device machine's onnxruntime may predate the
    # IR version this machine's onnx writes by default.
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8)


def _gemm(n):
    _, _, helper = _onnx()
    return _model(f"gemm_{n}", [("a", [n, n]), ("b", [n, n])], [("y", [n, n])],
                  [helper.make_node("MatMul", ["a", "b"], ["y"])])


def _conv(c, hw):
    _, _, helper = _onnx()
    return _model(f"conv3x3_{c}_{hw}",
                  [("x", [1, c, hw, hw]), ("w", [c, c, 3, 3]), ("b", [c])],
                  [("y", [1, c, hw, hw])],
                  [helper.make_node("Conv", ["x", "w", "b"], ["t"], pads=[1, 1, 1, 1]),
                   helper.make_node("Relu", ["t"], ["y"])])


def _attention(tokens, heads=12, dim=64):
    _, TensorProto, helper = _onnx()
    shape = [1, heads, tokens, dim]
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [dim ** -0.5])
    return _model(f"attention_{tokens}", [("q", shape), ("k", shape), ("v", shape)],
                  [("y", shape)],
                  [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                   helper.make_node("MatMul", ["q", "kt"], ["s0"]),
                   helper.make_node("Mul", ["s0", "scale"], ["s"]),
                   helper.make_node("Softmax", ["s"], ["p"], axis=-1),
                   helper.make_node("MatMul", ["p", "v"], ["y"])], [scale])


# name -> (ONNX builder, torch peer, its parameters)
MICRO = {
    "gemm_1024": (lambda: _gemm(1024), "matmul", {}),
    "gemm_4096": (lambda: _gemm(4096), "matmul", {}),
    "conv3x3_64_56": (lambda: _conv(64, 56), "conv_relu", {}),
    "conv3x3_256_14": (lambda: _conv(256, 14), "conv_relu", {}),
    "attention_128": (lambda: _attention(128), "attention", {}),
    "attention_512": (lambda: _attention(512), "attention", {}),
}


def e2e_cases():
    import compare_ort
    return {m: (os.path.join(ROOT, "test", "models", m + ".onnx"), shapes)
            for m, shapes in compare_ort.CASES.items()}


def fold_batchnorm(model):
    """Conv (constant weight) followed by BatchNormalization (constant
    parameters) becomes one Conv with a bias."""
    from onnx import numpy_helper
    inits = {i.name: i for i in model.graph.initializer}
    arr = lambda n: numpy_helper.to_array(inits[n]).astype(np.float32)
    producer = {o: n for n in model.graph.node for o in n.output}
    keep = []
    for node in model.graph.node:
        conv = producer.get(node.input[0]) if node.op_type == "BatchNormalization" else None
        if conv is None or conv.op_type != "Conv" or len(conv.input) != 2 or \
                not all(n in inits for n in list(node.input[1:]) + [conv.input[1]]):
            keep.append(node)
            continue
        eps = next((a.f for a in node.attribute if a.name == "epsilon"), 1e-5)
        gamma, beta, mean, var = (arr(n) for n in node.input[1:5])
        factor = gamma / np.sqrt(var + eps)
        w = arr(conv.input[1]) * factor[:, None, None, None]
        bias_name = conv.input[1] + "_folded_bias"
        inits[conv.input[1]].CopyFrom(numpy_helper.from_array(w, conv.input[1]))
        model.graph.initializer.append(
            numpy_helper.from_array((beta - mean * factor).astype(np.float32), bias_name))
        conv.input.append(bias_name)
        conv.output[0] = node.output[0]
    import copy
    keep = [copy.deepcopy(n) for n in keep]
    del model.graph.node[:]
    model.graph.node.extend(keep)
    used = {i for n in model.graph.node for i in n.input}
    kept = [i for i in model.graph.initializer if i.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    return model


def zoo_model(name, zoo_dir):
    """The zoo model `name` (generated into zoo_dir when missing), batch norms
    folded; returns (model, weights) with the weights still initializers."""
    import onnx
    import subprocess
    path = os.path.join(zoo_dir, name + ".onnx")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "models",
                                                     "gen_zoo.py"), zoo_dir], check=True)
    model = fold_batchnorm(onnx.load(path))
    from onnx import numpy_helper
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer
               if i.ByteSize() > 1024}
    return model, weights


def weights_as_inputs(model, weights):
    """A copy of `model` whose initializers named in `weights` are graph
    inputs instead."""
    import copy
    from onnx import helper
    m = copy.deepcopy(model)
    kept = [i for i in m.graph.initializer if i.name not in weights]
    for i in m.graph.initializer:
        if i.name in weights:
            m.graph.input.append(helper.make_tensor_value_info(
                i.name, i.data_type, list(i.dims)))
    del m.graph.initializer[:]
    m.graph.initializer.extend(kept)
    return m


def zoo_cases():
    import compare_ort
    return dict(compare_ort.ZOO)
