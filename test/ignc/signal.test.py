"""Runs dft.onnxtxt's bundle on seeded inputs and compares its outputs with
numpy's FFT (relative L2 <= 1e-5)."""
import os
import subprocess
import sys

import numpy as np

work, ignc = sys.argv[1:3]
rng = np.random.default_rng(0)
inputs = {"c": rng.standard_normal((2, 12, 2)), "r": rng.standard_normal((3, 12, 1)),
          "s": rng.standard_normal((1, 64, 1)), "w": np.hanning(16)}
args = []
for name, v in inputs.items():
    np.save(os.path.join(work, name + ".npy"), v.astype(np.float32))
    args += ["--input", f"{name}={os.path.join(work, name + '.npy')}"]
subprocess.run([ignc, "run", os.path.join(work, "dft.ignb"), *args, "--output-dir", work, "-q"],
               check=True)

complex_c = inputs["c"][..., 0] + 1j * inputs["c"][..., 1]
frames = np.stack([inputs["s"][0, f * 8:f * 8 + 16, 0] * inputs["w"] for f in range(7)])
want = {
    "padded": np.fft.fft(complex_c, n=16, axis=1),
    "onesided": np.fft.fft(inputs["r"][..., 0], n=10, axis=1)[:, :6],
    "inverse": np.fft.ifft(complex_c, axis=1),
    "spectrogram": np.fft.rfft(frames, axis=1)[None],
}
for name, w in want.items():
    w = np.stack([w.real, w.imag], axis=-1)
    got = np.load(os.path.join(work, name + ".npy"))
    err = np.linalg.norm(got - w) / np.linalg.norm(w) if got.shape == w.shape else np.inf
    print(f"{name}: {'match' if err <= 1e-5 else 'DIFFERS'} (shape {got.shape}, relative L2 {err:.2e})")
