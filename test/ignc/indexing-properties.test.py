"""Property test of Slice, Pad, Gather and Resize parameters against
onnxruntime: seeded random cases (negative and out-of-range starts, ends and
steps on every axis; negative, reflect and edge pads; negative indices and
axes; every Resize mode and coordinate transformation with scales and
sizes), one model per operator with every case an output, compiled once.

  indexing-properties.test.py WORKDIR IGNC [CASES]
A case matches when ignc's output equals onnxruntime's, or ONNX's reference
evaluator's where onnxruntime's does not (onnxruntime 1.32 resizes with
align_corners and given scales, and a half_pixel nearest floor, otherwise).
Prints one line per operator: how many cases matched, and each that did not.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

work, ignc = sys.argv[1:3]
cases = int(sys.argv[3]) if len(sys.argv) > 3 else 24
rng = np.random.default_rng(2026)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(values, dtype), name)


def slice_cases(shape):
    """(description, node, initializers) per case, none with an empty result."""
    out = []
    while len(out) < cases:
        rank = len(shape)
        axes = rng.choice(rank, size=rng.integers(1, rank + 1), replace=False)
        axes = [int(a) - rank if rng.random() < 0.3 else int(a) for a in axes]
        starts, ends, steps = [], [], []
        for a in axes:
            dim = shape[a]
            step = int(rng.choice([-3, -2, -1, 1, 2, 3]))
            pick = lambda: int(rng.choice([rng.integers(-dim - 3, dim + 3),
                                           INT64_MIN, INT64_MAX, -1, 0, dim]))
            starts.append(pick())
            ends.append(pick())
            steps.append(step)
        # numpy computes ONNX's Slice for clamped starts and ends.
        index = [slice(None)] * len(shape)
        for a, s, e, st in zip(axes, starts, ends, steps):
            dim = shape[a]
            clamp = lambda v, lo, hi: max(lo, min(hi, v + dim if v < 0 else v))  # noqa: E731
            s2 = clamp(s, 0, dim) if st > 0 else clamp(s, 0, dim - 1)
            e2 = clamp(e, 0, dim) if st > 0 else clamp(e, -1, dim - 1)
            index[a] = slice(s2, e2 if e2 >= 0 else None, st)
        if 0 in np.empty(shape)[tuple(index)].shape:
            continue
        i = len(out)
        inits = [const(f"s{i}", starts), const(f"e{i}", ends), const(f"a{i}", axes),
                 const(f"p{i}", steps)]
        node = helper.make_node("Slice", ["x", f"s{i}", f"e{i}", f"a{i}", f"p{i}"], [f"y{i}"])
        out.append((f"axes {axes} starts {starts} ends {ends} steps {steps}", node, inits))
    return out


def pad_cases(shape):
    out = []
    while len(out) < cases:
        mode = str(rng.choice(["constant", "reflect", "edge"]))
        lo = -2 if mode == "constant" else 0
        pads = [int(rng.integers(lo, 4)) for _ in range(2 * len(shape))]
        if mode == "reflect":
            pads = [min(p, shape[k % len(shape)] - 1) for k, p in enumerate(pads)]
        dims = [d + pads[k] + pads[k + len(shape)] for k, d in enumerate(shape)]
        if min(dims) <= 0:
            continue
        i = len(out)
        inits = [const(f"q{i}", pads), numpy_helper.from_array(
            np.array(rng.standard_normal(), np.float32), f"v{i}")]
        node = helper.make_node("Pad", ["x", f"q{i}", f"v{i}"], [f"y{i}"], mode=mode)
        out.append((f"mode {mode} pads {pads}", node, inits))
    return out


def gather_cases(shape):
    out = []
    for i in range(cases):
        axis = int(rng.integers(-len(shape), len(shape)))
        dim = shape[axis]
        ishape = [int(d) for d in rng.integers(1, 4, size=rng.integers(0, 3))]
        idx = rng.integers(-dim, dim, size=ishape)
        inits = [const(f"g{i}", idx)]
        node = helper.make_node("Gather", ["x", f"g{i}"], [f"y{i}"], axis=axis)
        out.append((f"axis {axis} indices {idx.tolist()}", node, inits))
    return out


def resize_cases(shape):
    out = []
    for i in range(cases):
        mode = str(rng.choice(["nearest", "linear", "cubic"]))
        ctm = str(rng.choice(["half_pixel", "asymmetric", "align_corners",
                              "pytorch_half_pixel", "half_pixel_symmetric"]))
        attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
        if mode == "nearest":
            # half_pixel_symmetric's offset puts some coordinates a rounding
            # error away from an integer, where floor and ceil depend on the
            # last bit (ignc, onnxruntime and ONNX's reference each differ).
            choices = ["round_prefer_floor", "round_prefer_ceil"]
            if ctm != "half_pixel_symmetric":
                choices += ["floor", "ceil"]
            attrs["nearest_mode"] = str(rng.choice(choices))
        if mode == "cubic":
            attrs["cubic_coeff_a"] = float(rng.choice([-0.5, -0.75]))
            attrs["exclude_outside"] = int(rng.integers(0, 2))
        if rng.random() < 0.5:
            scales = [1.0, 1.0] + [float(rng.choice([0.5, 0.75, 1.5, 2.0, 3.0]))
                                   for _ in range(2)]
            if min(int(d * s) for d, s in zip(shape, scales)) == 0:
                scales[2:] = [1.5, 2.0]
            inits = [const(f"r{i}", scales, np.float32)]
            inputs = ["x", "", f"r{i}"]
            what = f"scales {scales[2:]}"
        else:
            sizes = list(shape[:2]) + [int(rng.integers(2, 12)) for _ in range(2)]
            inits = [const(f"r{i}", sizes)]
            inputs = ["x", "", "", f"r{i}"]
            what = f"sizes {sizes[2:]}"
        node = helper.make_node("Resize", inputs, [f"y{i}"], **attrs)
        out.append((f"{attrs} {what}", node, inits))
    return out


def run(op, shape, make, opset, tolerance):
    built = make(shape)
    x = rng.standard_normal(shape).astype(np.float32)
    outputs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None)
               for i in range(len(built))]
    graph = helper.make_graph([n for _, n, _ in built], op.lower(),
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              outputs, [t for _, _, ts in built for t in ts])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    path = os.path.join(work, f"{op}.onnx")
    onnx.save(model, path)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    reference = {}

    def reference_output(i):
        """ONNX's reference evaluator's output i (None where it cannot run the
        model: it refuses negative pads)."""
        if "outputs" not in reference:
            try:
                reference["outputs"] = ReferenceEvaluator(model).run(None, {"x": x})
            except Exception:  # noqa: BLE001 - the evaluator's gaps are not ignc's
                reference["outputs"] = None
        return reference["outputs"][i] if reference["outputs"] is not None else None
    np.save(os.path.join(work, "x.npy"), x)
    bundle = os.path.join(work, f"{op}.ignb")
    subprocess.run([ignc, path, "-q", "-o", bundle], check=True)
    out_dir = os.path.join(work, op)
    subprocess.run([ignc, "run", bundle, "--input", f"x={os.path.join(work, 'x.npy')}",
                    "--output-dir", out_dir, "-q"], check=True)
    def same(a, b):
        return a.shape == b.shape and np.allclose(a, b, rtol=tolerance, atol=tolerance)

    bad, peer = [], []
    for i, ((what, _, _), w) in enumerate(zip(built, want)):
        got = np.load(os.path.join(out_dir, f"y{i}.npy"))
        if same(got, w):
            continue
        r = reference_output(i)
        if r is not None and same(got, r) and not same(w, r):
            peer.append(f"  case {i}: {what}: onnxruntime differs from ONNX's reference, "
                        "ignc does not")
            continue
        err = "shape " + str(got.shape) if got.shape != w.shape else \
            f"max abs {np.abs(got - w).max():.1e}"
        bad.append(f"  DIFFERS case {i}: {what}: {err} (want {w.shape})")
    print(f"{op}: {len(built) - len(bad)} of {len(built)} cases match")
    for line in peer + bad:
        print(line)


run("Slice", [4, 5, 6], slice_cases, 13, 0)
run("Pad", [3, 4, 5], pad_cases, 13, 0)
run("Gather", [5, 6, 7], gather_cases, 13, 0)
run("Resize", [1, 2, 5, 7], resize_cases, 19, 2e-5)
