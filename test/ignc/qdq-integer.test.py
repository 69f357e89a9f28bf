"""Builds a small QDQ model (onnxruntime's quantizer's pattern: uint8
activations per tensor, int8 weights per output channel) whose matmul, gemm
(trans_b), 1x1 convolution (6 channels, padded to 8), 3x3 convolutions
(6 channels padded likewise) and an RGB stem's 7x7 one (3 channels, padded
to 4) read dequantized values (and a matmul of int8 activations), and a
MatMulInteger and a ConvInteger of dynamically quantized activations, compiles and runs it with ignc, and compares each
f32 output with onnxruntime running the QDQ graph as written (graph
optimizations off: dequantize, then f32 arithmetic).

  qdq-integer.test.py WORKDIR IGNC
Prints, for this machine and for CPUs named as targets (compiled, not run),
whether the kernels take the integer path the CPU implies: with VNNI
(znver4), matmuls of bytes into i32 and vpdpbusd; with AVX2 and no VNNI
(x86-64-v3) or AVX512BW and no VNNI (skylake-avx512), matmuls (not 1x1
convolutions) of the same integers as 16-bit words and vpmaddwd (256 or 512
bits); with neither
(x86-64), only the MatMulInteger's, an exact i32 matmul as ONNX defines
it. Then, per output, the relative L2 error; on a CPU with AVX512BW, the
skylake-avx512 bundle's outputs against this machine's.
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from ort_compare import CompiledPair, onnx_reference  # noqa: E402

work, ignc = sys.argv[1:3]
rng = np.random.default_rng(7)
inits, nodes = [], []


def const(name, value):
    inits.append(numpy_helper.from_array(np.asarray(value), name))
    return name


def qdq(x, scale, zero, name, dtype=np.uint8):
    """QuantizeLinear then DequantizeLinear of activations (uint8 or int8)."""
    s, z = const(name + "_s", np.float32(scale)), const(name + "_z", dtype(zero))
    nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [name + "_q"]))
    nodes.append(helper.make_node("DequantizeLinear", [name + "_q", s, z], [name]))
    return name


def weight(name, shape, axis):
    """A DequantizeLinear of int8 weights with per-axis scales."""
    q = rng.integers(-127, 128, shape).astype(np.int8)
    scales = rng.uniform(0.001, 0.02, shape[axis]).astype(np.float32)
    zeros = np.zeros(shape[axis], np.int8)
    nodes.append(helper.make_node(
        "DequantizeLinear", [const(name + "_q", q), const(name + "_s", scales),
                             const(name + "_z", zeros)], [name], axis=axis))
    return name


# MatMul [16, 40] x [40, 64], zero point 117.
a = qdq("x", 0.02, 117, "a")
nodes.append(helper.make_node("MatMul", [a, weight("w1", [40, 64], 1)], ["mm"]))
# int8 activations (zero point -5): moved up by 128 into unsigned bytes.
nodes.append(helper.make_node("MatMul", [qdq("x", 0.02, -5, "sa", np.int8),
                                         weight("w7", [40, 32], 1)], ["smm"]))
# Widths no vector divides: 42 steps (no whole groups of 4), 50 columns.
nodes.append(helper.make_node("Slice", ["x", const("lo", np.array([0], np.int64)),
                                        const("hi", np.array([2], np.int64)),
                                        const("ax", np.array([1], np.int64))], ["x2"]))
nodes.append(helper.make_node("Concat", ["x", "x2"], ["x42"], axis=1))
nodes.append(helper.make_node("MatMul", [qdq("x42", 0.02, 3, "a2"), weight("w5", [42, 50], 1)],
                              ["odd"]))
# Gemm with trans_b [16, 40] x [48, 40]^T + bias, zero point 0.
g = qdq("x", 0.015, 0, "g")
nodes.append(helper.make_node("Gemm", [g, weight("w2", [48, 40], 0),
                                       const("b2", rng.standard_normal(48).astype(np.float32))],
                              ["gemm"], transB=1))
# Dynamic quantization (onnxruntime's quantize_dynamic): MatMulInteger of
# activations quantized at run time (their zero point too) by int8 weights.
nodes.append(helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]))
wq = rng.integers(-127, 128, (40, 24)).astype(np.int8)
nodes.append(helper.make_node("MatMulInteger", ["xq", const("w6", wq), "xz",
                                                const("w6_z", np.int8(0))], ["acc"]))
nodes.append(helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT))
nodes.append(helper.make_node("Mul", ["xs", const("w6_s", np.float32(0.01))], ["s6"]))
nodes.append(helper.make_node("Mul", ["accf", "s6"], ["dyn"]))
# ConvInteger (3x3, padded) of the image quantized at run time: computed as
# an f32 convolution of the same integers (its sums stay below 2^24).
nodes.append(helper.make_node("DynamicQuantizeLinear", ["img"], ["iq", "is", "iz"]))
nodes.append(helper.make_node("ConvInteger", ["iq", const("w8", rng.integers(
    -127, 128, (8, 6, 3, 3)).astype(np.int8)), "iz"], ["cacc"], pads=[1, 1, 1, 1]))
nodes.append(helper.make_node("Cast", ["cacc"], ["caccf"], to=TensorProto.FLOAT))
nodes.append(helper.make_node("Mul", ["caccf", "is"], ["dconv"]))
# 1x1 convolution of 6 channels (padded to 8), and a 3x3 one (likewise:
# with VNNI a byte convolution).
c = qdq("img", 0.03, 90, "c")
nodes.append(helper.make_node("Conv", [c, weight("w3", [32, 6, 1, 1], 0),
                                       const("b3", rng.standard_normal(32).astype(np.float32))],
                              ["pw"]))
nodes.append(helper.make_node("Conv", [c, weight("w4", [16, 6, 3, 3], 0)], ["sp"],
                              pads=[1, 1, 1, 1]))
# Its output quantized, then max pooled (ResNet's stem): on every CPU the
# pool reads the bytes (the dequantization never reorders values).
nodes.append(helper.make_node("MaxPool", [qdq("sp", 0.05, 100, "spq")], ["mp"],
                              kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
# A 1x1 convolution over 7 x 7 pixels (no whole vectors of 16): with VNNI,
# byte tiles of zero-padded panels of 64 columns, its weight's rows packed
# at compile time.
s7 = qdq("small", 0.05, 77, "s7")
nodes.append(helper.make_node("Conv", [s7, weight("w9", [256, 256, 1, 1], 0)], ["p49"]))
# A strided one of the same activations (ResNet's downsampling shortcuts,
# beside the block's first convolution): its bytes subsampled.
nodes.append(helper.make_node("Conv", [s7, weight("w10", [64, 256, 1, 1], 0),
                                       const("b10", rng.standard_normal(64).astype(np.float32))],
                              ["s2"],
                              strides=[2, 2]))
# 3x3 convolutions of 8 channels (whole quads) by 32 filters, padded (with
# the zero point's bytes), one strided: with VNNI, direct kernels of byte
# quads (vpdpbusd).
c8 = qdq("img8", 0.04, 70, "c8")
nodes.append(helper.make_node("Conv", [c8, weight("w11", [32, 8, 3, 3], 0),
                                       const("b11", rng.standard_normal(32).astype(np.float32))],
                              ["q3"], pads=[1, 1, 1, 1]))
nodes.append(helper.make_node("Conv", [c8, weight("w12", [32, 8, 3, 3], 0)], ["q3s"],
                              pads=[1, 1, 1, 1], strides=[2, 2]))
# An RGB stem: 7x7, stride 2, 3 channels padded to a quad (one quad: the
# tiles' single reduction step over channels folds away).
rgbq = qdq("rgb", 0.02, 120, "rq")
nodes.append(helper.make_node("Conv", [rgbq, weight("w13", [32, 3, 7, 7], 0),
                                       const("b13", rng.standard_normal(32).astype(np.float32))],
                              ["stem"], pads=[3, 3, 3, 3], strides=[2, 2]))
graph = helper.make_graph(
    nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 40]),
                   helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 6, 8, 12]),
                   helper.make_tensor_value_info("small", TensorProto.FLOAT, [1, 256, 7, 7]),
                   helper.make_tensor_value_info("img8", TensorProto.FLOAT, [1, 8, 20, 36]),
                   helper.make_tensor_value_info("rgb", TensorProto.FLOAT, [1, 3, 40, 44])],
    [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
     for n, shape in [("mm", [16, 64]), ("smm", [16, 32]), ("odd", [16, 50]),
                      ("dyn", [16, 24]),
                      ("gemm", [16, 48]),
                      ("dconv", [1, 8, 8, 12]), ("pw", [1, 32, 8, 12]),
                      ("sp", [1, 16, 8, 12]), ("mp", [1, 16, 4, 6]),
                      ("p49", [1, 256, 7, 7]), ("s2", [1, 64, 4, 4]),
                      ("q3", [1, 32, 20, 36]), ("q3s", [1, 32, 10, 18]),
                      ("stem", [1, 32, 20, 22])]], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
pair = CompiledPair(model, "qdq", work, ignc, optimize=False)



def integer_path(target):
    """The integer matmuls of the kernels for `target` and the dot product
    instructions their LLVM IR calls."""
    def emit(what):
        # (Two cores: workgroups of the 49-pixel convolution's 256 filters
        # as this machine splits them, not the 32 of an unknown CPU.)
        return subprocess.run([ignc, pair.path, f"--target={target}", f"--emit={what}",
                               "--cores", "2"],
                              check=True, capture_output=True, text=True).stdout
    kernels = emit("kernels").splitlines()
    matmuls = [line for line in kernels
               if "ign.matmul" in line and line.rstrip().endswith("xi32")]
    convs = sum(1 for line in kernels
                if "ign.conv" in line and line.rstrip().endswith("xi32"))
    pools = sum(1 for line in kernels
                if "ign.max_pool" in line and line.rstrip().endswith("xui8"))
    llvm = emit("llvm")
    dots = {name for name in ("avx512.vpdpbusd.512", "avx2.pmadd.wd", "avx512.pmaddw.d.512")
            if f"llvm.x86.{name}" in llvm}
    words = sum(1 for m in matmuls if "xi16," in m)
    # The 49-pixel convolution's kernel computes with the dot instructions
    # too (its tiles not left to LLVM's loops).
    k49, kernel = [], None
    for line in kernels:
        if "_ign_" in line and ": " in line:
            kernel = line.split(": ")[0].split()[-1]
        elif "ign.matmul" in line and line.rstrip().endswith("x49xi32"):
            k49.append(kernel)
    body = llvm.split(f"@{k49[0]}(")[1].split("\n}")[0] if k49 else ""
    if k49 and not any(f"llvm.x86.{name}" in body for name in dots):
        dots.add("49 pixels without them")
    # Its activations are packed into quads 64 bytes at a time: four rows'
    # 16 bytes interleaved by one shuffle (PairCopies.cpp's
    # vectorizeGroupCopy), not a transposed block built byte by byte.
    quads = "<64 x i32> <i32 0, i32 16, i32 32, i32 48, i32 1, i32 17, i32 33, i32 49,"
    if k49 and "llvm.x86.avx512.vpdpbusd.512" in body and quads not in body:
        dots.add("49 pixels' quads not interleaved by a shuffle")
    # The byte convolutions' kernels likewise.
    for line in kernels:
        if "_ign_" in line and ": " in line:
            kernel = line.split(": ")[0].split()[-1]
        elif "ign.conv" in line and line.rstrip().endswith("xi32"):
            body = llvm.split(f"@{kernel}(")[1].split("\n}")[0]
            if "llvm.x86.avx512.vpdpbusd.512" not in body:
                dots.add("a byte convolution without them")
    return len(matmuls), words, dots, convs, pools


with open("/proc/cpuinfo") as f:
    flags = f.read()
here = ("znver4" if "avx512_vnni" in flags else
        "skylake-avx512" if "avx512bw" in flags else
        "x86-64-v3" if "avx2" in flags else "x86-64")
expected = {  # (integer matmuls, of them in words, dot instructions, byte convolutions,
    #            max pools of bytes)
    "znver4": (8, 0, {"avx512.vpdpbusd.512"}, 4, 1),
    # (words: 1x1 and 3x3 convolutions stay f32)
    "x86-64-v3": (5, 5, {"avx2.pmadd.wd"}, 0, 1),
    "skylake-avx512": (5, 5, {"avx512.pmaddw.d.512"}, 0, 1),
    "x86-64": (1, 0, set(), 0, 1),
}
paths = {t: integer_path(t) for t in expected}
paths["host"] = integer_path("host")
ok = all(paths[t] == want for t, want in expected.items()) and paths["host"] == expected[here]
print(f"integer path as the CPU implies: {'yes' if ok else 'NO'}")
for t, got in paths.items():
    print(f"  {t}: {got[0]} integer matmuls, {got[1]} of words, {sorted(got[2])}, "
          f"{got[3]} byte convolutions, {got[4]} max pools of bytes"
          f" (expected {expected[here if t == 'host' else t]})")

feeds = {"x": rng.uniform(-2, 3, (16, 40)).astype(np.float32),
         "img": rng.uniform(-2.5, 5, (1, 6, 8, 12)).astype(np.float32),
         "small": rng.uniform(0, 6, (1, 256, 7, 7)).astype(np.float32),
         "img8": rng.uniform(-2.5, 7, (1, 8, 20, 36)).astype(np.float32),
         "rgb": rng.uniform(-2.4, 2.6, (1, 3, 40, 44)).astype(np.float32)}
got, want = pair.run(feeds)
reference = []


def relative_l2(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)


for i, (out, g, w) in enumerate(zip(pair.session.get_outputs(), got, want)):
    err = relative_l2(g, w)
    if err > 1e-5:
        # onnxruntime's AVX2 u8 x s8 kernels saturate (MatMulInteger):
        # ONNX's reference evaluator decides.
        reference = reference or onnx_reference(pair.path, feeds)
        if relative_l2(g, reference[i]) <= 1e-5:
            print(f"{out.name}: match (relative L2 {relative_l2(g, reference[i]):.2e} to "
                  f"ONNX's reference evaluator; onnxruntime differs from it by "
                  f"{relative_l2(w, reference[i]):.2e})")
            continue
    print(f"{out.name}: {'match' if err <= 1e-5 else 'DIFFERS'} (relative L2 {err:.2e})")

# The 512-bit word tiles (a CPU with AVX512BW and no VNNI) run wherever
# AVX512BW is: the same outputs as this machine's own bundle.
if "avx512bw" in flags:
    here_got = got
    pair.bundle = os.path.join(work, "qdq-skylake-avx512.ignb")
    subprocess.run([ignc, pair.path, "--target=skylake-avx512", "-q", "-o", pair.bundle],
                   check=True)
    got512, _ = pair.run(feeds)
    worst = max(relative_l2(a, b) for a, b in zip(got512, here_got))
    print(f"skylake-avx512 words, run here: {'agree' if worst <= 1e-5 else 'DIFFERS'}"
          f" (worst relative L2 {worst:.2e})")
