#!/usr/bin/env python3
"""Validate `ignc sim` (our SCALE-Sim-compatible systolic-array simulator)
against the real SCALE-Sim 3 package.

For every dataflow (os, ws, is) and array shape in ARRAYS, write one SCALE-Sim
config and two topology files (GEMM form and conv form, with every layer of
that config in one file), run SCALE-Sim through its Python API and
`ignc sim --config C --topology T [--gemm] --output-dir D` on the same files,
and compare COMPUTE_REPORT.csv layer by layer:

  Total Cycles, Stall Cycles                      exactly
  Overall Util %, Mapping Efficiency %,
  Compute Util %                                  to 1e-6 relative

Both reports must carry SCALE-Sim 3's exact headers and one row per layer
(layer ids 0..n-1 in topology order; a conv layer whose name contains 'DP' is
one layer per channel). 'Total Cycles (incl. prefetch)' and BANDWIDTH_REPORT
values are shown as information only (--strict makes them count).

Also checks `ignc sim` alone against published SCALE-Sim 3.0.0 numbers
(AlexNet Conv1 on a 32x32 WS array, GEMM 128x64x256 on 32x32 OS/WS/IS); these
are not rerun through SCALE-Sim (Conv1 takes ~40 s there).

--bandwidth adds a few USER-bandwidth (limited DRAM bandwidth) cases whose
stall cycles are reported side by side but never fail the run.

Needs: scalesim (pip install scalesim, tested with 3.0.0) and numpy < 2.3
(SCALE-Sim 3.0.0 breaks on numpy 2.3+). Exit status: 0 all layers match,
1 any mismatch or tool failure, 77 skipped (scalesim unusable here).

Usage:
  python3 test/systolic/validate_scalesim.py --ignc build/bin/ignc
      [--full] [--bandwidth] [--workdir DIR] [--markdown FILE] [-k PATTERN]
"""
import argparse
import contextlib
import hashlib
import io
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

EXIT_SKIP = 77

CONV_HEADER = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
               "Channels, Num Filter, Strides,")
GEMM_HEADER = "Layer, M, N, K,"
COMPUTE_HEADER = ("LayerID, Total Cycles (incl. prefetch), Total Cycles, Stall Cycles, "
                  "Overall Util %, Mapping Efficiency %, Compute Util %,")
BANDWIDTH_HEADER = ("LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, "
                    "Avg IFMAP DRAM BW, Avg FILTER DRAM BW, Avg OFMAP DRAM BW,")

# (column, exact?) that must match; the rest of both reports is information.
CHECKED = [("Total Cycles", True), ("Stall Cycles", True), ("Overall Util %", False),
           ("Mapping Efficiency %", False), ("Compute Util %", False)]
INFO_COMPUTE = [("Total Cycles (incl. prefetch)", True)]
INFO_BANDWIDTH = [(c.strip(), False) for c in BANDWIDTH_HEADER.split(",")[1:] if c.strip()]
REL_TOL = 1e-6

DATAFLOWS = ["os", "ws", "is"]
ARRAYS = [(8, 8), (16, 16), (32, 32), (8, 32), (32, 8), (4, 16)]
SRAM_KB = 64
SEED = 20240607
# Random layers are kept when SCALE-Sim's compute-only cycle estimate stays
# under this on every dataflow (keeps the default run short).
RANDOM_BUDGET = 6000
FULL_BUDGET = 60000


# --------------------------------------------------------------------------
# Layers and cases

class Layer:
    """One topology row. GEMM: dims = (M, N, K). Conv: dims = (ifmap_h,
    ifmap_w, filter_h, filter_w, channels, num_filters, stride)."""

    def __init__(self, name, dims, gemm):
        assert "," not in name
        assert not (gemm and "DP" in name), "SCALE-Sim's layout loader splits 'DP' names"
        self.name, self.dims, self.gemm = name, tuple(int(d) for d in dims), gemm

    def row(self):
        return ",".join([self.name] + [str(d) for d in self.dims]) + ","

    def expanded(self):
        """(name, mnk, description) per SCALE-Sim layer: a conv layer whose name
        contains 'DP' is split into one single-channel layer per channel."""
        if self.gemm:
            m, n, k = self.dims
            return [(self.name, (m, n, k), "M=%d N=%d K=%d" % (m, n, k))]
        ih, iw, fh, fw, c, f, s = self.dims
        oh = (ih - fh + s + s - 1) // s          # SCALE-Sim: ceil((I - F + S) / S)
        ow = (iw - fw + s + s - 1) // s
        if "DP" in self.name:
            return [("%sChannel_%d" % (self.name, i), (oh * ow, f, fh * fw),
                     "%dx%d k%dx%d c1->%d s%d" % (ih, iw, fh, fw, f, s)) for i in range(c)]
        return [(self.name, (oh * ow, f, fh * fw * c),
                 "%dx%d k%dx%d c%d->%d s%d" % (ih, iw, fh, fw, c, f, s))]


