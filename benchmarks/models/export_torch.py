#!/usr/bin/env python3
"""Real torch exports of the benchmark zoo: torchvision's ResNet-50 and
transformers' BERT-base (random weights), written by torch.onnx.export
(TorchScript exporter, opset 17) as OUT_DIR/resnet50.onnx and
OUT_DIR/bert_base.onnx, so that `benchmarks/latency_vs_ort.py --zoo-dir` and
`test/e2e/compare_ort.py --zoo-dir` use them instead of gen_zoo.py's
look-alikes (gen_zoo.py skips files that exist).

  python3 benchmarks/models/export_torch.py OUT_DIR

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
    for name, export in [("resnet50", export_resnet50), ("bert_base", export_bert_base)]:
        path = os.path.join(out, name + ".onnx")
        if not os.path.exists(path):
            export(path)
            print(f"wrote {path} ({os.path.getsize(path) / 1e6:.0f} MB), torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
