#!/usr/bin/env python3
"""Default-schedule latency of two ignc builds on the same models, side by side.

  python3 benchmarks/compare_builds.py --before OLD_IGNC [--after build/bin/ignc]
      [--threads 1,2] [--rounds 3] [--precision fp32|bf16] [--zoo NAME,...]
      [MODEL[:NAME=DIMS...] ...]

Each model is compiled by both builds (`--no-tuning-db`), then the two bundles are
benched alternately (`ignc bench --repeat 7`), ROUNDS times per thread count; the
figure is the median of the round medians. E.g. the kernels of
benchmarks/results/2026-12-01-native-tiles.md:

  python3 benchmarks/compare_builds.py --before OLD/ignc \\
      benchmarks/models/kernels/*.onnxtxt benchmarks/models/fusion-micro/ffn_*.onnxtxt

`--zoo` adds zoo models by name (zoo_vs_peers.py's, with their input shapes);
the last line is the geometric mean of after / before per thread count. E.g.
benchmarks/results/2026-12-07-session43.md's side-by-side table:

  python3 benchmarks/compare_builds.py --before OLD/ignc --precision bf16 \
      --threads 1 --zoo resnet50,bert_base,unet_small,...
"""
import math
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
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    p.add_argument("--zoo", help="comma-separated zoo model names (zoo_vs_peers.py)")
    p.add_argument("models", nargs="*", help="MODEL[:INPUT=DIMS...]")
    args = p.parse_args()
    # (path, [INPUT=DIMS...]): zoo inputs' names may hold ':' themselves.
    jobs = [(m.split(":")[0], m.split(":")[1:]) for m in args.models]
    if args.zoo:
        sys.path.insert(0, HERE)
        import zoo_vs_peers
        names = args.zoo.split(",")
        found = {m[0]: m for m in zoo_vs_peers.zoo_models(None)}
        for n in names:
            if n not in found:
                sys.exit(f"compare_builds: no zoo model {n}")
            jobs.append((found[n][1], zoo_vs_peers.shape_args(found[n][3])[1::2]))
    if not jobs:
        sys.exit("compare_builds: no models (give files or --zoo)")
    builds = {"before": args.before, "after": args.after}
    for tag, exe in builds.items():
        if not os.access(exe, os.X_OK):
            sys.exit(f"compare_builds: --{tag} {exe}: not an executable ignc")
    for path, _ in jobs:
        if not os.path.isfile(path):
            sys.exit(f"compare_builds: no model file {path}")
    print("| model | threads | before ms | after ms | after / before |")
    print("|---|---:|---:|---:|---:|")
    ratios = {}
    with tempfile.TemporaryDirectory(prefix="ignc-cmp-") as work:
        for path, shapes in jobs:
            shape_args = [a for s in shapes for a in ("--input-shape", s)]
            name = os.path.basename(path).split(".")[0]
            bundles = {}
            for tag, exe in builds.items():
                bundles[tag] = os.path.join(work, f"{name}.{tag}.ignb")
                subprocess.run([exe, path, "-q", "--no-tuning-db", "--precision", args.precision,
                                "-o", bundles[tag]] + shape_args, check=True)
            for t in [int(x) for x in args.threads.split(",")]:
                ms = {tag: [] for tag in builds}
                for _ in range(args.rounds):
                    for tag, exe in builds.items():
                        ms[tag].append(bench(exe, bundles[tag], t))
                b, a = statistics.median(ms["before"]), statistics.median(ms["after"])
                ratios.setdefault(t, []).append(a / b)
                print(f"| {name} | {t} | {b:.3f} | {a:.3f} | {a / b:.2f} |", flush=True)
    for t, r in ratios.items():
        mean = math.exp(sum(math.log(x) for x in r) / len(r))
        print(f"\ngeometric mean after / before at {t} thread(s): {mean:.3f} over {len(r)} models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
