#!/usr/bin/env python3
"""Operators with outputs of run-time size (NonZero, Compress, Unique,
NonMaxSuppression, and torch's boolean-mask selection) at a few sizes:
ignc's default bundle vs onnxruntime on the same inputs, outputs compared
(shape and values), median latency of interleaved rounds at one thread.

  python3 benchmarks/data_dependent.py [--rounds 5] [--out FILE.md]
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
IGNC = os.path.join(HERE, "..", "build", "bin", "ignc")


def case_nonzero(n):
    text = (f'<ir_version: 8, opset_import: ["" : 13]>\n'
            f"g (float[{n}, 1024] x) => (int64[2, N] y) {{ y = NonZero (x) }}\n")
    rng = np.random.default_rng(1)
    return text, {"x": (rng.random((n, 1024)) < 0.3).astype(np.float32)}


def case_mask_select(n):
    text = (f'<ir_version: 8, opset_import: ["" : 13]>\n'
            f"g (float[{n}, 768] x, bool[{n}, 768] m) => (float[K] y) {{\n"
            "  w = NonZero (m)\n  t = Transpose (w)\n  y = GatherND (x, t)\n}\n")
    rng = np.random.default_rng(2)
    return text, {"x": rng.standard_normal((n, 768)).astype(np.float32),
                  "m": rng.random((n, 768)) < 0.5}


def case_compress(n):
    text = (f'<ir_version: 8, opset_import: ["" : 13]>\n'
            f"g (float[{n}, 256] x, bool[{n}] c) => (float[K, 256] y) "
            "{ y = Compress <axis = 0> (x, c) }\n")
    rng = np.random.default_rng(3)
    return text, {"x": rng.standard_normal((n, 256)).astype(np.float32),
                  "c": rng.random(n) < 0.5}


def case_unique(n):
    text = (f'<ir_version: 8, opset_import: ["" : 13]>\n'
            f"g (int64[{n}] x) => (int64[U] y, int64[U] i, int64[{n}] v, int64[U] c) "
            "{ y, i, v, c = Unique (x) }\n")
    rng = np.random.default_rng(4)
    return text, {"x": rng.integers(0, n // 4, n).astype(np.int64)}


def case_nms(n, classes=1):
    text = (f'<ir_version: 8, opset_import: ["" : 13]>\n'
            f"g (float[1, {n}, 4] b, float[1, {classes}, {n}] s) => (int64[K, 3] y) {{\n"
            "  k = Constant <value = int64[1] {100}> ()\n"
            "  t = Constant <value = float[1] {0.5}> ()\n"
            "  f = Constant <value = float[1] {0.25}> ()\n"
            "  y = NonMaxSuppression (b, s, k, t, f)\n}\n")
    rng = np.random.default_rng(5)
    c, z = rng.random((1, n, 2)) * 100, rng.random((1, n, 2)) * 10 + 1
    return text, {"b": np.concatenate([c - z / 2, c + z / 2], 2).astype(np.float32),
                  "s": (rng.random((1, classes, n)) ** (8 if classes > 1 else 1))
                  .astype(np.float32)}


CASES = [("NonZero", "x [256, 1024]", case_nonzero, 256),
         ("NonZero + Transpose + GatherND (x[mask])", "x [128, 768]", case_mask_select, 128),
         ("Compress", "x [4096, 256]", case_compress, 4096),
         ("Unique", "x [1024]", case_unique, 1024),
         ("Unique", "x [4096]", case_unique, 4096),
         ("NonMaxSuppression", "200 boxes", case_nms, 200),
         ("NonMaxSuppression", "2000 boxes", case_nms, 2000),
         ("NonMaxSuppression", "8400 boxes, 80 classes (a detector's)",
          lambda n: case_nms(n, 80), 8400)]


def ignc_median(bundle, feeds, work, rounds):
    args = []
    for name, v in feeds.items():
        path = os.path.join(work, name + ".npy")
        np.save(path, v)
        args += ["--input", f"{name}={path}"]
    out = subprocess.run([IGNC, "bench", bundle, *args, "--threads", "1", "--repeat",
                          str(rounds), "--warmup", "2"],
                         check=True, capture_output=True, text=True).stdout
    return float(out.split("median ")[1].split(" ms")[0])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--out")
    a = p.parse_args()
    import onnx
    import onnxruntime as ort
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for op, size, make, n in CASES:
            text, feeds = make(n)
            model = os.path.join(work, "m.onnxtxt")
            open(model, "w").write(text)
            bundle = os.path.join(work, "m.ignb")
            subprocess.run([IGNC, model, "-q", "-o", bundle], check=True)
            options = ort.SessionOptions()
            options.intra_op_num_threads = options.inter_op_num_threads = 1
            sess = ort.InferenceSession(onnx.parser.parse_model(text).SerializeToString(),
                                        options, providers=["CPUExecutionProvider"])
            want = sess.run(None, feeds)
            outdir = os.path.join(work, "out")
            args = sum([["--input", f"{k}={os.path.join(work, k + '.npy')}"] for k in feeds], [])
            for k, v in feeds.items():
                np.save(os.path.join(work, k + ".npy"), v)
            subprocess.run([IGNC, "run", bundle, *args, "-q", "--output-dir", outdir],
                           check=True)
            got = [np.load(os.path.join(outdir, o.name + ".npy")) for o in sess.get_outputs()]
            same = all(g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want))
            times = []
            for _ in range(a.rounds):
                t = time.perf_counter()
                sess.run(None, feeds)
                times.append((time.perf_counter() - t) * 1e3)
            ort_ms = float(np.median(times))
            ignc_ms = ignc_median(bundle, feeds, work, a.rounds)
            rows.append((op, size, tuple(got[0].shape), same, ignc_ms, ort_ms))
            print(f"{op} {size}: ignc {ignc_ms:.3f} ms, onnxruntime {ort_ms:.3f} ms, "
                  f"{'same outputs' if same else 'OUTPUTS DIFFER'}", flush=True)
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((line.split(":", 1)[1].strip() for line in cpu.splitlines()
                  if line.startswith("Model name")), platform.processor())
    lines = [f"CPU: {model}; one thread; onnxruntime {ort.__version__}; "
             f"`python3 benchmarks/data_dependent.py --rounds {a.rounds}`", "",
             "| op | input | output shape | outputs | ignc ms | onnxruntime ms | ignc / ort |",
             "|---|---|---|---|---:|---:|---:|"]
    for op, size, shape, same, i, o in rows:
        lines.append(f"| {op} | {size} | {list(shape)} | {'same' if same else 'DIFFER'} "
                     f"| {i:.3f} | {o:.3f} | {i / o:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        open(a.out, "w").write(text)
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
