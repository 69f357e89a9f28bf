#!/usr/bin/env bash
# Installs everything ignc needs to build and test on Debian bookworm (idempotent).
# Python packages are only for test-data generation and benchmarks, never for ignc itself.
set -euo pipefail

DEBIAN_PKGS=(
  cmake ninja-build ccache git python3
  llvm-19-dev libmlir-19-dev mlir-19-tools clang-19 lld-19 llvm-19-tools
  libcli11-dev nlohmann-json3-dev libgtest-dev
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata liblld-19-dev
  libsqlite3-dev libxgboost-dev
  libvulkan-dev libvulkan1 mesa-vulkan-drivers spirv-tools
  chromium
  # clang's sanitizer and fuzzer runtimes (scripts/fuzz.sh, scripts/sanitize.sh)
  libclang-rt-19-dev
)

missing=()
for p in "${DEBIAN_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

# Python packages for test-data generation, the onnxruntime comparison and
# benchmarks (never needed by ignc itself); a failure here only skips those.
if command -v python3 >/dev/null 2>&1; then
  if ! python3 -c "import numpy, onnx, onnxruntime" >/dev/null 2>&1; then
    echo "setup: installing numpy, onnx, onnxruntime (pip)"
    python3 -m pip install -q numpy onnx onnxruntime \
      || echo "setup: warning: pip install failed; the onnxruntime comparison will be skipped"
  fi
  # SCALE-Sim, the reference the systolic simulator is validated against
  # (test/systolic/validate_scalesim.py); 3.0.0 needs numpy < 2.3.
  if ! python3 -c "import scalesim" >/dev/null 2>&1; then
    echo "setup: installing scalesim (pip)"
    python3 -m pip install -q scalesim "numpy<2.3" \
      || echo "setup: warning: pip install failed; the SCALE-Sim validation will be skipped"
  fi
fi
