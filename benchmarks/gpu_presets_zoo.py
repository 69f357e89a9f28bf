#!/usr/bin/env python3
"""Compiles every zoo model for the Vulkan presets (GPUs this machine does
not have: compiled, never run), validates every SPIR-V module with
spirv-val, and records the analytical model's predicted latency
(targets/gpu/GpuCostModel.h): per model, the GPU kernels' predicted
milliseconds times their launches. Predictions, not measurements; kernels
the GPU path declines run on the host and are not counted.

  python3 benchmarks/gpu_presets_zoo.py [--chips mali-g710,adreno-740,rdna3,nvidia-vulkan]
      [--out FILE.md] [--csv FILE.csv]
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from latency_vs_ort import ZOO  # noqa: E402

SPIRV = os.path.join(ROOT, "test", "targets", "vulkan", "Inputs", "spirv_modules.py")
ROW = re.compile(r"^[0-9a-f]{16}\s+(\d+)\s.*\s(k\d+_[A-Za-z0-9_]+):")


def zoo_models(zoo_dir):
    """(name, path, {input: shape}) of the wide zoo and the two large models."""
    wide = os.path.join(zoo_dir, "wide")
    for m in json.load(open(os.path.join(wide, "manifest.json")))["models"]:
        yield m["name"], os.path.join(wide, m["file"]), {
            k: v["shape"] for k, v in m["inputs"].items()}
    for name, shapes in ZOO.items():
        yield name, os.path.join(zoo_dir, name + ".onnx"), shapes


def predicted_ms(inspect):
    """Sum over the GPU kernels of predicted ms x launches; (sum, on GPU, total)."""
    launches, total, on_gpu, ms = {}, 0, 0, 0.0
    for line in inspect.splitlines():
        m = ROW.match(line)
        if m:
            launches[m.group(2)] = int(m.group(1))
            total += 1
        line = line.strip()
        if ": on vulkan, {" in line:
            name, text = line.split(": on vulkan, ", 1)
            on_gpu += 1
            ms += json.loads(text).get("predicted_ms", 0.0) * launches.get(name, 1)
    return ms, on_gpu, total


def compile_one(ignc, path, shapes, chip, work):
    bundle = os.path.join(work, os.path.basename(path) + "." + chip + ".ignb")
    args = [ignc, path, "--target=vulkan", "--chip=" + chip, "-q", "--no-tuning-db",
            "-o", bundle]
    for k, v in shapes.items():
        args += ["--input-shape", f"{k}=" + "x".join(map(str, v))]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        return {"error": r.stderr.strip().splitlines()[-1][:160] if r.stderr else "failed"}
    ms, on_gpu, total = predicted_ms(
        subprocess.run([ignc, "inspect", bundle], capture_output=True, text=True).stdout)
    v = subprocess.run([sys.executable, SPIRV, bundle, "--validate"], capture_output=True,
                       text=True)
    os.remove(bundle)
    return {"ms": ms, "gpu": on_gpu, "kernels": total,
            "spirv": v.stdout.strip().splitlines()[-1] if v.stdout else v.stderr.strip()[-120:],
            "valid": v.returncode == 0}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ignc", default=os.path.join(ROOT, "build", "bin", "ignc"))
    p.add_argument("--zoo-dir", default=os.path.expanduser("~/.cache/ignc-zoo"))
    p.add_argument("--chips", default="mali-g710,adreno-740,rdna3,nvidia-vulkan")
    p.add_argument("--out")
    p.add_argument("--csv")
    args = p.parse_args()
    chips = args.chips.split(",")
    work = tempfile.mkdtemp(prefix="ignc-presets-")
    rows = []
    for name, path, shapes in zoo_models(args.zoo_dir):
        if not os.path.exists(path):
            continue
        row = {"model": name}
        for chip in chips:
            row[chip] = compile_one(args.ignc, path, shapes, chip, work)
        rows.append(row)
        print(name, {c: (r.get("ms"), r.get("valid"), r.get("error")) for c, r in row.items()
                     if c != "model"}, flush=True)
    lines = ["| model | " + " | ".join(f"{c}: GPU kernels, predicted ms" for c in chips) + " |",
             "|---|" + "---|" * len(chips)]
    for r in rows:
        cells = []
        for c in chips:
            x = r[c]
            cells.append(f"error: {x['error']}" if "error" in x else
                         f"{x['gpu']}/{x['kernels']}, {x['ms']:.3f}"
                         + ("" if x["valid"] else f" (SPIR-V: {x['spirv']})"))
        lines.append(f"| {r['model']} | " + " | ".join(cells) + " |")
    ok = sum(1 for r in rows for c in chips if "error" not in r[c])
    valid = sum(1 for r in rows for c in chips if r[c].get("valid"))
    lines += ["", f"{len(rows)} models x {len(chips)} chips: {ok} compiled, {valid} with every "
                  "SPIR-V module valid (spirv-val --target-env vulkan1.1)"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        open(args.out, "w").write(text)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["model", "chip", "gpu_kernels", "kernels", "predicted_ms", "spirv_valid",
                        "error"])
            for r in rows:
                for c in chips:
                    x = r[c]
                    w.writerow([r["model"], c, x.get("gpu", ""), x.get("kernels", ""),
                                x.get("ms", ""), x.get("valid", ""), x.get("error", "")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
