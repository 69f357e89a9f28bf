"""CumSum and ScatterElements along axes longer than 16 (one pass with a
running sum, and the updates written one by one, instead of the quadratic
per-element forms) against onnxruntime: every exclusive/reverse variant on
floats and integers, and scatters with duplicate targets (the last one
wins), negative indices and add/max reductions.

  long-axis-scans.test.py WORKDIR IGNC
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from ort_compare import run_both  # noqa: E402

work, ignc = sys.argv[1:3]
rng = np.random.default_rng(11)
lines = []
outs = []
for e in (0, 1):
    for r in (0, 1):
        lines.append(f"  cf{e}{r} = CumSum <exclusive = {e}, reverse = {r}> (x, one)")
        lines.append(f"  ci{e}{r} = CumSum <exclusive = {e}, reverse = {r}> (n, two)")
        outs += [f"float[3, 40, 5] cf{e}{r}", f"int64[3, 5, 40] ci{e}{r}"]
text = ('<ir_version: 8, opset_import: ["" : 18]>\n'
        "scans (float[3, 40, 5] x, int64[3, 5, 40] n, float[3, 50] d, int64[3, 30] at,"
        " float[3, 30] u) => (" + ", ".join(outs) +
        ", float[3, 50] s0, float[3, 50] s1, float[3, 50] s2) {\n"
        "  one = Constant <value = int64 {1}> ()\n"
        "  two = Constant <value = int64 {-1}> ()\n" + "\n".join(lines) + "\n"
        "  s0 = ScatterElements <axis = 1> (d, at, u)\n"
        "  s1 = ScatterElements <axis = 1, reduction = \"add\"> (d, at, u)\n"
        "  s2 = ScatterElements <axis = -1, reduction = \"max\"> (d, at, u)\n"
        "}\n")
feeds = {"x": rng.standard_normal((3, 40, 5)).astype(np.float32),
         "n": rng.integers(-1000, 1000, (3, 5, 40)).astype(np.int64),
         "d": rng.standard_normal((3, 50)).astype(np.float32),
         "at": rng.integers(-50, 50, (3, 30)).astype(np.int64),  # duplicates likely
         "u": rng.standard_normal((3, 30)).astype(np.float32)}
got, want = run_both(text, feeds, work, ignc)
names = [o.split()[-1] for o in outs] + ["s0", "s1", "s2"]
for name, g, w in zip(names, got, want):
    ok = g.shape == w.shape and np.allclose(g, w, rtol=1e-5, atol=1e-5)
    print(f"{name}: {'match' if ok else 'DIFFERS'}")
