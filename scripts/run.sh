#!/usr/bin/env bash
# One entry point for the README's two commands:
#   scripts/run.sh main   set up, build, run the quick benchmark (every case checked
#                         against the CPU reference) on the default device
#   scripts/run.sh test   set up, build, run the test suite through ctest, then
#                         again built with ASan and UBSan
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
  test)
    ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
    # The suite again, built with AddressSanitizer (leak checking on) and
    # UndefinedBehaviorSanitizer. Under ASan's allocator lavapipe compiles
    # pipelines 5-10x slower (test_variants: 330 s against 18 s), so the two
    # kernel sweeps (test_attention, test_variants, every part of each; their
    # argument checks and sequence tables are exercised here through
    # test_errors and test_cli) and
    # the reruns in other memory or kernel modes, subgroup sizes or validation
    # modes (no other host code; the last CI spent 640 s of its 1570 s here on
    # the subgroup and GPU-assisted reruns) stay out. Failure injection in
    # device-local memory stays in: the staged transfers' error paths are host
    # code of their own, and it reuses its pipelines (about a minute).
    sanitize="$build-sanitize"
    cmake -S . -B "$sanitize" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKATTN_SANITIZE=ON \
      -DVKATTN_BUILD_STATIC=OFF -DVKATTN_TEST_CACHE_HOME="$(cd "$build" && pwd)/cache" >/dev/null
    cmake --build "$sanitize" -j "$(nproc)"
    ctest --test-dir "$sanitize" --output-on-failure -j "$(nproc)" \
      -E '^test_(attention|variants)(_random_sweep|_coopmat.*)?$|^test_install$|_gpu_variants$|_subgroup[0-9]+$|_gpu_assisted$|^test_(head_transpose|softmax|matmul|mha|recording|errors|outputs|attention|attention_random_sweep|variants)_device_memory$'
    ;;
  build) ;;
  *) echo "usage: scripts/run.sh main|test|build" >&2; exit 2 ;;
esac
