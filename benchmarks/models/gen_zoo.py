#!/usr/bin/env python3
"""Benchmark models with random weights, built node by node the way
torch.onnx.export emits them (torch itself is too large to install on the
project's machines): ResNet-50 (torchvision layout, opset 13) and a BERT-base
encoder (12 layers, hidden 768, 12 heads, opset 14).

  python3 benchmarks/models/gen_zoo.py OUT_DIR [--bert-layers N]

Writes OUT_DIR/resnet50.onnx and OUT_DIR/bert_base.onnx (skips files that
exist). The models are ~100 MB and ~350 MB: generated into a cache, never
committed.
"""
import argparse
import os
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "models"))
import gen_models  # noqa: E402
from gen_models import F32, GraphBuilder  # noqa: E402


def build_resnet50():
    """torchvision.models.resnet50() exported with opset 13 in eval mode:
    Conv (no bias) + BatchNormalization + Relu, bottleneck blocks [3, 4, 6, 3]
    with the stride on the 3x3 conv (v1.5), GlobalAveragePool, Flatten, Gemm."""
    g = GraphBuilder("resnet50", 13, seed=11)
    x = g.input("input", F32, ["batch", 3, 224, 224])

    def cbr(t, prefix, cin, cout, k, stride=1, relu=True):
        with g.scope(prefix):
            t = g.conv(t, prefix, cin, cout, k, stride=stride, bias=False)
            t = g.bn(t, prefix.replace("conv", "bn"), cout)
            return g.op("Relu", [t]) if relu else t

    t = cbr(x, "conv1", 3, 64, 7, stride=2)
    t = g.op("MaxPool", [t], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for layer, (blocks, width) in enumerate(zip([3, 4, 6, 3], [64, 128, 256, 512]), 1):
        for b in range(blocks):
            p = f"layer{layer}.{b}."
            stride = 2 if b == 0 and layer > 1 else 1
            with g.scope(f"layer{layer}/{b}"):
                y = cbr(t, p + "conv1", cin, width, 1)
                y = cbr(y, p + "conv2", width, width, 3, stride=stride)
                y = cbr(y, p + "conv3", width, width * 4, 1, relu=False)
                if b == 0:
                    t = cbr(t, p + "downsample.0", cin, width * 4, 1, stride=stride,
                            relu=False)
                t = g.op("Relu", [g.op("Add", [y, t])])
            cin = width * 4
    t = g.op("GlobalAveragePool", [t])
    t = g.op("Flatten", [t], axis=1)
    g.op("Gemm", [t, g.init("fc.weight", g.randn(1000, 2048, std=0.02)),
                  g.init("fc.bias", g.randn(1000, std=0.02))],
         outputs=["logits"], alpha=1.0, beta=1.0, transB=1)
    g.output("logits", F32, ["batch", 1000])
    return g.model("ResNet-50 as torch.onnx.export(opset_version=13) emits it")


def build_bert_base(layers):
    """The BERT encoder of test/models/gen_models.py at BERT-base size."""
    gen_models.ENC_HIDDEN, gen_models.ENC_HEADS, gen_models.ENC_FFN = 768, 12, 3072
    gen_models.ENC_VOCAB, gen_models.ENC_MAXPOS = 30522, 512
    gen_models.ENC_LAYERS = layers
    m = gen_models.build_encoder(14)
    m.graph.name = "bert_base"
    return m


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out_dir")
    p.add_argument("--bert-layers", type=int, default=12)
    args = p.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for name, build in [("resnet50", build_resnet50),
                        ("bert_base", lambda: build_bert_base(args.bert_layers))]:
        path = os.path.join(args.out_dir, name + ".onnx")
        if os.path.exists(path):
            continue
        model = build()
        onnx.checker.check_model(model)
        onnx.save(model, path)
        print(f"wrote {path} ({os.path.getsize(path) / 1e6:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
