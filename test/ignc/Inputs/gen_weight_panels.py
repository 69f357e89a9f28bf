"""Writes the ONNX text models of test/ignc/prepacked-panels*.test: matmuls
whose constant weights the host packs into panels at compile time (too
large to keep in the repository as text: about 1 MB).

  python3 gen_weight_panels.py DIR

DIR/const.onnxtxt has the weights as constants; DIR/inputs.onnxtxt is the
same graph with them as inputs (packed at run time), and DIR/*.npy hold
the weights and seeded inputs, so the two can be run on the same values.
"""
import os
import random
import struct
import sys

random.seed(7)
SHAPES = {"w1": [256, 200], "w2": [200, 256], "w3": [256, 200],
          "wa": [256, 512], "x": [24, 256], "xb": [256, 64]}
WEIGHTS = ["w1", "w2", "w3", "wa"]
# One kernel launched with two weights (w1, w3), a transposed weight (w2,
# Gemm transB), a weight another kernel also reads as stored (w1), and a
# transposed broadcast weight (wa, Gemm transA).
BODY = """  y1 = MatMul (x, w1)
  y2 = Gemm <transB = 1> (x, w2)
  y3 = MatMul (x, w3)
  s = ReduceSum <keepdims = 0> (w1)
  z = Gemm <transA = 1> (wa, xb)
}
"""
OUTPUTS = ("float[24, 200] y1, float[24, 200] y2, float[24, 200] y3, "
           "float s, float[512, 64] z")


def dims(name):
    return ", ".join(str(d) for d in SHAPES[name])


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join(f"{d}, " for d in shape))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1"))
        f.write(struct.pack("<%df" % len(values), *values))


def main():
    out = sys.argv[1]
    values = {}
    for name, shape in SHAPES.items():
        count = 1
        for d in shape:
            count *= d
        # Four decimals, as the text model holds them.
        values[name] = [round(random.uniform(-1, 1), 4) for _ in range(count)]
        write_npy(os.path.join(out, name + ".npy"), shape, values[name])
    head = '<ir_version: 8, opset_import: ["" : 17]>\n'
    with open(os.path.join(out, "const.onnxtxt"), "w") as f:
        f.write(head + f"weight_panels (float[{dims('x')}] x, "
                f"float[{dims('xb')}] xb) => ({OUTPUTS}) {{\n")
        for w in WEIGHTS:
            text = ", ".join(f"{v:.4f}" for v in values[w])
            f.write(f"  {w} = Constant <value = float[{dims(w)}] {{{text}}}> ()\n")
        f.write(BODY)
    with open(os.path.join(out, "inputs.onnxtxt"), "w") as f:
        inputs = ", ".join(f"float[{dims(n)}] {n}" for n in SHAPES)
        f.write(head + f"weight_panels ({inputs}) => ({OUTPUTS}) {{\n" + BODY)


if __name__ == "__main__":
    main()
