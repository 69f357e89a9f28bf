"""Writes the ONNX text models of test/ignc/conv-transpose-subpixel.test:
transposed convolutions with constant weights, which the host computes as
one convolution per stride phase and a pixel shuffle
(lib/Transforms/ConvTransposeToConv.cpp).

  python3 gen_conv_transpose.py DIR

DIR/const.onnxtxt holds the weights (and batch-norm parameters) as
constants; DIR/inputs.onnxtxt is the same graph with them as inputs (no
weight to rewrite or fold), and DIR/*.npy hold every input, seeded, so the
two run on the same values.
"""
import random
import sys

from weight_models import write_models

random.seed(11)
# name: shape. x* are the data inputs, the rest weights.
SHAPES = {
    "x": [1, 6, 9, 11], "xb": [2, 5, 7], "xs": [1, 4, 6, 20],
    "w4": [6, 8, 4, 4], "b4": [8],
    "bn_s": [8], "bn_b": [8], "bn_m": [8], "bn_v": [8],
    "w2": [6, 4, 2, 2],
    "w1d": [5, 3, 4], "b1d": [3],
    "wa": [4, 3, 4, 3], "ba": [3],
    "w3": [6, 5, 3, 3],
    "wg": [6, 2, 3, 3],
    "bg_s": [4], "bg_b": [4], "bg_m": [4], "bg_v": [4],
}
DATA = ["x", "xb", "xs"]
# - y4: 4x4 stride 2 pad 1 (pose-ResNet's decoder), bias, then a batch norm
#   (folded into the weight) and a Relu (moved before the shuffle); the
#   shuffle crops a row and a column at each end.
# - y2: 2x2 stride 2 (UNet's upsampling): phases without overlap, no crop.
# - y1: 1-D, batch 2, a LeakyRelu and the sigmoid-gated add reading it
#   (l1 + sigmoid(l1)) moved.
# - ya: stride (2, 1), kernel (4, 3), asymmetric pads, output_padding.
# - y3: 3x3 stride 2: a phase convolution over 2x2 taps would multiply
#   16 / 9 as often, so it stays a Gemm and a col2im.
# - yg: two groups (not rewritten), a batch norm folded into the weight
#   (output channel g * 2 + j reads wg[c of group g, j]).
BODY = """  c4 = ConvTranspose <strides = [2, 2], pads = [1, 1, 1, 1]> (x, w4, b4)
  n4 = BatchNormalization (c4, bn_s, bn_b, bn_m, bn_v)
  y4 = Relu (n4)
  y2 = ConvTranspose <strides = [2, 2]> (x, w2)
  c1 = ConvTranspose <strides = [2], pads = [1, 1]> (xb, w1d, b1d)
  l1 = LeakyRelu <alpha = 0.1> (c1)
  s1 = Sigmoid (l1)
  y1 = Add (s1, l1)
  ya = ConvTranspose <strides = [2, 1], pads = [1, 1, 2, 0], output_padding = [1, 0]> (xs, wa, ba)
  y3 = ConvTranspose <strides = [2, 2], pads = [1, 1, 1, 1], output_padding = [1, 1]> (x, w3)
  cg = ConvTranspose <group = 2> (x, wg)
  yg = BatchNormalization (cg, bg_s, bg_b, bg_m, bg_v)
}
"""
OUTPUTS = ("float[1, 8, 18, 22] y4, float[1, 4, 18, 22] y2, float[2, 3, 14] y1, "
           "float[1, 3, 12, 21] ya, float[1, 5, 18, 22] y3, float[1, 4, 11, 13] yg")


def main():
    # Variances are positive.
    write_models(sys.argv[1], "conv_transpose", SHAPES,
                 [n for n in SHAPES if n not in DATA], BODY, OUTPUTS,
                 low=lambda name: 0.5 if name in ("bn_v", "bg_v") else -1)


if __name__ == "__main__":
    main()
