"""Writes the ONNX text models of test/ignc/amx-weights.test: matmuls of
257 and 17 rows (whole AMX blocks and a rest of one row) by a constant
weight of 256 x 384 (too large to keep in the repository as text).

  python3 gen_amx_weights.py DIR

DIR/const.onnxtxt has the weight as a constant; DIR/inputs.onnxtxt and
DIR/*.npy as weight_models.py writes them.
"""
import random
import sys

from weight_models import write_models

random.seed(13)
SHAPES = {"w": [256, 384], "x": [1, 257, 256], "x2": [1, 17, 256]}
BODY = """  y = MatMul (x, w)
  y2 = MatMul (x2, w)
}
"""


def main():
    write_models(sys.argv[1], "amx_weights", SHAPES, ["w"], BODY,
                 "float[1, 257, 384] y, float[1, 17, 384] y2")


if __name__ == "__main__":
    main()
