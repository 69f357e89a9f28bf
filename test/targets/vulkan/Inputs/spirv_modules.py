#!/usr/bin/env python3
"""spirv_modules.py BUNDLE [--out DIR] [--validate]: lists the SPIR-V modules
of a bundle's Vulkan kernels (docs/bundle-format.md), writes each to DIR as
<kernel>.<dispatch>.spv, and with --validate runs `spirv-val --target-env
vulkan1.1` on each. Prints "N modules, M valid" and exits 1 when one is
invalid. Standard library only."""
import json
import os
import struct
import subprocess
import sys
import tempfile


def sections(data):
    magic, _version, count, table = struct.unpack_from("<8sIIQ", data, 0)
    assert magic == b"IGNBNDL\0", "not a bundle"
    out = {}
    for i in range(count):
        kind, _, offset, size, _ = struct.unpack_from("<IIQQQ", data, table + 64 * i)
        out[kind] = data[offset:offset + size]
    return out


def main():
    args = sys.argv[1:]
    validate = "--validate" in args
    out_dir = args[args.index("--out") + 1] if "--out" in args else None
    data = open(args[0], "rb").read()
    secs = sections(data)
    manifest = json.loads(secs[1])
    device = secs.get(4, b"")
    out_dir = out_dir or tempfile.mkdtemp()
    os.makedirs(out_dir, exist_ok=True)
    total = valid = 0
    for k in manifest["kernels"]:
        d = k.get("device")
        if not d or d.get("name") != "vulkan":
            continue
        blob = device[d["blob_offset"]:d["blob_offset"] + d["blob_bytes"]]
        for i, disp in enumerate(d["dispatches"]):
            path = os.path.join(out_dir, "%s.%d.spv" % (k["name"], i))
            with open(path, "wb") as f:
                f.write(blob[disp["offset"]:disp["offset"] + disp["bytes"]])
            total += 1
            if validate:
                r = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", path],
                                   capture_output=True, text=True)
                if r.returncode == 0:
                    valid += 1
                else:
                    print("%s: %s" % (path, r.stderr.strip()))
    print("%d modules, %d valid" % (total, valid) if validate else "%d modules" % total)
    return 0 if not validate or valid == total else 1


if __name__ == "__main__":
    sys.exit(main())
