#!/usr/bin/env python3
"""A record of the Vulkan target on this machine's Vulkan device (Mesa's
lavapipe here, Vulkan on the CPU): per model, the kernels placed on the GPU,
the latency of the default GPU schedule and of a tuned one (a time budget per
model), each as `ignc bench`'s median wall time and the device's own
timestamps, beside the host target's default bundle, all timed in one run;
every Vulkan bundle's outputs are checked against the host's (relative L2).
Lavapipe's figures say how ignc's GPU kernels run on lavapipe, not how they
would on a GPU: a record, not a goal against other systems.

  python3 benchmarks/vulkan_record.py [--models small|zoo|all|wide] [--tune-time 60s]
      [--repeat 10] [--before-ignc OLD/build/bin/ignc] [--out FILE.md] [--csv FILE.csv]

--tune-time 0 skips tuning. --before-ignc adds another build's default Vulkan
bundle, timed in the same rounds (a side-by-side A/B of a GPU-layer change).
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from latency_vs_ort import models, shape_args  # noqa: E402
from gpu_presets_zoo import zoo_models  # noqa: E402


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(" ".join(cmd) + ": " + r.stderr.strip()[-400:])
    return r.stdout


def bench(ignc, bundle, repeat):
    """(median wall ms, device ms per run or None)."""
    j = json.loads(run([ignc, "bench", bundle, "--json", "--repeat", str(repeat),
                        "--warmup", "2"]))
    device = j.get("device", {})
    return j["latency_ms"]["median"], device.get("ms_at_clock")


def rel_l2(a_dir, b_dir):
    worst = 0.0
    for f in sorted(os.listdir(b_dir)):
        a, b = np.load(os.path.join(a_dir, f)), np.load(os.path.join(b_dir, f))
        if not np.issubdtype(b.dtype, np.floating):
            worst = max(worst, float(np.any(a != b)))
            continue
        a, b = a.astype(np.float64), b.astype(np.float64)
        worst = max(worst, float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)))
    return worst


def gpu_share(ignc, bundle):
    text = run([ignc, "inspect", bundle])
    on = text.count(": on vulkan, ")
    total = int(text.split("\nkernels: ")[1].split("\n")[0])
    return on, total


def record(args, name, path, shapes, work):
    out = {"model": name}
    shape = shape_args(shapes)
    host = os.path.join(work, name + ".host.ignb")
    run([args.ignc, path, "-q", "-o", host] + shape)
    vk = os.path.join(work, name + ".vk.ignb")
    run([args.ignc, path, "--target=vulkan", "--chip=lavapipe", "-q", "-o", vk] + shape)
    bundles = {"host": host, "vk": vk}
    if tuning(args):
        tuned = os.path.join(work, name + ".tuned.ignb")
        db = os.path.join(work, name + ".db")
        run([args.ignc, path, "--target=vulkan", "--chip=lavapipe", "-q", "-o", tuned,
             "--tune-time", args.tune_time, "--tuning-db", db] + shape)
        bundles["tuned"] = tuned
    if args.before_ignc:
        before = os.path.join(work, name + ".before.ignb")
        run([args.before_ignc, path, "--target=vulkan", "--chip=lavapipe", "-q", "-o",
             before, "--no-tuning-db"] + shape)
        bundles["before"] = before
    outs = {}
    for tag, b in bundles.items():
        d = os.path.join(work, name + "." + tag + ".out")
        run([args.ignc, "run", b, "--random-inputs", "--seed", "3", "--output-dir", d, "-q"])
        outs[tag] = d
    out["gpu_kernels"], out["kernels"] = gpu_share(args.ignc, vk)
    out["rel_l2"] = max(rel_l2(outs[t], outs["host"]) for t in outs if t != "host")
    out["host_ms"], _ = bench(args.ignc, host, args.repeat)
    # Interleaved: each Vulkan bundle timed once per round, the median kept.
    times = {t: [] for t in bundles if t != "host"}
    for _ in range(args.rounds):
        for t in times:
            times[t].append(bench(args.ignc, bundles[t], args.repeat))
    for t, runs in times.items():
        wall = sorted(r[0] for r in runs)[len(runs) // 2]
        device = sorted(r[1] or 0.0 for r in runs)[len(runs) // 2]
        prefix = {"vk": "vk", "tuned": "tuned", "before": "before"}[t]
        out[prefix + "_ms"], out[prefix + "_device_ms"] = wall, device
    return out


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "n/a"


def tuning(args):
    return args.tune_time not in ("0", "0s")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ignc", default=os.path.join(HERE, "..", "build", "bin", "ignc"))
    p.add_argument("--models", default="small", choices=["small", "zoo", "all", "wide"],
                   help="wide: the cached wide zoo (benchmarks/models/wide_zoo.py's "
                        "manifest) and the zoo's two large models")
    p.add_argument("--zoo-dir", default=os.path.expanduser("~/.cache/ignc-zoo"))
    p.add_argument("--tune-time", default="60s")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--rounds", type=int, default=1,
                   help="interleaved rounds of the Vulkan bundles (median kept)")
    p.add_argument("--before-ignc", help="another ignc build: its default bundles side by side")
    p.add_argument("--only", help="comma-separated model names")
    p.add_argument("--out")
    p.add_argument("--csv")
    args = p.parse_args()
    listing = run([args.ignc, "targets"])
    if "--chip device" not in listing:
        print("skipped: no Vulkan device on this machine")
        return 77
    device = [l for l in listing.splitlines() if "--chip device" in l][0].split("device:")[-1].strip()
    work = tempfile.mkdtemp(prefix="ignc-vulkan-")
    rows = []
    chosen = (zoo_models(args.zoo_dir) if args.models == "wide"
              else models(args.models, args.zoo_dir))
    only = set(args.only.split(",")) if args.only else None
    chosen = list(chosen)
    if only and only - {name for name, _, _ in chosen}:
        print("error: --only names no model of --models " + args.models + ": " +
              ", ".join(sorted(only - {name for name, _, _ in chosen})))
        return 2
    for name, path, shapes in chosen:
        if only and name not in only:
            continue
        try:
            rows.append(record(args, name, path, shapes, work))
        except RuntimeError as e:
            rows.append({"model": name, "error": str(e)})
        print(rows[-1], flush=True)
    lines = [f"Vulkan device: {device}; tuning budget {args.tune_time} per model; "
             f"`ignc bench` medians of {args.repeat} runs (host: all cores), "
             f"{args.rounds} interleaved round(s).", ""]
    cols = ["model", "kernels on GPU", "host ms"]
    if args.before_ignc:
        cols += ["before ms (device)"]
    cols += ["vulkan default ms (device)"]
    if args.before_ignc:
        cols += ["default/before (device)"]
    if tuning(args):
        cols += ["vulkan tuned ms (device)", "tuned/default (device)"]
    cols += ["rel L2 vs host"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | error: {r['error'][:120]} |" + " |" * (len(cols) - 2))
            continue
        cells = [r["model"], f"{r['gpu_kernels']}/{r['kernels']}", f"{r['host_ms']:.3g}"]
        if args.before_ignc:
            cells.append(f"{r['before_ms']:.2f} ({r['before_device_ms']:.2f})")
        cells.append(f"{r['vk_ms']:.2f} ({r['vk_device_ms']:.2f})")
        if args.before_ignc:
            cells.append(ratio(r["vk_device_ms"], r["before_device_ms"]))
        if tuning(args):
            cells.append(f"{r['tuned_ms']:.2f} ({r['tuned_device_ms']:.2f})")
            cells.append(ratio(r["tuned_device_ms"], r["vk_device_ms"]))
        cells.append(f"{r['rel_l2']:.1e}")
        lines.append("| " + " | ".join(cells) + " |")
    if args.before_ignc:
        rs = [r["vk_device_ms"] / r["before_device_ms"] for r in rows
              if "error" not in r and r.get("before_device_ms")]
        if rs:
            lines += ["", f"default / before (device time): geometric mean "
                          f"{float(np.exp(np.mean(np.log(rs)))):.3f} over {len(rs)} models"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        open(args.out, "w").write(text)
    if args.csv:
        keys = ["model", "gpu_kernels", "kernels", "host_ms", "before_ms",
                "before_device_ms", "vk_ms", "vk_device_ms", "tuned_ms",
                "tuned_device_ms", "rel_l2", "error"]
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            for r in rows:
                w.writerow({k: r.get(k, "") for k in keys})
    return 0


if __name__ == "__main__":
    sys.exit(main())
