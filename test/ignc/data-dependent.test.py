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
