"""Writes the ONNX text model of test/ignc/prepacked-panels.test: matmuls
whose constant weights the host packs into panels at compile time (too
large to keep in the repository as text: about 1 MB).

  python3 gen_weight_panels.py OUT.onnxtxt
"""
import random
import sys

random.seed(7)


def weight(name, shape):
    count = 1
    for d in shape:
        count *= d
    values = ", ".join(f"{random.uniform(-1, 1):.4f}" for _ in range(count))
    dims = ", ".join(str(d) for d in shape)
    return f"  {name} = Constant <value = float[{dims}] {{{values}}}> ()\n"


with open(sys.argv[1], "w") as out:
    out.write('<ir_version: 8, opset_import: ["" : 17]>\n')
    out.write("weight_panels (float[24, 256] x, float[256, 64] xb) => "
              "(float[24, 200] y1, float[24, 200] y2, float[24, 200] y3, "
              "float s, float[512, 64] z) {\n")
    out.write(weight("w1", [256, 200]))
    out.write(weight("w2", [200, 256]))
    out.write(weight("w3", [256, 200]))
    out.write(weight("wa", [256, 512]))
    # One kernel launched with two weights (w1, w3), a transposed weight
    # (w2), a weight another kernel also reads as stored (w1), and a
    # transposed broadcast weight (wa, Gemm transA).
    out.write("  y1 = MatMul (x, w1)\n")
    out.write("  y2 = Gemm <transB = 1> (x, w2)\n")
    out.write("  y3 = MatMul (x, w3)\n")
    out.write("  s = ReduceSum <keepdims = 0> (w1)\n")
    out.write("  z = Gemm <transA = 1> (wa, xb)\n")
    out.write("}\n")
