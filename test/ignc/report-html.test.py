"""report-html.test: headless Chromium renders the report."""
import os
import re
import subprocess
import sys

page, shot, work = sys.argv[1:4]
flags = ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
         "--user-data-dir=" + os.path.join(work, "profile"),
         "--window-size=1200,2400"]
dom = subprocess.run(flags + ["--dump-dom", "file://" + os.path.abspath(page)],
                     capture_output=True, text=True, timeout=120).stdout
# The script ran to its end: the embedded JSON parsed, charts were found.
# Speedups, roofline and best-vs-trials always; predictions when the cost
# model ranked a candidate.
assert re.search(r'data-rendered="3 kernels, [34] charts"', dom), dom[-2000:]
assert "Correctness" in dom and "Roofline" in dom
subprocess.run(flags + ["--screenshot=" + shot, "file://" + os.path.abspath(page)],
               capture_output=True, timeout=120)
data = open(shot, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000, len(data)
