#!/usr/bin/env python3
"""The CUDA device check's run on the GPU machine (device-check.sh calls it):
for each case prepared by prepare_device_check.py, seeded inputs (the zoo's
weights regenerated from gen_zoo.py's seeds), onnxruntime's outputs on the
CPU as the reference, ignc's bundle run by ignrt-run on the GPU (outputs
compared by relative L2, threshold 1e-4 at fp32), and, in interleaved
rounds, ignc's time against torch's (fp32 with TF32 off: cuBLAS and cuDNN
on the same arithmetic). Writes device-check.json into the output folder.

  python3 benchmarks/gpu/device_check.py --dir build-device --out $OUT
      [--rounds 3] [--repeat 10] [--budget 420]
"""
import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402
import compare_ort  # noqa: E402  (cases.py put test/e2e on the path)

TIMING = re.compile(r"timing: \d+ runs, wall median ([0-9.]+) ms, min ([0-9.]+) ms, "
                    r"device median ([0-9.]+) ms")


def sanitize(name):
    return re.sub(r"[/\\: ]", "_", name)


def case_inputs(meta, model, rng):
    """Inputs for `model` (ONNX) as onnxruntime wants them: seeded data, the
    zoo's weights from their regenerated model."""
    import onnx
    inits = {i.name for i in model.graph.initializer}
    out = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        shape = meta["shapes"].get(vi.name) or [d.dim_value for d in t.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        out[vi.name] = compare_ort.make_input(vi.name, tuple(shape), dtype, rng)
    return out


def reference(model, inputs):
    import onnxruntime as ort
    so = ort.SessionOptions()
    s = ort.InferenceSession(model.SerializeToString(), so,
                             providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, inputs)))


def save_inputs(inputs, work):
    """Each input as a .npy file once; ignrt-run's --input arguments."""
    args = []
    for i, (name, value) in enumerate(inputs.items()):
        path = os.path.join(work, f"in{i}.npy")
        np.save(path, np.ascontiguousarray(value))
        args += ["--input", f"{name}={path}"]
    return args


def run_ignc(case_dir, bin_dir, args, work, repeat, bundle="cuda.ignb", extra_env=None):
    outdir = os.path.join(work, "out")
    env = dict(os.environ, LD_LIBRARY_PATH=bin_dir, **(extra_env or {}))
    p = subprocess.run([os.path.join(bin_dir, "ignrt-run"),
                        os.path.join(case_dir, bundle), *args,
                        "--output-dir", outdir, "--repeat", str(repeat)],
                       capture_output=True, text=True, env=env, timeout=120)
    if p.returncode != 0:
        raise RuntimeError((p.stderr or p.stdout).strip().splitlines()[-1])
    m = TIMING.search(p.stdout)
    return outdir, {"wall_ms": float(m.group(1)), "wall_min_ms": float(m.group(2)),
                    "device_ms": float(m.group(3))}


def compare(ref, outdir):
    worst = {"rel_l2": 0.0, "max_abs": 0.0}
    for name, want in ref.items():
        got = np.load(os.path.join(outdir, sanitize(name) + ".npy"))
        want = np.asarray(want, dtype=np.float64)
        got = got.astype(np.float64).reshape(want.shape)
        denom = np.linalg.norm(want) or 1.0
        rel = float(np.linalg.norm(got - want) / denom)
        worst["rel_l2"] = max(worst["rel_l2"], rel if np.isfinite(rel) else float("inf"))
        worst["max_abs"] = max(worst["max_abs"], float(np.max(np.abs(got - want))))
    return worst


# Relative L2 against onnxruntime (fp32 on the CPU) a case passes at: fp16
# cases round every contraction's inputs to half.
TOLERANCE = {"fp32": 1e-4, "fp16": 2e-2}


