"""Writes the ONNX text models of test/ignc/strided-rows.test: depthwise
convolutions and a pool whose output rows read the input s = 2, 3, 4
pixels apart (readRowContiguously in targets/host/DirectConv.cpp), rows
that fill whole vectors of AVX2's 8 lanes (read as in-bounds vectors and
one shuffle) and rows that do not (masked).

  python3 gen_strided_rows.py DIR
"""
import random
import sys

from weight_models import write_models

random.seed(7)
SHAPES = {
    "x": [1, 16, 17, 17], "x3": [1, 8, 24, 26], "x4": [1, 8, 13, 33],
    "xr": [1, 8, 21, 27],
    "w2": [16, 1, 3, 3], "b2": [16], "w3": [8, 1, 5, 5], "w4": [8, 1, 3, 3],
    "wr": [8, 1, 3, 3],
}
DATA = ["x", "x3", "x4", "xr"]
# - y2: 3x3 stride 2 without padding: rows of 8 (whole vectors).
# - y3: 5x5 stride 3 with padding 2: rows of 9 (8 + a masked 1).
# - y4: 3x3 stride 4: rows of 8 (whole vectors of 29 elements).
# - yr: 3x3 stride 2 with padding: rows of 14 (8 + a masked 6).
# - ym: a 3x3 stride-2 max pool, rows of 8.
BODY = """  y2 = Conv <group = 16, kernel_shape = [3, 3], strides = [2, 2]> (x, w2, b2)
  y3 = Conv <group = 8, kernel_shape = [5, 5], strides = [3, 3], pads = [2, 2, 2, 2]> (x3, w3)
  y4 = Conv <group = 8, kernel_shape = [3, 3], strides = [4, 4]> (x4, w4)
  yr = Conv <group = 8, kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (xr, wr)
  ym = MaxPool <kernel_shape = [3, 3], strides = [2, 2]> (x)
}
"""
OUTPUTS = ("float[1, 16, 8, 8] y2, float[1, 8, 8, 9] y3, float[1, 8, 3, 8] y4, "
           "float[1, 8, 11, 14] yr, float[1, 16, 8, 8] ym")


def main():
    write_models(sys.argv[1], "strided_rows", SHAPES,
                 [n for n in SHAPES if n not in DATA], BODY, OUTPUTS)


if __name__ == "__main__":
    main()
