#!/usr/bin/env bash
# The CUDA target on a GPU, in one prepared run (issue 16): every case of
# benchmarks/gpu/cases.py (GEMM, convolution and attention kernels, the e2e
# models, ResNet-50 and BERT-base) run from the bundles prepared here,
# checked against onnxruntime on the CPU and timed against torch in
# interleaved rounds. Writes $OUT/device-check.json and $OUT/log.txt.
#
# Here (no GPU needed):  python3 benchmarks/gpu/prepare_device_check.py
# There:                 run(command="bash benchmarks/gpu/device-check.sh",
#                            carry=["build-device"], timeout_s=540)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/device-check-out}
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  [ -x build-device/bin/ignrt-run ] || { echo "no build-device/: run prepare_device_check.py and carry it"; exit 2; }
  LD_LIBRARY_PATH=build-device/bin ldd build-device/bin/ignrt-run | grep -E "not found" && exit 2
  PYTHONUNBUFFERED=1 timeout 480 python3 benchmarks/gpu/device_check.py \
      --dir build-device --out "$OUT" --rounds 3 --repeat 10 --budget 420
} 2>&1 | tee "$OUT/log.txt"
exit "${PIPESTATUS[0]}"
