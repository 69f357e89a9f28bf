"""GridSample in every mode, padding mode and align_corners setting against
onnxruntime, on a grid that reaches past the image (|coordinate| <= 1.6) so
every padding rule is exercised; one model holds all 18 variants.

  gridsample.test.py WORKDIR IGNC
"""
import itertools
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort

work, ignc = sys.argv[1:3]
variants = list(itertools.product(["bilinear", "nearest", "bicubic"],
                                  ["zeros", "border", "reflection"], [0, 1]))
outs = ", ".join(f"float[2, 3, 5, 6] y{i}" for i in range(len(variants)))
nodes = "\n".join(f'  y{i} = GridSample <mode = "{m}", padding_mode = "{p}", '
                  f"align_corners = {a}> (x, grid)" for i, (m, p, a) in enumerate(variants))
model = os.path.join(work, "gridsample.onnxtxt")
with open(model, "w") as f:
    f.write('<ir_version: 8, opset_import: ["" : 16]>\n'
            f"gridsample (float[2, 3, 4, 7] x, float[2, 5, 6, 2] grid) => ({outs}) {{\n"
            f"{nodes}\n}}\n")
rng = np.random.default_rng(0)
feeds = {"x": rng.standard_normal((2, 3, 4, 7)).astype(np.float32),
         "grid": rng.uniform(-1.6, 1.6, (2, 5, 6, 2)).astype(np.float32)}
args = []
for name, v in feeds.items():
    np.save(os.path.join(work, name + ".npy"), v)
    args += ["--input", f"{name}={os.path.join(work, name + '.npy')}"]
bundle = os.path.join(work, "g.ignb")
subprocess.run([ignc, model, "-q", "-o", bundle], check=True)
subprocess.run([ignc, "run", bundle, *args, "--output-dir", work, "-q"], check=True)
onnx_model = os.path.join(work, "g.onnx")
subprocess.run([sys.executable, "-c", "import onnx, sys; "
                "onnx.save(onnx.parser.parse_model(open(sys.argv[1]).read()), sys.argv[2])",
                model, onnx_model], check=True)
want = ort.InferenceSession(onnx_model, providers=["CPUExecutionProvider"]).run(None, feeds)
for i, (m, p, a) in enumerate(variants):
    got = np.load(os.path.join(work, f"y{i}.npy"))
    err = np.abs(got - want[i]).max()
    print(f"{m} {p} align_corners={a}: {'match' if err <= 1e-4 else 'DIFFERS'} (max abs {err:.1e})")
