"""RoiAlign against onnxruntime: avg and max pooling, both coordinate
transformations, regions reaching past the image and on the second image
of the batch.

  roialign.test.py WORKDIR IGNC
"""
import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from ort_compare import run_both  # noqa: E402

work, ignc = sys.argv[1:3]
variants = list(itertools.product(["avg", "max"], ["half_pixel", "output_half_pixel"]))
outs = ", ".join(f"float[4, 3, 3, 2] y{i}" for i in range(len(variants)))
nodes = "\n".join(
    f'  y{i} = RoiAlign <mode = "{m}", coordinate_transformation_mode = "{t}", '
    f"output_height = 3, output_width = 2, sampling_ratio = 2, spatial_scale = 0.5> "
    f"(x, rois, batch)" for i, (m, t) in enumerate(variants))
text = ('<ir_version: 8, opset_import: ["" : 16]>\n'
        f"roialign (float[2, 3, 8, 9] x, float[4, 4] rois, int64[4] batch) => ({outs}) {{\n"
        f"{nodes}\n}}\n")
rng = np.random.default_rng(0)
feeds = {"x": rng.standard_normal((2, 3, 8, 9)).astype(np.float32),
         # x1, y1, x2, y2 in input pixels (spatial_scale 0.5): inside, past
         # the right and bottom edges, before the top-left, and tiny.
         "rois": np.array([[2, 2, 10, 12], [8, 6, 22, 20], [-4, -3, 5, 4], [3, 3, 3.5, 4]],
                          np.float32),
         "batch": np.array([0, 1, 1, 0], np.int64)}
got, want = run_both(text, feeds, work, ignc)
for i, (m, t) in enumerate(variants):
    err = np.abs(got[i] - want[i]).max()
    print(f"{m} {t}: {'match' if err <= 1e-5 else 'DIFFERS'} (max abs {err:.1e})")
