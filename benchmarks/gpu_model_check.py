#!/usr/bin/env python3
"""Checks the GPU layer's analytical model (targets/gpu/GpuCostModel.h)
against a device that runs: every kernel of each model compiled for
`--chip=lavapipe` (whose numbers in the model are nominal: a compute unit
per core, 8 lanes at 3 GHz, 20 GB/s), its predicted time (`ignc inspect`)
beside its measured device time (`ignc bench --json`, timestamp queries).
Prints per kernel predicted / measured and, over all kernels, the rank
correlation (Spearman) and the spread of the ratio. The model ranks
schedules for chips this machine does not have; this says how far its
ranking of kernels can be trusted on one that it does have.

  python3 benchmarks/gpu_model_check.py [--models small|zoo|all] [--repeat 5]
      [--out FILE.md]
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from latency_vs_ort import models, shape_args  # noqa: E402
from vulkan_record import run  # noqa: E402


def predicted(ignc, bundle):
    """Kernel name -> predicted ms, from the schedules `ignc inspect` prints."""
    out = {}
    for line in run([ignc, "inspect", bundle]).splitlines():
        line = line.strip()
        if ": on vulkan, {" not in line:
            continue
        name, text = line.split(": on vulkan, ", 1)
        schedule = json.loads(text)
        if "predicted_ms" in schedule:
            out[name] = schedule["predicted_ms"]
    return out


def measured(ignc, bundle, repeat):
    """Kernel name -> device ms of one launch (bench lists each launch of a
    kernel launched several times, a layer's, on its own: their mean)."""
    j = json.loads(run([ignc, "bench", bundle, "--json", "--repeat", str(repeat),
                        "--warmup", "1"]))
    launches = {}
    for k in j["kernels"]:
        if k.get("device_ms") is not None:
            launches.setdefault(k["name"], []).append(k["device_ms"])
    return {name: float(np.mean(v)) for name, v in launches.items()}


def spearman(a, b):
    ra = np.argsort(np.argsort(a))
    rb = np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ignc", default=os.path.join(HERE, "..", "build", "bin", "ignc"))
    p.add_argument("--models", default="small", choices=["small", "zoo", "all"])
    p.add_argument("--zoo-dir", default=os.path.expanduser("~/.cache/ignc-zoo"))
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out")
    args = p.parse_args()
    if "--chip device" not in run([args.ignc, "targets"]):
        print("skipped: no Vulkan device on this machine")
        return 77
    work = tempfile.mkdtemp(prefix="ignc-gpumodel-")
    rows = []
    for name, path, shapes in models(args.models, args.zoo_dir):
        bundle = os.path.join(work, name + ".ignb")
        run([args.ignc, path, "--target=vulkan", "--chip=lavapipe", "-q",
             "--no-tuning-db", "-o", bundle] + shape_args(shapes))
        pred, meas = predicted(args.ignc, bundle), measured(args.ignc, bundle, args.repeat)
        for k in sorted(set(pred) & set(meas)):
            rows.append((name, k, pred[k], meas[k]))
        print(name, "done", flush=True)
    pred = np.array([r[2] for r in rows])
    meas = np.array([r[3] for r in rows])
    ratio = pred / meas
    lines = ["| model | kernel | predicted ms | measured ms (device) | predicted / measured |",
             "|---|---|---:|---:|---:|"]
    lines += [f"| {m} | {k} | {p:.3f} | {q:.3f} | {p / q:.3f} |" for m, k, p, q in rows]
    lines += ["", f"{len(rows)} kernels: Spearman rank correlation {spearman(pred, meas):.3f}; "
                  f"predicted / measured: median {np.median(ratio):.3f}, "
                  f"10th-90th percentile {np.percentile(ratio, 10):.3f}-{np.percentile(ratio, 90):.3f}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        open(args.out, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
