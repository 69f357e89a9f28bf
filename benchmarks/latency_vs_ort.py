#!/usr/bin/env python3
"""Side-by-side latency: ignc (host target) vs onnxruntime on the same models.

Compiles each model of test/models with `ignc --target=host`, times it with
`ignc bench --json` (median of --repeat runs after --warmup), and times
onnxruntime (CPUExecutionProvider, intra-op threads = --threads) on seeded
random inputs in the same process run, one model after the other. Prints a
Markdown table of medians and the ignc/onnxruntime ratio; --out writes it too.

  python3 benchmarks/latency_vs_ort.py [--threads 1] [--repeat 50] [--out FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "e2e"))
from compare_ort import CASES, MODELS, make_input  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ignc", default=os.path.join(HERE, "..", "build", "bin", "ignc"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--out")
    args = p.parse_args()
    import onnxruntime as ort

    work = tempfile.mkdtemp(prefix="ignc-bench-")
    rng = np.random.default_rng(7)
    rows = []
    for model, shapes in CASES.items():
        path = os.path.join(MODELS, model + ".onnx")
        bundle = os.path.join(work, model + ".ignb")
        shape_args = []
        for k, v in shapes.items():
            shape_args += ["--input-shape", f"{k}=" + "x".join(map(str, v))]
        subprocess.run([args.ignc, path, "-q", "-o", bundle] + shape_args, check=True)
        r = subprocess.run([args.ignc, "bench", bundle, "--json", "--threads", str(args.threads),
                            "--warmup", str(args.warmup), "--repeat", str(args.repeat)],
                           check=True, capture_output=True, text=True)
        ignc_ms = json.loads(r.stdout)["latency_ms"]["median"]

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = args.threads
        opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        feeds = {}
        for inp in sess.get_inputs():
            dtype = np.int64 if "int64" in inp.type else np.float32
            feeds[inp.name] = make_input(inp.name, shapes[inp.name], dtype, rng)
        for _ in range(args.warmup):
            sess.run(None, feeds)
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            sess.run(None, feeds)
            times.append((time.perf_counter() - t) * 1e3)
        ort_ms = statistics.median(times)
        rows.append((model, ignc_ms, ort_ms))

    lines = [f"Median latency, {args.threads} thread(s), {args.repeat} runs after {args.warmup} warm-up; "
             f"onnxruntime {ort.__version__}; ignc reference lowering (no tiling, no threads).", "",
             "| model | ignc ms | onnxruntime ms | ignc / onnxruntime |", "|---|---:|---:|---:|"]
    for model, a, b in rows:
        lines.append(f"| {model} | {a:.3f} | {b:.3f} | {a / b:.2f} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
