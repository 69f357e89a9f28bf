#!/usr/bin/env python3
"""largest_allocs.py KERNELS.ll LIMIT: exits 1 when a kernel of the LLVM IR
(`ignc --emit=llvm`) allocates LIMIT bytes or more at once (malloc with a
constant size), naming the kernel and the size; prints each kernel's
largest allocation."""
import re
import sys

path, limit = sys.argv[1], int(sys.argv[2])
kernel, largest = None, {}
with open(path) as f:
    for line in f:
        m = re.match(r"define .*@(k\d+_\w+)\(", line)
        if m:
            kernel = m.group(1)
        for size in re.findall(r"@malloc\(i64 (\d+)\)", line):
            if kernel:
                largest[kernel] = max(largest.get(kernel, 0), int(size))
bad = False
for kernel, size in sorted(largest.items()):
    print(f"{kernel}: {size} bytes")
    if size >= limit:
        print(f"{kernel} allocates {size} bytes at once (limit {limit})")
        bad = True
sys.exit(1 if bad else 0)
