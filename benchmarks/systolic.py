#!/usr/bin/env python3
"""Systolic target: SCALE-Sim's fixed mapping vs ignc's tuned mapping.

One command:

    python3 benchmarks/systolic.py [--ignc build/bin/ignc] [--scalesim-check N]

For every conv layer of ResNet-50 (torchvision's, 53 convolutions and the
classifier as a 1x1 convolution) and each array below, runs `ignc sim` twice
on the same SCALE-Sim topology and configuration: once with SCALE-Sim's fixed
mapping for the configured dataflow (`--mapping scalesim`; with unlimited
bandwidth its cycle counts equal SCALE-Sim 3.0.0's, see docs/systolic.md), once
with the mapping the simulator finds fastest (`--mapping tuned`: every
dataflow the array runs, partial sums stored or accumulated, stream chunks,
ranked by the analytical tier and measured by the cycle-level tier).

Arrays: SCALE-Sim-style 32x32 configurations with unlimited bandwidth (CALC)
for each fixed dataflow, a 128x128 WS one, and the gemmini-16 and tpu-v1
presets (limited DRAM bandwidth; both mappings then run on ignc's cycle-level
simulator only).

With --scalesim-check N (needs `pip install scalesim "numpy<2.3"`), the N
smallest layers of the first configuration are also run through SCALE-Sim
itself and its total cycles compared with `--mapping scalesim`'s.

With --model M.onnx --input-shape NAME=1x3x224x224 (e.g. ResNet-18 from
benchmarks/models/export_torch.py), the whole model is also compiled with
--target=systolic for gemmini-16 and tpu-v1, run on the simulator on a seeded
random input, and compared with onnxruntime (relative L2, top-1/top-5 of the
first output), with the simulated cycles and time at each chip's clock.

Writes benchmarks/results/<date>-systolic.md and a CSV beside it.
"""
import argparse
import csv
import datetime
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CFG = """[general]
run_name = {name}

[architecture_presets]
ArrayHeight: {rows}
ArrayWidth: {cols}
IfmapSramSzkB: {kb}
FilterSramSzkB: {kb}
OfmapSramSzkB: {kb}
IfmapOffset: 0
FilterOffset: 10000000
OfmapOffset: 20000000
Dataflow : {df}
Bandwidth : 10
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: 10
IfmapSRAMBankNum: 10
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: 10
FilterSRAMBankNum: 10
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: CALC
UseRamulatorTrace: False
"""


def resnet50_layers():
    """(name, ifmap h, ifmap w, filter h, filter w, channels, filters, stride)
    for torchvision's ResNet-50 (v1.5: the stride on the 3x3 convolution).
    SCALE-Sim takes no padding: the ifmap size is the padded extent that
    gives PyTorch's output size under SCALE-Sim's ceil((in - f + s) / s)."""
    layers = []

    def conv(name, out, f, cin, cout, s):
        ifmap = (out - 1) * s + f
        layers.append((name, ifmap, ifmap, f, f, cin, cout, s))

    conv("conv1", 112, 7, 3, 64, 2)
    cin, size = 64, 56
    for stage, (blocks, width) in enumerate([(3, 64), (4, 128), (6, 256), (3, 512)], 1):
        cout = width * 4
        for b in range(blocks):
            stride = 2 if (b == 0 and stage > 1) else 1
            out = size // stride
            p = f"layer{stage}.{b}"
            conv(p + ".conv1", size, 1, cin, width, 1)
            conv(p + ".conv2", out, 3, width, width, stride)
            conv(p + ".conv3", out, 1, width, cout, 1)
            if b == 0:
                conv(p + ".downsample", out, 1, cin, cout, stride)
            cin, size = cout, out
    conv("fc", 1, 1, 2048, 1000, 1)
    return layers


def write_topology(path, layers):
    with open(path, "w") as f:
        f.write("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
                "Channels, Num Filter, Strides,\n")
        for l in layers:
            f.write(",".join(str(x) for x in l) + ",\n")


def read_compute_report(path):
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            cells = [c.strip() for c in line.split(",")]
            rows.append({"total": int(cells[2]), "end_to_end": int(cells[1]),
                         "stall": int(cells[3]), "util": float(cells[4])})
    return rows


