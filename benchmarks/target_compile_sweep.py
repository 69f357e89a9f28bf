#!/usr/bin/env python3
"""Compiles every model of the ONNX backend test suite (Debian's
libonnx-testdata) for a device target and counts where its kernels go.

For a target this machine cannot run (CUDA without a GPU, a Vulkan preset),
compiling is the check there is: every model that compiles for the host
must compile for the target (exit 0), no compile may crash, and each kernel
is placed on the device or left on the host with a reason. Prints the
reasons with their counts and one line of totals; --out writes a line per
model (exit status, kernels on the device, on the host, the first reason).

Usage:
  python3 benchmarks/target_compile_sweep.py --target sm80 [--ignc build/bin/ignc]
      [--data /usr/share/libonnx-testdata/data] [--jobs 2] [--out FILE]
"""
import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

PLACED = re.compile(r"^ignc: (k\d+_\S*): (?!host \()\S+")
DECLINED = re.compile(r"^ignc: k\d+_\S*: host \((.*)\)$")


def compile_model(ignc, target, model, work):
    out = os.path.join(work, re.sub(r"\W", "_", model) + ".ignb")
    try:
        p = subprocess.run([ignc, model, "--target=" + target, "-v", "-o", out],
                           capture_output=True, text=True, timeout=300)
        rc, log = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, log = -1, ""
    if os.path.exists(out):
        os.remove(out)
    lines = log.splitlines()
    placed = sum(1 for l in lines if PLACED.match(l))
    reasons = [m.group(1) for l in lines if (m := DECLINED.match(l))]
    return rc, placed, reasons


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--ignc", default="build/bin/ignc")
    parser.add_argument("--data", default="/usr/share/libonnx-testdata/data")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if not os.access(args.ignc, os.X_OK):
        print(f"error: no ignc at {args.ignc} (build it, or pass --ignc)",
              file=sys.stderr)
        return 2
    if not os.path.isdir(args.data):
        print(f"error: no ONNX test data at {args.data} (apt-get install "
              "libonnx-testdata, or pass --data)", file=sys.stderr)
        return 2
    models = sorted(os.path.join(root, "model.onnx")
                    for root, _, files in os.walk(args.data)
                    if "model.onnx" in files)
    results = {}
    with tempfile.TemporaryDirectory() as work, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(compile_model, args.ignc, args.target, m, work): m
                   for m in models}
        for f in concurrent.futures.as_completed(futures):
            results[futures[f]] = f.result()
    status = collections.Counter(rc for rc, _, _ in results.values())
    crashes = [m for m, (rc, _, _) in results.items() if rc < 0 or rc >= 128]
    compiled = [r for r in results.values() if r[0] == 0]
    reasons = collections.Counter(re.sub(r"\d+", "N", why)
                                  for _, _, rs in compiled for why in rs)
    for why, n in reasons.most_common():
        print(f"{n:5d}  host: {why}")
    for m in crashes:
        print("CRASH or timeout:", m)
    print(f"{args.target}: {len(models)} models, {len(compiled)} compiled "
          f"(exit status counts {dict(status)}), "
          f"{sum(p for _, p, _ in compiled)} kernels on the device, "
          f"{sum(len(rs) for _, _, rs in compiled)} on the host, "
          f"{len(crashes)} crashes or timeouts")
    if args.out:
        with open(args.out, "w") as f:
            for m in models:
                rc, placed, rs = results[m]
                name = os.path.relpath(os.path.dirname(m), args.data)
                f.write(f"{name} {rc} {placed} {len(rs)} {rs[0] if rs else ''}\n")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
