"""GridSample in every mode, padding mode and align_corners setting against
onnxruntime, on a grid that reaches past the image (|coordinate| <= 1.6) so
every padding rule is exercised; one model holds all 18 variants.

  gridsample.test.py WORKDIR IGNC
"""
import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from ort_compare import run_both  # noqa: E402

work, ignc = sys.argv[1:3]
variants = list(itertools.product(["bilinear", "nearest", "bicubic"],
                                  ["zeros", "border", "reflection"], [0, 1]))
outs = ", ".join(f"float[2, 3, 5, 6] y{i}" for i in range(len(variants)))
nodes = "\n".join(f'  y{i} = GridSample <mode = "{m}", padding_mode = "{p}", '
                  f"align_corners = {a}> (x, grid)" for i, (m, p, a) in enumerate(variants))
text = ('<ir_version: 8, opset_import: ["" : 16]>\n'
        f"gridsample (float[2, 3, 4, 7] x, float[2, 5, 6, 2] grid) => ({outs}) {{\n"
        f"{nodes}\n}}\n")
rng = np.random.default_rng(0)
feeds = {"x": rng.standard_normal((2, 3, 4, 7)).astype(np.float32),
         "grid": rng.uniform(-1.6, 1.6, (2, 5, 6, 2)).astype(np.float32)}
got, want = run_both(text, feeds, work, ignc)
for i, (m, p, a) in enumerate(variants):
    err = np.abs(got[i] - want[i]).max()
    print(f"{m} {p} align_corners={a}: {'match' if err <= 1e-4 else 'DIFFERS'} (max abs {err:.1e})")
