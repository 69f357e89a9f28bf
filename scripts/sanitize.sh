#!/usr/bin/env bash
# Builds everything with AddressSanitizer and UndefinedBehaviorSanitizer
# (-DIGN_SANITIZE=address,undefined) in build-asan/ and runs the unit and
# lit tests there: a report from either sanitizer fails the test that
# triggered it. Slow (a full build of its own); not part of .ci/run.
#
#   scripts/sanitize.sh [ctest arguments...]   (default: -R 'lit|unit')
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-asan}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DIGN_SANITIZE=address,undefined >/dev/null
fi
cmake --build "$BUILD_DIR"
# MLIR keeps its context's allocations to the end: leaks are not bugs here.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
[ $# -gt 0 ] || set -- -R 'lit|unit'
ctest --test-dir "$BUILD_DIR" --output-on-failure "$@"
