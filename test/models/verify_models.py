#!/usr/bin/env python3
"""Run every generated model through onnx.reference.ReferenceEvaluator.

For each model: the documented --input-shape binding (see README.md) plus one
alternative binding (to show the symbolic dims really are dynamic).  Prints the
output shapes, fails on non-finite outputs or wrong output shapes.  Also
cross-checks that the opset-14 and opset-17 encoders (same weights, different
export patterns) agree numerically.

Usage: python3 test/models/verify_models.py [MODEL_DIR]
"""

import os
import sys

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

# name -> list of (bindings, expected output shapes); first entry = README binding
CASES = {
    "ocr_det_opset11": [
        ({"x": (1, 3, 64, 64)}, {"maps": (1, 1, 64, 64)}),
        ({"x": (2, 3, 96, 128)}, {"maps": (2, 1, 96, 128)}),
    ],
    "ocr_rec_opset9": [
        ({"x": (1, 3, 32, 100)}, {"softmax": (1, 50, 37)}),
        ({"x": (2, 3, 32, 64)}, {"softmax": (2, 32, 37)}),
    ],
    "ocr_cls_opset11": [
        ({"x": (1, 3, 48, 192)}, {"probs": (1, 2)}),
        ({"x": (3, 3, 48, 100)}, {"probs": (3, 2)}),
    ],
    "transformer_encoder_opset14": [
        ({"input_ids": (1, 16), "attention_mask": (1, 16)},
         {"last_hidden_state": (1, 16, 32), "pooler_output": (1, 32)}),
        ({"input_ids": (2, 7), "attention_mask": (2, 7)},
         {"last_hidden_state": (2, 7, 32), "pooler_output": (2, 32)}),
    ],
    "transformer_encoder_opset17": [
        ({"input_ids": (1, 16), "attention_mask": (1, 16)},
         {"last_hidden_state": (1, 16, 32), "pooler_output": (1, 32),
          "mean_pooled": (1, 32), "avg_hidden": (1, 32)}),
        ({"input_ids": (2, 7), "attention_mask": (2, 7)},
         {"last_hidden_state": (2, 7, 32), "pooler_output": (2, 32),
          "mean_pooled": (2, 32), "avg_hidden": (2, 32)}),
    ],
    "audio_frontend_opset13": [
        ({"waveform": (1, 1600)}, {"logits": (1, 10)}),
        ({"waveform": (2, 1000)}, {"logits": (2, 10)}),
    ],
    "kws_mlp_opset13": [
        ({"features": (1, 1960)}, {"probs": (1, 12), "label": (1,)}),
        ({"features": (4, 1960)}, {"probs": (4, 12), "label": (4,)}),
    ],
    "kws_if_opset18_reduce": [
        ({"x": (1, 40, 49)}, {"probs": (1, 8)}),
        ({"x": (2, 40, 20)}, {"probs": (2, 8)}),
    ],
}


def make_inputs(binding, rng):
    feeds = {}
    for name, shape in binding.items():
        if name == "input_ids":
            feeds[name] = rng.integers(0, 100, shape, dtype=np.int64)
        elif name == "attention_mask":
            m = np.ones(shape, np.int64)
            # right-padding on every row but the first (never fully masked)
            for b in range(1, shape[0]):
                m[b, shape[1] - 2 * b:] = 0
            feeds[name] = m
        elif name == "waveform":
            feeds[name] = (rng.standard_normal(shape) * 0.1).astype(np.float32)
        else:
            feeds[name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def main(argv):
    d = argv[1] if len(argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(0)
    failures = []
    enc_results = {}
    for name, cases in CASES.items():
        path = os.path.join(d, name + ".onnx")
        model = onnx.load(path)
        sess = ReferenceEvaluator(model)
        out_names = [o.name for o in model.graph.output]
        for ci, (binding, expect) in enumerate(cases):
            feeds = make_inputs(binding, rng)
            try:
                outs = dict(zip(out_names, sess.run(None, feeds)))
            except Exception as e:  # noqa: BLE001
                failures.append(f"{name} {binding}: {type(e).__name__}: {e}")
                print(f"FAIL {name} {binding}: {e}")
                continue
            bind_s = " ".join(f"--input-shape {k}={'x'.join(map(str, v))}"
                              for k, v in binding.items())
            shapes = {k: tuple(v.shape) for k, v in outs.items()}
            bad = [k for k, v in outs.items()
                   if v.dtype.kind == "f" and not np.all(np.isfinite(v))]
            wrong = [k for k, s in expect.items() if shapes.get(k) != s]
            status = "ok"
            if bad or wrong:
                status = f"FAIL nonfinite={bad} wrong_shape={wrong}"
                failures.append(f"{name} {binding}: {status}")
            print(f"{name:30s} {bind_s:60s} -> {shapes} {status}")
            if name.startswith("transformer_encoder"):
                enc_results[(name[-2:], ci)] = (feeds, outs)

    # opset-14 vs opset-17 encoder: same weights => same results
    for ci in range(2):
        if ("14", ci) in enc_results and ("17", ci) in enc_results:
            o14, o17 = enc_results[("14", ci)][1], enc_results[("17", ci)][1]
            # different random inputs were drawn per model; rerun 17 on 14's feeds
            feeds = enc_results[("14", ci)][0]
            o17 = dict(zip([o.name for o in onnx.load(os.path.join(
                d, "transformer_encoder_opset17.onnx")).graph.output],
                ReferenceEvaluator(os.path.join(d, "transformer_encoder_opset17.onnx"))
                .run(None, feeds)))
            for k in ("last_hidden_state", "pooler_output"):
                diff = float(np.max(np.abs(o14[k] - o17[k])))
                st = "ok" if diff < 1e-4 else "FAIL"
                if st != "ok":
                    failures.append(f"encoder 14 vs 17 {k}: max diff {diff}")
                print(f"encoder opset14 vs opset17 case {ci} {k}: max|diff| = {diff:.2e} {st}")

    if failures:
        print("\nFAILURES:\n  " + "\n  ".join(failures))
        return 1
    print("\nall models ran OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
