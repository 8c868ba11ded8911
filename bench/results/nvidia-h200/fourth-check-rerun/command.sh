#!/usr/bin/env bash
# One-off device rerun (not committed): test_nonfinite with the fixed test
# (its real-coopmat sweep), then the KHR attention test with a longer cap.
set -u
root=$PWD b=$PWD/build-gpu
export LD_LIBRARY_PATH=$b
eval "$(python3 scripts/gpu_runtime.py --debs .gl --nvidia --check $b/vkattn $b/vkattn-bench $b/libvkattn.so.* $b/tests/test_attention)"
export VKATTN_DEVICE=0
s=$(date +%s); el() { echo "[$(( $(date +%s) - s ))s] $*"; }
cd $b/tests
el nonfinite
XDG_CACHE_HOME=/tmp/nf VKATTN_COOPMAT=0 VKATTN_TEST_FILTER=test_nonfinite timeout 80 ./test_variants > $OUT/nonfinite.log 2>&1
el "nonfinite rc $?"; grep -vE "^device:|Allowed struct" $OUT/nonfinite.log | cut -c1-300 | tail -12
el khr attention
VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT=0 VKATTN_TEST_FILTER=test_coopmat_device VKATTN_VALIDATION=off \
  VKATTN_TEST_ALLOW_NO_VALIDATION=1 XDG_CACHE_HOME=/tmp/khr timeout $(( 200 - ($(date +%s) - s) )) ./test_attention 2>&1 |
  while IFS= read -r l; do echo "[$(( $(date +%s) - s ))s] $l"; done | cut -c1-300 > $OUT/khr_attention.log
el "khr done"; tail -8 $OUT/khr_attention.log
