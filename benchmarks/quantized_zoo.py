#!/usr/bin/env python3
"""Quantized models: ignc vs onnxruntime running the same int8 model.

Quantizes fp32 models of the zoo with onnxruntime's static quantizer (QDQ
format, per-channel int8 weights, uint8 activations, calibrated on 8 seeded
inputs; cached in ~/.cache/ignc-zoo/quant), its transformers also with its
dynamic quantizer (MatMulInteger), and takes the zoo's models that ship
quantized (smart-turn). For each: compile with ignc, check ignc's
outputs and onnxruntime int8's against the reference (onnxruntime with graph
optimizations off: the QDQ graph as written), ignc's in quantization steps
of each output (the scale of the DequantizeLinear that makes it) and
relative L2, top-1 for classifiers, then time
ignc, onnxruntime on the quantized model and onnxruntime on the fp32 model,
interleaved (as zoo_vs_peers.py). Prints and writes (--out) Markdown, --csv
the raw rows.

  python3 benchmarks/quantized_zoo.py [--threads 1,2] [--rounds 3]
      [--only NAME,...] [--before-ignc OLD/ignc] [--out FILE.md] [--csv FILE]

With --before-ignc, an earlier build's bundle is timed in the same rounds
(a "before ms" column and the geometric mean of ignc / before).

Needs numpy and onnxruntime (pip); builds the zoo on first use.
"""
import argparse
import os
import statistics
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo_vs_peers as zoo  # noqa: E402

QUANT = os.path.expanduser("~/.cache/ignc-zoo/quant")
# fp32 models to quantize: vision CNNs, a transformer encoder, a detector.
TO_QUANTIZE = ["resnet50", "mobilenet_v3_large", "efficientnet_b0", "zoo_squeezenet",
               "zoo_inception_v1", "convnext_tiny", "minilm_l6_v2", "vit_s16",
               "yolo_csp_n", "ppocr_v4_rec"]
# Models that ship quantized (QDQ) and run as they are.
SHIPPED = ["smart_turn_v3_2"]
# Transformers quantized dynamically as well (quantize_dynamic: int8 weights,
# activations quantized at run time, DynamicQuantizeLinear + MatMulInteger),
# as onnxruntime recommends for them on CPUs; rows named "NAME (dynamic)".
DYNAMIC = ["minilm_l6_v2", "vit_s16", "bert_base", "gpt2_small", "whisper_tiny_encoder"]


def quantize(name, path, inputs):
    """The QDQ model of `path` (cached); None with the reason if it fails."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                          QuantType, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    os.makedirs(QUANT, exist_ok=True)
    out = os.path.join(QUANT, name + ".qdq.onnx")
    if os.path.exists(out):
        return out
    samples = [zoo.make_inputs(inputs, 100 + i) for i in range(8)]

    class Calibration(CalibrationDataReader):
        def __init__(self):
            self.it = iter(samples)

        def get_next(self):
            return next(self.it, None)

    import onnx
    pre = os.path.join(QUANT, name + ".pre.onnx")
    model = onnx.load(path)
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset < 13:  # per-channel DequantizeLinear (its axis) needs opset 13
        model = onnx.version_converter.convert_version(model, 13)
    source = os.path.join(QUANT, name + ".fp32.onnx")
    onnx.save(model, source)
    try:
        quant_pre_process(source, pre, skip_symbolic_shape=True)
    except Exception:  # noqa: BLE001 - the pre-pass is an optimization only
        pre = source
    quantize_static(pre, out, Calibration(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)
    for f in {pre, source}:
        os.remove(f)
    return out


def quantize_dynamically(name, path):
    """The dynamically quantized model of `path` (cached)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    os.makedirs(QUANT, exist_ok=True)
    out = os.path.join(QUANT, name + ".dyn.onnx")
    if not os.path.exists(out):
        quantize_dynamic(path, out, weight_type=QuantType.QInt8)
    return out


