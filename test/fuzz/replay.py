"""Replays the fuzzers' crashers (test/fuzz/regressions/HARNESS/*) through
ignc: each must end with a result or a clean error (exit 0 or 2, no crash
report), in an ordinary build as in the sanitizer builds.

  replay.py REGRESSIONS_DIR IGNC
"""
import os
import subprocess
import sys
import tempfile

root, ignc = sys.argv[1:3]
db = os.path.join(tempfile.mkdtemp(), "tuning.db")
# What each harness feeds, as an ignc command line for the input.
COMMANDS = {
    "onnx-import": lambda f: [ignc, f, "--emit=ign"],
    "onnx-text-import": lambda f: [ignc, f, "--emit=ign"],
    "tuning-records": lambda f: [ignc, "db", "import", f, "--tuning-db", db],
}
count, bad = 0, []
for harness in sorted(os.listdir(root)):
    for name in sorted(os.listdir(os.path.join(root, harness))):
        path = os.path.join(root, harness, name)
        r = subprocess.run(COMMANDS[harness](path), capture_output=True, text=True,
                           errors="replace", timeout=120)
        count += 1
        crashed = r.returncode not in (0, 2) or "Stack dump" in r.stderr \
            or "runtime error" in r.stderr or "Sanitizer" in r.stderr
        if crashed:
            bad.append(f"{harness}/{name}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
print(f"replayed {count} inputs, {len(bad)} crashed")
for line in bad:
    print(line)
sys.exit(1 if bad else 0)
