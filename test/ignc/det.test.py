"""Det against onnxruntime: batches of 5 x 5 matrices, some singular and
some with a zero where the first pivot would be (partial pivoting must
swap), a 7 x 7 matrix and a 1 x 1.

  det.test.py WORKDIR IGNC
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from ort_compare import run_both  # noqa: E402

work, ignc = sys.argv[1:3]
rng = np.random.default_rng(3)
batch = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
batch[0, 0, 0, 0] = 0                       # the first pivot is zero: a swap
batch[0, 1, 3] = batch[0, 1, 1]             # two equal rows: singular
batch[1, 2, :, 2] = 0                       # a zero column: singular
batch[1, 0] = np.triu(batch[1, 0])          # triangular: no swap at all
text = ('<ir_version: 8, opset_import: ["" : 13]>\n'
        "det (float[2, 3, 5, 5] a, float[7, 7] b, float[1, 1] c) => "
        "(float[2, 3] da, float db, float dc) {\n"
        "  da = Det (a)\n  db = Det (b)\n  dc = Det (c)\n}\n")
feeds = {"a": batch, "b": rng.standard_normal((7, 7)).astype(np.float32),
         "c": np.array([[-2.5]], np.float32)}
got, want = run_both(text, feeds, work, ignc)
for name, g, w in zip(["da", "db", "dc"], got, want):
    ok = g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=1e-5)
    print(f"{name}: {'match' if ok else 'DIFFERS'} (max abs {np.abs(g - w).max():.1e})")
