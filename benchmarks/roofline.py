#!/usr/bin/env python3
"""Every kernel of the zoo against its roofline bound.

For each zoo model (zoo_vs_peers.py's zoo): compile it with ignc (default
schedule), read each kernel's arithmetic and the bytes of its arguments and
results (`ignc --emit=kernels --json`), time every launch (`ignc bench
--json`), and compare each kernel with its roofline bound on this machine:

    bound = max(flops / compute peak, bytes / memory bandwidth)

The compute peak is ignc's measured FMA peak (`ignc targets`) for the thread
count; the bandwidth is a large array copy measured here (numpy, one
thread: read + write bytes per second). The bytes are a kernel's arguments
and results, the least it must move: a kernel whose data stays in cache can
beat the memory bound (over 100%). Kernels taking at least --min-share of
their model's time and reaching under 50% of their bound are listed first:
issue 14 asks every such kernel to reach 50% or be explained.

  python3 benchmarks/roofline.py [--only NAME,...] [--threads 1]
      [--min-share 0.01] [--out FILE.md] [--csv FILE]
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from zoo_vs_peers import ROOT, compile_ignc, cpu_name, shape_args, zoo_models  # noqa: E402


def measured_peak(ignc, threads):
    """GFLOP/s of `threads` cores: ignc's measured peak for the machine's
    cores, shared evenly."""
    out = subprocess.run([ignc, "targets"], capture_output=True, text=True).stdout
    m = re.search(r"--chip host\s.*peak ([0-9.]+) G op/s", out)
    if not m:
        sys.exit("roofline: `ignc targets` printed no host peak")
    cores = os.cpu_count() or 1
    return float(m.group(1)) * min(threads, cores) / cores


def copy_bandwidth():
    """Bytes per second of a 256 MiB array copy (best of 5)."""
    a = np.ones(64 << 20, dtype=np.float32)
    b = np.empty_like(a)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t)
    return 2 * a.nbytes / best


def kernel_table(ignc, path, inputs):
    r = subprocess.run([ignc, path, "--emit=kernels", "--json"] + shape_args(inputs),
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return {k["name"]: k for k in json.loads(r.stdout)}


def launch_times(ignc, bundle, threads):
    r = subprocess.run([ignc, "bench", bundle, "--json", "--threads", str(threads)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)["kernels"]


def model_rows(model, args, peak, bandwidth, work):
    """One row per kernel of `model`: its share of the model's time, achieved
    rates and fraction of its roofline bound."""
    name, path, kind, inputs = model
    bundle = os.path.join(work, name + ".ignb")
    error = compile_ignc(args.ignc, path, inputs, bundle)
    kernels = None if error else kernel_table(args.ignc, path, inputs)
    launches = None if kernels is None else launch_times(args.ignc, bundle, args.threads)
    if launches is None:
        print(f"  {name}: skipped ({error or 'no kernel table or timings'})", flush=True)
        return []
    total = sum(l["median_ms"] for l in launches) or 1e-9
    per_kernel = {}
    for l in launches:
        per_kernel.setdefault(l["name"], []).append(l["median_ms"])
    rows = []
    for kname, times in per_kernel.items():
        k = kernels.get(kname)
        if k is None:
            continue
        ms = sum(times) / len(times)
        moved = k["bytes_read"] + k["bytes_written"]
        compute_ms = k["flops"] / (peak * 1e9) * 1e3
        memory_ms = moved / bandwidth * 1e3
        bound = max(compute_ms, memory_ms)
        rows.append({
            "model": name, "kernel": kname, "ops": "+".join(
                o.removeprefix("ign.") for o in k["ops"])[:48],
            "launches": len(times), "share": sum(times) / total, "ms": ms,
            "gflops": k["flops"] / (ms * 1e6) if ms > 0 else 0.0,
            "gbs": moved / (ms * 1e6) if ms > 0 else 0.0,
            "bound": "compute" if compute_ms >= memory_ms else "memory",
            "of_roofline": bound / ms if ms > 0 else 0.0,
        })
    return rows


def report(rows, args, peak, bandwidth):
    lines = [f"Machine: {cpu_name()}, {os.cpu_count()} cores; {args.threads} thread(s); "
             f"compute peak {peak:.0f} GFLOP/s (ignc targets), copy bandwidth "
             f"{bandwidth / 1e9:.1f} GB/s (numpy, one thread).", ""]
    big = [r for r in rows if r["share"] >= args.min_share]
    low = sorted((r for r in big if r["of_roofline"] < 0.5),
                 key=lambda r: -r["share"] * r["ms"])
    lines.append(f"{len(big)} kernels take at least {args.min_share:.0%} of their model's "
                 f"time; {len(big) - len(low)} reach 50% of their roofline bound, "
                 f"{len(low)} do not.")
    lines += ["", "| model | kernel | ops | launches | share | ms/launch | GFLOP/s | GB/s "
              "| bound | % of roofline |", "|---|---|---|---:|---:|---:|---:|---:|---|---:|"]
    for r in low + sorted((r for r in big if r["of_roofline"] >= 0.5),
                          key=lambda r: (r["model"], -r["share"])):
        lines.append(f"| {r['model']} | {r['kernel']} | {r['ops']} | {r['launches']} | "
                     f"{r['share']:.1%} | {r['ms']:.3f} | {r['gflops']:.1f} | "
                     f"{r['gbs']:.1f} | {r['bound']} | {r['of_roofline']:.0%} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ignc", default=os.path.join(ROOT, "build", "bin", "ignc"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--only", help="comma-separated model names")
    p.add_argument("--min-share", type=float, default=0.01)
    p.add_argument("--out")
    p.add_argument("--csv")
    args = p.parse_args()
    only = set(args.only.split(",")) if args.only else None
    peak = measured_peak(args.ignc, args.threads)
    bandwidth = copy_bandwidth()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for model in zoo_models(only):
            print(f"{model[0]} ...", flush=True)
            rows += model_rows(model, args, peak, bandwidth, work)
    text = report(rows, args, peak, bandwidth)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if args.csv and rows:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
