"""Recurrent layers whose input projections are hoisted into a Gemm
(ign-hoist-recurrent-projections) against onnxruntime: LSTM, GRU (both
linear_before_reset forms) and RNN; forward, reverse and bidirectional;
with and without B and initial_h; sequence_lens; constant weights and
weights given as graph inputs (the Gemm then slices B at run time).

  recurrent-projections.test.py WORKDIR IGNC
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from ort_compare import CompiledPair  # noqa: E402

work, ignc = sys.argv[1:3]
rng = np.random.default_rng(5)
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def case(name, op, direction, bias=True, h0=True, seq_lens=False, const=True,
         extra=None, hidden=24, inputs=20, steps=7, batch=3):
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    values = {
        "W": rng.standard_normal((dirs, g * hidden, inputs)) * 0.3,
        "R": rng.standard_normal((dirs, g * hidden, hidden)) * 0.3,
        "B": rng.standard_normal((dirs, 2 * g * hidden)) * 0.3,
        "h0": rng.standard_normal((dirs, batch, hidden)) * 0.3,
    }
    values = {k: v.astype(np.float32) for k, v in values.items()}
    feeds = {"x": rng.standard_normal((steps, batch, inputs)).astype(np.float32)}
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, feeds["x"].shape)]
    initializers = []

    def operand(key, used=True):
        if not used:
            return ""
        if const:
            initializers.append(numpy_helper.from_array(values[key], key))
        else:
            feeds[key] = values[key]
            graph_inputs.append(helper.make_tensor_value_info(
                key, TensorProto.FLOAT, values[key].shape))
        return key

    names = ["x", operand("W"), operand("R"), operand("B", bias), ""]
    if seq_lens:
        feeds["lens"] = np.array([steps, steps - 2, 1][:batch], np.int32)
        graph_inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [batch]))
        names[4] = "lens"
    names.append(operand("h0", h0))
    node = helper.make_node(op, names, ["y", "y_h"], hidden_size=hidden,
                            direction=direction, **(extra or {}))
    outputs = [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [steps, dirs, batch, hidden]),
        helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [dirs, batch, hidden])]
    model = helper.make_model(
        helper.make_graph([node], name, graph_inputs, outputs, initializers),
        opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    got, want = CompiledPair(model, name, work, ignc).run(feeds)
    worst = max(np.linalg.norm(a - b) / np.linalg.norm(b) for a, b in zip(got, want))
    print(f"{name}: {'match' if worst < 1e-5 else 'DIFFERS'} (rel L2 {worst:.1e})")


case("lstm_bidirectional", "LSTM", "bidirectional")
case("lstm_reverse", "LSTM", "reverse")
case("lstm_sequence_lens", "LSTM", "forward", seq_lens=True)
case("lstm_weight_inputs", "LSTM", "bidirectional", const=False)
case("gru_bidirectional_lbr", "GRU", "bidirectional", extra={"linear_before_reset": 1})
case("gru_no_bias_no_h0", "GRU", "bidirectional", bias=False, h0=False)
case("gru_reverse_weight_inputs", "GRU", "reverse", const=False)
case("rnn_bidirectional", "RNN", "bidirectional")
