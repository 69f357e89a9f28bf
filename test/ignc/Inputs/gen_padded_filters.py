"""Writes the ONNX text models of test/ignc/padded-filters.test: strided
convolutions whose filter count no block divides (24, 40), which the host
pads with zero filters up to a multiple of one vector
(lib/Transforms/ConvToMatmul.cpp, paddedFilterCount).

  python3 gen_padded_filters.py DIR

DIR/const.onnxtxt holds the weights as constants; DIR/inputs.onnxtxt is the
same graph with them as inputs (nothing padded), and DIR/*.npy hold every
input, seeded, so the two run on the same values.
"""
import random
import sys

from weight_models import write_models

random.seed(5)
# name: shape. x* are the data inputs, the rest weights.
SHAPES = {
    "x": [1, 3, 30, 34], "x1": [1, 8, 41],
    "w24": [24, 3, 3, 3], "b24": [24],
    "w40": [40, 3, 3, 3], "b40": [40],
    "w1d": [24, 8, 5],
    "w20": [20, 3, 3, 3],
    "wu": [24, 3, 3, 3],
}
DATA = ["x", "x1"]
# - y24: a stride-2 stem of 24 filters with bias and Relu (moved before
#   the split), read by a max pool.
# - y40: 40 filters (padded to 48) under a SiLU (sigmoid and mul, moved).
# - y1d: a 1-D stride-2 convolution of 24 filters without bias.
# - y20: 20 filters: 32 would be 1.6x the multiplies, not padded (strided
#   pixel tiles).
# - yu: unit stride: keeps its pixel tiles, not padded.
BODY = """  c24 = Conv <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (x, w24, b24)
  r24 = Relu (c24)
  y24 = MaxPool <kernel_shape = [3, 3], strides = [2, 2]> (r24)
  c40 = Conv <kernel_shape = [3, 3], strides = [2, 2]> (x, w40, b40)
  s40 = Sigmoid (c40)
  y40 = Mul (c40, s40)
  y1d = Conv <kernel_shape = [5], strides = [2]> (x1, w1d)
  y20 = Conv <kernel_shape = [3, 3], strides = [2, 2]> (x, w20)
  yu = Conv <kernel_shape = [3, 3]> (x, wu)
}
"""
OUTPUTS = ("float[1, 24, 7, 8] y24, float[1, 40, 14, 16] y40, float[1, 24, 19] y1d, "
           "float[1, 20, 14, 16] y20, float[1, 24, 28, 32] yu")


def main():
    write_models(sys.argv[1], "padded_filters", SHAPES,
                 [n for n in SHAPES if n not in DATA], BODY, OUTPUTS)


if __name__ == "__main__":
    main()