def output_steps(path):
    """Per graph output: the scale of the DequantizeLinear producing it, or
    None (a float op comes after the last DequantizeLinear)."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path, load_external_data=False)
    consts = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "Constant" and n.attribute:
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    producer = {o: n for n in m.graph.node for o in n.output}
    steps = {}
    for o in m.graph.output:
        n = producer.get(o.name)
        scale = consts.get(n.input[1]) if n is not None and n.op_type == "DequantizeLinear" else None
        steps[o.name] = float(np.max(scale)) if scale is not None else None
    return steps


def reference_session(path):
    """onnxruntime with graph optimizations off: the QDQ graph computed as
    written, ONNX's meaning of the model (the optimized session fuses the
    pairs into integer kernels that round differently)."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def top1(got, want):
    """Whether a classifier's top-1 (argmax per batch entry) agrees; None
    for an output that is not a classifier's (fewer than 10 scores)."""
    got, want = got.reshape(got.shape[0], -1), want.reshape(want.shape[0], -1)
    if want.shape[1] < 10:
        return None
    return bool((got.argmax(1) == want.argmax(1)).all())


def compare(ignc, bundle, ort_int8, feeds, work, steps, qpath):
    """ignc's and onnxruntime int8's outputs against the reference: worst
    error in quantization steps (ignc), worst relative L2 and top-1 (both)."""
    out_dir = zoo.ignc_outputs(ignc, bundle, feeds, work)
    ref_sess = reference_session(qpath)
    refs = ref_sess.run(None, feeds)
    fused = ort_int8.run(None, feeds)
    row = {"steps": None, "rel_l2": 0.0, "ort_rel_l2": 0.0, "top1": None, "ort_top1": None}

    def both(key, value):
        if value is not None:
            row[key] = value if row[key] is None else row[key] and value

    for meta, ref, fast in zip(ref_sess.get_outputs(), refs, fused):
        safe = "".join("_" if c in "/\\: " else c for c in meta.name)
        got = np.load(os.path.join(out_dir, safe + ".npy"))
        row["rel_l2"] = max(row["rel_l2"], zoo.rel_l2(got, ref))
        row["ort_rel_l2"] = max(row["ort_rel_l2"], zoo.rel_l2(fast, ref))
        if steps.get(meta.name):
            err = float(np.abs(got.astype(np.float64) - ref).max()) / steps[meta.name]
            row["steps"] = err if row["steps"] is None else max(row["steps"], err)
        if ref.ndim >= 2 and ref.dtype.kind == "f":
            both("top1", top1(got, ref))
            both("ort_top1", top1(fast, ref))
    return row


def measure(name, kind, fp32_path, qpath, inputs, args, work):
    row = {"model": name, "kind": kind}
    bundle = os.path.join(work, "".join(c if c.isalnum() or c in "._-" else "_"
                                        for c in name) + ".ignb")
    err = zoo.compile_ignc(args.ignc, qpath, inputs, bundle)
    if err:
        row["ignc_error"] = err
        return row
    before = None
    if args.before_ignc:
        before = bundle[:-len(".ignb")] + ".before.ignb"
        if err := zoo.compile_ignc(args.before_ignc, qpath, inputs, before):
            row["before_error"] = err
            before = None
    feeds = zoo.make_inputs(inputs, 7)
    input_args = zoo.save_feeds(feeds, work)
    qsess = {t: zoo.ort_session(qpath, t) for t in args.threads}
    row.update(compare(args.ignc, bundle, next(iter(qsess.values())), feeds, work,
                       output_steps(qpath), qpath))
    for t in args.threads:
        calls = {"ort_int8": lambda s=qsess[t]: s.run(None, feeds)}
        if fp32_path:
            fs = zoo.ort_session(fp32_path, t)
            calls["ort_fp32"] = lambda s=fs: s.run(None, feeds)
        for fn in calls.values():
            fn()
        runs = {k: zoo.runs_for(zoo.time_call(fn, 1)) for k, fn in calls.items()}
        samples = {k: [] for k in list(calls) + ["ignc"] + (["before"] if before else [])}
        for _ in range(args.rounds):
            samples["ignc"].append(zoo.time_ignc(args.ignc, bundle, t, runs["ort_int8"],
                                                 input_args))
            if before:
                samples["before"].append(zoo.time_ignc(args.before_ignc, before, t,
                                                       runs["ort_int8"], input_args))
            for k, fn in calls.items():
                samples[k].append(zoo.time_call(fn, runs[k]))
        for k, v in samples.items():
            row[f"{k}_ms_t{t}"] = statistics.median(v)
    return row


