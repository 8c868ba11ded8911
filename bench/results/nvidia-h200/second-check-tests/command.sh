#!/usr/bin/env bash
# Second H200 command of 2026-11-26: the check without the suite (its results
# packed into $OUT at once), then the tests that cover today's kernels, four at
# once, their logs straight into $OUT.
cd "$(dirname "$0")/.." || exit 1
r=/tmp/r/nvidia-h200
mkdir -p $r
VKATTN_BUILD_DIR=build-gpu timeout 215 bash scripts/gpu-check.sh --no-tests --tune --deadline 200 --out $r > $OUT/check.txt 2>&1
echo "gpu-check exit $?" >> $OUT/check.txt
tar czf $OUT/r.tgz -C /tmp/r nvidia-h200
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json VK_LAYER_PATH=/usr/share/vulkan/explicit_layer.d VKATTN_DEVICE=0
t=build-gpu/tests
run() { VKATTN_TEST_FILTER=$2 timeout 40 $t/$1 > $OUT/t-$2.txt 2>&1; echo "exit $?" >> $OUT/t-$2.txt; }
run test_attention test_decode &
run test_attention test_coopmat_device &
run test_matmul test_coopmat_emulated &
run test_variants test_coopmat_variants &
wait
tail -n 2 $OUT/t-*.txt
tail -c 3000 $OUT/check.txt
