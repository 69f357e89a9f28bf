"""An LSTM cell unrolled in the graph (as torch exports nn.LSTMCell called
in a loop): 6 steps, each Gemm(Gather(x, t), W_ih, b_ih) +
Gemm(h, W_hh, b_hh), split into gates. ignc computes the input
projections of all steps as one Gemm and gathers each step's rows; the
outputs (the last h and c) match onnxruntime. A second graph takes only
2 of 6 steps: those stay matrix-vector products, and match too.

  unrolled-cells.test.py WORKDIR IGNC
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from ort_compare import run_both  # noqa: E402

work, ignc = sys.argv[1:3]
rng = np.random.default_rng(5)
steps, batch, k, n = 6, 2, 24, 8


def weight(name, shape):
    values = ", ".join(f"{v:.6f}" for v in rng.standard_normal(shape).ravel() * 0.3)
    return f"  {name} = Constant <value = float[{', '.join(map(str, shape))}] {{{values}}}> ()\n"


def cell(taken):
    body = weight("wih", (4 * n, k)) + weight("bih", (4 * n,))
    body += weight("whh", (4 * n, n)) + weight("bhh", (4 * n,))
    body += f"  h0 = Constant <value = float[{batch}, {n}] {{{', '.join(['0.0'] * batch * n)}}}> ()\n"
    body += "  c0 = Identity (h0)\n"
    for i, t in enumerate(taken):
        body += (f"  t{i} = Constant <value = int64 {{{t}}}> ()\n"
                 f"  x{i} = Gather <axis = 0> (x, t{i})\n"
                 f"  p{i} = Gemm <transB = 1> (x{i}, wih, bih)\n"
                 f"  q{i} = Gemm <transB = 1> (h{i}, whh, bhh)\n"
                 f"  s{i} = Add (p{i}, q{i})\n"
                 f"  gi{i}, gf{i}, gg{i}, go{i} = Split <axis = 1, num_outputs = 4> (s{i})\n"
                 f"  i{i} = Sigmoid (gi{i})\n  f{i} = Sigmoid (gf{i})\n"
                 f"  g{i} = Tanh (gg{i})\n  o{i} = Sigmoid (go{i})\n"
                 f"  fc{i} = Mul (f{i}, c{i})\n  ig{i} = Mul (i{i}, g{i})\n"
                 f"  c{i + 1} = Add (fc{i}, ig{i})\n  tc{i} = Tanh (c{i + 1})\n"
                 f"  h{i + 1} = Mul (o{i}, tc{i})\n")
    last = len(taken)
    body += f"  h = Identity (h{last})\n  c = Identity (c{last})\n"
    return ('<ir_version: 8, opset_import: ["" : 18]>\n'
            f"cell (float[{steps}, {batch}, {k}] x) => (float[{batch}, {n}] h, "
            f"float[{batch}, {n}] c) {{\n{body}}}\n")


x = rng.standard_normal((steps, batch, k)).astype(np.float32)
for name, taken in [("all steps", list(range(steps))), ("two steps", [4, 1])]:
    sub = os.path.join(work, name.replace(" ", "_"))
    os.makedirs(sub, exist_ok=True)
    got, want = run_both(cell(taken), {"x": x}, sub, ignc)
    for out, g, w in zip(["h", "c"], got, want):
        ok = g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=1e-5)
        print(f"{name} {out}: {'match' if ok else 'DIFFERS'} (max abs {np.abs(g - w).max():.1e})")
