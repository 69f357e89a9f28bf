#!/usr/bin/env python3
"""An `ignc report` for every model of the zoo, and a batch sweep.

For every model (benchmarks/zoo_vs_peers.py's zoo: wide_zoo.py's manifest
plus gen_zoo.py's ResNet-50 and BERT-base): tune it for a fixed budget
(--tune-time, a database of this run's own), compile the bundle, and run
`ignc report` on it (the bundle against its default schedules, the
reference lowering and onnxruntime, interleaved; docs/report.md). Each
report is written as OUT/NAME.html (the JSON embedded) and summarized in
OUT/README.md: latency, speedups with their intervals, correctness, trials
and the tuning's cost, per model and as geometric means.

With --batches 1,8,32, vision and encoder models are also compiled at the
other batch sizes (separate compiles; the model's batch dim is rewritten,
a model whose graph fixes its batch is listed as skipped) and reported
untuned, as the same kind of report: OUT/NAME.bN.html.

  python3 benchmarks/report_zoo.py [--out DIR] [--only NAME,...]
      [--tune-time 30s] [--threads N] [--batches 1] [--rounds 3] [--runs 6]
"""
import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from zoo_vs_peers import shape_args, zoo_models  # noqa: E402

BATCHED_KINDS = ("vision", "nlp-encoder", "zoo")  # gen_zoo: ResNet-50, BERT-base


def run(cmd, log):
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    log.write("$ " + " ".join(cmd) + f"  # {time.time() - t:.1f} s, exit {r.returncode}\n")
    log.write(r.stdout[-4000:] + r.stderr[-4000:] + "\n")
    log.flush()
    return r


def first_error(r):
    lines = [l for l in (r.stderr or r.stdout).splitlines() if "error" in l] or \
        (r.stderr or r.stdout).splitlines() or [f"exit {r.returncode}"]
    return lines[0][:200]


def rebatch(path, batch, out):
    """A copy of the model with every input's first dim set to `batch`."""
    import onnx
    m = onnx.load(path)
    for i in m.graph.input:
        dims = i.type.tensor_type.shape.dim
        if dims and (dims[0].dim_param or dims[0].dim_value == 1):
            dims[0].ClearField("dim_param")
            dims[0].dim_value = batch
    for o in m.graph.output:
        dims = o.type.tensor_type.shape.dim
        if dims:
            dims[0].ClearField("dim_value")
            dims[0].dim_param = "batch"
    del m.graph.value_info[:]
    onnx.save(m, out, save_as_external_data=m.ByteSize() > 1.9e9)
    return out


def report_one(args, name, model, inputs, batch, tuned, log):
    stem = name if batch == 1 else f"{name}.b{batch}"
    bundle = os.path.join(args.work, stem + ".ignb")
    db = os.path.join(args.work, "tuning.db")
    # Other batches: inputs whose first dim is the model's batch of 1.
    shapes = {n: dict(s, shape=[batch] + s["shape"][1:])
              if batch != 1 and s["shape"] and s["shape"][0] == 1 else s
              for n, s in inputs.items()}
    compile_cmd = [args.ignc, model, "-q", "-o", bundle] + shape_args(shapes)
    compile_cmd += ["--tuning-db", db, "--tune-time", args.tune_time] if tuned \
        else ["--no-tuning-db"]
    t = time.time()
    r = run(compile_cmd, log)
    if r.returncode != 0:
        return {"model": stem, "error": "compile: " + first_error(r)}
    tune_s = time.time() - t
    html = os.path.join(args.out, stem + ".html")
    r = run([args.ignc, "report", bundle, "--model", model, "--threads", str(args.threads),
             "--rounds", str(args.rounds), "--runs", str(args.runs), "--cold-runs", "2",
             "-o", html] + (["--tuning-db", db] if tuned else []), log)
    if r.returncode != 0:
        return {"model": stem, "error": "report: " + first_error(r)}
    return {"model": stem, "batch": batch, "tuned": tuned, "compile_s": tune_s,
            "report": read_report(html)}


def worst(report, against):
    """The largest relative L2 error of any output against `against`."""
    errs = [o.get("rel_l2", float("inf")) for s in report["correctness"]
            for o in s.get(against, [])]
    return max(errs) if errs else None


