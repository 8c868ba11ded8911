#!/usr/bin/env bash
# One entry point for the README's two commands:
#   scripts/run.sh main   set up, build, run the quick benchmark (every case checked
#                         against the CPU reference) on the default device
#   scripts/run.sh test   set up, build, run the test suite through ctest
#   scripts/run.sh build  set up and build only (before scripts/fetch-gpu-debs.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-main}
build=${VKATTN_BUILD_DIR:-build}

bash scripts/setup-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE="${VKATTN_BUILD_TYPE:-Release}" >/dev/null
cmake --build "$build" -j "$(nproc)"

case "$what" in
  main) "$build/vkattn-bench" --quick ;;
  test) ctest --test-dir "$build" --output-on-failure -j "$(nproc)" ;;
  build) ;;
  *) echo "usage: scripts/run.sh main|test|build" >&2; exit 2 ;;
esac
