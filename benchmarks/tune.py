#!/usr/bin/env python3
"""The search agent's benchmarks, side by side in one run on this machine.

1. Single kernels (benchmarks/models/kernels: GEMM 1024^3 fp32 and common
   convolutions), one thread: the machine's FMA peak (ignc's own
   microbenchmark, in the report), the default schedule, the tuned one with
   the learned-model search, and plain random search at the same budget and
   seed. Writes the best-latency-vs-trials curves (search quality).
2. Models (--zoo: resnet50, bert_base, mobilenet_v2, vit_b_16, gpt2 ONNX
   exports in --zoo-dir, from models/export_torch.py), tuned
   with --trials-model at all cores: ignc default, ignc tuned and
   onnxruntime at each --threads count.

Writes CSV files, a Markdown table and (with matplotlib) a PNG of the curves
into --out-dir; every tuning run uses a fresh database in a temporary
directory, so results never depend on earlier runs.

  python3 benchmarks/tune.py [--kernels gemm1024,conv3x3_56] [--trials-kernel 48]
      [--zoo resnet50,bert_base --zoo-dir DIR --trials-model 200]
      [--threads 1,2] [--out-dir benchmarks/results/DATE-tuning]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fusion import bench  # noqa: E402
from latency_vs_ort import shape_args, time_ort  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "test", "e2e"))
from compare_ort import ZOO  # noqa: E402

# Input shapes of the zoo (models/export_torch.py writes the ONNX files).
SHAPES = dict(ZOO, mobilenet_v2={"input": (1, 3, 224, 224)},
              vit_b_16={"input": (1, 3, 224, 224)}, gpt2={"input_ids": (1, 128)})


def run(cmd, **kw):
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
    return p, time.time() - t


def tune(ignc, model, db, trials, search, threads, seed, report, out, extra=()):
    cmd = [ignc, model, "--trials", str(trials), "--search", search, "--seed", str(seed),
           "--tuning-db", db, "--report", report, "-o", out, "-q"] + list(extra)
    if threads:
        cmd += ["--tune-threads", str(threads)]
    _, secs = run(cmd)
    with open(report) as f:
        r = json.load(f)
    r["wall_seconds"] = secs
    return r


def kernels_part(args, tmp, out):
    rows, curves = [], {}
    for name in args.kernels.split(","):
        model = os.path.join(HERE, "models", "kernels", name + ".onnxtxt")
        for search in ("model", "random"):
            d = os.path.join(tmp, f"{name}-{search}")
            os.makedirs(d)
            r = tune(args.ignc, model, os.path.join(d, "t.db"), args.trials_kernel, search, 1,
                     args.seed, os.path.join(d, "r.json"), os.path.join(d, "k.ignb"))
            # One kernel per model here (the GEMM, or the conv as one matmul).
            k = max(r["kernels"], key=lambda k: k["flops"])
            rows.append({"kernel": name, "search": search, "trials": k["trials"],
                         "default_ms": k["default_ms"], "tuned_ms": k["tuned_ms"],
                         "speedup": k["speedup"], "gflops": k["gflops"],
                         "peak_gflops": r["peak_gflops"],
                         "pct_peak": k["percent_of_peak"], "rel_l2": k.get("rel_l2"),
                         "tuning_s": round(r["wall_seconds"], 1)})
            curves[(name, search)] = k["best_curve_ms"]
            print(f"{name:12s} {search:6s} default {k['default_ms']:.3f} ms, tuned "
                  f"{k['tuned_ms']:.3f} ms ({k['speedup']:.2f}x, {k['percent_of_peak']:.1f}% of "
                  f"{r['peak_gflops']:.1f} GFLOP/s)", flush=True)
    with open(os.path.join(out, "kernels.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(out, "curves.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kernel", "search", "trial", "best_ms"])
        for (name, search), c in curves.items():
            for i, v in enumerate(c):
                w.writerow([name, search, i + 1, v])
    # Search quality: trials the model search needs to reach random
    # search's final best.
    quality = []
    for name in args.kernels.split(","):
        m, rnd = curves[(name, "model")], curves[(name, "random")]
        target = min(v for v in rnd if v > 0)
        reach = next((i + 1 for i, v in enumerate(m) if 0 < v <= target), None)
        quality.append({"kernel": name, "random_final_ms": target, "random_trials": len(rnd),
                        "model_trials_to_reach": reach,
                        "model_final_ms": min(v for v in m if v > 0)})
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        names = args.kernels.split(",")
        fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.2))
        for ax, name in zip(axes if len(names) > 1 else [axes], names):
            for search in ("model", "random"):
                c = curves[(name, search)]
                ax.plot(range(1, len(c) + 1), c, label=search)
            ax.set_title(name)
            ax.set_xlabel("trials")
            ax.set_ylabel("best latency (ms)")
            ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "curves.png"), dpi=90)
    except ImportError:
        print("matplotlib not installed: no plot")
    return rows, quality


def zoo_part(args, tmp, out):
    rows = []
    threads = [int(t) for t in args.threads.split(",")]
    for name in args.zoo.split(","):
        model = os.path.join(args.zoo_dir, name + ".onnx")
        shapes = SHAPES[name]
        d = os.path.join(tmp, name)
        os.makedirs(d)
        default = os.path.join(d, "default.ignb")
        run([args.ignc, model, "--no-tuning-db", "-o", default, "-q"] + shape_args(shapes))
        r = tune(args.ignc, model, os.path.join(d, "t.db"), args.trials_model, "model", 0,
                 args.seed, os.path.join(d, "r.json"), os.path.join(d, "tuned.ignb"),
                 shape_args(shapes))
        with open(os.path.join(out, f"{name}-report.json"), "w") as f:
            json.dump(r, f, indent=1)
        import numpy as np
        for t in threads:
            row = {"model": name, "threads": t,
                   "ignc_default_ms": bench(args.ignc, default, t, 3, args.repeat),
                   "ignc_tuned_ms": bench(args.ignc, os.path.join(d, "tuned.ignb"), t, 3,
                                          args.repeat),
                   "ort_ms": time_ort(model, shapes, t, 3, args.repeat, np.random.default_rng(0)),
                   "trials": args.trials_model,
                   "tuning_s": round(r["wall_seconds"], 1)}
            rows.append(row)
            print(row, flush=True)
    with open(os.path.join(out, "models.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ignc", default=os.path.join(HERE, "..", "build", "bin", "ignc"))
    p.add_argument("--kernels", default="gemm1024,conv3x3_56,conv1x1_28,conv3x3_14")
    p.add_argument("--trials-kernel", type=int, default=48)
    p.add_argument("--zoo", default="")
    p.add_argument("--zoo-dir", default=os.path.expanduser("~/.cache/ignc-zoo"))
    p.add_argument("--trials-model", type=int, default=200)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out-dir", default=os.path.join(HERE, "results",
                                                     time.strftime("%Y-%m-%d") + "-tuning"))
    args = p.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    md = [f"# Tuning benchmarks ({time.strftime('%Y-%m-%d %H:%M')})", "",
          "Command: `python3 benchmarks/tune.py " + " ".join(sys.argv[1:]) + "`", ""]
    with tempfile.TemporaryDirectory(prefix="ignc-bench-") as tmp:
        if args.kernels:
            rows, quality = kernels_part(args, tmp, args.out_dir)
            md += ["## Single kernels, 1 thread", "",
                   "| kernel | search | trials | default ms | tuned ms | speedup | GFLOP/s | % of FMA peak |",
                   "|---|---|---:|---:|---:|---:|---:|---:|"]
            for r in rows:
                md.append(f"| {r['kernel']} | {r['search']} | {r['trials']} | {r['default_ms']:.3f} | "
                          f"{r['tuned_ms']:.3f} | {r['speedup']:.2f}x | {r['gflops']:.1f} | "
                          f"{r['pct_peak']:.1f}% of {r['peak_gflops']:.1f} |")
            md += ["", "## Search quality", "",
                   "| kernel | random search: final best (trials) | model search: trials to reach it | model search: final best |",
                   "|---|---:|---:|---:|"]
            for q in quality:
                md.append(f"| {q['kernel']} | {q['random_final_ms']:.3f} ms ({q['random_trials']}) | "
                          f"{q['model_trials_to_reach'] or 'not reached'} | {q['model_final_ms']:.3f} ms |")
        if args.zoo:
            rows = zoo_part(args, tmp, args.out_dir)
            md += ["", "## Models", "",
                   "| model | threads | ignc default ms | ignc tuned ms | onnxruntime ms | tuned / ort | trials | tuning s |",
                   "|---|---:|---:|---:|---:|---:|---:|---:|"]
            for r in rows:
                md.append(f"| {r['model']} | {r['threads']} | {r['ignc_default_ms']:.1f} | "
                          f"{r['ignc_tuned_ms']:.1f} | {r['ort_ms']:.1f} | "
                          f"{r['ignc_tuned_ms'] / r['ort_ms']:.2f} | {r['trials']} | {r['tuning_s']} |")
    with open(os.path.join(args.out_dir, "README.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
