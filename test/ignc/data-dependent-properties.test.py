"""Property test of the operators whose output size depends on the data
(NonZero, Compress, Unique, NonMaxSuppression) against onnxruntime: seeded
random cases (ranks 0 to 4 and several dtypes; Compress and Unique with and
without an axis, negative ones too, conditions shorter than the axis;
Unique sorted and not, with many repeats; NonMaxSuppression with 1 to 3
batches and classes, both box formats, and each optional input absent,
zero, small or past N), one model per operator with every case its own
inputs and output, compiled once and run on fresh random inputs.

  data-dependent-properties.test.py WORKDIR IGNC [CASES]
Prints one line per operator: how many cases matched (shape and values),
and each that did not.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

work, ignc = sys.argv[1:3]
cases = int(sys.argv[3]) if len(sys.argv) > 3 else 16
rng = np.random.default_rng(1203)
DTYPES = {"float": (TensorProto.FLOAT, np.float32), "int64": (TensorProto.INT64, np.int64),
          "bool": (TensorProto.BOOL, np.bool_), "uint8": (TensorProto.UINT8, np.uint8)}


def shape_of(lo, hi):
    return [int(d) for d in rng.integers(1, 6, size=rng.integers(lo, hi + 1))]


def values(shape, dtype, density):
    mask = rng.random(shape) < density
    if dtype == "bool":
        return np.asarray(mask)
    v = rng.integers(1, 4, size=shape) if dtype != "float" else rng.standard_normal(shape)
    return np.asarray(np.where(mask, v, 0), DTYPES[dtype][1])


def nonzero_case(i):
    shape, dtype = shape_of(0, 4), str(rng.choice(list(DTYPES)))
    x = values(shape, dtype, float(rng.choice([0, 0.1, 0.5, 1])))
    node = helper.make_node("NonZero", [f"x{i}"], [f"y{i}"])
    return f"{dtype}{shape}", [node], {f"x{i}": x}, []


def compress_case(i):
    shape = shape_of(1, 3)
    x = rng.standard_normal(shape).astype(np.float32)
    attrs, length = {}, int(np.prod(shape))
    if rng.random() < 0.7:
        axis = int(rng.integers(-len(shape), len(shape)))
        attrs["axis"], length = axis, shape[axis]
    cond = rng.random(int(rng.integers(1, length + 1))) < float(rng.choice([0, 0.5, 1]))
    node = helper.make_node("Compress", [f"x{i}", f"c{i}"], [f"y{i}"], **attrs)
    return f"{shape} {attrs} cond {cond.astype(int).tolist()}", [node], \
        {f"x{i}": x, f"c{i}": cond}, []


def unique_case(i):
    shape = shape_of(1, 3)
    dtype = str(rng.choice(["float", "int64"]))
    x = rng.integers(-2, 3, size=shape)
    x = (x * 0.5).astype(np.float32) if dtype == "float" else x.astype(np.int64)
    attrs = {"sorted": int(rng.integers(0, 2))}
    if rng.random() < 0.6:
        attrs["axis"] = int(rng.integers(-len(shape), len(shape)))
    outs = [f"y{i}", f"i{i}", f"v{i}", f"n{i}"]
    node = helper.make_node("Unique", [f"x{i}"], outs, **attrs)
    return f"{dtype}{shape} {attrs}", [node], {f"x{i}": x}, outs[1:]


def nms_case(i):
    b, c, n = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 41))
    center = int(rng.integers(0, 2))
    corners = rng.random((b, n, 2)) * 10
    sizes = rng.random((b, n, 2)) * 4 + float(rng.choice([0, 0.5]))
    boxes = np.concatenate([corners, corners + sizes] if not center else
                           [corners, sizes], axis=2).astype(np.float32)
    if not center:  # either diagonal
        flip = rng.random((b, n)) < 0.3
        boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    scores = np.round(rng.random((b, c, n)), 1).astype(np.float32)  # ties
    inputs, feeds, inits = [f"b{i}", f"s{i}"], {f"b{i}": boxes, f"s{i}": scores}, []
    desc = f"B{b} C{c} N{n} center {center}"
    for k, (name, make) in enumerate([
            ("max", lambda: np.array([int(rng.choice([0, 1, 3, n + 5]))], np.int64)),
            ("iou", lambda: np.array([float(rng.choice([0, 0.3, 0.7]))], np.float32)),
            ("score", lambda: np.array([float(rng.choice([0, 0.45]))], np.float32))]):
        if rng.random() < 0.75 or k < 2 and rng.random() < 0.8:
            v = make()
            inits.append(numpy_helper.from_array(v, f"{name}{i}"))
            inputs.append(f"{name}{i}")
            desc += f" {name} {v[0]}"
        else:
            inputs.append("")
    while inputs and not inputs[-1]:
        inputs.pop()
    node = helper.make_node("NonMaxSuppression", inputs, [f"y{i}"], center_point_box=center)
    return desc, [node], feeds, inits


def check(op, make):
    nodes, feeds, inits, descs, outs = [], {}, [], [], []
    for i in range(cases):
        desc, n, f, extra = make(i)
        if isinstance(extra, list) and extra and isinstance(extra[0], str):
            outs += [(i, name) for name in [f"y{i}"] + extra]
        else:
            outs.append((i, f"y{i}"))
            inits += extra
        nodes += n
        feeds.update(f)
        descs.append(desc)
    graph = helper.make_graph(
        nodes, op,
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in feeds.items()],
        [helper.make_value_info(name, helper.make_empty_tensor_value_info(name).type)
         for _, name in outs], inits)
    for o in graph.output:
        o.type.CopyFrom(onnx.TypeProto())
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = os.path.join(work, op + ".onnx")
    onnx.save(model, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    want = dict(zip([name for _, name in outs], session.run(None, feeds)))
    bundle = os.path.join(work, op + ".ignb")
    subprocess.run([ignc, path, "-q", "-o", bundle], check=True)
    args = []
    for k, v in feeds.items():
        np.save(os.path.join(work, k + ".npy"), v)
        args += ["--input", f"{k}={os.path.join(work, k + '.npy')}"]
    out = os.path.join(work, op + "-out")
    subprocess.run([ignc, "run", bundle, *args, "-q", "--output-dir", out], check=True)
    bad = set()
    for i, name in outs:
        got = np.load(os.path.join(out, name + ".npy"))
        if got.shape != want[name].shape or not np.array_equal(got, want[name]):
            bad.add(i)
    print(f"{op}: {cases - len(bad)} of {cases} cases match")
    for i in sorted(bad):
        print(f"  DIFFERS: case {i}: {descs[i]}")


check("NonZero", nonzero_case)
check("Compress", compress_case)
check("Unique", unique_case)
check("NonMaxSuppression", nms_case)
