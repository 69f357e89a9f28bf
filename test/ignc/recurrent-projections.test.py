"""Recurrent layers whose input projections are hoisted into a Gemm
(ign-hoist-recurrent-projections) against onnxruntime: LSTM, GRU (both
linear_before_reset forms) and RNN; forward, reverse and bidirectional;
with and without B and initial_h; sequence_lens; constant weights and
weights given as graph inputs (the Gemm then slices B at run time). With
64 or more hidden units (and bidirectional ones of any size) the host runs
them in steps of parts of the hidden units (kTimeStepsAttr): LSTM with
peepholes and initial_c, GRU with linear_before_reset, RNN, non-default
activations.

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
         extra=None, hidden=24, inputs=20, steps=7, batch=3, cell=False):
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    values = {
        "W": rng.standard_normal((dirs, g * hidden, inputs)) * 0.3,
        "R": rng.standard_normal((dirs, g * hidden, hidden)) * 0.3,
        "B": rng.standard_normal((dirs, 2 * g * hidden)) * 0.3,
        "h0": rng.standard_normal((dirs, batch, hidden)) * 0.3,
        "c0": rng.standard_normal((dirs, batch, hidden)) * 0.3,
        "P": rng.standard_normal((dirs, 3 * hidden)) * 0.3,
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
    results = ["y", "y_h"]
    if cell:  # LSTM's initial_c and peepholes, and Y_c
        names += [operand("c0"), operand("P")]
        results.append("y_c")
    node = helper.make_node(op, names, results, hidden_size=hidden,
                            direction=direction, **(extra or {}))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                             [steps, dirs, batch, hidden])]
    outputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [dirs, batch, hidden])
                for n in results[1:]]
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
# Stepped in parts (steps of at least 2^18 FLOPs with R: 64 units x 16
# entries in 2 parts of 32; 128 units in 4 parts of 32; 24 units a part
# per direction).
case("lstm_parts_cell", "LSTM", "forward", hidden=64, batch=16, cell=True)
case("lstm_parts_reverse", "LSTM", "reverse", hidden=128, batch=4)
case("lstm_parts_bidirectional", "LSTM", "bidirectional", hidden=64, batch=16, cell=True)
case("lstm_directions", "LSTM", "bidirectional", hidden=24, batch=64)
case("gru_parts_lbr", "GRU", "forward", hidden=128, batch=4,
     extra={"linear_before_reset": 1})
case("gru_parts_bidirectional", "GRU", "bidirectional", hidden=64, batch=16, h0=False,
     extra={"linear_before_reset": 1})
case("rnn_parts_relu", "RNN", "reverse", hidden=64, batch=32, extra={"activations": ["Relu"]})
case("lstm_parts_activations", "LSTM", "bidirectional", hidden=64, batch=16,
     extra={"activations": ["HardSigmoid", "Tanh", "Softsign"] * 2,
            "activation_alpha": [0.3, 0.3], "activation_beta": [0.4, 0.4]})
case("lstm_parts_weight_inputs", "LSTM", "forward", hidden=64, batch=16, const=False)
