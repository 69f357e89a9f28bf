"""Concats and splits in place (pieces_in_place.onnxtxt) against
onnxruntime on random inputs.

  pieces-in-place.test.py WORKDIR IGNC
"""
import os
import sys

import numpy as np

inputs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs")
sys.path.insert(0, inputs)
from ort_compare import run_both  # noqa: E402

work, ignc = sys.argv[1:3]
rng = np.random.default_rng(5)
feeds = {"x": rng.standard_normal((1, 8, 6, 6)).astype(np.float32),
         "w1": rng.standard_normal((4, 8, 1, 1)).astype(np.float32),
         "w2": rng.standard_normal((4, 8, 1, 1)).astype(np.float32)}
text = open(os.path.join(inputs, "pieces_in_place.onnxtxt")).read()
got, want = run_both(text, feeds, work, ignc)
for name, g, w in zip(["y", "h", "z", "d"], got, want):
    ok = g.shape == w.shape and np.allclose(g, w, rtol=1e-5, atol=1e-6)
    print(f"{name}: {'match' if ok else 'DIFFERS'} (max abs {np.abs(g - w).max():.1e})")
