"""Writes the ONNX text model of test/ignc/amx-convs*.test: direct
convolutions with constant weights that AMX blocks take (input channels in
multiples of 32, too large to keep in the repository as text).

  python3 gen_amx_convs.py DIR

DIR/const.onnxtxt has the weights as constants (the AMX blocks read them
permuted at compile time); DIR/inputs.onnxtxt and DIR/*.npy as
weight_models.py writes them.
"""
import random
import sys

from weight_models import write_models

random.seed(11)
SHAPES = {"w1": [32, 32, 3, 3], "b1": [32], "w2": [16, 32, 3, 3],
          "w3": [32, 64, 1, 1], "w4": [64, 32, 1, 1], "w5": [32, 64, 3],
          "x": [1, 32, 10, 20], "x7": [1, 64, 7, 7], "x1": [1, 64, 40],
          "w6": [32, 128, 3, 3], "w7": [32, 128, 3, 3], "x2": [1, 128, 8, 18],
          "w8": [32, 48, 3, 3], "x3": [1, 48, 8, 16], "w9": [32, 80, 1, 1],
          "x4": [1, 80, 6, 20], "w10": [32, 16, 3, 3], "w11": [32, 16, 1, 1],
          "x5": [1, 16, 6, 20], "w12": [64, 3, 7, 7], "b12": [64],
          "x6": [1, 3, 48, 48], "x7b": [1, 32, 32, 32], "w14": [32, 16, 4, 4],
          "x8": [1, 32, 16, 16], "w15": [24, 32, 3, 3],
          "x9": [1, 32, 6, 20]}
WEIGHTS = ["w1", "b1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9", "w10",
           "w11", "w12", "b12", "w14", "w15"]
# A 3x3 convolution with bias and ReLU over rows of 20 pixels (blocks of
# two tiles of 10), a stride-2 one (the input's pairs in phases of 2) of 16
# filters, a 1x1 one over 7 x 7 pixels (flattened: tiles of 7), and a 1x1
# one over 200 pixels (a matmul: its constant weights are A, rounded to
# bfloat16 at compile time), a 1-D one of window 3 and stride 2, and two
# of 128 channels (each workgroup sums them in chunks of 64, every row of a
# chunk before the next: amxChannelPairs) at strides 1 and 2; and two whose
# channels are no multiple of 32 (48 and 80, padded with zero channels to 64
# and 96: PadChannels.cpp), a 3x3 and a 1x1 (a matmul); of 16 channels a
# 3x3 one is padded to 32, a 1x1 one is not; and a 7 x 7 stride-2 RGB stem
# with bias and ReLU, its window's columns folded into 21 channels (padded
# to 32) of a 7 x 1 window (PadChannels.cpp's foldColumns); the first
# convolution again over 32 x 32 pixels, whose filters' planes are 4 KiB
# apart (its fused epilogue reads the tiles from a scratch buffer); a 4x4
# stride-2 ConvTranspose over 16 x 16 pixels, whose phases' rows of 17
# pixels (a prime: no AMX blocks) are computed 18 long and cropped; a 3x3
# one of 24 filters over rows of 20 pixels, padded to 32 filters for AMX
# blocks (in fp32 it keeps its 24 in pixel tiles).
BODY = """  c1 = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x, w1, b1)
  y1 = Relu (c1)
  y2 = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]> (x, w2)
  y3 = Conv <kernel_shape = [1, 1]> (x7, w3)
  y4 = Conv <kernel_shape = [1, 1]> (x, w4)
  y5 = Conv <kernel_shape = [3], pads = [1, 1], strides = [2]> (x1, w5)
  y6 = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x2, w6)
  y7 = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]> (x2, w7)
  y8 = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x3, w8)
  y9 = Conv <kernel_shape = [1, 1]> (x4, w9)
  y10 = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x5, w10)
  y11 = Conv <kernel_shape = [1, 1]> (x5, w11)
  c12 = Conv <kernel_shape = [7, 7], pads = [3, 3, 3, 3], strides = [2, 2]> (x6, w12, b12)
  y12 = Relu (c12)
  c13 = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x7b, w1, b1)
  y13 = Relu (c13)
  y14 = ConvTranspose <kernel_shape = [4, 4], pads = [1, 1, 1, 1], strides = [2, 2]> (x8, w14)
  y15 = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x9, w15)
}
"""
OUTPUTS = ("float[1, 32, 10, 20] y1, float[1, 16, 5, 10] y2, "
           "float[1, 32, 7, 7] y3, float[1, 64, 10, 20] y4, "
           "float[1, 32, 20] y5, float[1, 32, 8, 18] y6, "
           "float[1, 32, 4, 9] y7, float[1, 32, 8, 16] y8, "
           "float[1, 32, 6, 20] y9, float[1, 32, 6, 20] y10, "
           "float[1, 32, 6, 20] y11, float[1, 64, 24, 24] y12, "
           "float[1, 32, 32, 32] y13, float[1, 16, 32, 32] y14, "
           "float[1, 24, 6, 20] y15")

if __name__ == "__main__":
    write_models(sys.argv[1], "amx_convs", SHAPES, WEIGHTS, BODY, OUTPUTS)
