#!/usr/bin/env python3
"""ignc's default bundles vs onnxruntime and OpenVINO on the broad zoo.

For every model of the zoo (benchmarks/models/wide_zoo.py's manifest, plus
the ResNet-50 and BERT-base of gen_zoo.py): compile it with ignc (default
schedule, no tuning database; a model ignc refuses is listed with the first
line of its error), check ignc's outputs against onnxruntime's on the same
seeded inputs (relative L2 error per output), then time ignc (`ignc bench` on the same inputs),
onnxruntime (CPUExecutionProvider) and OpenVINO (CPU plugin, f32 inference
precision, latency hint) at each thread count; with --tuned-dir also a
bundle tuned for --tune-time per model (a database of its own, replayed by
later runs with the same settings). Timing is interleaved: each
round runs every engine once (a few runs, median), and a model's figure is
the median over its rounds, so a slow spell of the shared machine hits all
engines alike. Prints and writes (--out) a Markdown report: machine, per
model latencies and ratios, geometric means, failures; --csv the raw rows.

  python3 benchmarks/zoo_vs_peers.py [--threads 1,2] [--rounds 5]
      [--only NAME,...] [--before-ignc OLD_IGNC] [--out FILE.md] [--csv FILE]
      [--chip x86-64-v3 --peer-max-isa AVX2]  (AVX2 code on an AVX-512 machine)
      [--tuned-dir DIR --tune-time 3m --tune-threads 0] [--plot FILE.svg]

Needs numpy, onnxruntime and openvino (pip; OpenVINO's column is left out
when it is not installed). Builds the zoo on first use (wide_zoo.py installs
torch for its exports).
"""
import argparse
import hashlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from xml.sax.saxutils import escape

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"))
from text_page import text_page  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
WIDE = os.path.expanduser("~/.cache/ignc-zoo/wide")
GEN = os.path.expanduser("~/.cache/ignc-zoo")
GEN_ZOO = {
    "resnet50": {"input": {"shape": [1, 3, 224, 224], "dtype": "float32"}},
    "bert_base": {"input_ids": {"shape": [1, 128], "dtype": "int64", "high": 30522},
                  "attention_mask": {"shape": [1, 128], "dtype": "int64", "high": 2}},
}


def zoo_models(only):
    """(name, path, kind, inputs) of every zoo model, building the zoos."""
    subprocess.run([sys.executable, os.path.join(HERE, "models", "wide_zoo.py"), WIDE],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, os.path.join(HERE, "models", "gen_zoo.py"), GEN],
                   check=True, stdout=subprocess.DEVNULL)
    models = [(n, os.path.join(GEN, n + ".onnx"), "zoo", i) for n, i in GEN_ZOO.items()]
    manifest = json.load(open(os.path.join(WIDE, "manifest.json")))
    for m in manifest["models"]:
        models.append((m["name"], os.path.join(WIDE, m["file"]), m["kind"], m["inputs"]))
    if only:
        unknown = sorted(only - {m[0] for m in models})
        if unknown:
            sys.exit(f"zoo_vs_peers: no model named {', '.join(unknown)} in the zoo "
                     f"(names: {', '.join(m[0] for m in models)})")
        models = [m for m in models if m[0] in only]
    return models


# Inputs of models whose outputs random values make degenerate, so that the
# relative L2 against onnxruntime means something: a page of rendered text
# for PP-OCRv4's detector (models/text_page.py says why).
CONTENT = {"ppocr_v4_det": {"x": "text_page"}}


