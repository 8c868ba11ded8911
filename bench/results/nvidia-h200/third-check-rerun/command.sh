#!/usr/bin/env bash
# One-off device rerun (not committed): the suite but its five longest tests,
# the KHR matmul, then test_attention alone, each test timed.
set -u
root=$PWD b=$PWD/build-gpu
export LD_LIBRARY_PATH=$b
eval "$(python3 scripts/gpu_runtime.py --debs .gl --nvidia --check $b/vkattn $b/vkattn-bench $b/libvkattn.so.* $b/tests/test_attention)"
export VKATTN_DEVICE=0
s=$(date +%s); el() { echo "[$(( $(date +%s) - s ))s] $*"; }
el tests
python3 scripts/run_tests.py --build $b --source $root --jobs 8 --timeout 110 --deadline 115 \
  --log $OUT/tests.log --link-build -E '^(test_attention|test_variants|test_attention_device_memory|test_variants_device_memory|test_variants_gpu_variants)$' | tail -15
el khr matmul
VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT=0 VKATTN_TEST_FILTER='test_coopmat_*' VKATTN_VALIDATION=off \
  VKATTN_TEST_ALLOW_NO_VALIDATION=1 XDG_CACHE_HOME=/tmp/khr timeout 30 $b/tests/test_matmul > $OUT/khr_matmul.log 2>&1
el "khr matmul rc $?"; grep -E "OK|FAILED|PASSED" $OUT/khr_matmul.log | head
el test_attention alone
cd $b/tests && XDG_CACHE_HOME=/tmp/ta VKATTN_COOPMAT=0 VKATTN_TEST_SKIP=test_random_sweep timeout $(( 235 - ($(date +%s) - s) )) ./test_attention 2>&1 |
  while IFS= read -r l; do echo "[$(( $(date +%s) - s ))s] $l"; done | grep -v "Allowed struct" | cut -c1-300 > $OUT/attention_alone.log
tail -25 $OUT/attention_alone.log
