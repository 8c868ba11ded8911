#!/usr/bin/env bash
# One command that proves vkattn on a GPU machine (NVIDIA, or any with a Vulkan
# driver) that has Python 3 (PyTorch with CUDA for the comparison) but maybe no
# internet, no Vulkan loader, no cmake/ctest and no glslang. Prepare on Debian 12:
#     bash scripts/run.sh build && bash scripts/fetch-gpu-debs.sh
# copy this checkout with build/ and .gl/ to the GPU machine, and there, from
# the project root:
#     bash scripts/gpu-check.sh
# 1. unpacks the Vulkan loader, cmocka and the validation layer from .gl/ where
#    missing (scripts/gpu_runtime.py) and finds NVIDIA's Vulkan driver manifest;
# 2. lists the devices and fails unless one is a GPU, which VKATTN_DEVICE then picks;
# 3. runs the whole test suite on it, validation on, without ctest (scripts/run_tests.py);
# 4. runs vkattn-bench --gpu, each case checked against the CPU reference;
# 5. times PyTorch's scaled_dot_product_attention on the same cases
#    (bench/sdpa_bench.py); where the device also has VK_KHR_cooperative_matrix
#    times and tests the workgroup-scope attention kernel beside the coopmat
#    one (workgroup.txt, workgroup.log), measures the matrix units' rate through
#    the extension, subgroup and workgroup scope, and reads a workgroup-scope
#    accumulator's layout (khr-peak.txt); times the coopmat kernel with parts of
#    it left out (bench/ablate.py: ablation.md); runs the bench once more with
#    --profile (each kernel's GPU time and registers, profile.txt); with --tune
#    runs the settings sweep; then the KHR builds of the coopmat attention and
#    matmul kernels on their test cases (khr.log);
# 6. writes bench/results/<device>/: README.md (header and the side-by-side table,
#    bench/compare_sdpa.py), comparison.csv (the same rows, with the ratio),
#    vkattn.csv, vkattn.txt, sdpa.csv, tests.log,
#    devices.txt, gpu-check.log, and the files of the steps after SDPA that the
#    deadline left time for (on an H200 with the tests' 340 s, the
#    workgroup-scope step and the probes; the ablation, the profile, the sweep
#    and the KHR builds' tests only on a faster run: each says when it is
#    skipped); with --tune, tune.md and tune.csv; --tune-only writes those and
#    tune.log.
# Exit status 0 when a GPU was found and every test and bench case passed (the
# PyTorch part may be missing: the table then says why). About 3-5 minutes on an H100.
#
# Options:
#   --allow-cpu        accept a CPU Vulkan device (lavapipe); also VKATTN_GPU_CHECK_ALLOW_CPU=1
#   --device N         this index of `vkattn devices` instead of the first GPU
#   --tests REGEX      only the tests whose names match (default: all)
#   --exhaustive-tests every sweep runs each case every way it names (key splits,
#                      tilings, tunings, dtypes; VKATTN_TEST_EXHAUSTIVE=1, what
#                      ctest does on a GPU). Without it the sweeps take turns as
#                      in CI (tests/test_util.h; every case on every kernel, the
#                      ways shared out): the tests share this one command with
#                      the bench, SDPA and the sweep, and on the H200 (fourth
#                      check, every way) they took 319 s, leaving the sweep 48 s
#                      and the KHR build's attention test too little (43 s)
#   --no-tests         skip step 3
#   --bench-args ARGS  vkattn-bench's options instead of "--gpu" (one string)
#   --out DIR          results folder (default bench/results/<device name>)
#   --jobs N           tests run at once (default min(8, cores))
#   --test-timeout S   cap on each test (default 330)
#   --test-deadline S  all tests end within this (default 340: test_attention took
#                      over 260 s on the H200, 8 tests at a time, its random sweep
#                      compiling)
#   --split-cost S     run each test whose ctest COST is at least S as one process
#                      per cmocka test in it (default 100; 0: none): on the H200
#                      (2026-11-27) test_attention alone took 126 s for its first
#                      three tests, and it, test_variants and their staged-memory
#                      and GPU-family runs did not finish 8 at a time in 340 s
#   --tune             then the settings sweep (bench/tune_sweep.py: the GPU targets
#                      under other tile sizes and key splits, each verified; tune.md,
#                      tune.csv), held to --tune-budget seconds (whole, default 200)
#   --deadline S       the whole check's end, in seconds from its start (default
#                      570, for a machine lent one 10-minute command). Each step
#                      after the tests gets its own cap or what is left before the
#                      deadline less what the steps after it need, whichever is
#                      less, in this order: the bench (150 s; 61 s on an H200),
#                      SDPA (60 s), where the device has VK_KHR_cooperative_matrix
#                      the workgroup-scope attention kernel's timing and tests
#                      (90 s) and the KHR probes (30 s), the ablation (40 s),
#                      the profile (40 s), the sweep (what is left, 20 s at
#                      least), the KHR builds' tests (60 s for the attention
#                      kernel's, 34-43 s on an H200; the matmul's only if 20 s
#                      more are left); a step left under 20 s is skipped and
#                      says so. The tests end by then less 170 s (the least the
#                      bench, SDPA, the workgroup-scope step and the table take).
#   --archive FILE     also pack the results folder into FILE (.tar.gz) at the end:
#                      for machines that send back only a few files per command
#                      (the H200's sessions: 8), where the folder holds 11
#   --tune-only        only steps 1, 2 and the sweep, beside the sdpa.csv a full
#                      check left in the results folder (its README.md is kept):
#                      a session's second command, about 4 minutes
# Environment: VKATTN_BUILD_DIR (default build), PYTHON (default python3; the
# one with torch), VKATTN_GPU_CHECK_ALLOW_CPU=1,
# VKATTN_TEST_EXHAUSTIVE=1 (the same as --exhaustive-tests).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
build=${VKATTN_BUILD_DIR:-build}
build_abs=$(cd "$build" 2>/dev/null && pwd) || { echo "gpu-check: no build folder $build" >&2; exit 1; }
python=${PYTHON:-python3}
allow_cpu=${VKATTN_GPU_CHECK_ALLOW_CPU:-0}
device_index="" tests_regex="" run_tests=1 exhaustive_tests=${VKATTN_TEST_EXHAUSTIVE:-0} bench_args="--gpu" out="" jobs="" test_timeout=330 test_deadline=340 split_cost=100
tune=0 tune_budget=200 deadline=570 tune_skipped="" archive=""
invocation="bash scripts/gpu-check.sh$(printf ' %q' "$@")"
for v in PYTHON VKATTN_BUILD_DIR VKATTN_GPU_CHECK_ALLOW_CPU VKATTN_TEST_EXHAUSTIVE; do
  [ -n "${!v-}" ] && invocation="$v=$(printf '%q' "${!v}") $invocation"
