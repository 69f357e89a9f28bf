#!/usr/bin/env python3
"""Where a quantized model's ignc outputs part from the reference: every
QuantizeLinear output of a quantized zoo model (quantized_zoo.py's cache) is
made a graph output, the model is run by ignc and by onnxruntime with graph
optimizations off (the QDQ graph as written) on the same seeded inputs, and
each quantizer's largest difference in quantization steps is printed in
graph order (only those that differ), then the largest over all.

  python3 benchmarks/quantized_steps.py NAME     (e.g. minilm_l6_v2)
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import quantized_zoo  # noqa: E402
import zoo_vs_peers as zoo  # noqa: E402


def main():
    import onnx
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    name = sys.argv[1]
    models = {m[0]: m for m in zoo.zoo_models({name})}
    _, path, _, inputs = models[name]
    qpath = os.path.join(quantized_zoo.QUANT, name + ".qdq.onnx")
    if not os.path.exists(qpath):
        sys.exit(f"quantized_steps: {qpath} is missing: run quantized_zoo.py --only {name}")
    model = onnx.load(qpath)
    quantizers = [n for n in model.graph.node if n.op_type == "QuantizeLinear"]
    known = {o.name for o in model.graph.output}
    for n in quantizers:
        if n.output[0] not in known:
            model.graph.output.append(onnx.ValueInfoProto(name=n.output[0]))
    feeds = zoo.make_inputs(inputs, 7)
    with tempfile.TemporaryDirectory(prefix="ignc-qsteps-") as work:
        probe = os.path.join(work, "probe.onnx")
        onnx.save(model, probe)
        ref_sess = quantized_zoo.reference_session(probe)
        ref = dict(zip([o.name for o in ref_sess.get_outputs()], ref_sess.run(None, feeds)))
        bundle = os.path.join(work, "probe.ignb")
        ignc = os.path.join(zoo.ROOT, "build", "bin", "ignc")
        subprocess.run([ignc, probe, "-q", "-o", bundle] + zoo.shape_args(inputs), check=True)
        out = zoo.ignc_outputs(ignc, bundle, feeds, work)
        worst = 0
        for n in quantizers:
            safe = "".join("_" if c in "/\\: " else c for c in n.output[0])
            got = np.load(os.path.join(out, safe + ".npy")).astype(np.int64)
            diff = np.abs(got - ref[n.output[0]].astype(np.int64))
            if diff.max() > 0:
                print(f"{n.output[0]}: {diff.max()} step(s) on {(diff > 0).mean():.5%} "
                      "of its elements")
            worst = max(worst, int(diff.max()))
    print(f"{len(quantizers)} quantizers; largest difference {worst} step(s)")


if __name__ == "__main__":
    main()
