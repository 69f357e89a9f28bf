#!/usr/bin/env python3
"""Prepares the CUDA device check here, where no GPU is needed: compiles every
case of benchmarks/gpu/cases.py for the H200 (--target=cuda --chip=h200,
cubins by ptxas when the toolkit is here) and gathers what the device run
needs into one folder (build-device/ by default, ignored by git, carried to
the device machine): ignrt-run and libignrt (no LLVM, no MLIR), each case's
bundle, its model where it is small, and meta.json (inputs, outputs, the
torch peer, ignc's analytical prediction). The GEMM, convolution, attention
and zoo cases are prepared twice: at fp32, and at --precision=fp16 (named
NAME-fp16: the contractions on the tensor cores).

  python3 benchmarks/gpu/prepare_device_check.py [--ignc build/bin/ignc]
      [--out build-device] [--before-ignc OLD/ignc] [--zoo-dir ~/.cache/ignc-zoo]
      [--only NAME ...]

Then, on the device machine (benchmarks/gpu/device-check.sh):
  run(command="bash benchmarks/gpu/device-check.sh",
      carry=["build-device", "build-device-before", ".gl"])
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
import cases  # noqa: E402
import compile_cuda  # noqa: E402  (cases.py put test/e2e on the path)

# Host kernels (none, where every kernel maps) for any x86-64 with AVX2.
CHIP = ["--target=cuda", "--chip=h200", "--host-cpu=x86-64-v3"]
# The same GPU through its Vulkan driver (issue 15), fp32 cases only.
VULKAN = ["--target=vulkan", "--chip=nvidia-vulkan", "--host-cpu=x86-64-v3"]
CARRY_LIMIT = 60 << 20  # the device tool carries 64 MiB with the tree


def compile_case(ignc, model_path, shapes, out_dir, precision):
    """compile_cuda.py's compile for the H200, the bundle as out_dir/cuda.ignb."""
    row = compile_cuda.compile_one(ignc, model_path, shapes, "h200", out_dir,
                                   CHIP, "cuda.ignb", precision)
    if row["rc"] != 0:
        raise RuntimeError(f"{model_path}: {row.get('error', '')}")
    return {"kernels_gpu": row["gpu"],
            "kernels_host": [why for _, why in row["host"]],
            "predicted_ms": row["predicted_ms"], "mma_launches": row["mma"],
            "precision": precision}


def compile_vulkan(ignc, model_path, shapes, out_dir):
    """The case for the nvidia-vulkan preset as out_dir/vulkan.ignb; a
    failure is recorded (the device check skips the Vulkan run), not fatal."""
    row = compile_cuda.compile_one(ignc, model_path, shapes, "nvidia-vulkan",
                                   out_dir, VULKAN, "vulkan.ignb")
    if row["rc"] != 0:
        print(f"{model_path}: no Vulkan bundle: {row.get('error', '')}")
        return {"error": row.get("error", "")}
    return {"kernels_gpu": row["gpu"], "kernels_host": len(row["host"]),
            "predicted_ms": row["predicted_ms"]}


def prepare(name, kind, model, model_path, shapes, out, ignc, keep_model, extra,
            precision="fp32"):
    import onnx
    if precision != "fp32":
        name += "-" + precision
    d = os.path.join(out, "cases", name)
    os.makedirs(d, exist_ok=True)
    if model is not None:
        model_path = os.path.join(d, "model.onnx")
        onnx.save(model, model_path)
    meta = compile_case(ignc, model_path, shapes, d, precision)
    if precision == "fp32":
        meta["vulkan"] = compile_vulkan(ignc, model_path, shapes, d)
    if keep_model and model is None:
        shutil.copy(model_path, os.path.join(d, "model.onnx"))
    if not keep_model and os.path.exists(os.path.join(d, "model.onnx")):
        os.remove(os.path.join(d, "model.onnx"))
    meta.update({"name": name, "kind": kind, "shapes": shapes or {}}, **extra)
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: {meta['kernels_gpu']} kernels on the GPU, "
          f"{len(meta['kernels_host'])} on the host, "
          f"{meta['mma_launches']} tensor-core launches, predicted "
          f"{meta['predicted_ms']:.3f} ms")


def prepare_all(ignc, out, runtime, zoo_dir, want):
    """Every wanted case compiled by `ignc` into `out`, with `runtime`'s
    ignrt-run and libignrt (a build folder) beside them; its size."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "bin"))
    shutil.copy(os.path.join(runtime, "bin", "ignrt-run"), os.path.join(out, "bin"))
    shutil.copy(os.path.join(runtime, "lib", "libignrt.so"), os.path.join(out, "bin"))
    for name, (build_model, peer, params) in cases.MICRO.items():
        for precision in ("fp32", "fp16"):
            if want(name):
                prepare(name, "micro", build_model(), None, None, out, ignc,
                        True, {"peer": peer, "params": params}, precision)
    for name, (path, shapes) in cases.e2e_cases().items():
        if want(name):
            prepare(name, "e2e", None, path, shapes, out, ignc, True, {})
    for name, shapes in cases.zoo_cases().items():
        if not want(name):
            continue
        model, weights = cases.zoo_model(name, zoo_dir)
        for precision in ("fp32", "fp16"):
            prepare(name, "zoo", cases.weights_as_inputs(model, weights), None,
                    shapes, out, ignc, False,
                    {"peer": name, "weights": sorted(weights)}, precision)
    return sum(os.path.getsize(os.path.join(r, f))
               for r, _, fs in os.walk(out) for f in fs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ignc", default=os.path.join(ROOT, "build", "bin", "ignc"))
    p.add_argument("--out", default=os.path.join(ROOT, "build-device"))
    p.add_argument("--before-ignc",
                   help="an earlier ignc: the same cases into OUT-before, which "
                        "device-check.sh runs after OUT (an A/B on one machine)")
    p.add_argument("--zoo-dir", default=os.path.expanduser("~/.cache/ignc-zoo"))
    p.add_argument("--only", nargs="*", default=None)
    args = p.parse_args()
    for ignc in filter(None, (args.ignc, args.before_ignc)):
        if not os.access(ignc, os.X_OK):
            print(f"error: no ignc at {ignc} (build it, or pass --ignc)",
                  file=sys.stderr)
            return 2
    # Both take this build's runtime: the bundle format is the same.
    runtime = os.path.dirname(os.path.dirname(os.path.abspath(args.ignc)))
    want = lambda n: not args.only or n in args.only
    size = prepare_all(args.ignc, args.out, runtime, args.zoo_dir, want)
    before = args.out.rstrip("/") + "-before"
    shutil.rmtree(before, ignore_errors=True)
    if args.before_ignc:
        size += prepare_all(args.before_ignc, before, runtime, args.zoo_dir, want)
    print(f"{args.out}: {size / 2**20:.1f} MiB to carry")
    if size > CARRY_LIMIT:
        print("error: more than the device tool carries", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