done
while [ $# -gt 0 ]; do
  case "$1" in
    --allow-cpu) allow_cpu=1 ;;
    --device) device_index=$2; shift ;;
    --tests) tests_regex=$2; shift ;;
    --no-tests) run_tests=0 ;;
    --exhaustive-tests) exhaustive_tests=1 ;;
    --bench-args) bench_args=$2; shift ;;
    --out) out=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --test-timeout) test_timeout=$2; shift ;;
    --test-deadline) test_deadline=$2; shift ;;
    --split-cost) split_cost=$2; shift ;;
    --tune) tune=1 ;;
    --tune-only) tune=2 ;;
    --tune-budget) tune_budget=$2; shift ;;
    --deadline) deadline=$2; shift ;;
    --archive) archive=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$jobs" ] || jobs=$(( $(nproc) < 8 ? $(nproc) : 8 ))
[[ $tune_budget =~ ^[0-9]+$ ]] || { echo "gpu-check: --tune-budget takes whole seconds, not $tune_budget" >&2; exit 2; }
[[ $split_cost =~ ^[0-9]+$ ]] || { echo "gpu-check: --split-cost takes whole seconds, not $split_cost" >&2; exit 2; }
[[ $deadline =~ ^[0-9]+$ ]] || { echo "gpu-check: --deadline takes whole seconds, not $deadline" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start_s=$(date +%s)
date_utc=$(date -u '+%Y-%m-%d %H:%M UTC')

say() { echo "gpu-check [$(( $(date +%s) - start_s ))s]: $*"; }
fail() { say "FAILED: $*"; exit 1; }

# Seconds kept for later steps. On the H200 (2026-11-28) the tests took 319 s,
# the bench 61, the profile 28, SDPA 19, the table a few. After SDPA comes the
# workgroup-scope attention kernel (90 s: its prefill, its device test, which
# no driver has compiled yet, and its variants), then the KHR probes (30),
# the ablation (40: the softmax in registers first), the profile (40), the
# sweep (20 at least, and its own timeout runs 30 s past its budget) and the
# KHR builds' tests (60; they passed on the H200 twice), each with what is
# left: with the tests' 340 s the later ones may be skipped, and say so.
sweep_least=20 table_seconds=10 sdpa_least=20 workgroup_seconds=90

# Seconds a step may take: CAP, or what is left before --deadline less RESERVE
# (what the steps after it need), whichever is less; 0 when under 20 s are left,
# and the step is skipped.
step_budget() {
  local cap=$1 reserve=$2 left
  left=$(( deadline - ($(date +%s) - start_s) - reserve ))
  [ "$left" -lt "$cap" ] && cap=$left
  [ "$cap" -lt 20 ] && cap=0
  echo "$cap"
}

# The settings sweep into $out, SDPA's times from the sdpa.csv there. After a
# full check (--tune) it gets what is left before --deadline, less what the
# table needs and the 30 s its own timeout runs past its budget, so that a
# machine lent for one command returns everything.
tune_sweep() {
  local budget=$tune_budget
  if [ "$tune" = 1 ]; then
    budget=$(step_budget "$tune_budget" $(( table_seconds + 30 )))
    if [ "$budget" -lt "$sweep_least" ]; then
      tune_skipped="skipped: $(( deadline - ($(date +%s) - start_s) )) s left before the ${deadline} s"
      tune_skipped+=" deadline, $(( table_seconds + 30 )) of them kept for the table"
      say "tune: $tune_skipped"
      return 0
    fi
  fi
  say "tune: $python bench/tune_sweep.py --build $build --out $out --budget $budget"
  timeout $(( budget + 30 )) "$python" bench/tune_sweep.py --build "$build_abs" --out "$out" \
      --budget "$budget"
}

# One bench run of the f16 causal prefill at D=128 on VARIANT (its KHR build,
# the workgroup-scope kernel allowed), TUNING (--tune) if given, verified
# against the CPU reference, into workgroup.txt, within LEFT seconds. With
# --profile: the pipeline's registers and local memory beside its time (the
# profile step after it rarely has time left on an H200; one dispatch a run,
# so the timestamps add nothing to the time).
workgroup_bench() {
  local variant=$1 left=$2 tuning=${3-}
  [ -n "$tuning" ] && echo "# again, tuned: $tuning" >> "$out/workgroup.txt"
  VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT_WORKGROUP=1 VKATTN_COOPMAT=1 \
      XDG_CACHE_HOME="$work/khr-cache" timeout "$left" \
      "$build_abs/vkattn-bench" --op attention --shape 4,16,16,4096,4096,128 --causal \
      --dtype f16 --path fused --variant "$variant" --reps 10 --profile \
      ${tuning:+--tune "$tuning"} >> "$out/workgroup.txt" 2>&1
}

# The workgroup-scope attention kernel (attention_coopmat_workgroup.comp,
# opt-in: VKATTN_COOPMAT_WORKGROUP=1), in workgroup_seconds: no driver has
# compiled it yet, and it is the route to the f16 prefill target, so it comes
# right after the tests, the bench and SDPA. First the prefill on its default
# tile (workgroup.txt; where that fails, once more on a quarter of it, 32 rows
# and 32 keys: whether the failure is the tile's, and a time all the same),
# then its device test and every variant on the real build (workgroup.log),
# then the coopmat kernel's KHR build on the same prefill (the NV build's time
# is the bench's).
workgroup_step() {
  local cap end left rc run tests=""
  cap=$(step_budget "$workgroup_seconds" "$table_seconds")
  workgroup_summary="skipped: the --deadline is too near"
  if [ "$cap" -eq 0 ]; then
    say "workgroup scope: $workgroup_summary"
    return 0
  fi
  end=$(( $(date +%s) + cap ))
  say "workgroup scope: VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT_WORKGROUP=1 vkattn-bench --shape 4,16,16,4096,4096,128 --causal --dtype f16 --variant coopmat_workgroup, its tests, then coopmat (at most $cap s)"
  : > "$out/workgroup.txt"
  : > "$out/workgroup.log"
  workgroup_bench coopmat_workgroup "$cap"
  rc=$?
  workgroup_summary="workgroup.txt (bench exit status $rc"
  if [ "$rc" != 0 ]; then
    say "workgroup scope: exit status $rc (workgroup.txt has what ran)"
    left=$(( end - $(date +%s) ))  # (timeout 0 would mean none)
    if [ "$left" -gt 0 ]; then
      workgroup_bench coopmat_workgroup "$left" coopmat_workgroup.rows=2,coopmat_workgroup.keys=32
      rc=$?
      workgroup_summary+=", $rc on 32 rows and 32 keys"
    fi
  fi
  workgroup_summary+=")"
  for run in test_attention:test_coopmat_workgroup_device \
              test_variants:test_coopmat_workgroup_variants; do
    left=$(( end - $(date +%s) ))
    [ "$left" -ge 5 ] || break
    VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT_WORKGROUP=1 VKATTN_COOPMAT=0 \
        VKATTN_TEST_FILTER="${run#*:}" \
        VKATTN_VALIDATION=off VKATTN_TEST_ALLOW_NO_VALIDATION=1 VKATTN_POISON=1 \
        XDG_CACHE_HOME="$work/khr-cache" timeout "$left" \
        "$build_abs/tests/${run%%:*}" >> "$out/workgroup.log" 2>&1
    rc=$?
    say "workgroup scope: ${run#*:} exit status $rc (workgroup.log; 124: stopped by its time)"
    tests+=", ${run#*:} $rc"
  done
  workgroup_summary+="${tests:-, its tests skipped (no time left)} (workgroup.log; 124: stopped by its time)"
  # (a device created without the matrices passes them by not running them)
  grep -m1 '^not run' "$out/workgroup.log" | sed 's/^/workgroup scope: /'
  left=$(( end - $(date +%s) ))
  [ "$left" -ge 10 ] && workgroup_bench coopmat "$left"
  grep -E '^(# again|attention)' "$out/workgroup.txt" | cut -c1-200
  # which SPIR-V form the workgroup-scope modules ran in (1.6 unless refused)
  grep -E 'SPIR-V 1\.6 form' "$out/workgroup.txt" "$out/workgroup.log" | sort -u | cut -c1-240
  grep -E '^vkattn: pipeline statistics: attention_coopmat' "$out/workgroup.txt" | cut -c1-240
}

# The matrix units' rates through the KHR extension, subgroup and workgroup
# scope, and a workgroup-scope accumulator's layout (VK_NV_cooperative_matrix2,
# which a device vkattn creates with VKATTN_COOPMAT_PEAK=1 or
# VKATTN_COOPMAT_LAYOUT=1 enables only here), in a process of their own: a
# driver that failed on the workgroup-scope modules takes nothing else with it.
khr_probes() {
  local cap
  cap=$(step_budget 30 "$table_seconds")
  if [ "$cap" -eq 0 ]; then
    say "KHR probes: skipped, the --deadline is too near"
    return 0
  fi
  say "KHR probes: VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT_PEAK=1 VKATTN_COOPMAT_LAYOUT=1 vkattn-bench --op matmul --matmul 64,64,64 --matmul-variant tiled --profile (at most $cap s)"
  VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT_PEAK=1 VKATTN_COOPMAT_LAYOUT=1 \
      XDG_CACHE_HOME="$work/khr-cache" timeout "$cap" \
      "$build_abs/vkattn-bench" --op matmul --matmul 64,64,64 --matmul-variant tiled \
      --reps 2 --no-verify --profile > "$out/khr-peak.txt" 2>&1 ||
    say "KHR probes: exit status $? (khr-peak.txt has what ran)"
  grep -E '^vkattn: (coopmat (peak|layout)|cooperative matrix 2)' "$out/khr-peak.txt" |
    cut -c1-1100
}

# The coopmat kernel on bf16 matrices (coopmat.bf16=2: VK_KHR_shader_bfloat16
# through the KHR build; no driver has run it yet), where the device lists
# them: the bf16 prefill with them and with the conversion to f16, each
# verified against the CPU reference (bf16.txt), then the kernel's test on the
# real build (bf16.log). Without validation, as the KHR tests (5e): the layer
# carried from Debian 12 predates the extension, and under it the device is
# created without bf16 matrices.
bf16_step() {
  local cap end left rc tuning
  cap=$(step_budget 50 "$table_seconds")
  bf16_summary="skipped: the --deadline is too near"
  if [ "$cap" -eq 0 ]; then
    say "bf16 matrices: $bf16_summary"
    return 0
  fi
  end=$(( $(date +%s) + cap ))
  say "bf16 matrices: VKATTN_COOPMAT_KHR=1 vkattn-bench --shape 4,16,16,4096,4096,128 --causal --dtype bf16 --variant coopmat --tune coopmat.bf16=2, then =1 (the conversion), then test_coopmat_bf16_matrices (at most $cap s)"
  : > "$out/bf16.txt"
  bf16_summary="bf16.txt (bench exit status"
  for tuning in coopmat.bf16=2 coopmat.bf16=1; do
    left=$(( end - $(date +%s) ))
    [ "$left" -ge 5 ] || break
    echo "# --tune $tuning" >> "$out/bf16.txt"
    VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT=1 XDG_CACHE_HOME="$work/khr-cache" timeout "$left" \
        "$build_abs/vkattn-bench" --op attention --shape 4,16,16,4096,4096,128 --causal \
        --dtype bf16 --path fused --variant coopmat --reps 10 --profile --tune "$tuning" \
        >> "$out/bf16.txt" 2>&1
    rc=$?
    bf16_summary+=" $rc with $tuning,"
  done
  left=$(( end - $(date +%s) ))
  if [ "$left" -ge 5 ]; then
    VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT=0 VKATTN_TEST_FILTER=test_coopmat_bf16_matrices \
        VKATTN_VALIDATION=off VKATTN_TEST_ALLOW_NO_VALIDATION=1 VKATTN_POISON=1 \
        XDG_CACHE_HOME="$work/khr-cache" timeout "$left" "$build_abs/tests/test_attention" \
        > "$out/bf16.log" 2>&1
    rc=$?
    bf16_summary+=" test_coopmat_bf16_matrices $rc; bf16.log; 124: stopped by its time)"
  else
    bf16_summary+=" its test skipped: no time left)"
  fi
  grep -E '^(# --tune|attention)' "$out/bf16.txt" | cut -c1-200
  grep -E '^vkattn: pipeline statistics: attention_coopmat' "$out/bf16.txt" | cut -c1-240
  grep -E 'PASSED|FAILED|not run' "$out/bf16.log" 2>/dev/null | tail -3
}

check() {
  say "vkattn gpu-check, $date_utc, in $root (build $build_abs)"
  if ! [ -x "$build_abs/vkattn" ] || ! [ -x "$build_abs/vkattn-bench" ]; then
    fail "$build/vkattn or $build/vkattn-bench is missing: build on Debian 12 and copy $build/ here"
  fi
  [ -f .gl/SOURCE.txt ] && sed 's/^/    /' .gl/SOURCE.txt

  # 1. The Vulkan runtime. The binaries' RUNPATH names the folder they were
  #    built in; LD_LIBRARY_PATH finds libvkattn here. PyTorch later gets the
  #    environment as it was.
  local original_ld=${LD_LIBRARY_PATH-} exports
  export LD_LIBRARY_PATH="$build_abs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  exports=$("$python" scripts/gpu_runtime.py --debs .gl --nvidia --check "$build_abs/vkattn" \
      "$build_abs/vkattn-bench" "$build_abs"/libvkattn.so.* "$build_abs/tests/test_attention") ||
    fail "the Vulkan runtime is incomplete (above); fetch .gl/ again with scripts/fetch-gpu-debs.sh"
  eval "$exports"
  say "environment: $(echo "$exports" | sed 's/^export //' | tr '\n' ' ')"

  # 2. Devices: a GPU, or fail.
  local devices choice type name
  pick() {
    "$build_abs/vkattn" devices > "$work/devices.txt" 2>&1 || fail "vkattn devices: $(cat "$work/devices.txt")"
    # "index<TAB>type<TAB>name" per device
    devices=$(awk '/^[0-9]+[* ] / { i = $1; sub(/\*$/, "", i); n = substr($0, index($0, " ") + 1);
                                    getline; t = $0; sub(/^ +/, "", t); sub(/,.*/, "", t);
                                    print i "\t" t "\t" n }' "$work/devices.txt")
    choice=""
    if [ -n "$device_index" ]; then
      choice=$(awk -F'\t' -v i="$device_index" '$1 == i' <<<"$devices")
    else
      for want in "discrete GPU" "integrated GPU" "virtual GPU" "other"; do
        choice=$(awk -F'\t' -v t="$want" '$2 == t' <<<"$devices" | head -1)
        [ -n "$choice" ] && break
      done
      if [ -z "$choice" ] && [ "$allow_cpu" = 1 ]; then
        choice=$(head -1 <<<"$devices")
      fi
    fi
  }
  local device_given=$device_index
  pick
  cat "$work/devices.txt"
  if [ -z "$choice" ]; then
    [ -z "$devices" ] && fail "no Vulkan device at all (VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset});" \
      "VK_LOADER_DEBUG=error,driver $build/vkattn devices says why the loader skipped a driver"
    [ -n "$device_index" ] && fail "no device $device_index"
    fail "only CPU Vulkan devices (llvmpipe/lavapipe): no GPU to check. NVIDIA: the driver's" \
         "nvidia_icd.json and libGLX_nvidia.so.0 must be visible (a container needs" \
         "NVIDIA_DRIVER_CAPABILITIES=all or graphics). --allow-cpu accepts a CPU device."
  fi
  IFS=$'\t' read -r device_index type name <<<"$choice"
  # A CPU device beside the GPU: hide lavapipe, because the adoption tests take
  # the first device they enumerate (VK_LOADER_DRIVERS_DISABLE: loaders from 1.3.234).
  if [ -z "$device_given" ] && [ "$type" != CPU ] && [ -z "${VK_DRIVER_FILES-}" ] &&
     awk -F'\t' '$2 == "CPU"' <<<"$devices" | grep -q .; then
    export VK_LOADER_DRIVERS_DISABLE='*lvp*'
    say "hiding the CPU devices (VK_LOADER_DRIVERS_DISABLE='*lvp*'), listing again"
    device_index=""
    pick
    [ -n "$choice" ] || fail "the GPU went away with VK_LOADER_DRIVERS_DISABLE"
    cat "$work/devices.txt"
    awk -F'\t' '$2 == "CPU"' <<<"$devices" | grep -q . &&
      say "WARNING: a CPU device is still listed: test_adopt and test_recording take the first device"
    IFS=$'\t' read -r device_index type name <<<"$choice"
  fi
  [ "$type" = CPU ] && say "WARNING: checking a CPU device (--allow-cpu): nothing here proves anything about a GPU"
  export VKATTN_DEVICE=$device_index
  say "device: $device_index, $name ($type); VKATTN_DEVICE=$VKATTN_DEVICE"
  local slug
  slug=$(tr '[:upper:]' '[:lower:]' <<<"$name" | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
  out=${out:-bench/results/$slug}
  mkdir -p "$out" || fail "cannot make $out"
  echo "$out" > "$work/out"
  cp "$work/devices.txt" "$out/devices.txt"
  local smi="" detail
  if command -v nvidia-smi >/dev/null; then
    smi=$(nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv,noheader 2>/dev/null | head -1)
    say "nvidia-smi: $smi"
  fi
  detail=$(awk -v i="$device_index" '$1 == i || $1 == i "*" { getline; sub(/^ +/, ""); print; exit }' "$work/devices.txt")

  if [ "$tune" = 2 ]; then
    tune_sweep || fail "the settings sweep: exit status $?"
    say "settings sweep: $out/tune.md"
    return 0
  fi

  # 3. Tests, validation on (the tests turn it on and fail on any message).
  local tests_summary="not run (--no-tests)" tests_rc=0 tests_by
  if [ "$run_tests" = 1 ]; then
    tests_by=$(step_budget "$test_deadline" 170)
    [ "$tests_by" -gt 0 ] || tests_by=1  # run_tests.py takes 0 as no deadline
    say "tests: $jobs at a time, each at most ${test_timeout} s, all within ${tests_by} s$(
      [ "$exhaustive_tests" = 1 ] && echo ", every case every way" || echo ", sweeps in turns")"
    VKATTN_TEST_EXHAUSTIVE=$exhaustive_tests "$python" scripts/run_tests.py --build "$build_abs" --source "$root" --jobs "$jobs" \
        --timeout "$test_timeout" --deadline "$tests_by" --log "$out/tests.log" --link-build \
        --split-cost "$split_cost" \
        ${tests_regex:+--include "$tests_regex"} | tee "$work/tests.txt"
    tests_rc=${PIPESTATUS[0]}
    tests_summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$work/tests.txt" | tail -1)
    [ -n "$tests_summary" ] || tests_summary="the runner stopped (exit status $tests_rc)"
    [ -n "$tests_regex" ] && tests_summary+=" (only tests matching '$tests_regex')"
  fi

  # 4. vkattn-bench, held so that SDPA, the workgroup-scope kernel's step and
  # the table still fit.
  local bench_cmd bench_rc=0 cap
  bench_cmd="$build/vkattn-bench $bench_args --csv $out/vkattn.csv"
  cap=$(step_budget 150 $(( sdpa_least + workgroup_seconds + table_seconds )))
  say "bench: $bench_cmd (at most $cap s)"
  if [ "$cap" -gt 0 ]; then
    # shellcheck disable=SC2086  # bench_args is a list of options
    timeout "$cap" "$build_abs/vkattn-bench" $bench_args --csv "$out/vkattn.csv" > "$out/vkattn.txt"
    bench_rc=$?
    cat "$out/vkattn.txt"
    [ $bench_rc = 124 ] && say "bench: stopped after $cap s"
  else
    bench_rc=124
    say "bench: skipped, the --deadline is too near"
  fi

  # 5. PyTorch SDPA on the same cases, in the environment PyTorch came with.
  local sdpa_cmd="$python bench/sdpa_bench.py --vkattn $out/vkattn.csv --out $out/sdpa.csv"
  cap=$(step_budget 60 $(( workgroup_seconds + table_seconds )))
  say "SDPA: $sdpa_cmd (at most $cap s)"
  if [ -s "$out/vkattn.csv" ] && [ "$cap" -gt 0 ]; then
    LD_LIBRARY_PATH=$original_ld timeout "$cap" "$python" bench/sdpa_bench.py \
        --vkattn "$out/vkattn.csv" --out "$out/sdpa.csv" ||
      say "SDPA: exit status $? (the table shows what ran)"
  fi

  # 5a. Where the device also has VK_KHR_cooperative_matrix: the
  # workgroup-scope attention kernel first (the route to the f16 prefill
  # target no driver has compiled yet), then the matrix units' rates through
  # the extension (khr-peak.txt).
  local khr=0 workgroup_summary="not run: the device has no VK_KHR_cooperative_matrix"
  local khr_summary="not run: the device has no VK_KHR_cooperative_matrix" khr_rc khr_matmul_rc
  local bf16_summary="not run: the device lists no bf16 matrices (vkattn devices)"
  if VKATTN_COOPMAT_KHR=1 "$build_abs/vkattn" devices > "$work/devices-khr.txt" 2>/dev/null &&
      grep -q "cooperative matrix yes (KHR)" "$work/devices-khr.txt"; then
    khr=1
    workgroup_step
    khr_probes
    grep -q "bf16 matrices yes" "$work/devices-khr.txt" && bf16_step
  fi

  # 5b. Where the coopmat kernel's time goes: the f16 prefill with parts of its
  # tile step left out (bench/ablate.py; no profiler reads Vulkan kernels here),
  # the softmax in registers first (its registers and local memory).
  local ablation_summary="not run: the device has no cooperative matrices"
  if grep -q "cooperative matrix yes" "$work/devices.txt"; then
    cap=$(step_budget 40 "$table_seconds")
    if [ "$cap" -gt 0 ]; then
      say "ablation: $python bench/ablate.py --build $build --out $out --budget $(( cap - 10 ))"
      timeout "$cap" "$python" bench/ablate.py --build "$build_abs" --out "$out" \
          --budget $(( cap - 10 )) && ablation_summary="ablation.md" ||
        ablation_summary="exit status $? (ablation.md has what ran)"
    else
      ablation_summary="skipped: the --deadline is too near"
    fi
  fi
  say "ablation: $ablation_summary"

  # 5c. Where the time goes, kernel by kernel (timestamps after every dispatch,
  # so kept out of the timed run above): each pipeline's registers and spills,
  # the device's cooperative-matrix accumulator layout and the matrix units'
  # rate through the NV extension, logged once as the context starts.
  cap=$(step_budget 40 "$table_seconds")
  say "profile: $build/vkattn-bench $bench_args --profile --no-verify --reps 5 (at most $cap s)"
  if [ "$cap" -gt 0 ]; then
    # shellcheck disable=SC2086
    VKATTN_COOPMAT_LAYOUT=1 VKATTN_COOPMAT_PEAK=1 timeout "$cap" "$build_abs/vkattn-bench" $bench_args \
        --profile --no-verify --reps 5 > "$out/profile.txt" 2>&1 ||
      say "profile: exit status $? (profile.txt has what ran)"
    grep -E '^(attention|mha|matmul) |per run:' "$out/profile.txt"
    grep -E '^vkattn: (coopmat (layout|peak)|cooperative matrix 2)' "$out/profile.txt" | sort -u
    # Each pipeline's registers and spills, where the driver reports them (the
    # whole lines are in profile.txt).
    grep -E '^vkattn: pipeline statistics' "$out/profile.txt" | cut -c1-240 | head -30
  else
    say "profile: skipped, the --deadline is too near"
  fi

  # 5d. Other tile sizes and key splits (--tune), against SDPA's times above.
  local tune_summary="not run (no --tune)"
  if [ "$tune" = 1 ]; then
    tune_sweep && tune_summary=${tune_skipped:-"tune.md, tune.csv"} ||
      tune_summary="exit status $? (tune.md has what ran)"
  fi

  # 5e. The KHR builds of the coopmat attention and matmul kernels (rewritten
  # from the NV SPIR-V by tools/coopmat_khr.c) on their test cases, with what
  # is left (they passed on the H200 on 2026-11-27 and 2026-11-28). Without
  # validation: the layer carried from Debian 12 (1.3.239) predates the
  # extension and would flag its structures and SPIR-V as unknown.
  if [ "$khr" = 1 ]; then
    khr_summary="skipped: the --deadline is too near"
    cap=$(step_budget 60 "$table_seconds")
    if [ "$cap" -gt 0 ]; then
      say "KHR build: VKATTN_COOPMAT_KHR=1 VKATTN_TEST_FILTER=test_coopmat_device tests/test_attention (at most $cap s)"
      VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT=0 VKATTN_TEST_FILTER=test_coopmat_device \
          VKATTN_VALIDATION=off VKATTN_TEST_ALLOW_NO_VALIDATION=1 VKATTN_POISON=1 \
          XDG_CACHE_HOME="$work/khr-cache" timeout "$cap" "$build_abs/tests/test_attention" \
          > "$out/khr.log" 2>&1
      khr_rc=$?
      khr_summary="test_attention's test_coopmat_device exit status $khr_rc"
      cap=$(step_budget 40 10)
      if [ "$cap" -gt 0 ]; then
        VKATTN_COOPMAT_KHR=1 VKATTN_COOPMAT=0 VKATTN_TEST_FILTER=test_coopmat_emulated \
            VKATTN_VALIDATION=off VKATTN_TEST_ALLOW_NO_VALIDATION=1 VKATTN_POISON=1 \
            XDG_CACHE_HOME="$work/khr-cache" timeout "$cap" "$build_abs/tests/test_matmul" \
            >> "$out/khr.log" 2>&1
        khr_matmul_rc=$?
        khr_summary+=", test_matmul's test_coopmat_emulated (the real kernel last) $khr_matmul_rc"
      else
        khr_summary+=", test_matmul's skipped (the --deadline is too near)"
      fi
      khr_summary+=" (khr.log; 124: stopped by its time)"
      grep -E 'PASSED|FAILED|^\[  ' "$out/khr.log" | tail -8
    fi
  fi
  say "workgroup-scope kernel: $workgroup_summary"
  say "bf16 matrices: $bf16_summary"
  say "KHR build: $khr_summary"

  # 6. The table.
  local total=$(( $(date +%s) - start_s )) source_line=""
  [ -f .gl/SOURCE.txt ] && source_line=$(grep -m1 '^commit:' .gl/SOURCE.txt)
  [ -n "$source_line" ] || source_line="commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  source_line=${source_line#commit: }
  local info=(
    "vkattn devices: index $device_index, $detail"
    "Driver (nvidia-smi): ${smi:-no nvidia-smi}"
    "Date: $date_utc"
    "Build: commit $source_line ($(grep -m1 '^build type:' .gl/SOURCE.txt 2>/dev/null || echo 'build type: ?'))"
    "Machine: $(nproc) cores, $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}"), $(uname -r)"
    "Tests (validation on, tests.log): $tests_summary"
    "Bench: exit status $bench_rc (0: every case ran and matched the CPU reference; vkattn.txt)"
    "Workgroup-scope attention kernel (VK_NV_cooperative_matrix2 through the KHR extension): $workgroup_summary"
    "bf16 matrices (the coopmat kernel's coopmat.bf16=2, KHR build): $bf16_summary"
    "Ablation of the coopmat kernel: $ablation_summary"
    "Settings sweep (--tune): $tune_summary"
    "VK_KHR_cooperative_matrix build: $khr_summary"
    "FP32 peak used for %: $(sed -n 's/^peak: *//p' "$out/vkattn.txt" | head -1)"
    "Whole check: ${total} s"
  )
  local args=()
  for i in "${info[@]}"; do args+=(--info "$i"); done
  "$python" bench/compare_sdpa.py --vkattn "$out/vkattn.csv" --sdpa "$out/sdpa.csv" \
      --out "$out/README.md" --csv "$out/comparison.csv" \
      --title "vkattn and PyTorch SDPA on $name" "${args[@]}" \
      --command "$invocation" --command "$bench_cmd" --command "$sdpa_cmd" ||
    say "could not write the table"
  [ -f "$out/README.md" ] && sed -n '/^| case/,$p' "$out/README.md"

  say "tests: $tests_summary"
  say "bench: exit status $bench_rc; results in $out/"
  if [ "$tests_rc" != 0 ] || [ "$bench_rc" != 0 ]; then
    fail "see above (tests exit $tests_rc, bench exit $bench_rc)"
  fi
  say "passed"
}

check 2>&1 | tee "$work/gpu-check.log"
rc=${PIPESTATUS[0]}
if [ -s "$work/out" ]; then  # --tune-only keeps the full check's log
  cp "$work/gpu-check.log" "$(cat "$work/out")/$([ "$tune" = 2 ] && echo tune.log || echo gpu-check.log)"
  if [ -n "$archive" ]; then
    results=$(cat "$work/out")
    tar czf "$archive" -C "$(dirname "$results")" "$(basename "$results")" ||
      echo "gpu-check: could not write $archive" >&2
  fi
fi
exit "$rc"
