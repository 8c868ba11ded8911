#!/usr/bin/env bash
# A GPU session's second command after scripts/gpu-check.sh: where the
# workgroup-scope attention kernel's time goes on the f16 causal prefill
# (bench/ablate.py --workgroup: ablation-workgroup.md), that prefill under
# other tiles of it (workgroup-tune.txt), at D=64 (workgroup-d64.txt) and in
# bf16 (workgroup-bf16.txt) beside the coopmat kernel, in bf16 also on bf16
# matrices where the device lists them (coopmat.bf16=2), each verified against
# the CPU reference. About 4 minutes. From the repository root, the build and .gl
# carried as for the check:
#
#   bash scripts/gpu-workgroup-rerun.sh OUT_DIR [BUILD_DIR (default build-gpu)]
set -u
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/gpu-workgroup-rerun.sh OUT_DIR [BUILD_DIR]}
b=$(cd "${2:-build-gpu}" && pwd) || exit 1
mkdir -p "$out" || exit 1
# The Vulkan runtime as scripts/gpu-check.sh sets it up.
export LD_LIBRARY_PATH="$b${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exports=$(python3 scripts/gpu_runtime.py --debs .gl --nvidia --check "$b/vkattn" \
          "$b/vkattn-bench" "$b"/libvkattn.so.*) ||
  { echo "the Vulkan runtime is incomplete (above)" >&2; exit 1; }
eval "$exports"
# The first GPU `vkattn devices` lists, unless VKATTN_DEVICE names one.
"$b/vkattn" devices > "$out/rerun-devices.txt" 2>&1 ||
  { cat "$out/rerun-devices.txt" >&2; exit 1; }
if [ -z "${VKATTN_DEVICE-}" ]; then
  VKATTN_DEVICE=$(awk '/^[0-9]+[* ] / { i = $1; sub(/\*$/, "", i); getline;
                                        if ($0 ~ /(discrete|integrated|virtual) GPU/) { print i; exit } }' \
                  "$out/rerun-devices.txt")
fi
[ -n "$VKATTN_DEVICE" ] || { cat "$out/rerun-devices.txt" >&2; echo "no GPU listed" >&2; exit 1; }
export VKATTN_DEVICE VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT_WORKGROUP=1
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/vkattn-workgroup-cache}
start=$(date +%s)
say() { echo "[$(( $(date +%s) - start ))s] $*"; }

say "device $VKATTN_DEVICE; $(echo "$exports" | sed 's/^export //' | tr '\n' ' ')"
say "ablation: python3 bench/ablate.py --build $b --out $out --workgroup --budget 100"
timeout 130 python3 bench/ablate.py --build "$b" --out "$out" --workgroup --budget 100 ||
  say "ablation: exit status $?"

# The default tile (64 rows, 64 keys) against 32 keys, 32 rows (rows=2: two
# blocks of 16), launch order by grid, and workgroups of 128 invocations (the
# device's other listed size; ggml finds it better for many rows).
: > "$out/workgroup-tune.txt"
for tuning in "" keys=32 rows=2 order=2 subgroups=4; do
  say "tune: ${tuning:-default}"
  echo "# tuning: ${tuning:-default}" >> "$out/workgroup-tune.txt"
  timeout 30 "$b/vkattn-bench" --op attention --shape 4,16,16,4096,4096,128 --causal \
      --dtype f16 --path fused --variant coopmat_workgroup --reps 10 \
      ${tuning:+--tune coopmat_workgroup.$tuning} >> "$out/workgroup-tune.txt" 2>&1 ||
    say "tune ${tuning:-default}: exit status $?"
done
grep -E '^(# tuning|attention)' "$out/workgroup-tune.txt" | cut -c1-200

# The issue's other reported cases, D=64 in f16 (workgroup-d64.txt) and D=128
# in bf16 (workgroup-bf16.txt: bf16 converted to f16 as it is staged), on the
# default tile beside the coopmat kernel's KHR build (the check's bench runs
# them on AUTO's choice); bf16 also on bf16 matrices (the coopmat kernel's
# coopmat.bf16=2, where `vkattn devices` shows them: the check's bf16 step
# rarely gets time).
bf16_matrices=""
grep -q "bf16 matrices yes" "$out/rerun-devices.txt" && bf16_matrices="coopmat:coopmat.bf16=2"
for case in "64 f16 workgroup-d64" "128 bf16 workgroup-bf16 $bf16_matrices"; do
  read -r head dtype file extra <<< "$case"
  : > "$out/$file.txt"
  for run in coopmat_workgroup coopmat $extra; do
    variant=${run%%:*} tuning=${run#*:}
    [ "$tuning" = "$run" ] && tuning=""
    say "D=$head $dtype: $variant${tuning:+ $tuning}"
    [ -n "$tuning" ] && echo "# tuning: $tuning" >> "$out/$file.txt"
    timeout 30 "$b/vkattn-bench" --op attention --shape "4,16,16,4096,4096,$head" --causal \
        --dtype "$dtype" --path fused --variant "$variant" --reps 10 \
        ${tuning:+--tune "$tuning"} >> "$out/$file.txt" 2>&1 ||
      say "D=$head $dtype $variant${tuning:+ $tuning}: exit status $?"
  done
  grep -E '^(# tuning|attention)' "$out/$file.txt" | cut -c1-200
done
say "done"
