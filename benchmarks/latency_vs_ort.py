#!/usr/bin/env python3
"""Side-by-side latency: ignc (host target) vs onnxruntime on the same models.

For each model, compiles one bundle per ignc schedule (`--schedule=default`,
the tiled/vectorized/threaded one, and optionally `reference`, the plain
loops), times each with `ignc bench --json` at every thread count, and times
onnxruntime (CPUExecutionProvider, intra-op threads = the same count) on
seeded random inputs, all in the same run, one model after the other.
Prints a Markdown table of medians and ignc/onnxruntime ratios; --out
writes it too.

  python3 benchmarks/latency_vs_ort.py [--models small|zoo|all] [--threads 1,2]
      [--schedules default,reference] [--repeat 30] [--out FILE]
      [--before-ignc OLD_IGNC]

`--before-ignc` also times the default schedule of another ignc build (the
one before a change), in the same run, right before the current one.

`small` is test/models; `zoo` is ResNet-50 and BERT-base from
benchmarks/models/gen_zoo.py, generated into --zoo-dir (cached) on first use.
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
from compare_ort import CASES, MODELS, ZOO, make_input  # noqa: E402


def models(which, zoo_dir):
    if which in ("small", "all"):
        for name, shapes in CASES.items():
            yield name, os.path.join(MODELS, name + ".onnx"), shapes
    if which in ("zoo", "all"):
        subprocess.run([sys.executable, os.path.join(HERE, "models", "gen_zoo.py"), zoo_dir],
                       check=True)
        for name, shapes in ZOO.items():
            yield name, os.path.join(zoo_dir, name + ".onnx"), shapes


def shape_args(shapes):
    """ignc's --input-shape arguments binding every input of `shapes`."""
    args = []
    for k, v in shapes.items():
        args += ["--input-shape", f"{k}=" + "x".join(map(str, v))]
    return args


def time_ort(path, shapes, threads, warmup, repeat, rng):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = {}
    for inp in sess.get_inputs():
        dtype = np.int64 if "int64" in inp.type else np.float32
        feeds[inp.name] = make_input(inp.name, shapes[inp.name], dtype, rng)
    for _ in range(warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ignc", default=os.path.join(HERE, "..", "build", "bin", "ignc"))
    p.add_argument("--models", choices=["small", "zoo", "all"], default="small")
    p.add_argument("--zoo-dir", default=os.path.expanduser("~/.cache/ignc-zoo"))
    p.add_argument("--threads", default="1")
    p.add_argument("--schedules", default="default")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--out")
    p.add_argument("--before-ignc", help="an earlier ignc build to time side by side")
    args = p.parse_args()
    import onnxruntime as ort

    threads = [int(t) for t in args.threads.split(",")]
    schedules = args.schedules.split(",")
    compilers = {s: args.ignc for s in schedules}
    if args.before_ignc:
        schedules = ["before"] + schedules
        compilers["before"] = args.before_ignc
    work = tempfile.mkdtemp(prefix="ignc-bench-")
    rng = np.random.default_rng(7)
    header = "| model | threads |" + "".join(f" ignc {s} ms |" for s in schedules) + \
        " onnxruntime ms |" + "".join(f" {s} / ort |" for s in schedules)
    lines = [header, "|---|---:|" + "---:|" * (2 * len(schedules) + 1)]
    for name, path, shapes in models(args.models, args.zoo_dir):
        shapes_arg = shape_args(shapes)
        bundles = {}
        for s in schedules:
            bundles[s] = os.path.join(work, f"{name}.{s}.ignb")
            schedule = "default" if s == "before" else s
            subprocess.run([compilers[s], path, "-q", "--no-tuning-db", "--schedule", schedule,
                            "-o", bundles[s]] + shapes_arg, check=True)
        for t in threads:
            ignc_ms = {}
            for s in schedules:
                # The reference schedule is slow on the zoo: fewer runs.
                repeat = args.repeat if s != "reference" or args.models == "small" else 3
                r = subprocess.run([compilers[s], "bench", bundles[s], "--json", "--threads", str(t),
                                    "--warmup", str(min(args.warmup, repeat)),
                                    "--repeat", str(repeat)],
                                   check=True, capture_output=True, text=True)
                ignc_ms[s] = json.loads(r.stdout)["latency_ms"]["median"]
            ort_ms = time_ort(path, shapes, t, args.warmup, args.repeat, rng)
            row = f"| {name} | {t} |" + "".join(f" {ignc_ms[s]:.3f} |" for s in schedules) + \
                f" {ort_ms:.3f} |" + "".join(f" {ignc_ms[s] / ort_ms:.2f} |" for s in schedules)
            lines.append(row)
            print(row, flush=True)
    intro = (f"Median latency, {args.repeat} runs after {args.warmup} warm-up "
             f"(reference schedule on the zoo: 3 runs); onnxruntime {ort.__version__}.")
    text = intro + "\n\n" + "\n".join(lines)
    print()
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