def report(rows, args):
    before = f"Before: {args.before_ignc}. " if args.before_ignc else ""
    lines = [f"Machine: {zoo.cpu_name()}, {os.cpu_count()} cores. {before}"
             f"onnxruntime {__import__('onnxruntime').__version__}. "
             f"{args.rounds} interleaved rounds per model and thread count.", ""]
    for t in args.threads:
        lines += [f"### {t} thread(s)", "",
                  "| model | kind | ignc ms | before ms | ort int8 ms | ort fp32 ms "
                  "| ignc / ort int8 | ort fp32 / int8 | ignc error (steps) | ignc rel L2 "
                  "| ort int8 rel L2 | top-1 ignc / ort |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        ratios, changes = [], []
        for r in rows:
            if "ignc_error" in r:
                lines.append(f"| {r['model']} | {r['kind']} | refused: {r['ignc_error']} "
                             "| | | | | | | | | |")
                continue
            i, q, f = (r.get(f"{k}_ms_t{t}") for k in ("ignc", "ort_int8", "ort_fp32"))
            b = r.get(f"before_ms_t{t}")
            ratios.append(i / q)
            if b:
                changes.append(i / b)
            steps = "-" if r["steps"] is None else f"{r['steps']:.2f}"
            yes = {None: "-", True: "yes", False: "NO"}
            fp = f"{f:.3f}" if f else "-"
            fr = f"{f / q:.2f}" if f else "-"
            lines.append(f"| {r['model']} | {r['kind']} | {i:.3f} | "
                         f"{f'{b:.3f}' if b else 'refused' if 'before_error' in r else '-'}"
                         f" | {q:.3f} | {fp} | "
                         f"{i / q:.2f} | {fr} | {steps} | {r['rel_l2']:.1e} | "
                         f"{r['ort_rel_l2']:.1e} | {yes[r['top1']]} / {yes[r['ort_top1']]} |")
        if ratios:
            lines += ["", f"- ignc / onnxruntime int8 at {t} thread(s): geometric mean "
                      f"{zoo.geomean(ratios):.2f} over {len(ratios)} models; best "
                      f"{min(ratios):.2f}, worst {max(ratios):.2f}", ""]
        if changes:
            lines += [f"- ignc / before at {t} thread(s): geometric mean "
                      f"{zoo.geomean(changes):.2f} over {len(changes)} models; best "
                      f"{min(changes):.2f}, worst {max(changes):.2f}", ""]
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="")
    p.add_argument("--ignc", default=os.path.join(zoo.ROOT, "build", "bin", "ignc"))
    p.add_argument("--before-ignc", help="an earlier ignc build, timed side by side")
    p.add_argument("--out")
    p.add_argument("--csv")
    args = p.parse_args()
    args.threads = [int(t) for t in args.threads.split(",")]
    only = set(filter(None, args.only.split(",")))
    models = {m[0]: m for m in zoo.zoo_models(None)}
    rows = []
    with tempfile.TemporaryDirectory(prefix="ignc-quant-") as work:
        entries = ([(n, "static") for n in TO_QUANTIZE] + [(n, "shipped") for n in SHIPPED]
                   + [(n, "dynamic") for n in DYNAMIC])
        for name, how in entries:
            if only and name not in only:
                continue
            _, path, kind, inputs = models[name]
            label = f"{name} (dynamic)" if how == "dynamic" else name
            print(f"{label} ...", flush=True)
            if how == "shipped":
                qpath, fp32 = path, None
            else:
                try:
                    qpath = (quantize_dynamically(name, path) if how == "dynamic"
                             else quantize(name, path, inputs))
                    fp32 = path
                except Exception as e:  # noqa: BLE001 - a quantizer failure is data
                    rows.append({"model": label, "kind": kind,
                                 "ignc_error": f"quantizer failed: {str(e)[:100]}"})
                    continue
            try:
                row = measure(label, kind, fp32, qpath, inputs, args, work)
            except Exception as e:  # noqa: BLE001 - onnxruntime refusing is data
                row = {"model": label, "kind": kind, "ignc_error": f"failed: {str(e)[:120]}"}
            print("  ", row, flush=True)
            rows.append(row)
    zoo.write_results(report(rows, args), rows, args.out, args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
