#!/usr/bin/env python3
"""Where a zoo model's time goes, by kind, in ignc and in onnxruntime.

  python3 benchmarks/kinds_vs_ort.py MODEL[,MODEL...] [--ignc build/bin/ignc]
      [--threads 1] [--runs 20]

For each model of the wide zoo (~/.cache/ignc-zoo/wide, benchmarks/models/wide_zoo.py):
ignc's kernels (`ignc bench --json`, default schedule, no tuning database) summed by
their root op (conv, matmul, max_pool, pad, ...) beside onnxruntime's nodes (its
profiler, median per node over the runs) summed by op type. The kinds do not match
one to one (onnxruntime's Conv carries what ignc fuses into its conv and matmul
kernels; its activations may be nodes of their own), but a kind far slower than its
counterpart shows where to look.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import tempfile

import numpy as np

WIDE = os.path.expanduser("~/.cache/ignc-zoo/wide")


def ignc_kinds(ignc, path, threads, runs, work):
    bundle = os.path.join(work, os.path.basename(path) + ".ignb")
    subprocess.run([ignc, path, "--no-tuning-db", "-q", "-o", bundle], check=True)
    out = subprocess.run([ignc, "bench", bundle, "--json", "--threads", str(threads),
                          "--repeat", str(runs)],
                         capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    kinds = collections.Counter()
    for k in j["kernels"]:
        kinds[k["name"].split("_ign_", 1)[-1]] += k["median_ms"]
    return j["latency_ms"]["median"], kinds


def ort_kinds(path, inputs, threads, runs, work):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.enable_profiling = True
    opts.profile_file_prefix = os.path.join(work, "ort_profile")
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    feeds = {k: rng.random(v["shape"]).astype(v["dtype"]) for k, v in inputs.items()}
    for _ in range(runs):
        sess.run(None, feeds)
    with open(sess.end_profiling()) as f:
        events = json.load(f)
    per_node = collections.defaultdict(list)
    for ev in events:
        if ev.get("cat") == "Node" and ev["name"].endswith("_kernel_time"):
            per_node[(ev["name"], ev["args"].get("op_name"))].append(ev["dur"])
    kinds = collections.Counter()
    for (_, op), durations in per_node.items():
        kinds[op] += statistics.median(durations) / 1000
    return kinds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", help="comma-separated zoo model names")
    ap.add_argument("--ignc", default="build/bin/ignc")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    with open(os.path.join(WIDE, "manifest.json")) as f:
        manifest = {e["file"]: e for e in json.load(f)["models"]}
    with tempfile.TemporaryDirectory(prefix="ignc-kinds-") as work:
        for name in args.models.split(","):
            entry = manifest[name + ".onnx"]
            path = os.path.join(WIDE, entry["file"])
            total, ig = ignc_kinds(args.ignc, path, args.threads, args.runs, work)
            ot = ort_kinds(path, entry["inputs"], args.threads, args.runs, work)
            print(f"== {name} ({args.threads} thread(s)): ignc {total:.2f} ms "
                  f"(kernels {sum(ig.values()):.2f}), onnxruntime nodes "
                  f"{sum(ot.values()):.2f} ms")
            print("   ignc:        " + ", ".join(f"{k} {v:.2f}" for k, v in ig.most_common(8)))
            print("   onnxruntime: " + ", ".join(f"{k} {v:.2f}" for k, v in ot.most_common(8)))


if __name__ == "__main__":
    main()
