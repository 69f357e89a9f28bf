# lit configuration for ignc's FileCheck tests.
import os
import sys
import lit.formats

config.name = "ignc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "models", "conformance", "unit", "Inputs", "regressions",
                   "seeds"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ign_obj_root, "test")
config.environment["PATH"] = os.pathsep.join(
    [config.ign_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%models", os.path.join(config.test_source_root, "models")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "ignc", "Inputs")))
config.substitutions.append(("%ignrt_lib", os.path.join(config.ign_obj_root, "lib", "libignrt.so")))
config.substitutions.append(("%ignrt_run", os.path.join(config.ign_tools_dir, "ignrt-run")))
config.substitutions.append(("%python", sys.executable))
# A CUDA driver library without a GPU (test/unit/FakeCuda.cpp): the driver
# API on the CPU, for what the CUDA target does around a present GPU.
config.substitutions.append(("%fake_cuda", os.path.join(config.ign_obj_root, "lib", "libign-fake-cuda.so")))
# Compiles consult the default tuning database when it exists: tests never
# see the developer's (tuning tests pass --tuning-db explicitly).
config.environment["IGNC_TUNING_DB"] = os.path.join(config.test_exec_root, "no-such-dir", "tuning.db")
# Tests that run bundles using AVX512-BF16 need a CPU that has it, and
# bundles built for x86-64-v4 (AVX-512 F, BW, CD, DQ, VL) one with those:
# such RUN lines are `%if avx512 %{ ... %}` (machines here are AVX2-only
# or AVX-512 from one session to the next).
try:
    with open("/proc/cpuinfo") as f:
        flags = set(f.read().split())
        if "avx512_bf16" in flags:
            config.available_features.add("avx512bf16")
        # AMX tiles with bfloat16 dot products (--precision=bf16 computes on
        # them: AmxTiles.h).
        if {"amx_tile", "amx_bf16"} <= flags:
            config.available_features.add("amx")
        if {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"} <= flags:
            config.available_features.add("avx512")
except OSError:
    pass
# Default workgroup splits balance the workgroups over this machine's
# cores; tests of that name the count they assume.
config.available_features.add(f"cores-{os.cpu_count()}")
# Tests that run Vulkan bundles need a Vulkan device (lavapipe here): ignc
# lists the chip "device" only where it found one.
import shutil
import subprocess
try:
    listing = subprocess.run([os.path.join(config.ign_tools_dir, "ignc"), "targets"],
                             capture_output=True, text=True, timeout=60).stdout
    if "--chip device" in listing:
        config.available_features.add("vulkan")
except (OSError, subprocess.SubprocessError):
    pass
# Tests of cubins and ptxas's resources need the CUDA toolkit's ptxas
# (ignc finds it the same way: PATH, then /usr/local/cuda); without it the
# CUDA target emits PTX only.
if shutil.which("ptxas") or os.access("/usr/local/cuda/bin/ptxas", os.X_OK):
    config.available_features.add("ptxas")
# `ignc report` measures onnxruntime when Python has it (setup.sh installs
# it), and its HTML render test needs Debian's chromium.
try:
    if subprocess.run([sys.executable, "-c", "import onnxruntime"],
                      capture_output=True, timeout=120).returncode == 0:
        config.available_features.add("onnxruntime")
except (OSError, subprocess.SubprocessError):
    pass
if shutil.which("chromium"):
    config.available_features.add("chromium")