def make_inputs(inputs, seed, model=None):
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, spec in inputs.items():
        shape, dtype = spec["shape"], np.dtype(spec["dtype"])
        content = CONTENT.get(model, {}).get(name)
        page = text_page(shape) if content == "text_page" else None
        if page is not None:
            x = page.astype(dtype)
        elif "value" in spec:
            x = np.full(shape, spec["value"], dtype=dtype)
        elif np.issubdtype(dtype, np.integer):
            x = rng.integers(0, spec.get("high", 2), size=shape).astype(dtype)
            if "mask" in name:
                x[..., 0] = 1  # never mask a whole row
        else:
            x = (rng.uniform(0.05, 1.0, size=shape) *
                 rng.choice([-1.0, 1.0], size=shape)).astype(dtype)
        feeds[name] = x
    return feeds


def shape_args(inputs):
    args = []
    for name, spec in inputs.items():
        if spec["shape"]:  # a scalar has no dims to bind
            args += ["--input-shape", f"{name}=" + "x".join(map(str, spec["shape"]))]
    return args


def compile_ignc(ignc, path, inputs, out, precision="fp32", chip=None, tuning=None):
    """None on success, else the first line of ignc's error. `tuning`: the
    tuning arguments (a database, a budget); none: default schedules."""
    extra = [] if precision == "fp32" else ["--precision", precision]
    # The bundle runs here: split for this machine's cores as for --chip host.
    extra += ["--chip", chip, "--cores", str(os.cpu_count())] if chip else []
    extra += tuning if tuning else ["--no-tuning-db"]
    r = subprocess.run([ignc, path, "-q", "-o", out] + shape_args(inputs)
                       + extra, capture_output=True, text=True)
    if r.returncode == 0:
        return None
    lines = [l for l in (r.stderr or r.stdout).splitlines() if l.strip()]
    return (lines[0] if lines else f"exit {r.returncode}")[:160]


def ignc_outputs(ignc, bundle, feeds, work):
    args = []
    for name, x in feeds.items():
        f = os.path.join(work, f"in_{len(args)}.npy")
        np.save(f, x)
        args += ["--input", f"{name}={f}"]
    out_dir = os.path.join(work, "out")
    subprocess.run([ignc, "run", bundle, "--output-dir", out_dir, "-q"] + args,
                   check=True, capture_output=True)
    return out_dir


