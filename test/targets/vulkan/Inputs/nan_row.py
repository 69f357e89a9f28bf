#!/usr/bin/env python3
"""nan_row.py OUT.npy ROWS COLS ROW: a float32 ROWS x COLS .npy of
sin(i) values with a NaN in row ROW (column COLS / 3), for a reduction
that must carry it. Standard library only."""
import math
import struct
import sys


def main():
    out, rows, cols, row = sys.argv[1], *map(int, sys.argv[2:5])
    values = [math.sin(i) for i in range(rows * cols)]
    values[row * cols + cols // 3] = float("nan")
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(out, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


if __name__ == "__main__":
    main()