def G(name, m, n, k):
    return Layer(name, (m, n, k), True)


def C(name, ih, iw, fh, fw, c, f, s):
    return Layer(name, (ih, iw, fh, fw, c, f, s), False)


class Case:
    def __init__(self, name, rows, cols, df, gemm, layers, kind="scalesim",
                 bandwidth=None, expected=None, sram_kb=SRAM_KB, bank_bw=10):
        self.name, self.rows, self.cols, self.df, self.gemm = name, rows, cols, df, gemm
        self.layers, self.kind, self.bandwidth = layers, kind, bandwidth
        self.expected, self.sram_kb, self.bank_bw = expected, sram_kb, bank_bw
        names = [l.name for l in layers]
        assert len(set(names)) == len(names), name

    def expanded(self):
        return [e for l in self.layers for e in l.expanded()]

    def config_text(self):
        mode = "CALC" if self.bandwidth is None else "USER"
        return "\n".join([
            "[general]",
            "run_name = %s" % self.name,
            "",
            "[architecture_presets]",
            "ArrayHeight:    %d" % self.rows,
            "ArrayWidth:     %d" % self.cols,
            "IfmapSramSzkB:    %d" % self.sram_kb,
            "FilterSramSzkB:   %d" % self.sram_kb,
            "OfmapSramSzkB:    %d" % self.sram_kb,
            "IfmapOffset:    0",
            "FilterOffset:   10000000",
            "OfmapOffset:    20000000",
            "Dataflow : %s" % self.df,
            "Bandwidth : %d" % (self.bandwidth or 10),
            "ReadRequestBuffer: 32",
            "WriteRequestBuffer: 32",
            "",
            "[layout]",
            "IfmapCustomLayout: False",
            "IfmapSRAMBankBandwidth: %d" % self.bank_bw,
            "IfmapSRAMBankNum: %d" % self.bank_bw,
            "IfmapSRAMBankPort: 2",
            "FilterCustomLayout: False",
            "FilterSRAMBankBandwidth: %d" % self.bank_bw,
            "FilterSRAMBankNum: %d" % self.bank_bw,
            "FilterSRAMBankPort: 2",
            "",
            "[sparsity]",
            "SparsitySupport : false",
            "SparseRep : ellpack_block",
            "OptimizedMapping : false",
            "BlockSize : 8",
            "RandomNumberGeneratorSeed : 40",
            "",
            "[run_presets]",
            "InterfaceBandwidth: %s" % mode,
            "UseRamulatorTrace: False",
            ""])

    def topology_text(self):
        head = GEMM_HEADER if self.gemm else CONV_HEADER
        return "\n".join([head] + [l.row() for l in self.layers]) + "\n"

    def layout_text(self):
        # SCALE-Sim 3 always reads a layout file, even with custom layouts
        # off: a layer name per row is enough, except that it also splits
        # 'DP' rows by their channel count, so those get the full row.
        rows = [l.row() if "DP" in l.name else l.name + "," for l in self.layers]
        return "\n".join(["Layer name,"] + rows) + "\n"

    def write(self, d):
        os.makedirs(d, exist_ok=True)
        paths = {}
        for key, fname, text in (("config", "config.cfg", self.config_text()),
                                 ("topology", "topology.csv", self.topology_text()),
                                 ("layout", "layout.csv", self.layout_text())):
            paths[key] = os.path.join(d, fname)
            with open(paths[key], "w") as f:
                f.write(text)
        return paths


def est_cycles(df, rows, cols, mnk):
    """Rough SCALE-Sim compute cycles (folds x fold length); only used to keep
    randomly drawn layers small."""
    m, n, k = mnk
    sr, sc, t = {"os": (m, n, k), "ws": (k, n, m), "is": (k, m, n)}[df]
    return math.ceil(sr / rows) * math.ceil(sc / cols) * (t + 2 * rows + cols)


