#!/usr/bin/env bash
# The CUDA target on a GPU, in one prepared run (issue 16): every case of
# benchmarks/gpu/cases.py (GEMM, convolution and attention kernels, the e2e
# models, ResNet-50 and BERT-base) run from the bundles prepared here,
# checked against onnxruntime on the CPU and timed against torch in
# interleaved rounds. Writes $OUT/device-check.json and $OUT/log.txt.
#
# Here (no GPU needed):  python3 benchmarks/gpu/prepare_device_check.py
# There:                 run(command="bash benchmarks/gpu/device-check.sh",
#                            carry=["build-device", "build-device-before", ".gl"],
#                            timeout_s=540)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/device-check-out}
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  # The Vulkan loader (carried as .gl/*.deb, see docs/cuda.md) for the
  # vulkan.ignb bundles; the NVIDIA driver's ICD where the image names none.
  if ls .gl/*.deb >/dev/null 2>&1; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  icd=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json \
        /usr/share/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -1)
  [ -n "$icd" ] && export VK_DRIVER_FILES=$icd
  echo "Vulkan ICD: ${icd:-none found}"
  if [ -n "$icd" ]; then  # the driver library the ICD names, and what it lacks
    lib=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ICD']['library_path'])" "$icd")
    echo "Vulkan driver: $lib"; ldd "$(ldconfig -p | awk -v l="$lib" '$1==l {print $NF; exit}')" 2>&1 | grep "not found"
  fi
  ldconfig -p | grep -q libvulkan.so.1 || echo "no Vulkan loader: the Vulkan runs will fail"
  [ -x build-device/bin/ignrt-run ] || { echo "no build-device/: run prepare_device_check.py and carry it"; exit 2; }
  LD_LIBRARY_PATH=build-device/bin ldd build-device/bin/ignrt-run | grep -E "not found" && exit 2
  PYTHONUNBUFFERED=1 timeout 450 python3 benchmarks/gpu/device_check.py \
      --dir build-device --out "$OUT" --rounds 3 --repeat 10 --budget ${BUDGET:-360} "$@"
  rc=$?
  # An earlier ignc's bundles (prepare_device_check.py --before-ignc): the
  # same cases on the same GPU right after, CUDA only, into $OUT/before.
  if [ -d build-device-before/cases ]; then
    PYTHONUNBUFFERED=1 timeout 450 python3 benchmarks/gpu/device_check.py \
        --dir build-device-before --out "$OUT/before" --rounds 3 --repeat 10 \
        --budget ${BUDGET:-360} "$@" --no-peer --no-vulkan
  fi
  exit $rc
} 2>&1 | tee "$OUT/log.txt"
exit "${PIPESTATUS[0]}"
