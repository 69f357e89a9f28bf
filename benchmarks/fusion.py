#!/usr/bin/env python3
"""Fused vs unfused kernels: latency and bytes moved, side by side.

For each model, compiles one bundle with fusion (the default) and one with
`--no-fuse` (one op per kernel), describes both with `ignc --emit=kernels
--json` (kernels, launches, FLOPs, bytes every launch reads and writes) and
times both with `ignc bench --json` at every thread count, alternating the
two bundles so that machine noise hits both alike. Prints a Markdown table;
--out writes it too.

  python3 benchmarks/fusion.py [--models zoo|small|all] [--zoo-dir DIR]
      [--threads 1,2] [--repeat 20] [--out FILE]

`zoo` is ResNet-50 and BERT-base (benchmarks/models/gen_zoo.py writes
torch-style look-alikes into --zoo-dir on first use; a directory holding
real torch exports from benchmarks/models/export_torch.py works too).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from latency_vs_ort import models, shape_args  # noqa: E402

# Ops that compute each element from the same position of their operands.
POINTWISE = {
    "abs", "neg", "sign", "relu", "not", "exp", "log", "sqrt", "reciprocal",
    "floor", "ceil", "round", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "asinh", "acosh", "atanh", "tanh", "sigmoid", "erf",
    "softsign", "softplus", "mish", "hard_swish", "gelu", "hard_sigmoid",
    "leaky_relu", "elu", "selu", "celu", "thresholded_relu", "clip",
    "is_nan", "is_inf", "cast", "add", "sub", "mul", "div", "pow", "mod",
    "max", "min", "and", "or", "xor", "prelu", "equal", "less",
    "less_equal", "greater", "greater_equal", "select", "bit_shift",
}


def describe(ignc, path, shapes_arg, fuse):
    cmd = [ignc, path, "--emit=kernels", "--json"] + shapes_arg
    if not fuse:
        cmd.append("--no-fuse")
    kernels = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                        text=True).stdout)
    launches = sum(k["launches"] for k in kernels)
    moved = sum(k["launches"] * (k["bytes_read"] + k["bytes_written"]) for k in kernels)
    flops = sum(k["launches"] * k["flops"] for k in kernels)
    pointwise = sum(k["launches"] for k in kernels
                    if all(op.split(".", 1)[1] in POINTWISE for op in k["ops"]))
    attention = sum(k["launches"] for k in kernels
                    if "ign.softmax" in k["ops"] and k["ops"].count("ign.matmul") == 2)
    return {"kernels": len(kernels), "launches": launches, "moved": moved,
            "flops": flops, "pointwise": pointwise, "attention": attention}


def bench(ignc, bundle, threads, warmup, repeat):
    r = subprocess.run([ignc, "bench", bundle, "--json", "--threads", str(threads),
                        "--warmup", str(warmup), "--repeat", str(repeat)],
                       check=True, capture_output=True, text=True)
    return json.loads(r.stdout)["latency_ms"]["median"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ignc", default=os.path.join(HERE, "..", "build", "bin", "ignc"))
    p.add_argument("--models", choices=["small", "zoo", "all"], default="zoo")
    p.add_argument("--zoo-dir", default=os.path.expanduser("~/.cache/ignc-zoo"))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--out")
    args = p.parse_args()

    threads = [int(t) for t in args.threads.split(",")]
    work = tempfile.mkdtemp(prefix="ignc-fusion-")
    shape_lines = ["| model | variant | kernels | launches | pointwise-only launches "
                   "| attention launches | GFLOP | MB moved |",
                   "|---|---|---:|---:|---:|---:|---:|---:|"]
    time_lines = ["| model | threads | fused ms | unfused ms | unfused / fused |",
                  "|---|---:|---:|---:|---:|"]
    for name, path, shapes in models(args.models, args.zoo_dir):
        shapes_arg = shape_args(shapes)
        bundles = {}
        for variant, fuse in (("fused", True), ("unfused", False)):
            d = describe(args.ignc, path, shapes_arg, fuse)
            shape_lines.append(
                f"| {name} | {variant} | {d['kernels']} | {d['launches']} | {d['pointwise']} "
                f"| {d['attention']} | {d['flops'] / 1e9:.3f} | {d['moved'] / 1e6:.1f} |")
            print(shape_lines[-1], flush=True)
            bundles[variant] = os.path.join(work, f"{name}.{variant}.ignb")
            subprocess.run([args.ignc, path, "-q", "-o", bundles[variant]] + shapes_arg
                           + ([] if fuse else ["--no-fuse"]), check=True)
        for t in threads:
            # Alternate the two bundles in rounds so noise hits both alike.
            rounds = {"fused": [], "unfused": []}
            for _ in range(3):
                for variant in ("fused", "unfused"):
                    rounds[variant].append(bench(args.ignc, bundles[variant], t,
                                                 args.warmup, args.repeat))
            fused, unfused = min(rounds["fused"]), min(rounds["unfused"])
            time_lines.append(f"| {name} | {t} | {fused:.2f} | {unfused:.2f} | "
                              f"{unfused / fused:.2f} |")
            print(time_lines[-1], flush=True)
    intro = ("Kernels as `ignc --emit=kernels --json` describes them (MB moved: bytes "
             "every launch reads and writes, summed over launches). Latency: the best of "
             f"3 alternating rounds of `ignc bench` medians ({args.repeat} runs after "
             f"{args.warmup} warm-up).")
    text = intro + "\n\n" + "\n".join(shape_lines) + "\n\n" + "\n".join(time_lines)
    print()
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
