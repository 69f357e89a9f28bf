#!/usr/bin/env python3
"""Every e2e model (and, with --zoo-dir, the benchmark zoo) compiled for the
CUDA target at sm80 and sm90, with every kernel's PTX checked by ptxas.

No GPU is needed: this checks that ignc's PTX is accepted by the CUDA
toolkit's assembler (where the toolkit is on the machine; otherwise the PTX
is only generated) and reports, per model and architecture, the kernels on
the GPU, the ones left on the host and why, ptxas's registers and spills,
and the analytical model's predicted time (a prediction, not a
measurement). Fails when a model does not compile, when a kernel is left on
the host for a reason of the CUDA backend itself (its PTX lowering, LLVM,
ptxas), or when a kernel spills.

At --precision fp16, bf16 or tf32 it also counts each model's tensor-core launches (the
contractions of at least 16 in m, n and k on mma.sync; TensorCoreGemm.h),
and fails when no model has one.

Usage:
  python3 test/e2e/compile_cuda.py [--ignc build/bin/ignc] [--zoo-dir DIR]
      [--arch sm80 --arch sm90] [--precision fp32|fp16|bf16|tf32] [--csv FILE]
"""
import argparse
import csv
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "models")

# The input shapes compare_ort.py binds (one table for both).
_spec = importlib.util.spec_from_file_location(
    "compare_ort", os.path.join(HERE, "compare_ort.py"))
_ort = importlib.util.module_from_spec(_spec)
try:
    _spec.loader.exec_module(_ort)
except SystemExit:  # it exits 77 without numpy; the shapes are all we need
    pass
CASES, ZOO = _ort.CASES, _ort.ZOO

# Reasons for leaving a kernel on the host that are the CUDA backend's own.
BACKEND_REASONS = re.compile(
    r"PTX|NVVM|ptxas|LLVM|libdevice|registers|translation|linking", re.I)
PLACED = re.compile(r"^ignc: (\S+): (?:cuda (fatbin|cubin|ptx)|(vulkan)), ")
DECLINED = re.compile(r"^ignc: (\S+): host \((.*)\)$")
SCHEDULE = re.compile(r"^\s+(\S+): on cuda, (\{.*\})$")
LAUNCH = re.compile(r"^\s+\d+: (\S+)\(")


def compile_one(ignc, path, shapes, arch, work, target_args=None,
                bundle_name="model.ignb", precision="fp32"):
    """Compiles `path` for `arch` (or `target_args`) into work/bundle_name:
    exit status, kernels on the GPU and left on the host, ptxas's most
    registers and spills, and the model's predicted time of one run."""
    bundle = os.path.join(work, bundle_name)
    cmd = [ignc, path, *(target_args or ["--target=" + arch]),
           "--precision=" + precision, "-v", "-o", bundle]
    for name, shape in (shapes or {}).items():
        cmd += ["--input-shape", name + "=" + "x".join(map(str, shape))]
    start = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.time() - start
    row = {"arch": arch, "rc": p.returncode, "seconds": seconds, "kinds": set(),
           "gpu": 0, "host": [], "registers": 0, "spills": 0,
           "predicted_ms": 0.0, "mma": 0}
    if p.returncode != 0:
        row["error"] = (p.stderr.strip().splitlines() or ["?"])[-1]
        return row
    for line in p.stderr.splitlines():
        if m := PLACED.match(line):
            row["gpu"] += 1
            row["kinds"].add(m.group(2) or m.group(3))
        elif m := DECLINED.match(line):
            row["host"].append((m.group(1), m.group(2)))
    inspect = subprocess.run([ignc, "inspect", bundle], capture_output=True,
                             text=True).stdout
    predicted, launches = {}, {}
    for line in inspect.splitlines():
        if m := LAUNCH.match(line):
            launches[m.group(1)] = launches.get(m.group(1), 0) + 1
        if m := SCHEDULE.match(line):
            schedule = json.loads(m.group(2))
            predicted[m.group(1)] = schedule.get("predicted_ms", 0.0)
            for d in schedule.get("dispatches", []):
                row["registers"] = max(row["registers"], d.get("registers", 0))
                row["spills"] += d.get("spill_store_bytes", 0)
                row["mma"] += "matrix_units" in d
    # The model's time of one run: each kernel's prediction per launch.
    row["predicted_ms"] = sum(ms * launches.get(k, 1)
                              for k, ms in predicted.items())
    return row


