#!/usr/bin/env bash
# Builds the libFuzzer harnesses (test/fuzz, -DIGN_FUZZ=ON: ASan + UBSan +
# fuzzer coverage) in build-fuzz/, replays the crashers kept in
# test/fuzz/regressions/, seeds each harness from the tests' inputs and runs
# it for SECONDS (default 60), or for RUNS inputs from a fixed seed
# (--runs: deterministic, what CI runs). New crashers are kept in
# fuzz-artifacts/NAME/ (add each to test/fuzz/regressions/NAME/ with its
# fix); exits 1 if any.
#
#   scripts/fuzz.sh [SECONDS | --runs RUNS] [NAME...]
# NAME: onnx-import onnx-text-import tuning-records scalesim bundle-manifest
# (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
all=(onnx-import onnx-text-import tuning-records scalesim bundle-manifest)
limit=(-max_total_time=60)
if [ "${1:-}" = --runs ]; then
  if ! [[ ${2:-} =~ ^[0-9]+$ ]]; then
    echo "fuzz: --runs needs a number of inputs" >&2
    exit 2
  fi
  limit=(-runs="$2" -seed=1)
  shift 2
elif [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  limit=(-max_total_time="$1")
  shift
fi
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
for name in "${names[@]}"; do
  if [[ " ${all[*]} " != *" $name "* ]]; then
    echo "fuzz: no harness '$name' (harnesses: ${all[*]})" >&2
    exit 2
  fi
done
BUILD_DIR=${BUILD_DIR:-build-fuzz}
if [ ! -f /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  echo "fuzz: clang's fuzzer runtime is missing (apt-get install libclang-rt-19-dev)" >&2
  exit 2
fi
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 -DIGN_FUZZ=ON >/dev/null
fi
cmake --build "$BUILD_DIR" --target $(printf 'fuzz-%s ' "${names[@]}")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seed() { # NAME FILES...
  local dir="$work/$1"; shift
  mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$dir/$(echo "$f" | tr / _)"; done
}
seed onnx-import test/models/*.onnx \
  $(ls /usr/share/libonnx-testdata/data/node/*/model.onnx 2>/dev/null | head -400)
seed onnx-text-import $(find test -name '*.onnxtxt')
seed tuning-records test/fuzz/seeds/tuning-records.json
seed bundle-manifest test/fuzz/seeds/manifest.json test/fuzz/seeds/manifest-control-flow.json \
  test/fuzz/seeds/manifest-bounded-output.json
mkdir -p "$work/scalesim"
i=0
for f in test/systolic/Inputs/*.csv test/systolic/Inputs/*.cfg; do
  case $f in *.cfg) mode='\x02';; *gemm*) mode='\x01';; *) mode='\x00';; esac
  { printf "$mode"; cat "$f"; } > "$work/scalesim/seed$i"; i=$((i + 1))
done

# MLIR keeps its context's allocations to the end: leaks are not bugs here.
export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1
status=0
passed=0
failed=0
for name in "${names[@]}"; do
  if [ -d "test/fuzz/regressions/$name" ]; then
    echo "fuzz: $name replays test/fuzz/regressions/$name"
    "$BUILD_DIR/bin/fuzz-$name" test/fuzz/regressions/$name/* >"$work/$name.replay" 2>&1 \
      || { echo "fuzz: $name: a regression input crashes again" >&2;
           tail -20 "$work/$name.replay" >&2; status=1; failed=$((failed + 1)); }
  fi
  mkdir -p "fuzz-artifacts/$name"
  echo "fuzz: $name (${limit[*]})"
  if ! "$BUILD_DIR/bin/fuzz-$name" "$work/$name" "${limit[@]}" \
      -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="fuzz-artifacts/$name/" 2>"$work/$name.log"; then
    echo "fuzz: $name FOUND A CRASH (fuzz-artifacts/$name/):" >&2
    grep -m5 -E "ERROR|SUMMARY|runtime error|deadly signal" "$work/$name.log" >&2 || tail -20 "$work/$name.log" >&2
    status=1
    failed=$((failed + 1))
  else
    grep -E "stat::number_of_executed_units|cov:" "$work/$name.log" | tail -2
    passed=$((passed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
exit $status
