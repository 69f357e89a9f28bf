"""Writes the ONNX text models of test/ignc/streamed-pairs.test: direct
convolutions whose constant weights are read as bfloat16 pairs (too large
to keep in the repository as text: about 3 MB).

  python3 gen_streamed_pairs.py DIR

DIR/const.onnxtxt has the weights as constants, DIR/inputs.onnxtxt the same
graph with them as inputs (paired at run time), DIR/*.npy the values.
"""
import random
import sys

from weight_models import write_models

random.seed(11)
# w1: 32 filters x 256 channels x 64 taps, 1 MiB of bf16 pairs per block of
# filters: summed in chunks of channels whose pairs fit half of a 1 MiB L2.
# w2: 32 filters x 512 channels x 3x3, 295 KB of pairs (590 KB as f32):
# whole in bf16, chunked in fp32.
SHAPES = {"w1": [32, 256, 64], "w2": [32, 512, 3, 3],
          "x1": [1, 256, 191], "x2": [1, 512, 7, 7]}
WEIGHTS = ["w1", "w2"]
BODY = """  y1 = Conv <kernel_shape = [64]> (x1, w1)
  y2 = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x2, w2)
}
"""
OUTPUTS = "float[1, 32, 128] y1, float[1, 32, 7, 7] y2"


def main():
    write_models(sys.argv[1], "streamed_pairs", SHAPES, WEIGHTS, BODY, OUTPUTS)


if __name__ == "__main__":
    main()
