"""Runs a model in ONNX's text syntax through ignc (compile, `ignc run`) and
onnxruntime on the same inputs; for the tests that compare the two.

  got, want = run_both(model_text, feeds, work, ignc)
got[i] and want[i] are output i of ignc and of onnxruntime.
"""
import os
import subprocess
import sys

import numpy as np


def run_both(model_text, feeds, work, ignc):
    import onnx
    import onnxruntime as ort

    model = os.path.join(work, "model.onnxtxt")
    with open(model, "w") as f:
        f.write(model_text)
    args = []
    for name, v in feeds.items():
        np.save(os.path.join(work, name + ".npy"), v)
        args += ["--input", f"{name}={os.path.join(work, name + '.npy')}"]
    bundle = os.path.join(work, "model.ignb")
    subprocess.run([ignc, model, "-q", "-o", bundle], check=True)
    subprocess.run([ignc, "run", bundle, *args, "--output-dir", work, "-q"], check=True)
    proto = onnx.parser.parse_model(model_text)
    session = ort.InferenceSession(proto.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)
    got = [np.load(os.path.join(work, o.name + ".npy")) for o in session.get_outputs()]
    return got, want
