#!/usr/bin/env python3
"""Real torch exports of the benchmark zoo: torchvision's ResNet-50,
MobileNetV2 and ViT-B/16, transformers' BERT-base and GPT-2 small (random
weights), written by torch.onnx.export (TorchScript exporter, opset 17) as
OUT_DIR/{resnet50,mobilenet_v2,vit_b_16,bert_base,gpt2}.onnx, so that `benchmarks/latency_vs_ort.py --zoo-dir` and
`test/e2e/compare_ort.py --zoo-dir` use them instead of gen_zoo.py's
look-alikes (gen_zoo.py skips files that exist).

  python3 benchmarks/models/export_torch.py OUT_DIR [NAME,NAME...]

torch is not a dependency of ignc or its tests. PyPI's torch wheel is built
for CUDA; on a machine with the CUDA toolkit but no GPU it imports once the
CUDA libraries the toolkit lacks are installed beside it (measured here with
torch 2.15.0+cu132, CUDA 13 toolkit):

  pip install --no-deps torch torchvision nvidia-cusparselt-cu13 \
      nvidia-nvshmem-cu13 nvidia-nccl-cu13 nvidia-cufile
  pip install pillow transformers
"""
import os
import sys

import torch


def export_resnet50(path):
    import torchvision
    model = torchvision.models.resnet50(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(model, (x,), path, opset_version=17, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}},
                      dynamo=False)


def export_vision(name):
    def export(path):
        import torchvision
        model = getattr(torchvision.models, name)(weights=None).eval()
        x = torch.randn(1, 3, 224, 224)
        torch.onnx.export(model, (x,), path, opset_version=17, input_names=["input"],
                          output_names=["logits"], dynamo=False)
    return export


def export_gpt2(path):
    from transformers import GPT2Config, GPT2Model

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gpt = GPT2Model(GPT2Config()).eval()

        def forward(self, input_ids):
            return self.gpt(input_ids=input_ids, use_cache=False).last_hidden_state

    ids = torch.randint(0, 1000, (1, 128))
    torch.onnx.export(Decoder().eval(), (ids,), path, opset_version=17,
                      input_names=["input_ids"], output_names=["last_hidden_state"],
                      dynamo=False)


def export_bert_base(path):
    from transformers import BertConfig, BertModel

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = BertModel(BertConfig()).eval()

        def forward(self, input_ids, attention_mask):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
            return out.last_hidden_state, out.pooler_output

    ids = torch.randint(0, 1000, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)
    axes = {0: "batch", 1: "sequence"}
    torch.onnx.export(Encoder().eval(), (ids, mask), path, opset_version=17,
                      input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state", "pooler_output"],
                      dynamic_axes={"input_ids": axes, "attention_mask": axes}, dynamo=False)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    zoo = [("resnet50", export_resnet50), ("bert_base", export_bert_base),
           ("mobilenet_v2", export_vision("mobilenet_v2")),
           ("resnet18", export_vision("resnet18")),
           ("vit_b_16", export_vision("vit_b_16")), ("gpt2", export_gpt2)]
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    for name, export in zoo:
        if only and name not in only:
            continue
        path = os.path.join(out, name + ".onnx")
        if not os.path.exists(path):
            export(path)
            print(f"wrote {path} ({os.path.getsize(path) / 1e6:.0f} MB), torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
