#!/usr/bin/env python3
"""End-to-end check of ignc against onnxruntime on the exported-style models.

For each model in test/models: bind its symbolic dims, make seeded random
inputs (never zeros; integer ids in range), compile with
`ignc --target=host`, run with `ignc run`, run the same inputs through
onnxruntime, and compare every output by relative L2 error (threshold 1e-4
for fp32) and max absolute error. Prints a table; exits 1 on any failure.

Needs: numpy, onnxruntime (pip). Usage:
  python3 test/e2e/compare_ort.py [--ignc build/bin/ignc] [--work DIR]
      [--target systolic --chip gemmini-16] [--threshold 3e-2]
      [--target vulkan --chip lavapipe]
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("skipped: numpy is not installed (pip install numpy)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "models")

# model -> {input: shape}; integer inputs get values in [0, high).
CASES = {
    "ocr_det_opset11": {"x": (1, 3, 64, 64)},
    "ocr_rec_opset9": {"x": (1, 3, 32, 100)},
    "ocr_cls_opset11": {"x": (1, 3, 48, 192)},
    "transformer_encoder_opset14": {"input_ids": (1, 16), "attention_mask": (1, 16)},
    "transformer_encoder_opset17": {"input_ids": (1, 16), "attention_mask": (1, 16)},
    "audio_frontend_opset13": {"waveform": (1, 1600)},
    "kws_mlp_opset13": {"features": (1, 1960)},
    "kws_if_opset18_reduce": {"x": (1, 40, 49)},
}
INT_HIGH = {"input_ids": 100, "attention_mask": 2}
# The benchmark zoo (benchmarks/models/gen_zoo.py), compared with --zoo-dir.
ZOO = {
    "resnet50": {"input": (1, 3, 224, 224)},
    "bert_base": {"input_ids": (1, 128), "attention_mask": (1, 128)},
}


def make_input(name, shape, dtype, rng):
    if np.issubdtype(dtype, np.integer):
        x = rng.integers(0, INT_HIGH.get(name, 2), size=shape).astype(dtype)
        if name == "attention_mask":
            x[..., 0] = 1  # never mask a whole row
        return x
    x = rng.uniform(0.05, 1.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return x.astype(dtype)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ignc", default=os.path.join(HERE, "..", "..", "build", "bin", "ignc"))
    parser.add_argument("--work", default=None)
    parser.add_argument("--threshold", type=float, default=1e-4)
    parser.add_argument("--zoo-dir", default=None,
                        help="also compare the benchmark zoo (ResNet-50, BERT-base) generated "
                             "there by benchmarks/models/gen_zoo.py (large: not run by CTest)")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--target", default="host",
                        help="compile for this target (systolic: run on the simulator; "
                             "vulkan: on this machine's Vulkan device, lavapipe here)")
    parser.add_argument("--chip", default=None, help="the target's chip")
    args = parser.parse_args()
    target_args = [f"--target={args.target}"] + ([f"--chip={args.chip}"] if args.chip else [])
    try:
        import onnxruntime as ort
    except ImportError:
        print("skipped: onnxruntime is not installed (pip install onnxruntime)")
        return 77

    if args.target == "vulkan":
        # `ignc targets` lists the chip "device" only where one was found.
        listing = subprocess.run([args.ignc, "targets"], capture_output=True, text=True).stdout
        if "--chip device" not in listing:
            print("skipped: no Vulkan device on this machine (install mesa-vulkan-drivers)")
            return 77
    work = args.work or tempfile.mkdtemp(prefix="ignc-e2e-")
    rng = np.random.default_rng(2026)
    failures = 0
    print(f"{'model':32} {'output':22} {'rel L2':>10} {'max abs':>10}  result")
    cases = [(m, os.path.join(MODELS, m + ".onnx"), s) for m, s in CASES.items()]
    if args.zoo_dir:
        subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "benchmarks", "models",
                                                     "gen_zoo.py"), args.zoo_dir], check=True)
        cases += [(m, os.path.join(args.zoo_dir, m + ".onnx"), s) for m, s in ZOO.items()]
    for model, path, shapes in cases:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds, cmd_inputs = {}, []
        for inp in sess.get_inputs():
            dtype = np.int64 if "int64" in inp.type else np.float32
            x = make_input(inp.name, shapes[inp.name], dtype, rng)
            feeds[inp.name] = x
            f = os.path.join(work, f"{model}.{inp.name}.npy")
            np.save(f, x)
            cmd_inputs += ["--input", f"{inp.name}={f}"]
        bundle = os.path.join(work, model + ".ignb")
        shape_args = []
        for k, v in shapes.items():
            shape_args += ["--input-shape", f"{k}=" + "x".join(map(str, v))]
        outdir = os.path.join(work, model + ".out")
        r = subprocess.run([args.ignc, path, *target_args, "-q", "-o", bundle] + shape_args,
                           capture_output=True, text=True)
        if r.returncode == 0:
            r = subprocess.run([args.ignc, "run", bundle, "--output-dir", outdir, "-q",
                                "--threads", str(args.threads)] + cmd_inputs,
                               capture_output=True, text=True)
        if r.returncode != 0:
            failures += 1
            print(f"{model:32} {'-':22} {'-':>10} {'-':>10}  FAIL (exit {r.returncode}): {r.stderr.strip()[:200]}")
            continue
        expected = sess.run(None, feeds)
        for out, want in zip(sess.get_outputs(), expected):
            name = out.name.replace("/", "_").replace(":", "_")
            got = np.load(os.path.join(outdir, name + ".npy"))
            if got.shape != want.shape:
                failures += 1
                print(f"{model:32} {out.name:22} shape {got.shape} vs {want.shape}  FAIL")
                continue
            if np.issubdtype(want.dtype, np.floating):
                diff = got.astype(np.float64) - want.astype(np.float64)
                rel = np.linalg.norm(diff) / max(np.linalg.norm(want.astype(np.float64)), 1e-30)
                mx = float(np.max(np.abs(diff))) if diff.size else 0.0
                ok = rel <= args.threshold
            else:
                rel = float(np.count_nonzero(got != want))
                mx = rel
                ok = rel == 0
            failures += not ok
            print(f"{model:32} {out.name:22} {rel:10.2e} {mx:10.2e}  {'ok' if ok else 'FAIL'}")
    print(f"\n{failures} failure(s); onnxruntime {ort.__version__}; work dir {work}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
