"""Operators whose output size depends on the data (NonZero, Compress,
Unique), computed at run time, against onnxruntime: the outputs must have
the same shapes and values, including when nothing or everything is kept.
A boolean-mask selection as torch exports it (NonZero, Transpose, GatherND)
checks that a run-time size flows through the ops that pass it on.

  data-dependent.test.py WORKDIR IGNC
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from ort_compare import CompiledPair  # noqa: E402

import onnx  # noqa: E402

work, ignc = sys.argv[1:3]
text = ('<ir_version: 8, opset_import: ["" : 13]>\n'
        "dd (float[3, 4] x, bool[3, 4] mask, bool[4] keep, int64[12] ids, float[5, 3] rows)"
        " => (int64[2, N] nz, float[M] picked, float[3, K] kept, int64[U] uniq,"
        " int64[U] first, int64[12] inverse, int64[U] counts, float[R, 3] urows,"
        " int64[R] ufirst, int64[5] uinverse, int64[R] ucounts) {\n"
        "  nz = NonZero (x)\n"
        "  where = NonZero (mask)\n"
        "  pairs = Transpose (where)\n"
        "  picked = GatherND (x, pairs)\n"
        "  kept = Compress <axis = 1> (x, keep)\n"
        "  uniq, first, inverse, counts = Unique (ids)\n"
        "  urows, ufirst, uinverse, ucounts = Unique <axis = 0, sorted = 0> (rows)\n"
        "}\n")
pair = CompiledPair(onnx.parser.parse_model(text), "dd", work, ignc)
rng = np.random.default_rng(7)
rows = np.array([[1, 2, 3], [0, 5, 1], [1, 2, 3], [0, 5, 0], [0, 5, 1]], np.float32)
cases = {
    "random": (rng.standard_normal((3, 4)) * (rng.random((3, 4)) < 0.5),
               rng.random((3, 4)) < 0.5, rng.random(4) < 0.5,
               rng.integers(-3, 4, 12), rows),
    "none kept": (np.zeros((3, 4)), np.zeros((3, 4), bool), np.zeros(4, bool),
                  np.full(12, 5), rows[[0, 0, 0, 0, 0]]),
    "all kept": (np.ones((3, 4)), np.ones((3, 4), bool), np.ones(4, bool),
                 np.arange(12)[::-1].copy(), rows[::-1].copy()),
}
for case, (x, mask, keep, ids, r) in cases.items():
    feeds = {"x": x.astype(np.float32), "mask": mask, "keep": keep,
             "ids": ids.astype(np.int64), "rows": r.astype(np.float32)}
    got, want = pair.run(feeds)
    bad = [o.name for o, g, w in zip(pair.session.get_outputs(), got, want)
           if g.shape != w.shape or not np.array_equal(g, w)]
    print(f"{case}: {'match' if not bad else 'DIFFERS in ' + ', '.join(bad)}")

# NonMaxSuppression on random boxes (corners in either order), then the
# post-processing detection models export: the kept boxes' coordinates and
# scores gathered by the selected indices.
text = ('<ir_version: 8, opset_import: ["" : 13]>\n'
        "nms (float[2, 60, 4] boxes, float[2, 3, 60] scores, float iou, float floor)"
        " => (int64[K, 3] selected, float[K, 4] kept, float[K, 1] best) {\n"
        "  limit = Constant <value = int64[1] {25}> ()\n"
        "  selected = NonMaxSuppression (boxes, scores, limit, iou, floor)\n"
        "  column = Constant <value = int64 {2}> ()\n"
        "  which = Gather <axis = 1> (selected, column)\n"
        "  flat = Reshape (boxes, shape)\n"
        "  shape = Constant <value = int64[2] {120, 4}> ()\n"
        "  kept = Gather <axis = 0> (flat, which)\n"
        "  top = ReduceMax <axes = [0, 1], keepdims = 0> (scores)\n"
        "  scaled = Mul (kept, two)\n"
        "  two = Constant <value = float {2.0}> ()\n"
        "  first = Gather <axis = 0> (top, which)\n"
        "  best = Unsqueeze (first, one)\n"
        "  one = Constant <value = int64[1] {1}> ()\n"
        "}\n")
text = text.replace("  flat = Reshape (boxes, shape)\n  shape = Constant <value = int64[2] {120, 4}> ()\n",
                    "  shape = Constant <value = int64[2] {120, 4}> ()\n  flat = Reshape (boxes, shape)\n")
text = text.replace("  scaled = Mul (kept, two)\n  two = Constant <value = float {2.0}> ()\n", "")
text = text.replace("  best = Unsqueeze (first, one)\n  one = Constant <value = int64[1] {1}> ()\n",
                    "  one = Constant <value = int64[1] {1}> ()\n  best = Unsqueeze (first, one)\n")
pair = CompiledPair(onnx.parser.parse_model(text), "nms", work, ignc)
for case, (iou, floor) in {"nms loose": (0.7, 0.0), "nms tight": (0.2, 0.5)}.items():
    centers = rng.random((2, 60, 2)) * 10
    sizes = rng.random((2, 60, 2)) * 4 + 0.5
    boxes = np.concatenate([centers - sizes / 2, centers + sizes / 2], axis=2)
    flip = rng.random((2, 60)) < 0.3
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    feeds = {"boxes": boxes.astype(np.float32),
             "scores": rng.random((2, 3, 60)).astype(np.float32),
             "iou": np.array(iou, np.float32), "floor": np.array(floor, np.float32)}
    got, want = pair.run(feeds)
    bad = [o.name for o, g, w in zip(pair.session.get_outputs(), got, want)
           if g.shape != w.shape or not np.array_equal(g, w)]
    print(f"{case}: {'match' if not bad else 'DIFFERS in ' + ', '.join(bad)}"
          f" ({got[0].shape[0]} boxes)")

# A detector's NonMaxSuppression: 80 classes of 8400 boxes (centers and
# sizes), scores mostly low, 100 per class at most.
text = ('<ir_version: 8, opset_import: ["" : 13]>\n'
        "det (float[1, 8400, 4] b, float[1, 80, 8400] s) => (int64[K, 3] y) {\n"
        "  k = Constant <value = int64[1] {100}> ()\n"
        "  t = Constant <value = float[1] {0.45}> ()\n"
        "  f = Constant <value = float[1] {0.25}> ()\n"
        "  y = NonMaxSuppression <center_point_box = 1> (b, s, k, t, f)\n}\n")
pair = CompiledPair(onnx.parser.parse_model(text), "det", work, ignc)
feeds = {"b": np.concatenate([rng.random((1, 8400, 2)) * 640,
                              rng.random((1, 8400, 2)) * 60 + 4], 2).astype(np.float32),
         "s": (rng.random((1, 80, 8400)) ** 8).astype(np.float32)}
got, want = pair.run(feeds)
ok = got[0].shape == want[0].shape and np.array_equal(got[0], want[0])
print(f"nms detector: {'match' if ok else 'DIFFERS'} ({got[0].shape[0]} boxes)")
