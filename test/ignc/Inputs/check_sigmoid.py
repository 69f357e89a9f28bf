"""Runs long_bodies.onnxtxt's Sigmoid (compiled to BUNDLE) on every range
of x, infinities and NaN, and checks it against 1 / (1 + exp(-x)) in
float64: within 2e-7 everywhere, never outside [0, 1], NaN stays NaN.

  check_sigmoid.py BUNDLE WORKDIR   (IGNC in the environment or on PATH)
"""
import os
import subprocess
import sys

import numpy as np

bundle, work = sys.argv[1:3]
x = np.linspace(-40, 40, 4 * 1024).astype(np.float32)
x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 17.9]
x = x.reshape(4, 1024)
np.save(os.path.join(work, "x.npy"), x)
ignc = os.environ.get("IGNC", "ignc")
subprocess.run([ignc, "run", bundle, "--input", f"x={os.path.join(work, 'x.npy')}",
                "--output-dir", work, "-q"], check=True)
y = np.load(os.path.join(work, "y.npy")).astype(np.float64)
with np.errstate(over="ignore"):
    exact = 1 / (1 + np.exp(-x.astype(np.float64)))
nan = np.isnan(x)
err = np.abs(y[~nan] - exact[~nan]).max()
print(f"max abs error {err:.2e}")
print("NaN stays NaN" if np.isnan(y[nan]).all() else "NaN LOST")
print("within [0, 1]" if ((y[~nan] >= 0) & (y[~nan] <= 1)).all() else "OUTSIDE [0, 1]")
sys.exit(0 if err <= 2e-7 and np.isnan(y[nan]).all() else 1)