def problems(row, toolkit):
    out = []
    if row["rc"] != 0:
        out.append("does not compile: " + row.get("error", ""))
    for kernel, why in row["host"]:
        if BACKEND_REASONS.search(why):
            out.append(f"{kernel} left on the host by the CUDA backend: {why}")
    if toolkit and row["gpu"] and row["kinds"] != {"fatbin"}:
        out.append("not every kernel was assembled by ptxas: " +
                   ", ".join(sorted(row["kinds"])))
    if row["spills"]:
        out.append(f"ptxas spills {row['spills']} bytes")
    return out


def have_toolkit():
    if os.environ.get("IGN_CUDA_PATH") == "none":
        return False
    if os.environ.get("IGN_CUDA_PATH"):
        return os.access(os.path.join(os.environ["IGN_CUDA_PATH"], "bin", "ptxas"),
                         os.X_OK)
    from shutil import which
    return bool(which("ptxas")) or os.access("/usr/local/cuda/bin/ptxas", os.X_OK)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ignc", default=os.path.join(HERE, "..", "..", "build",
                                                       "bin", "ignc"))
    parser.add_argument("--zoo-dir", default=None,
                        help="also compile the benchmark zoo generated there")
    parser.add_argument("--arch", action="append", default=None)
    parser.add_argument("--precision", default="fp32",
                        choices=["fp32", "fp16", "bf16", "tf32"])
    parser.add_argument("--csv", default=None)
    args = parser.parse_args()
    if not os.access(args.ignc, os.X_OK):
        print(f"error: no ignc at {args.ignc} (build it, or pass --ignc)",
              file=sys.stderr)
        return 2
    archs = args.arch or ["sm80", "sm90"]
    cases = [(m, os.path.join(MODELS, m + ".onnx"), s) for m, s in CASES.items()]
    if args.zoo_dir:
        cases += [(m, os.path.join(args.zoo_dir, m + ".onnx"), s)
                  for m, s in ZOO.items()]
    toolkit = have_toolkit()
    print("ptxas:", "yes (cubins checked)" if toolkit else
          "no (PTX only: nothing checks it here)")
    failed, rows = 0, []
    with tempfile.TemporaryDirectory() as work:
        for model, path, shapes in cases:
            for arch in archs:
                row = compile_one(args.ignc, path, shapes, arch, work,
                                  precision=args.precision)
                row["model"] = model
                rows.append(row)
                issues = problems(row, toolkit)
                failed += bool(issues)
                total = row["gpu"] + len(row["host"])
                print(f"{model:30s} {arch}: {row['gpu']}/{total} kernels on "
                      f"the GPU, max {row['registers']} registers, "
                      f"{row['spills']} spill bytes, {row['mma']} "
                      f"tensor-core launches, predicted "
                      f"{row['predicted_ms']:.3f} ms, compiled in "
                      f"{row['seconds']:.1f} s" +
                      "".join("\n    FAIL: " + i for i in issues) +
                      "".join(f"\n    host: {k} ({w})" for k, w in row["host"]))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["model", "arch", "kernels_gpu", "kernels_host",
                        "max_registers", "spill_bytes", "mma_launches",
                        "predicted_ms", "compile_s"])
            for r in rows:
                w.writerow([r["model"], r["arch"], r["gpu"], len(r["host"]),
                            r["registers"], r["spills"], r["mma"],
                            f"{r['predicted_ms']:.4f}", f"{r['seconds']:.1f}"])
    if args.precision != "fp32" and not any(r["mma"] for r in rows):
        print("FAIL: no kernel of any model is on the tensor cores")
        failed += 1
    print(f"{len(rows) - failed} of {len(rows)} compiles pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
