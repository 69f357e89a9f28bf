"""Writes the ONNX text models of test/ignc/short-panels.test: matmuls whose
constant weights the host reads from panels packed at compile time where
copying them per run would not pay (a short reduction; a product that reads
its weight once), and the same graph with the weights as inputs.

  python3 gen_short_panels.py DIR

DIR/const.onnxtxt has the weights as constants; DIR/inputs.onnxtxt is the
same graph with them as inputs, and DIR/*.npy hold the weights and seeded
inputs, so the two can be run on the same values.
"""
import random
import sys

from weight_models import write_models

random.seed(11)
SHAPES = {"wh": [120, 600], "bh": [600], "wt": [72, 96], "wv": [320, 200],
          "x": [40, 120], "xt": [24, 96], "v": [1, 320]}
WEIGHTS = ["wh", "bh", "wt", "wv"]
# A recognizer's head: a 120-long reduction under a softmax (PP-OCRv4's
# 40 x 120 x 6625, narrower); a transposed weight with a 96-long reduction
# (Gemm transB); a matrix-vector product (one row of 320).
BODY = """  m = MatMul (x, wh)
  a = Add (m, bh)
  p = Softmax <axis = -1> (a)
  t = Gemm <transB = 1> (xt, wt)
  y = MatMul (v, wv)
}
"""
OUTPUTS = "float[40, 600] p, float[24, 72] t, float[1, 200] y"


def main():
    write_models(sys.argv[1], "short_panels", SHAPES, WEIGHTS, BODY, OUTPUTS)


if __name__ == "__main__":
    main()
