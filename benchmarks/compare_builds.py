#!/usr/bin/env python3
"""Default-schedule latency of two ignc builds on the same models, side by side.

  python3 benchmarks/compare_builds.py --before OLD_IGNC [--after build/bin/ignc]
      [--threads 1,2] [--rounds 3] MODEL[:NAME=DIMS...] ...

Each model is compiled by both builds (`--no-tuning-db`), then the two bundles are
benched alternately (`ignc bench --repeat 7`), ROUNDS times per thread count; the
figure is the median of the round medians. E.g. the kernels of
benchmarks/results/2026-12-01-native-tiles.md:

  python3 benchmarks/compare_builds.py --before OLD/ignc \\
      benchmarks/models/kernels/*.onnxtxt benchmarks/models/fusion-micro/ffn_*.onnxtxt
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def bench(ignc, bundle, threads):
    out = subprocess.run([ignc, "bench", bundle, "--threads", str(threads), "--repeat", "7",
                          "--warmup", "2"], check=True, capture_output=True, text=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--before", required=True)
    p.add_argument("--after", default=os.path.join(HERE, "..", "build", "bin", "ignc"))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("models", nargs="+", help="MODEL[:INPUT=DIMS...]")
    args = p.parse_args()
    builds = {"before": args.before, "after": args.after}
    for tag, exe in builds.items():
        if not os.access(exe, os.X_OK):
            sys.exit(f"compare_builds: --{tag} {exe}: not an executable ignc")
    for m in args.models:
        if not os.path.isfile(m.split(":")[0]):
            sys.exit(f"compare_builds: no model file {m.split(':')[0]}")
    print("| model | threads | before ms | after ms | after / before |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="ignc-cmp-") as work:
        for m in args.models:
            path, *shapes = m.split(":")
            shape_args = [a for s in shapes for a in ("--input-shape", s)]
            name = os.path.basename(path).split(".")[0]
            bundles = {}
            for tag, exe in builds.items():
                bundles[tag] = os.path.join(work, f"{name}.{tag}.ignb")
                subprocess.run([exe, path, "-q", "--no-tuning-db", "-o", bundles[tag]] + shape_args,
                               check=True)
            for t in [int(x) for x in args.threads.split(",")]:
                ms = {tag: [] for tag in builds}
                for _ in range(args.rounds):
                    for tag, exe in builds.items():
                        ms[tag].append(bench(exe, bundles[tag], t))
                b, a = statistics.median(ms["before"]), statistics.median(ms["after"])
                print(f"| {name} | {t} | {b:.3f} | {a:.3f} | {a / b:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