def row(entry):
    if "error" in entry:
        return f"| {entry['model']} | | | | | | | | {entry['error']} |"
    r = entry["report"]
    e = r["end_to_end"]

    def iv(i):
        return f"{i['value']:.2f} [{i['lo']:.2f}, {i['hi']:.2f}]"

    def err(against):
        w = worst(r, against)
        held = next((c["holds"] for c in r["claims"] if c["id"] == "correct/" + against), None)
        return "-" if w is None else f"{w:.1e}" + ("" if held else " (over threshold)")
    ort = e["onnxruntime"]
    ort_ms = f"{ort['warm']['median_ms']:.3f}" if "warm" in ort else "-"
    vs_ort = iv(e["speedup_vs_onnxruntime"]) if "speedup_vs_onnxruntime" in e else \
        "-: " + ort.get("unavailable", "")[:60]
    t = r["tuning"]
    trials = t.get("trials", 0) if t.get("database") else 0
    return (f"| {entry['model']} | {e['bundle']['warm']['median_ms']:.3f} | "
            f"{e['default']['warm']['median_ms']:.3f} | {ort_ms} | "
            f"{iv(e['speedup_vs_default'])} | {vs_ort} | {trials} | "
            f"{err('reference')} | {err('onnxruntime')} |")


def read_report(path):
    text = open(path).read()
    marker = "<script type='application/json' id='ignc-report'>"
    start = text.index(marker) + len(marker)
    return json.loads(text[start:text.index("</script>", start)])


def summary(args, entries, cpu):
    lines = [f"# `ignc report` on the zoo ({time.strftime('%Y-%m-%d')})", "",
             f"Machine: {cpu}, {os.cpu_count()} logical CPUs; {args.threads} thread(s). "
             f"Command: `python3 benchmarks/report_zoo.py --tune-time {args.tune_time} "
             f"--batches {args.batches} --rounds {args.rounds} --runs {args.runs} "
             f"--threads {args.threads}" + (f" --only {args.only}" if args.only else "") + "`.",
             f"Each model tuned for {args.tune_time} (batch 1; other batches untuned), then "
             f"`ignc report --rounds {args.rounds} --runs {args.runs} --cold-runs 2`. "
             "Latencies are warm medians in ms; speedups are ratios of medians with 95% "
             "bootstrap intervals (above 1: the bundle is faster). Each model's page is "
             "NAME.html here; `ignc report --verify` checks it.", "",
             "Errors are the worst relative L2 over outputs and the three input sets; "
             "the thresholds are the tuner's (docs/search.md).", "",
             "| model | bundle ms | default ms | onnxruntime ms | bundle vs default | "
             "bundle vs onnxruntime | trials | rel L2 vs reference | rel L2 vs onnxruntime |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [row(e) for e in entries]
    for key, label in (("speedup_vs_default", "default"), ("speedup_vs_onnxruntime",
                                                           "onnxruntime")):
        for batch in sorted({e.get("batch") for e in entries if "report" in e}):
            vals = [e["report"]["end_to_end"][key]["value"] for e in entries
                    if "report" in e and e["batch"] == batch
                    and key in e["report"]["end_to_end"]]
            if vals:
                g = math.exp(sum(math.log(v) for v in vals) / len(vals))
                lines.append(f"\nBatch {batch}: geometric mean speedup of the bundle over "
                             f"{label}: {g:.3f} ({len(vals)} models).")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ignc", default=os.path.join(HERE, "..", "build", "bin", "ignc"))
    p.add_argument("--out", default=os.path.join(
        HERE, "results", time.strftime("%Y-%m-%d") + "-reports"))
    p.add_argument("--work", default="/tmp/ignc-report-zoo")
    p.add_argument("--only", default="")
    p.add_argument("--tune-time", default="30s")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--batches", default="1")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=6)
    p.add_argument("--summarize", action="store_true",
                   help="only rewrite OUT/README.md from the reports already in OUT")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.summarize:
        entries = []
        for f in sorted(os.listdir(args.out)):
            if f.endswith(".html"):
                stem = f[:-5]
                batch = int(stem.rsplit(".b", 1)[1]) if ".b" in stem else 1
                entries.append({"model": stem, "batch": batch, "tuned": batch == 1,
                                "report": read_report(os.path.join(args.out, f))})
        cpu = entries[0]["report"]["environment"]["cpu_model"] if entries else "?"
        with open(os.path.join(args.out, "README.md"), "w") as f:
            f.write(summary(args, entries, cpu))
        return
    os.makedirs(args.work, exist_ok=True)
    only = {n for n in args.only.split(",") if n}
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), platform.processor())
    batches = [int(b) for b in args.batches.split(",")]
    entries = []
    with open(os.path.join(args.work, "log.txt"), "a") as log:
        for name, path, kind, inputs in zoo_models(only):
            for batch in batches:
                if batch != 1 and kind not in BATCHED_KINDS:
                    continue
                model = path if batch == 1 else rebatch(
                    path, batch, os.path.join(args.work, f"{name}.b{batch}.onnx"))
                entry = report_one(args, name, model, inputs, batch, batch == 1, log)
                entries.append(entry)
                print(row(entry), flush=True)
                with open(os.path.join(args.out, "README.md"), "w") as f:
                    f.write(summary(args, entries, cpu))


if __name__ == "__main__":
    main()
