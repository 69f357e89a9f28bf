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


def onnx_reference(model, feeds):
    """ONNX's reference evaluator's outputs for `model` (a path or a
    ModelProto) on `feeds`, the model converted to opset 21 first (the
    evaluator lacks older versions of some operators). Exact integer
    arithmetic: the judge where onnxruntime's u8 x s8 kernels, on CPUs
    without VNNI (vpmaddubsw), saturate pairs of products at 16 bits."""
    import onnx
    from onnx import version_converter
    from onnx.reference import ReferenceEvaluator

    proto = onnx.load(model) if isinstance(model, str) else model
    return ReferenceEvaluator(version_converter.convert_version(proto, 21)).run(None, feeds)


class CompiledPair:
    """A model (a ModelProto) compiled once by ignc, then run by ignc and by
    onnxruntime on each set of inputs given to run():

      pair = CompiledPair(model, "name", work, ignc)
      got, want = pair.run(feeds)
    """

    def __init__(self, model, name, work, ignc, optimize=True):
        """optimize=False: onnxruntime runs the graph as written (no
        fusions: a QDQ graph dequantizes and computes in f32)."""
        import onnx
        import onnxruntime as ort

        onnx.checker.check_model(model)
        self.path = os.path.join(work, name + ".onnx")
        onnx.save(model, self.path)
        self.bundle = os.path.join(work, name + ".ignb")
        self.work, self.ignc = work, ignc
        subprocess.run([ignc, self.path, "-q", "-o", self.bundle], check=True)
        options = ort.SessionOptions()
        if not optimize:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        self.session = ort.InferenceSession(self.path, options,
                                            providers=["CPUExecutionProvider"])

    def run(self, feeds):
        args = []
        for name, v in feeds.items():
            np.save(os.path.join(self.work, name + ".npy"), v)
            args += ["--input", f"{name}={os.path.join(self.work, name + '.npy')}"]
        subprocess.run([self.ignc, "run", self.bundle, *args, "--output-dir", self.work,
                        "-q"], check=True)
        want = self.session.run(None, feeds)
        got = [np.load(os.path.join(self.work, o.name + ".npy"))
               for o in self.session.get_outputs()]
        return got, want