def run_sim(ignc, machine_args, topo, mapping, out):
    cmd = [ignc, "sim", *machine_args, "--topology", topo, "--mapping", mapping,
           "--output-dir", out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    mappings = []
    for line in p.stdout.splitlines()[2:]:
        parts = line.split()
        # name M K N <mapping words...> cycles util stall
        mappings.append(" ".join(parts[4:-3]))
    return read_compute_report(os.path.join(out, "COMPUTE_REPORT.csv")), mappings


def scalesim_cycles(cfg, topo, workdir):
    from scalesim.scale_sim import scalesim  # noqa: E402
    s = scalesim(save_disk_space=True, verbose=False, config=cfg, topology=topo,
                 layout=topo, input_type_gemm=False)
    s.run_scale(top_path=workdir)
    import glob
    [report] = glob.glob(os.path.join(workdir, "*", "COMPUTE_REPORT.csv"))
    return [r["total"] for r in read_compute_report(report)]


def run_model(args, work):
    """The whole model on gemmini-16 and tpu-v1 against onnxruntime."""
    import re
    import numpy as np
    name, dims = args.input_shape.split("=")
    shape = tuple(int(d) for d in dims.split("x"))
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    xin = os.path.join(work, "model_input.npy")
    np.save(xin, x)
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(args.model)
        ref = sess.run(None, {name: x})[0]
        out_name = sess.get_outputs()[0].name
    except ImportError:
        ref, out_name = None, None
    lines = [f"\n## {os.path.basename(args.model)} on the simulated chips\n",
             f"Input {name} {dims}, seeded standard normal; reference onnxruntime.\n",
             "| chip | kernels on the array | cycles | utilization | time at the chip's clock | rel L2 vs onnxruntime | top-1 same | top-5 overlap |",
             "|---|---|---:|---:|---:|---:|---|---:|"]
    for chip in ["gemmini-16", "tpu-v1"]:
        bundle = os.path.join(work, f"model_{chip}.ignb")
        c = subprocess.run([args.ignc, args.model, "--input-shape", args.input_shape,
                            "--target=systolic", f"--chip={chip}", "-o", bundle],
                           capture_output=True, text=True)
        if c.returncode != 0:
            sys.exit(f"compiling for {chip} failed:\n{c.stderr}")
        on_array = re.search(r"(\d+ of \d+) kernels on the array", c.stderr).group(1)
        outdir = os.path.join(work, f"model_{chip}.out")
        r = subprocess.run([args.ignc, "run", bundle, "--input", f"{name}={xin}",
                            "--output-dir", outdir], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"running on {chip} failed:\n{r.stderr}")
        m = re.search(r"device: \d+ launches on the simulated array, (\d+) cycles, "
                      r"([\d.]+)% utilization, ([\d.]+) ms", r.stdout)
        cycles, util, ms = int(m.group(1)), float(m.group(2)), float(m.group(3))
        rel = top1 = top5 = "-"
        if ref is not None:
            got = np.load(os.path.join(outdir, out_name.replace("/", "_").replace(":", "_") + ".npy"))
            rel = f"{np.linalg.norm(got - ref) / np.linalg.norm(ref):.2e}"
            a, b = got.reshape(got.shape[0], -1)[0], ref.reshape(ref.shape[0], -1)[0]
            top1 = "yes" if a.argmax() == b.argmax() else "no"
            top5 = str(len(set(np.argsort(-a)[:5]) & set(np.argsort(-b)[:5])))
        lines.append(f"| {chip} | {on_array} | {cycles:,} | {util:.1f} % | {ms:.3f} ms | "
                     f"{rel} | {top1} | {top5} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ignc", default=os.path.join(ROOT, "build", "bin", "ignc"))
    ap.add_argument("--scalesim-check", type=int, default=0, metavar="N")
    ap.add_argument("--model", default=None, metavar="M.onnx")
    ap.add_argument("--input-shape", default=None, metavar="NAME=DIMS")
    ap.add_argument("--out", default=os.path.join(
        HERE, "results", f"{datetime.date.today()}-systolic.md"))
    args = ap.parse_args()

    layers = resnet50_layers()
    work = tempfile.mkdtemp(prefix="ignc-systolic-")
    topo = os.path.join(work, "resnet50.csv")
    write_topology(topo, layers)

    machines = []
    for df in ["ws", "os", "is"]:
        cfg = os.path.join(work, f"scale32_{df}.cfg")
        with open(cfg, "w") as f:
            f.write(CFG.format(name=f"scale32_{df}", rows=32, cols=32, kb=64, df=df))
        machines.append((f"32x32 {df.upper()}, 64 KiB SRAMs, unlimited bandwidth",
                         ["--config", cfg], cfg))
    cfg = os.path.join(work, "scale128_ws.cfg")
    with open(cfg, "w") as f:
        f.write(CFG.format(name="scale128_ws", rows=128, cols=128, kb=1024, df="ws"))
    machines.append(("128x128 WS, 1 MiB SRAMs, unlimited bandwidth", ["--config", cfg], cfg))
    machines.append(("gemmini-16 (16 B/cycle DRAM)", ["--chip", "gemmini-16"], None))
    machines.append(("tpu-v1 (34 GB/s DRAM at 700 MHz)", ["--chip", "tpu-v1"], None))

    results = []
    for title, margs, cfg in machines:
        tag = title.split(" (")[0].split(",")[0].replace(" ", "_")
        fixed, _ = run_sim(args.ignc, margs, topo, "scalesim", os.path.join(work, tag + "-fixed"))
        tuned, maps = run_sim(args.ignc, margs, topo, "tuned", os.path.join(work, tag + "-tuned"))
        if cfg is None:
            # Limited bandwidth: compare first DMA to last store (what the
            # tuning minimizes), not only the compute span.
            for r in fixed + tuned:
                r["total"] = r["end_to_end"]
        results.append((title, cfg, fixed, tuned, maps))
        tf, tt = sum(r["total"] for r in fixed), sum(r["total"] for r in tuned)
        print(f"{title}: SCALE-Sim mapping {tf} cycles, tuned {tt} cycles, "
              f"{tf / tt:.2f}x")

    check = ""
    if args.scalesim_check:
        try:
            import numpy
            if tuple(int(x) for x in numpy.__version__.split(".")[:2]) >= (2, 3):
                raise ImportError("scalesim 3.0.0 needs numpy < 2.3")
            import importlib.metadata
            version = importlib.metadata.version("scalesim")
        except ImportError as e:
            sys.exit(f"--scalesim-check: {e}")
        title, cfg, fixed, _, _ = results[0]
        order = sorted(range(len(layers)), key=lambda i: (lambda l: l[1] * l[2] * l[5] * l[6])(layers[i]))
        picked = sorted(order[:args.scalesim_check])
        sub = os.path.join(work, "check.csv")
        write_topology(sub, [layers[i] for i in picked])
        ss = scalesim_cycles(cfg, sub, os.path.join(work, "scalesim"))
        same = sum(1 for k, i in enumerate(picked) if ss[k] == fixed[i]["total"])
        check = (f"\nSCALE-Sim {version} itself on the {len(picked)} smallest layers of "
                 f"'{title}': {same}/{len(picked)} total-cycle counts equal to "
                 f"`ignc sim --mapping scalesim`'s.\n")
        print(check.strip())

    model_section = ""
    if args.model:
        model_section = run_model(args, work)
        print(model_section)

    host = platform.node()
    with open(args.out, "w") as md:
        md.write(f"# Systolic: SCALE-Sim's fixed mapping vs the tuned mapping, ResNet-50\n\n")
        md.write(f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {host}. Command: "
                 f"`python3 benchmarks/systolic.py {' '.join(sys.argv[1:])}`\n\n")
        md.write("Cycles are summed over the 53 convolutions and the classifier; both "
                 "mappings run on the same array in ignc's cycle-level simulator. With "
                 "unlimited bandwidth they are SCALE-Sim's \"Total Cycles\" column "
                 "(compute span, cycles numbered from 0), and the SCALE-Sim mapping's "
                 "counts are SCALE-Sim 3.0.0's own (docs/systolic.md); with limited "
                 "bandwidth (the presets) they run from the first DMA to the last store "
                 "(\"Total Cycles (incl. prefetch)\"). The tuned mapping only uses "
                 "mappings whose programs compute the product; SCALE-Sim's stores every "
                 "fold's partial sums without adding them up.\n\n")
        md.write("| array | SCALE-Sim mapping | tuned mapping | speedup | layers faster | layers slower |\n")
        md.write("|---|---:|---:|---:|---:|---:|\n")
        for title, _, fixed, tuned, _ in results:
            tf, tt = sum(r["total"] for r in fixed), sum(r["total"] for r in tuned)
            faster = sum(1 for a, b in zip(fixed, tuned) if b["total"] < a["total"])
            slower = sum(1 for a, b in zip(fixed, tuned) if b["total"] > a["total"])
            md.write(f"| {title} | {tf:,} | {tt:,} | {tf / tt:.2f}x | {faster} | {slower} |\n")
        md.write(check)
        md.write(model_section)
        md.write("\n## Per layer, first array\n\n| layer | M | K | N | SCALE-Sim mapping | tuned | mapping chosen |\n|---|---:|---:|---:|---:|---:|---|\n")
        title, _, fixed, tuned, maps = results[0]
        for l, a, b, m in zip(layers, fixed, tuned, maps):
            out = (l[1] - l[3] + l[7] + l[7] - 1) // l[7]
            md.write(f"| {l[0]} | {out * out} | {l[3] * l[4] * l[5]} | {l[6]} | "
                     f"{a['total']:,} | {b['total']:,} | {m} |\n")
    with open(os.path.splitext(args.out)[0] + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["array", "layer", "scalesim_mapping_cycles", "tuned_cycles", "tuned_mapping"])
        for title, _, fixed, tuned, maps in results:
            for l, a, b, m in zip(layers, fixed, tuned, maps):
                w.writerow([title, l[0], a["total"], b["total"], m])
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
