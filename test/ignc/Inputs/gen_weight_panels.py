"""Writes the ONNX text models of test/ignc/prepacked-panels*.test: matmuls
whose constant weights the host packs into panels at compile time (too
large to keep in the repository as text: about 1 MB).

  python3 gen_weight_panels.py DIR

DIR/const.onnxtxt has the weights as constants; DIR/inputs.onnxtxt is the
same graph with them as inputs (packed at run time), and DIR/*.npy hold
the weights and seeded inputs, so the two can be run on the same values.
"""
import random
import sys

from weight_models import write_models

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


def main():
    write_models(sys.argv[1], "weight_panels", SHAPES, WEIGHTS, BODY, OUTPUTS)


if __name__ == "__main__":
    main()
