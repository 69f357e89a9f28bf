#!/usr/bin/env python3
"""npy_close.py A.npy B.npy [REL_L2]: exits 0 when two float32 .npy files
have the same shape, NaNs at the same elements, and relative L2 error at
most REL_L2 (default 1e-5) over the others. Standard library only, so lit
tests need no numpy."""
import ast
import math
import struct
import sys


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path + ": not a .npy file"
    major = data[6]
    hlen_size = 2 if major == 1 else 4
    hlen = int.from_bytes(data[8:8 + hlen_size], "little")
    start = 8 + hlen_size
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    assert header["descr"] == "<f4", path + ": not float32"
    body = data[start + hlen:]
    return header["shape"], struct.unpack("<%df" % (len(body) // 4), body)


def main():
    (sa, a), (sb, b) = load(sys.argv[1]), load(sys.argv[2])
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
    if sa != sb:
        print("shapes differ:", sa, sb)
        return 1
    nans = [i for i, (x, y) in enumerate(zip(a, b)) if math.isnan(x) != math.isnan(y)]
    if nans:
        print("NaN in one file only at %d elements, first %d" % (len(nans), nans[0]))
        return 1
    pairs = [(x, y) for x, y in zip(a, b) if not math.isnan(x)]
    num = math.sqrt(sum((x - y) ** 2 for x, y in pairs))
    den = math.sqrt(sum(y * y for _, y in pairs)) or 1.0
    if num / den > tol:
        print("relative L2 error %.3g exceeds %.3g" % (num / den, tol))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
