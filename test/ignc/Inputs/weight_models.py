"""Helpers for the generators of test models with constant weights
(gen_weight_panels.py, gen_conv_transpose.py): the same graph written twice,
DIR/const.onnxtxt with the weights as Constant nodes and DIR/inputs.onnxtxt
with them as graph inputs, and every tensor's seeded values as DIR/NAME.npy
so that the two run on the same values. Standard library only.
"""
import os
import random
import struct

HEAD = '<ir_version: 8, opset_import: ["" : 17]>\n'


def dims(shape):
    return ", ".join(str(d) for d in shape)


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join(f"{d}, " for d in shape))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1"))
        f.write(struct.pack("<%df" % len(values), *values))


def write_models(out, name, shapes, weights, body, outputs, low=None):
    """Seeded values for every tensor in `shapes` (uniform in [low(name), 1),
    low -1 by default, four decimals as the text model holds them), their
    .npy files, and the two models. `weights` are the names that are
    constants in const.onnxtxt; `body` is the graph's nodes and closing
    brace, `outputs` its output signature."""
    values = {}
    for tensor, shape in shapes.items():
        count = 1
        for d in shape:
            count *= d
        lo = low(tensor) if low else -1
        values[tensor] = [round(random.uniform(lo, 1), 4) for _ in range(count)]
        write_npy(os.path.join(out, tensor + ".npy"), shape, values[tensor])
    data = ", ".join(f"float[{dims(shapes[n])}] {n}" for n in shapes
                     if n not in weights)
    with open(os.path.join(out, "const.onnxtxt"), "w") as f:
        f.write(HEAD + f"{name} ({data}) => ({outputs}) {{\n")
        for w in weights:
            text = ", ".join(f"{v:.4f}" for v in values[w])
            f.write(f"  {w} = Constant <value = float[{dims(shapes[w])}] {{{text}}}> ()\n")
        f.write(body)
    with open(os.path.join(out, "inputs.onnxtxt"), "w") as f:
        every = ", ".join(f"float[{dims(s)}] {n}" for n, s in shapes.items())
        f.write(HEAD + f"{name} ({every}) => ({outputs}) {{\n" + body)