def rel_l2(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    if a.shape != b.shape:
        return float("inf")
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def check_outputs(ignc, bundle, sess, feeds, work):
    """Worst relative L2 error of ignc's outputs against onnxruntime's."""
    out_dir = ignc_outputs(ignc, bundle, feeds, work)
    ref = sess.run(None, feeds)
    worst = 0.0
    for meta, r in zip(sess.get_outputs(), ref):
        # `ignc run` names the file after the output, with / \ : and space as _.
        safe = "".join("_" if c in "/\\: " else c for c in meta.name)
        f = os.path.join(out_dir, safe + ".npy")
        if not os.path.exists(f):
            return float("nan")
        worst = max(worst, rel_l2(np.load(f), r))
    return worst


def ort_session(path, threads):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def ov_model(core, path, threads, precision="fp32"):
    return core.compile_model(path, "CPU", {
        "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32" if precision == "fp32" else precision,
        "NUM_STREAMS": 1})


OV_PROBE = """
import json, sys, numpy as np, openvino
arrays = np.load(sys.argv[2])
feeds = {n: arrays[f"arr_{i}"] for i, n in enumerate(json.loads(sys.argv[5]))}
m = openvino.Core().compile_model(sys.argv[1], "CPU", {"INFERENCE_NUM_THREADS": int(sys.argv[3]),
    "PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": sys.argv[4], "NUM_STREAMS": 1})
r = m.create_infer_request()
r.infer({m.input(k).get_any_name(): v for k, v in feeds.items()})
"""


def ov_crashes(path, feeds, threads, precision, work):
    """Whether OpenVINO dies on this model (in a child process, so that its
    crash is a row's note and not the end of the run): with its kernels
    limited to AVX2 (ONEDNN_MAX_CPU_ISA) some models segfault in oneDNN."""
    f = os.path.join(work, "ov_probe.npz")
    np.savez(f, *feeds.values())  # by position: an input may be named "file"
    try:
        r = subprocess.run([sys.executable, "-c", OV_PROBE, path, f, str(threads),
                            "f32" if precision == "fp32" else precision,
                            json.dumps(list(feeds))],
                           capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "OpenVINO took over 10 minutes to compile and run once"
    return r.returncode < 0 and f"OpenVINO died with signal {-r.returncode}"


def accuracy_bound(precision):
    """Largest relative L2 distance from onnxruntime's outputs accepted."""
    return 1e-4 if precision == "fp32" else 5e-2


def time_call(fn, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def save_feeds(feeds, work):
    """The feeds as .npy files; `ignc bench --input` arguments for them."""
    args = []
    for name, v in feeds.items():
        f = os.path.join(work, f"feed_{len(args)}.npy")
        np.save(f, v)
        args += ["--input", f"{name}={f}"]
    return args


def time_ignc(ignc, bundle, threads, runs, input_args):
    """ignc bench's median on the peers' inputs (a model may branch on them).

    After a pause: onnxruntime's workers in this process spin for a few ms
    after a run, and took a core from the `ignc bench` started at once (a
    0.35 ms model read 0.60 ms at two threads in 4 of 5 processes; none
    after 10 ms)."""
    time.sleep(0.05)
    r = subprocess.run([ignc, "bench", bundle, "--json", "--threads", str(threads),
                        "--warmup", "1", "--repeat", str(runs), *input_args],
                       check=True, capture_output=True, text=True)
    return json.loads(r.stdout)["latency_ms"]["median"]


def runs_for(ms):
    """Runs per round: about 0.3 s of work, 3 to 20."""
    return int(min(20, max(3, math.ceil(300.0 / max(ms, 1e-3)))))


def tuning_settings(args):
    """What a tuned database depends on: a replay with other settings (another
    ignc, CPU or precision: the database keys its records by the target's
    fingerprint) would quietly run default schedules."""
    with open(args.ignc, "rb") as f:
        build = hashlib.sha256(f.read()).hexdigest()[:16]
    return json.dumps({"ignc": build, "cpu": cpu_name(), "precision": args.precision,
                       "tune_time": args.tune_time, "tune_threads": args.tune_threads},
                      sort_keys=True)


def tuning_args(args, name):
    """ignc's arguments for the tuned bundle of model `name`: its own
    database in --tuned-dir, tuned for --tune-time unless the database
    holds a finished run with these settings (then its schedules are
    replayed: a benchmark re-run does not tune again)."""
    db = os.path.join(args.tuned_dir, name + ".db")
    done = os.path.join(args.tuned_dir, name + ".tuned")
    tuning = ["--tuning-db", db]
    if os.path.exists(db) and os.path.exists(done) and \
            open(done).read() == args.tuning_settings:
        return tuning
    # A database from other settings, or a run killed before its check
    # (measure() writes the marker once the tuned bundle's outputs are
    # checked), tunes anew.
    for stale in (db, done):
        if os.path.exists(stale):
            os.remove(stale)
    return tuning + ["--tune-time", args.tune_time, "--tune-threads", str(args.tune_threads)]


def measure(model, args, ov_core, work):
    """One model: compile, check, then interleaved timing rounds."""
    name, path, kind, inputs = model
    row = {"model": name, "kind": kind}
    engines = {"ignc": args.ignc}
    if args.before_ignc:
        engines["before"] = args.before_ignc
    if args.tuned_dir:
        engines["tuned"] = args.ignc
    bundles = {}
    for tag, exe in engines.items():
        bundles[tag] = os.path.join(work, f"{name}.{tag}.ignb")
        t = time.perf_counter()
        err = compile_ignc(exe, path, inputs, bundles[tag],
                           "fp32" if tag == "before" else args.precision,
                           args.before_chip if tag == "before" else args.chip,
                           tuning_args(args, name) if tag == "tuned" else None)
        row[f"{tag}_compile_s"] = time.perf_counter() - t
        if err:
            row[f"{tag}_error"] = err
    feeds = make_inputs(inputs, 7, name)
    input_args = save_feeds(feeds, work)
    sess1 = ort_session(path, 1)
    for tag, key in (("ignc", "rel_l2"), ("tuned", "tuned_rel_l2")):
        if tag not in engines or f"{tag}_error" in row:
            continue
        try:
            row[key] = check_outputs(args.ignc, bundles[tag], sess1, feeds, work)
        except subprocess.CalledProcessError as e:
            row[f"{tag}_error"] = "ignc run failed: " + (e.stderr or b"").decode()[:120]
        if tag == "tuned" and row.get(key, math.inf) <= accuracy_bound(args.precision):
            with open(os.path.join(args.tuned_dir, name + ".tuned"), "w") as f:
                f.write(args.tuning_settings)
    # Probed once per model, at the first thread count.
    crash = ov_core is not None and args.peer_max_isa and \
        ov_crashes(path, feeds, args.threads[0], args.precision, work)
    for t in args.threads:
        sess = sess1 if t == 1 else ort_session(path, t)
        calls = {"ort": lambda s=sess: s.run(None, feeds)}
        if crash:
            row["openvino_error"] = crash
        elif ov_core is not None:
            try:
                compiled = ov_model(ov_core, path, t, args.precision)
                request = compiled.create_infer_request()
                ov_feeds = {compiled.input(k).get_any_name(): v for k, v in feeds.items()}
                request.infer(ov_feeds)
                calls["openvino"] = lambda r=request, f=ov_feeds: r.infer(f)
            except Exception as e:  # noqa: BLE001 - a peer's refusal is data
                row["openvino_error"] = str(e).splitlines()[0][:120]
        for fn in calls.values():
            fn()  # warm-up
        samples = {k: [] for k in list(calls) + [e for e in engines if f"{e}_error" not in row]}
        runs = {k: runs_for(time_call(fn, 1)) for k, fn in calls.items()}
        timers = [(tag, lambda tag=tag: time_ignc(engines[tag], bundles[tag], t, runs["ort"],
                                                   input_args))
                  for tag in engines if f"{tag}_error" not in row]
        timers += [(k, lambda k=k, fn=fn: time_call(fn, runs[k])) for k, fn in calls.items()]
        for i in range(args.rounds):
            # Every other round in reverse: an engine's place in the round
            # biased it (two identical ignc bundles, one timed right after
            # the other: 0.97 over 15 models at two threads, 2 rounds).
            for k, timer in (timers if i % 2 == 0 else timers[::-1]):
                samples[k].append(timer())
        for k, v in samples.items():
            if v:
                row[f"{k}_ms_t{t}"] = statistics.median(v)
    return row


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def isa_note(args):
    """Which instructions each engine was allowed, when not all this machine has."""
    notes = []
    if args.chip:
        notes.append(f"ignc's kernels built for `--chip {args.chip} --cores {os.cpu_count()}`"
                     + (f", the before build's for `--chip {args.before_chip}`"
                        if args.before_chip else
                        ", the before build's for this machine" if args.before_ignc else ""))
    elif args.before_chip:
        notes.append(f"the before build's kernels built for `--chip {args.before_chip} "
                     f"--cores {os.cpu_count()}`")
    if args.peer_max_isa:
        notes.append(f"OpenVINO's oneDNN kernels limited to {args.peer_max_isa} "
                     f"(`ONEDNN_MAX_CPU_ISA={args.peer_max_isa}`)")
    if notes:
        notes.append("onnxruntime uses every instruction this machine has")
    return "".join(f" {n}." for n in notes)


def report(rows, args, have_ov):
    import onnxruntime as ort
    flags = open("/proc/cpuinfo").read()
    isa = "AVX-512" if " avx512f " in flags else ("AVX2" if " avx2 " in flags else "SSE")
    isa += "".join(f", {name}" for flag, name in ((" avx512_bf16 ", "AVX512-BF16"),
                                                  (" amx_tile ", "AMX")) if flag in flags)
    lines = [f"Machine: {cpu_name()} ({isa}), {os.cpu_count()} cores. "
             f"onnxruntime {ort.__version__}"
             + (f", OpenVINO {__import__('openvino').__version__}" if have_ov else "")
             + f". {args.rounds} interleaved rounds per model and thread count."
             + ("" if args.precision == "fp32" else
                f" Precision {args.precision}: ignc --precision={args.precision} and OpenVINO's "
                f"INFERENCE_PRECISION_HINT={args.precision}; onnxruntime"
                + (" and the before build" if args.before_ignc else "") + " in fp32.")
             + isa_note(args), ""]
    if args.tuned_dir:
        lines += [f"Tuned: each model tuned for {args.tune_time} (`--tune-time "
                  f"{args.tune_time} --tune-threads {args.tune_threads}`, a database of its own "
                  f"in `{args.tuned_dir}`; a database from an earlier run is replayed, "
                  "not tuned again), the bundle timed in the same rounds.", ""]
    peers = ["ort"] + (["openvino"] if have_ov else [])
    ours = ["ignc"] + (["tuned"] if args.tuned_dir else [])
    for t in args.threads:
        head = "| model | kind | ignc ms |" + (" before ms |" if args.before_ignc else "") + \
            (" tuned ms |" if args.tuned_dir else "") + "".join(f" {p} ms |" for p in peers) + \
            "".join(f" {o} / {p} |" for o in ours for p in peers) + \
            (" tuned / ignc |" if args.tuned_dir else "") + " rel L2 vs ort |" + \
            (" tuned rel L2 |" if args.tuned_dir else "")
        lines += [f"### {t} thread(s)", "", head, "|---|---|" + "---:|" * (head.count("|") - 3)]
        ratios = {pair: [] for pair in [(o, p) for o in ours for p in peers] + [("tuned", "ignc")]}
        for r in rows:
            ms = {e: r.get(f"{e}_ms_t{t}") for e in ["ignc", "before", "tuned"] + peers}
            cells = [r["model"], r["kind"]]
            cells += [f"{ms[e]:.3f}" if ms[e] else "—" for e in
                      ["ignc"] + (["before"] if args.before_ignc else []) + ours[1:] + peers]
            pairs = [(o, p) for o in ours for p in peers] + \
                ([("tuned", "ignc")] if args.tuned_dir else [])
            for o, p in pairs:
                if ms[o] and ms[p]:
                    ratios[(o, p)].append(ms[o] / ms[p])
                    cells.append(f"{ms[o] / ms[p]:.2f}")
                else:
                    cells.append("—")
            for key in ["rel_l2"] + (["tuned_rel_l2"] if args.tuned_dir else []):
                e = r.get(key)
                cells.append(f"{e:.1e}" if e is not None else "—")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        for (o, p), rs in ratios.items():
            if rs:
                lines.append(f"- {o} / {p} at {t} thread(s): geometric mean "
                             f"{geomean(rs):.2f} over {len(rs)} models; best {min(rs):.2f}, "
                             f"worst {max(rs):.2f}; {sum(x <= 1.0 for x in rs)} at or below "
                             f"1.0, {sum(x > 1.5 for x in rs)} above 1.5")
        if have_ov:
            ov = [r[f"openvino_ms_t{t}"] / r[f"ort_ms_t{t}"] for r in rows
                  if r.get(f"openvino_ms_t{t}") and r.get(f"ort_ms_t{t}")]
            lines.append(f"- openvino / ort at {t} thread(s): geometric mean {geomean(ov):.2f} over {len(ov)} models")
        lines.append("")
    failed = [r for r in rows if "ignc_error" in r]
    lines.append(f"ignc compiled {len(rows) - len(failed)} of {len(rows)} models.")
    for r in failed:
        lines.append(f"- {r['model']}: {r['ignc_error']}")
    for r in rows:
        if "tuned_error" in r and "ignc_error" not in r:
            lines.append(f"- the tuned bundle of {r['model']}: {r['tuned_error']}")
        e = r.get("tuned_rel_l2")
        if e is not None and not e <= accuracy_bound(args.precision):
            lines.append(f"- the tuned bundle of {r['model']}: outputs differ from "
                         f"onnxruntime's (relative L2 {e:.2e})")
    for r in rows:
        if "before_error" in r:
            lines.append(f"- the before build on {r['model']}: {r['before_error']}")
    wrong = [r for r in rows if r.get("rel_l2") is not None and not r["rel_l2"] <= accuracy_bound(args.precision)]
    for r in wrong:
        lines.append(f"- {r['model']}: outputs differ from onnxruntime's (relative L2 {r['rel_l2']:.2e})")
    for r in rows:
        if "openvino_error" in r:
            lines.append(f"- OpenVINO on {r['model']}: {r['openvino_error']}")
    return "\n".join(lines)


PLOT_SERIES = (("ignc", "ignc default", "#1f5fbf"), ("tuned", "ignc tuned", "#1a9641"),
               ("openvino", "OpenVINO", "#e66101"))


def plot_svg(rows, threads, title):
    """An SVG dot plot, one panel per thread count: every model's latency
    over onnxruntime's (log scale, 1 = level; left of it is faster) for ignc's
    default and tuned bundles and OpenVINO, models sorted by the default's
    ratio at the first thread count."""
    def ratio(r, e, t):
        a, b = r.get(f"{e}_ms_t{t}"), r.get(f"ort_ms_t{t}")
        return a / b if a and b else None
    # Models with no default ratio at the first thread count go last.
    models = sorted((r for r in rows if any(ratio(r, e, t) for e, _, _ in PLOT_SERIES
                                            for t in threads)),
                    key=lambda r: ratio(r, "ignc", threads[0]) or math.inf)
    series = [s for s in PLOT_SERIES if any(ratio(r, s[0], t) for r in models for t in threads)]
    lo, hi, width, row_h, left, top = 0.25, 4.0, 300, 14, 170, 60
    x = lambda v: left + width * math.log(min(max(v, lo), hi) / lo) / math.log(hi / lo)
    panel = width + left + 30
    h = top + row_h * len(models) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{panel * len(threads)}" '
           f'height="{h}" font-family="sans-serif" font-size="10">',
           f'<text x="10" y="16" font-size="12">{escape(title)}</text>',
           '<text x="340" y="33">(hollow: beyond the axis, drawn at its end)</text>']
    for i, (_, name, color) in enumerate(series):
        out.append(f'<circle cx="{14 + 110 * i}" cy="30" r="4" fill="{color}"/>'
                   f'<text x="{22 + 110 * i}" y="33">{name}</text>')
    for p, t in enumerate(threads):
        dx = p * panel
        out.append(f'<text x="{dx + left}" y="{top - 8}">latency / onnxruntime\'s, '
                   f'{t} thread(s)</text>')
        for v in (0.25, 0.5, 1, 2, 4):
            out.append(f'<line x1="{dx + x(v):.1f}" y1="{top}" x2="{dx + x(v):.1f}" '
                       f'y2="{h - 30}" stroke="{"#000" if v == 1 else "#ccc"}"/>'
                       f'<text x="{dx + x(v) - 6:.1f}" y="{h - 16}">{v:g}</text>')
        for j, r in enumerate(models):
            y = top + row_h * j + row_h / 2
            out.append(f'<text x="{dx + left - 6}" y="{y + 3:.1f}" '
                       f'text-anchor="end">{escape(r["model"])}</text>')
            for e, _, color in series:
                v = ratio(r, e, t)
                if v:
                    fill = f'fill="{color}" fill-opacity="0.8"' if lo <= v <= hi else \
                        f'fill="none" stroke="{color}"'
                    out.append(f'<circle cx="{dx + x(v):.1f}" cy="{y:.1f}" r="3.5" {fill}/>')
    return "\n".join(out + ["</svg>"]) + "\n"


def write_results(text, rows, out, csv_path):
    """Prints the report; writes it to `out` and the rows to `csv_path` (each
    when given)."""
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    if csv_path:
        keys = sorted({k for r in rows for k in r})
        with open(csv_path, "w") as f:
            f.write(",".join(keys) + "\n")
            for r in rows:
                f.write(",".join(str(r.get(k, "")).replace(",", ";") for k in keys) + "\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ignc", default=os.path.join(ROOT, "build", "bin", "ignc"))
    p.add_argument("--before-ignc", help="an earlier ignc build, timed side by side")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", help="comma-separated model names")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                   help="ignc's --precision and OpenVINO's inference precision; "
                   "onnxruntime and --before-ignc stay fp32")
    p.add_argument("--chip", help="the CPU ignc builds its kernels for (e.g. x86-64-v3: AVX2 "
                   "code on an AVX-512 machine), with this machine's --cores")
    p.add_argument("--peer-max-isa", choices=["SSE41", "AVX", "AVX2", "AVX2_VNNI",
                                              "AVX512_CORE", "AVX512_CORE_VNNI",
                                              "AVX512_CORE_BF16"],
                   help="the widest ISA OpenVINO may use (oneDNN's ONEDNN_MAX_CPU_ISA); "
                   "onnxruntime has no such switch and uses every instruction")
    p.add_argument("--before-chip", help="the same for --before-ignc (default: this machine; "
                   "the before build must know --cores)")
    p.add_argument("--tuned-dir", help="also time a tuned bundle of every model: each tuned "
                   "for --tune-time with a database of its own kept here (an existing one is "
                   "replayed, not tuned again)")
    p.add_argument("--tune-time", default="3m", help="tuning budget per model (with --tuned-dir)")
    p.add_argument("--tune-threads", type=int, default=0,
                   help="threads candidates are measured with while tuning (0: one per core)")
    p.add_argument("--out")
    p.add_argument("--csv")
    p.add_argument("--plot", help="an SVG of every model's latency against onnxruntime's")
    args = p.parse_args()
    if args.tuned_dir:
        if args.chip:
            p.error("--tuned-dir tunes on this machine: it cannot be combined with --chip")
        os.makedirs(args.tuned_dir, exist_ok=True)
        args.tuning_settings = tuning_settings(args)
    args.threads = [int(t) for t in args.threads.split(",")]
    if args.peer_max_isa:
        # oneDNN (inside OpenVINO's CPU plugin) reads this before its first kernel.
        os.environ["ONEDNN_MAX_CPU_ISA"] = args.peer_max_isa
    try:
        import openvino
        ov_core = openvino.Core()
    except ImportError:
        ov_core = None
        print("openvino is not installed (pip install openvino): its column is left out")
    only = set(args.only.split(",")) if args.only else None
    rows = []
    with tempfile.TemporaryDirectory(prefix="ignc-zoo-") as work:
        for model in zoo_models(only):
            print(f"{model[0]} ...", flush=True)
            row = measure(model, args, ov_core, work)
            rows.append(row)
            print("  " + json.dumps({k: (float(f"{v:.4g}") if isinstance(v, float) else v)
                                     for k, v in row.items()}), flush=True)
    write_results(report(rows, args, ov_core is not None), rows, args.out, args.csv)
    if args.plot:
        with open(args.plot, "w") as f:
            f.write(plot_svg(rows, args.threads, f"{cpu_name()}, {os.cpu_count()} cores, "
                             f"{time.strftime('%Y-%m-%d')}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
