"""Replays the fuzzers' crashers (test/fuzz/regressions/HARNESS/*) through
ignc: each must end with a result or a clean error (one of ignc's exit
codes, no crash report), in an ordinary build as in the sanitizer builds.
A bundle-manifest input is put into test/fuzz/seeds/template.bundle first,
as the harness does.

  replay.py REGRESSIONS_DIR IGNC
"""
import os
import struct
import subprocess
import sys
import tempfile

root, ignc = sys.argv[1:3]
tmp = tempfile.mkdtemp()
db = os.path.join(tmp, "tuning.db")
TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds", "template.bundle")


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def bundle_with_manifest(manifest_path):
    """The template bundle with this manifest, laid out again with valid
    offsets and checksums (as fuzz-bundle-manifest builds it)."""
    data = open(TEMPLATE, "rb").read()
    count, table = struct.unpack_from("<IQ", data, 12)[0], 56
    sections = []
    for i in range(count):
        kind, res, off, size, _ = struct.unpack_from("<IIQQQ", data, table + 64 * i)
        name = data[table + 64 * i + 32:table + 64 * i + 64]
        body = open(manifest_path, "rb").read() if kind == 1 else data[off:off + size]
        sections.append((kind, res, name, body))
    align = lambda v: (v + 63) // 64 * 64  # noqa: E731
    offset = align(56 + 64 * count)
    entries, bodies = b"", b""
    layout = []
    for kind, res, name, body in sections:
        layout.append((offset, body))
        entries += struct.pack("<IIQQQ", kind, res, offset, len(body), fnv1a(body)) + name
        offset = align(offset + len(body))
    head = b"IGNBNDL\0" + struct.pack("<IIQQQQ", 2, count, 56, offset, 0, 0)
    out = bytearray(offset)
    out[:56] = head + struct.pack("<Q", fnv1a(head))
    out[56:56 + len(entries)] = entries
    for off, body in layout:
        out[off:off + len(body)] = body
    path = os.path.join(tmp, "replay.ignb")
    open(path, "wb").write(out)
    return path
def scalesim_command(path):
    """The harness's first byte picks the reader (conv topology, GEMM
    topology, config); `ignc sim` reads the rest as that file."""
    data = open(path, "rb").read()
    mode = data[0] % 3 if data else 0
    file = os.path.join(tmp, "replay" + (".cfg" if mode == 2 else ".csv"))
    open(file, "wb").write(data[1:])
    out = os.path.join(tmp, "sim")
    if mode == 2:
        return [ignc, "sim", "--config", file, "--topology", file, "--output-dir", out]
    return [ignc, "sim", "--chip", "gemmini-16", "--topology", file, "--output-dir", out,
            *(["--gemm"] if mode == 1 else [])]


# What each harness feeds, as an ignc command line for the input.
COMMANDS = {
    "scalesim": scalesim_command,
    "onnx-import": lambda f: [ignc, f, "--emit=ign"],
    "onnx-text-import": lambda f: [ignc, f, "--emit=ign"],
    "tuning-records": lambda f: [ignc, "db", "import", f, "--tuning-db", db],
    "bundle-manifest": lambda f: [ignc, "inspect", bundle_with_manifest(f)],
}
count, bad = 0, []
for harness in sorted(os.listdir(root)):
    for name in sorted(os.listdir(os.path.join(root, harness))):
        path = os.path.join(root, harness, name)
        r = subprocess.run(COMMANDS[harness](path), capture_output=True, text=True,
                           errors="replace", timeout=120)
        count += 1
        # ignc's documented exit codes (docs/exit-codes.md) are clean
        # outcomes; a signal, or a crash report, is not.
        crashed = not 0 <= r.returncode <= 9 or "Stack dump" in r.stderr \
            or "runtime error" in r.stderr or "Sanitizer" in r.stderr
        if crashed:
            bad.append(f"{harness}/{name}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
print(f"replayed {count} inputs, {len(bad)} crashed")
for line in bad:
    print(line)
sys.exit(1 if bad else 0)