def torch_peer(meta, inputs):
    """A function timing one run of the same computation in torch (fp32 with
    TF32 off; an fp16 case's peer in half precision, as torch eager runs a
    model .half()), or None where there is no peer (or no torch)."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    half = meta.get("precision") == "fp16"
    dev = {k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in inputs.items()}
    if half:
        dev = {k: v.half() if v.is_floating_point() else v for k, v in dev.items()}
    peer = meta.get("peer")
    if peer == "matmul":
        fn = lambda: dev["a"] @ dev["b"]
    elif peer == "conv_relu":
        fn = lambda: F.relu(F.conv2d(dev["x"], dev["w"], dev["b"], padding=1))
    elif peer == "attention":
        scale = dev["q"].shape[-1] ** -0.5
        fn = lambda: torch.softmax(dev["q"] @ dev["k"].transpose(-1, -2) * scale, -1) @ dev["v"]
    elif peer == "resnet50":
        import torchvision
        net = torchvision.models.resnet50().eval().cuda()
        net = net.half() if half else net
        fn = lambda: net(dev["input"])
    elif peer == "bert_base":
        import transformers
        net = transformers.BertModel(transformers.BertConfig()).eval().cuda()
        net = net.half() if half else net
        fn = lambda: net(input_ids=dev["input_ids"].long(),
                         attention_mask=dev["attention_mask"].long())
    else:
        return None

    def timed(repeat):
        with torch.inference_mode():
            fn()
            torch.cuda.synchronize()
            times = []
            for _ in range(repeat):
                start, stop = torch.cuda.Event(True), torch.cuda.Event(True)
                start.record()
                fn()
                stop.record()
                stop.synchronize()
                times.append(start.elapsed_time(stop))
        return float(np.median(times))
    return timed


def cuda_rounds(row, case_dir, bin_dir, args, ref, peer, input_args, work):
    """The CUDA bundle's rounds, each followed by one of the torch peer's."""
    for r in range(args.rounds):
        outdir, timing = run_ignc(case_dir, bin_dir, input_args, work, args.repeat)
        row["ignc"].append(timing)
        if r == 0:
            row.update(compare(ref, outdir))
        if peer:
            try:
                row["torch_ms"].append(peer(args.repeat))
            except Exception as e:
                peer, row["torch_error"] = None, f"{type(e).__name__}: {e}"


def vulkan_rounds(case_dir, bin_dir, args, ref, input_args, work):
    """The case's Vulkan bundle (the nvidia-vulkan preset) on the same GPU
    through its Vulkan driver: checked against the same reference and timed
    in as many rounds; a failure is this row's result, not the case's.
    Each round also runs it with every buffer host-visible
    (IGN_VULKAN_MEMORY=host, the driver's first placement): `host_device_ms`
    beside `device_ms` is what device-local memory gains."""
    try:
        rounds, host_rounds = [], []
        for r in range(args.rounds):
            outdir, timing = run_ignc(case_dir, bin_dir, input_args, work,
                                      args.repeat, "vulkan.ignb")
            rounds.append(timing)
            if r == 0:
                row = compare(ref, outdir)
            _, timing = run_ignc(case_dir, bin_dir, input_args, work, args.repeat,
                                 "vulkan.ignb", {"IGN_VULKAN_MEMORY": "host"})
            host_rounds.append(timing)
    except Exception as e:
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}
    device = sorted(t["device_ms"] for t in rounds)
    host = sorted(t["device_ms"] for t in host_rounds)
    row.update(rounds=rounds, device_ms=device[len(device) // 2],
               host_rounds=host_rounds, host_device_ms=host[len(host) // 2],
               ok=row["rel_l2"] <= TOLERANCE["fp32"])
    return row


@functools.lru_cache(maxsize=1)
def zoo_model(name, zoo_dir):
    """cases.zoo_model, once for a model's fp32 and fp16 cases (adjacent)."""
    return cases.zoo_model(name, zoo_dir)


def check_case(case_dir, bin_dir, args):
    import onnx
    meta = json.load(open(os.path.join(case_dir, "meta.json")))
    row = {"name": meta["name"], "kind": meta["kind"],
           "predicted_ms": meta["predicted_ms"],
           "kernels_gpu": meta["kernels_gpu"], "kernels_host": len(meta["kernels_host"])}
    rng = np.random.default_rng(2026)
    if meta["kind"] == "zoo":
        model, weights = zoo_model(meta["name"].removesuffix("-fp16"), args.zoo_dir)
        inputs = case_inputs(meta, model, rng)
        ignc_inputs = dict(inputs, **weights)
    else:
        model = onnx.load(os.path.join(case_dir, "model.onnx"))
        inputs = ignc_inputs = case_inputs(meta, model, rng)
    ref = reference(model, inputs)
    try:
        peer = torch_peer(meta, inputs) if args.peer else None
    except Exception as e:  # no peer is a note, not the case's failure
        peer, row["torch_error"] = None, f"{type(e).__name__}: {e}"
    row["ignc"], row["torch_ms"] = [], []
    with tempfile.TemporaryDirectory() as work:
        input_args = save_inputs(ignc_inputs, work)
        try:
            cuda_rounds(row, case_dir, bin_dir, args, ref, peer, input_args, work)
        except Exception as e:  # the Vulkan run below still runs
            row["error"] = f"{type(e).__name__}: {e}"
        if args.vulkan and os.path.exists(os.path.join(case_dir, "vulkan.ignb")):
            row["vulkan"] = vulkan_rounds(case_dir, bin_dir, args, ref,
                                          input_args, work)
    row["precision"] = meta.get("precision", "fp32")
    row["mma_launches"] = meta.get("mma_launches", 0)
    row["ok"] = "error" not in row and row["rel_l2"] <= TOLERANCE[row["precision"]]
    if not row["ignc"]:
        return row
    device = sorted(t["device_ms"] for t in row["ignc"])
    row["ignc_device_ms"] = device[len(device) // 2]
    if row["torch_ms"]:
        row["torch_median_ms"] = float(np.median(row["torch_ms"]))
        row["ignc_over_torch"] = row["ignc_device_ms"] / row["torch_median_ms"]
    return row


def machine():
    info = {}
    try:
        info["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm",
             "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    except OSError:
        info["nvidia_smi"] = "not found"
    return info


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", default="build-device")
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--zoo-dir", default=os.path.join(tempfile.gettempdir(), "ignc-zoo"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--budget", type=float, default=420, help="seconds for all cases")
    p.add_argument("--only", nargs="*", help="these cases alone")
    p.add_argument("--no-peer", dest="peer", action="store_false",
                   help="no torch timings")
    p.add_argument("--no-vulkan", dest="vulkan", action="store_false",
                   help="no runs of the Vulkan bundles")
    args = p.parse_args()
    start = time.time()
    bin_dir = os.path.abspath(os.path.join(args.dir, "bin"))
    result = {"machine": machine(), "cases": []}
    if not os.path.isdir(os.path.join(args.dir, "cases")):
        print(f"error: no {args.dir}/cases: run prepare_device_check.py and "
              "carry its folder", file=sys.stderr)
        return 2
    case_dirs = sorted(n for n in os.listdir(os.path.join(args.dir, "cases"))
                       if not args.only or n in args.only)
    if not case_dirs:
        print(f"error: no cases in {args.dir}/cases"
              + (f" named {' '.join(args.only)}" if args.only else ""),
              file=sys.stderr)
        return 2
    for name in case_dirs:
        if time.time() - start > args.budget:
            result["cases"].append({"name": name, "skipped": "out of the time budget"})
            continue
        try:
            row = check_case(os.path.join(args.dir, "cases", name), bin_dir, args)
        except Exception as e:  # a case's failure is a result, not the end
            row = {"name": name, "ok": False, "error": f"{type(e).__name__}: {e}"}
        result["cases"].append(row)
        print(json.dumps(row), flush=True)
    result["seconds"] = time.time() - start
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "device-check.json"), "w") as f:
        json.dump(result, f, indent=1)
    ok = sum(1 for c in result["cases"] if c.get("ok"))
    for c in result["cases"]:  # the short table the reply's tail carries
        v = c.get("vulkan", {})
        print(f"{c['name']:30} ok={c.get('ok')!s:5} l2={c.get('rel_l2', -1):.1e} "
              f"cuda={c.get('ignc_device_ms', -1):.4f} torch={c.get('torch_median_ms', -1):.4f} "
              f"vk_ok={v.get('ok')!s:5} vk={v.get('device_ms', -1):.4f} "
              f"vk_hostmem={v.get('host_device_ms', -1):.4f} "
              f"{(c.get('error') or v.get('error') or '')[:90]}")
    vk = [c["vulkan"] for c in result["cases"] if "vulkan" in c]
    print(f"vulkan: {sum(1 for v in vk if v.get('ok'))} of {len(vk)} bundles "
          "match onnxruntime")
    print(f"{ok} of {len(case_dirs)} cases match onnxruntime; "
          f"{result['seconds']:.0f} s; {args.out}/device-check.json")
    return 0 if ok == len(case_dirs) else 1


if __name__ == "__main__":
    sys.exit(main())