def fits(layer, rows, cols, budget):
    return all(est_cycles(df, rows, cols, mnk) <= budget
               for df in DATAFLOWS for _, mnk, _ in layer.expanded())


def gemm_layers(R, Cc, rng):
    L = [
        G("g_even", 2 * R, Cc, R),               # multiples of the array
        G("g_ragged", R + 3, Cc + 5, 2 * R + 1),  # nothing a multiple
        G("g_ksmall", 20, Cc + 2, R // 2 + 1),    # K < rows
        G("g_nsmall", R + 9, max(1, Cc // 2 - 1), R + 2),  # N < cols
        G("g_m1", 1, Cc + 1, R + 3),              # M = 1 (GEMV)
        G("g_n1", 7, 1, 3 * R - 1),
        G("g_k1", 2 * Cc + 1, 3, 1),
        G("g_one", 1, 1, 1),
        G("g_tall", 3 * R + 5, 2, 2),             # long skinny
    ]
    n = 0
    while n < 5:
        l = G("g_rand%d" % n, rng.randint(1, 160), rng.randint(1, 3 * Cc + 5),
              rng.randint(1, 3 * R + 5))
        if fits(l, R, Cc, RANDOM_BUDGET):
            L.append(l)
            n += 1
    return L


def conv_layers(R, Cc, rng):
    L = [
        C("c3s1", 8, 8, 3, 3, 5, 12, 1),
        C("c3s2", 9, 9, 3, 3, 7, 20, 2),
        C("c1s1", 6, 6, 1, 1, 19, 10, 1),
        C("c1s2", 7, 7, 1, 1, 13, 17, 2),
        C("c5s1", 10, 10, 5, 5, 3, 6, 1),
        C("c5s2", 12, 12, 5, 5, 2, 9, 2),    # last window runs past the ifmap
        C("c3s2odd", 10, 10, 3, 3, 3, 4, 2),  # ceil((10-3+2)/2) = 5
        C("crect", 7, 10, 3, 5, 3, 5, 1),     # non-square ifmap and filter
        C("cwhole", 5, 5, 5, 5, 4, 3, 1),     # filter = ifmap: one output pixel
        C("c1s3", 7, 7, 1, 1, 3, 4, 3),       # stride > filter
        C("cwide", 6, 6, 3, 3, 3, Cc + 3, 1),  # filters just past the columns
        C("cdeep", 5, 5, 3, 3, R + 1, 4, 1),  # window just past a multiple of rows
        C("c_c1", 8, 8, 3, 3, 1, 5, 1),       # one channel (not depthwise)
        C("c_f1", 8, 8, 3, 3, 4, 1, 2),       # one filter
        C("DPconv", 6, 6, 3, 3, 3, 1, 1),     # depthwise: one layer per channel
        C("DPs2", 7, 7, 3, 3, 2, 1, 2),
    ]
    n = 0
    while n < 4:
        ih, iw = rng.randint(3, 12), rng.randint(3, 12)
        fh = rng.choice([f for f in (1, 3, 5) if f <= ih])
        if fh <= iw and rng.random() < 0.7:
            fw = fh
        else:
            fw = rng.choice([f for f in (1, 3, 5) if f <= iw])
        l = C("c_rand%d" % n, ih, iw, fh, fw, rng.randint(1, 24), rng.randint(1, 40),
              rng.choice([1, 2]))
        if fits(l, R, Cc, RANDOM_BUDGET):
            L.append(l)
            n += 1
    return L


def full_layers(R, Cc, gemm):
    """Bigger layers for --full (seconds to tens of seconds each in SCALE-Sim)."""
    if gemm:
        L = [G("gb_square", 128, 64, 256), G("gb_ragged", 200, 3 * Cc + 7, 4 * R + 3),
             G("gb_wide", 33, 300, 40), G("gb_long", 500, 24, 20)]
    else:
        L = [C("cb_res3", 14, 14, 3, 3, 32, 48, 1), C("cb_res3s2", 28, 28, 3, 3, 16, 32, 2),
             C("cb_pw", 14, 14, 1, 1, 64, 40, 1), C("cb_7s2", 32, 32, 7, 7, 3, 16, 2),
             C("DPwide", 14, 14, 3, 3, 12, 1, 1)]
    return [l for l in L if fits(l, R, Cc, FULL_BUDGET)]


# Published SCALE-Sim 3.0.0 results, checked against `ignc sim` alone.
REFERENCE = [
    ("ref_alexnet_conv1_ws_32x32", "ws", False, C("Conv1", 224, 224, 11, 11, 3, 96, 4),
     {"Total Cycles": 112283, "Stall Cycles": 0, "Overall Util %": 91.68309650614964,
      "Mapping Efficiency %": 94.53125, "Compute Util %": 90.78000992063485}),
    ("ref_gemm128x64x256_os_32x32", "os", True, G("g1", 128, 64, 256),
     {"Total Cycles": 2543, "Stall Cycles": 0, "Overall Util %": 80.5348014156508,
      "Mapping Efficiency %": 100.0, "Compute Util %": 80.50314465408805}),
    ("ref_gemm128x64x256_ws_32x32", "ws", True, G("g1", 128, 64, 256),
     {"Total Cycles": 3551, "Stall Cycles": 0, "Overall Util %": 57.673894677555616,
      "Mapping Efficiency %": 100.0, "Compute Util %": 50.592885375494056}),
    ("ref_gemm128x64x256_is_32x32", "is", True, G("g1", 128, 64, 256),
     {"Total Cycles": 5055, "Stall Cycles": 0, "Overall Util %": 40.51434223541048,
      "Mapping Efficiency %": 100.0, "Compute Util %": 33.86243386243386}),
]


def build_cases(full, bandwidth):
    rng = random.Random(SEED)
    cases = []
    for name, df, gemm, layer, expected in REFERENCE:
        cases.append(Case(name, 32, 32, df, gemm, [layer], kind="reference",
                          expected=[expected]))
    # The same layers for all three dataflows of one array shape.
    for (R, Cc) in ARRAYS:
        glayers, clayers = gemm_layers(R, Cc, rng), conv_layers(R, Cc, rng)
        for df in DATAFLOWS:
            base = "%s_%dx%d" % (df, R, Cc)
            cases.append(Case(base + "_gemm", R, Cc, df, True, glayers))
            cases.append(Case(base + "_conv", R, Cc, df, False, clayers))
            if full:
                for gemm in (True, False):
                    fl = full_layers(R, Cc, gemm)
                    if fl:
                        cases.append(Case(base + ("_gemm" if gemm else "_conv") + "_full",
                                          R, Cc, df, gemm, fl))
    if bandwidth:
        # In USER mode SCALE-Sim 3 fetches ifmap and filter at the layout
        # section's IfmapSRAMBankBandwidth / FilterSRAMBankBandwidth words per
        # cycle and drains ofmap at `Bandwidth`; reads only stall once an
        # operand outgrows half its SRAM, hence the small SRAMs here.
        small_g = [G("g_ragged", 40, 37, 45), G("g_m1", 1, 33, 70), G("g_big", 96, 64, 96)]
        small_c = [C("c3s1", 8, 8, 3, 3, 5, 12, 1), C("c1s2", 7, 7, 1, 1, 13, 17, 2),
                   C("cdeep", 6, 6, 3, 3, 17, 24, 1)]
        for df, (R, Cc), bw, bank_bw, kb, gl, cl in (
                ("ws", (32, 32), 10, 10, 64, [G("g_large", 256, 128, 256)], []),
                ("os", (16, 16), 4, 4, 2, small_g, small_c),
                ("is", (8, 32), 16, 8, 4, small_g, small_c),
                ("ws", (8, 8), 2, 2, 1, small_g, small_c)):
            base = "bw%d_%s_%dx%d_%dkB" % (bw, df, R, Cc, kb)
            for gemm, layers in ((True, gl), (False, cl)):
                if layers:
                    cases.append(Case(base + ("_gemm" if gemm else "_conv"), R, Cc, df, gemm,
                                      layers, kind="bandwidth", bandwidth=bw, sram_kb=kb,
                                      bank_bw=bank_bw))
    return cases


# --------------------------------------------------------------------------
# Running the two simulators

def read_report(path):
    """-> (header line, column names, {layer id: [values]}, errors)."""
    with open(path) as f:
        lines = [l.rstrip("\r\n") for l in f if l.strip()]
    if not lines:
        return "", [], {}, ["%s is empty" % path]
    header = lines[0].strip()
    cols = [c.strip() for c in header.split(",")]
    if cols and cols[-1] == "":
        cols.pop()
    rows, errors = {}, []
    for l in lines[1:]:
        vals = [v.strip() for v in l.split(",")]
        if vals and vals[-1] == "":
            vals.pop()
        if len(vals) != len(cols):
            errors.append("%s: row %r has %d fields, header %d" %
                          (os.path.basename(path), l, len(vals), len(cols)))
            continue
        try:
            lid = int(vals[0])
            rows[lid] = [float(v) for v in vals]
        except ValueError:
            errors.append("%s: unparsable row %r" % (os.path.basename(path), l))
    if len(errors) > 3:
        errors[3:] = ["%s: ... and %d more bad rows" % (os.path.basename(path), len(errors) - 3)]
    return header, cols, rows, errors


def run_ignc(ignc, case, paths, outdir, timeout):
    """-> (ok, message, elapsed)."""
    if os.path.isdir(outdir):
        shutil.rmtree(outdir)
    cmd = [ignc, "sim", "--config", paths["config"], "--topology", paths["topology"]]
    if case.gemm:
        cmd.append("--gemm")
    cmd += ["--output-dir", outdir]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "timed out after %d s: %s" % (timeout, " ".join(cmd)), time.time() - t0
    except OSError as e:
        return False, "cannot run %s: %s" % (ignc, e), time.time() - t0
    dt = time.time() - t0
    if p.returncode != 0:
        return False, ("exit status %d: %s\n--- stderr ---\n%s" %
                       (p.returncode, " ".join(cmd), p.stderr.rstrip())), dt
    missing = [r for r in ("COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv")
               if not os.path.isfile(os.path.join(outdir, r))]
    if missing:
        return False, ("%s not written in %s: %s\n--- stderr ---\n%s" %
                       (", ".join(missing), outdir, " ".join(cmd), p.stderr.rstrip())), dt
    return True, "", dt


def run_scalesim(case, paths, casedir, version, use_cache):
    """-> (report dir or None, message, elapsed, cached)."""
    top = os.path.join(casedir, "scalesim")
    report_dir = os.path.join(top, case.name)
    stamp_path = os.path.join(casedir, "scalesim.stamp")
    h = hashlib.sha256(version.encode())
    for key in ("config", "topology", "layout"):
        with open(paths[key], "rb") as f:
            h.update(f.read())
    stamp = h.hexdigest()
    reports = [os.path.join(report_dir, r) for r in ("COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv")]
    if use_cache and os.path.isfile(stamp_path) and all(map(os.path.isfile, reports)):
        with open(stamp_path) as f:
            if f.read().strip() == stamp:
                return report_dir, "", 0.0, True
    if os.path.isdir(top):
        shutil.rmtree(top)
    if os.path.exists(stamp_path):
        os.remove(stamp_path)
    from scalesim.scale_sim import scalesim
    buf = io.StringIO()
    t0 = time.time()
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            s = scalesim(save_disk_space=True, verbose=False, config=paths["config"],
                         topology=paths["topology"], layout=paths["layout"],
                         input_type_gemm=case.gemm)
            s.run_scale(top_path=top)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # scalesim exit()s and asserts on input it rejects
        return None, "scalesim raised %r\n%s" % (e, buf.getvalue().rstrip()), time.time() - t0, False
    dt = time.time() - t0
    if not all(map(os.path.isfile, reports)):
        return None, "scalesim wrote no reports in %s\n%s" % (report_dir, buf.getvalue()), dt, False
    with open(stamp_path, "w") as f:
        f.write(stamp + "\n")
    return report_dir, "", dt, False


# --------------------------------------------------------------------------
# Comparison

def same(a, b, exact):
    if exact:
        return a == b
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def check_report_shape(path, want_header, nlayers, who):
    """Header and layer ids of one report -> (cols, rows, problems)."""
    header, cols, rows, problems = read_report(path)
    problems = ["%s %s" % (who, p) for p in problems]
    if re.sub(r"\s+", " ", header) != want_header:
        problems.append("%s %s header is\n    %r\n  want\n    %r" %
                        (who, os.path.basename(path), header, want_header))
    if sorted(rows) != list(range(nlayers)):
        problems.append("%s %s has layer ids %s, want 0..%d" %
                        (who, os.path.basename(path), sorted(rows), nlayers - 1))
    return cols, rows, problems


def value(cols, rows, lid, col):
    if lid in rows and col in cols:
        return rows[lid][cols.index(col)]
    return None


def compare_case(case, ig_dir, ss_dir, strict):
    """-> (layer results, case-level problems)."""
    exp = case.expanded()
    n = len(exp)
    problems = []
    ig_c = check_report_shape(os.path.join(ig_dir, "COMPUTE_REPORT.csv"), COMPUTE_HEADER, n, "ignc")
    ig_b = check_report_shape(os.path.join(ig_dir, "BANDWIDTH_REPORT.csv"), BANDWIDTH_HEADER, n, "ignc")
    problems += ig_c[2] + ig_b[2]
    if ss_dir is not None:
        ss_c = check_report_shape(os.path.join(ss_dir, "COMPUTE_REPORT.csv"), COMPUTE_HEADER, n,
                                  "scalesim")
        ss_b = check_report_shape(os.path.join(ss_dir, "BANDWIDTH_REPORT.csv"), BANDWIDTH_HEADER,
                                  n, "scalesim")
        problems += ss_c[2] + ss_b[2]
    results = []
    for lid, (lname, mnk, desc) in enumerate(exp):
        r = {"case": case.name, "kind": case.kind, "id": lid, "layer": lname, "desc": desc,
             "ss": {}, "ig": {}, "bad": [], "info": []}
        if case.kind == "reference":
            want = case.expected[min(lid, len(case.expected) - 1)]
            for col, exact in CHECKED:
                r["ss"][col] = want[col]
        else:
            for col, exact in CHECKED + INFO_COMPUTE:
                r["ss"][col] = value(ss_c[0], ss_c[1], lid, col)
            for col, exact in INFO_BANDWIDTH:
                r["ss"][col] = value(ss_b[0], ss_b[1], lid, col)
        for col, exact in CHECKED + INFO_COMPUTE:
            r["ig"][col] = value(ig_c[0], ig_c[1], lid, col)
        for col, exact in INFO_BANDWIDTH:
            r["ig"][col] = value(ig_b[0], ig_b[1], lid, col)
        checked = [("Stall Cycles", True)] if case.kind == "bandwidth" else CHECKED
        info = [] if case.kind == "reference" else INFO_COMPUTE + INFO_BANDWIDTH
        if case.kind == "bandwidth":
            info = [c for c in CHECKED + info if c[0] != "Stall Cycles"]
        if strict and case.kind == "scalesim":
            checked, info = checked + info, []
        for cols_, bucket in ((checked, "bad"), (info, "info")):
            for col, exact in cols_:
                a, b = r["ss"].get(col), r["ig"].get(col)
                if a is None and b is None:
                    continue
                if a is None or b is None or not same(a, b, exact):
                    r[bucket].append(col)
        results.append(r)
    return results, problems


# --------------------------------------------------------------------------
# Output

def fmt(v, exact):
    if v is None:
        return "-"
    if exact:
        return "%d" % v if v == int(v) else repr(v)
    return "%.4f" % v


def pair(r, col, exact):
    """SCALE-Sim's value, or 'scalesim/ignc' where they differ."""
    a, b = r["ss"].get(col), r["ig"].get(col)
    if col not in r["bad"] and col not in r["info"]:
        return fmt(a, exact)
    fa, fb = fmt(a, exact), fmt(b, exact)
    if fa == fb:  # beyond the tolerance but equal to 4 decimals
        fa, fb = repr(a), repr(b)
    return "%s/%s" % (fa, fb)


def status(r):
    if r["kind"] == "bandwidth":
        return "stall-diff" if r["bad"] else "same-stall"
    if r["bad"]:
        return "MISMATCH"
    return "ok*" if r["info"] else "ok"


TABLE_COLS = [("case", 27), ("id", 3), ("layer", 17), ("dims", 22), ("cycles", 13),
              ("stall", 9), ("util%", 17), ("mapeff%", 17), ("computil%", 17), ("status", 10)]


def table_row(r):
    return [r["case"], str(r["id"]), r["layer"], r["desc"],
            pair(r, "Total Cycles", True), pair(r, "Stall Cycles", True),
            pair(r, "Overall Util %", False), pair(r, "Mapping Efficiency %", False),
            pair(r, "Compute Util %", False), status(r)]


def print_table(results):
    print("Values are SCALE-Sim (or the published number for ref_ cases), or "
          "'scalesim/ignc' where they differ.")
    print(" ".join(n.ljust(w) for n, w in TABLE_COLS).rstrip())
    for r in results:
        print(" ".join(v.ljust(w) for v, (_, w) in zip(table_row(r), TABLE_COLS)).rstrip())


def describe_diff(r, col):
    a, b = r["ss"].get(col), r["ig"].get(col)
    show = lambda v: "missing" if v is None else ("%d" % v if v == int(v) else repr(v))
    if a is None or b is None:
        return "%s: scalesim %s, ignc %s" % (col, show(a), show(b))
    rel = abs(a - b) / abs(a) if a else float("inf")
    return "%s: scalesim %s, ignc %s (rel diff %.3g)" % (col, show(a), show(b), rel)


def write_markdown(path, results, summary, version, elapsed):
    names = [n for n, _ in TABLE_COLS]
    with open(path, "w") as f:
        f.write("# ignc sim vs SCALE-Sim %s\n\n" % version)
        f.write("%s (%.0f s).\n\n" % (summary, elapsed))
        f.write("Values are SCALE-Sim's (published numbers for `ref_` cases); "
                "`a/b` = scalesim/ignc where they differ. ok* = checked columns match, "
                "an information-only column differs.\n\n")
        f.write("| " + " | ".join(names) + " |\n")
        f.write("|" + "|".join("---" for _ in names) + "|\n")
        for r in results:
            f.write("| " + " | ".join(v.replace("|", "\\|") for v in table_row(r)) + " |\n")


# --------------------------------------------------------------------------

def skip(msg):
    print("skipped: " + msg)
    sys.exit(EXIT_SKIP)


def check_scalesim():
    """-> scalesim version, or exit 77 when it cannot run here."""
    try:
        import numpy
    except ImportError:
        skip("numpy is not installed (pip install 'numpy<2.3')")
    try:
        major, minor = (int(x) for x in re.match(r"(\d+)\.(\d+)", numpy.__version__).groups())
    except (AttributeError, ValueError):
        major, minor = 0, 0
    if (major, minor) >= (2, 3):
        skip("numpy %s is installed; SCALE-Sim 3.0.0 needs numpy < 2.3 (with 2.3+ "
             "double_buffered_scratchpad_mem.py's int(max(...)) raises TypeError); "
             "pip install 'numpy<2.3'" % numpy.__version__)
    try:
        import scalesim.scale_sim  # noqa: F401
    except Exception as e:  # ImportError, or a dependency failing at import
        skip("cannot import scalesim (%s: %s); pip install scalesim" % (type(e).__name__, e))
    try:
        from importlib.metadata import version
        return version("scalesim")
    except Exception:
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ignc", required=True, help="path of the ignc binary")
    ap.add_argument("--full", action="store_true", help="add bigger layers (much slower)")
    ap.add_argument("--bandwidth", action="store_true",
                    help="add USER-bandwidth cases; their stall cycles are reported, never failed")
    ap.add_argument("--workdir", help="keep files here (default: a temporary directory); "
                    "SCALE-Sim results in it are reused while their inputs are unchanged")
    ap.add_argument("--no-cache", action="store_true",
                    help="rerun SCALE-Sim even when --workdir holds its results")
    ap.add_argument("--markdown", help="also write the results table to this file")
    ap.add_argument("-k", dest="pattern", help="only cases whose name matches this regex")
    ap.add_argument("--strict", action="store_true",
                    help="also fail on 'Total Cycles (incl. prefetch)' and BANDWIDTH_REPORT")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per ignc run")
    args = ap.parse_args()

    version = check_scalesim()
    print("Validating ignc sim against SCALE-Sim %s" % version)
    if not version.startswith("3."):
        print("warning: tested with SCALE-Sim 3.0.0; the ref_ numbers are 3.0.0's")

    ignc = args.ignc
    if os.sep not in ignc:
        ignc = shutil.which(ignc) or ignc
    if not (os.path.isfile(ignc) and os.access(ignc, os.X_OK)):
        print("error: --ignc %s is not an executable file" % args.ignc)
        return 1
    ignc = os.path.abspath(ignc)

    cases = build_cases(args.full, args.bandwidth)
    if args.pattern:
        cases = [c for c in cases if re.search(args.pattern, c.name)]
        if not cases:
            print("error: no case matches -k %r" % args.pattern)
            return 1
    nlayers = sum(len(c.expanded()) for c in cases)
    print("%d cases, %d layers, %d configs" %
          (len(cases), nlayers, len({(c.df, c.rows, c.cols, c.bandwidth) for c in cases})))

    tmp = None
    if args.workdir:
        work = os.path.abspath(args.workdir)
        os.makedirs(work, exist_ok=True)
    else:
        work = tmp = tempfile.mkdtemp(prefix="ignc-scalesim-")
    use_cache = bool(args.workdir) and not args.no_cache
    t_start = time.time()

    # 1. ignc on everything first: it is fast, and a broken tool shows at once.
    failures, paths, ig_time = [], {}, 0.0
    for c in cases:
        d = os.path.join(work, c.name)
        paths[c.name] = c.write(d)
        ok, msg, dt = run_ignc(ignc, c, paths[c.name], os.path.join(d, "ignc"), args.timeout)
        ig_time += dt
        if not ok:
            print("ignc sim failed on %s: %s" % (c.name, msg))
            failures.append(c.name)
    print("ignc sim: %d runs, %.1f s" % (len(cases), ig_time))

    # 2. SCALE-Sim, one run at a time, on the cases ignc managed.
    results, problems, ss_time, notes = [], [], 0.0, []
    for c in cases:
        if c.name in failures:
            continue
        d = os.path.join(work, c.name)
        ss_dir = None
        if c.kind != "reference":
            ss_dir, msg, dt, cached = run_scalesim(c, paths[c.name], d, version, use_cache)
            ss_time += dt
            print("  scalesim %-30s %3d layers %6.1f s%s" %
                  (c.name, len(c.expanded()), dt, " (cached)" if cached else ""), flush=True)
            if ss_dir is None:
                print("scalesim failed on %s: %s" % (c.name, msg))
                if c.kind != "bandwidth":
                    failures.append(c.name)
                continue
        res, probs = compare_case(c, os.path.join(d, "ignc"), ss_dir, args.strict)
        for p in probs:
            (notes if c.kind == "bandwidth" else problems).append("%s: %s" % (c.name, p))
        results += res
    elapsed = time.time() - t_start
    print("scalesim: %.1f s" % ss_time)
    print()
    print_table(results)
    print()

    checked = [r for r in results if r["kind"] != "bandwidth"]
    bad = [r for r in checked if r["bad"]]
    nonzero_stall = [r for r in checked if r["kind"] == "scalesim" and r["ss"].get("Stall Cycles")]
    for r in nonzero_stall:
        print("note: scalesim reports %d stall cycles in CALC mode on %s layer %d (%s)" %
              (r["ss"]["Stall Cycles"], r["case"], r["id"], r["layer"]))
    info = [r for r in checked if r["info"] and not r["bad"]]
    if info:
        cols = sorted({c for r in info for c in r["info"]})
        print("info: %d matching layers differ in information-only columns (%s); "
              "--strict fails on them" % (len(info), ", ".join(cols)))
    bwres = [r for r in results if r["kind"] == "bandwidth"]
    if bwres:
        diff = [r for r in bwres if r["bad"]]
        print("bandwidth (USER) cases: stall cycles equal on %d/%d layers (not failed on)" %
              (len(bwres) - len(diff), len(bwres)))
        for r in diff:
            print("  %s layer %d (%s): stall scalesim %s, ignc %s" %
                  (r["case"], r["id"], r["layer"], fmt(r["ss"].get("Stall Cycles"), True),
                   fmt(r["ig"].get("Stall Cycles"), True)))
        for n in notes:
            print("  " + n)
    if problems:
        print("Report format problems:")
        for p in problems:
            print("  " + p)
    if bad:
        print("Mismatches:")
        for r in bad:
            print("  %s layer %d (%s, %s):" % (r["case"], r["id"], r["layer"], r["desc"]))
            if all(r["ig"].get(col) is None for col in r["bad"]):
                print("    no values for this layer in ignc's report")
                continue
            for col in r["bad"]:
                print("    " + describe_diff(r, col))
    expected_layers = sum(len(c.expanded()) for c in cases if c.kind != "bandwidth")
    summary = "%d/%d layers match" % (len(checked) - len(bad), expected_layers)
    if failures:
        summary += "; %d cases failed to run (%s)" % (len(failures), ", ".join(failures))
    print(summary + " (SCALE-Sim %s, %.0f s)" % (version, elapsed))
    if args.markdown:
        write_markdown(args.markdown, results, summary, version, elapsed)
        print("wrote " + args.markdown)

    ok = not bad and not failures and not problems
    if tmp:
        if ok:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("files kept in " + tmp)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
