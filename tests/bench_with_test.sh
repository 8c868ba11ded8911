#!/usr/bin/env bash
# vkattn-bench end to end with --with: every attention variant of one awkward
# --shape (GQA, Tq != Tk, causal, a head size that is no multiple of 4... nor of
# 8), by the fused and the unfused path, validation on. Each case must verify
# against the CPU reference (the bench's exit status), each variant must come
# with its paired ratio against the plain case, and bad --with values must be
# refused with a message naming them.
# usage: bench_with_test.sh VKATTN_BENCH
set -euo pipefail
bench=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export VKATTN_VALIDATION=1
fail() { echo "FAIL: $*" >&2; exit 1; }

with=plain,window=5,softcap,sinks,alibi,mask,varlen,paged=3,bshd,kv=bf16
if ! "$bench" --op attention --reps 3 --shape 2,4,2,7,19,10 --causal --with "$with" \
        --json "$dir/cases.json" >"$dir/out" 2>"$dir/err"; then
    cat "$dir/out" "$dir/err" >&2
    fail "vkattn-bench --with $with: a case failed"
fi
# Anything the library logs (validation messages among them) is a failure.
if grep -q '^vkattn: ' "$dir/err"; then
    grep '^vkattn: ' "$dir/err" >&2
    fail "messages on stderr"
fi
# 10 entries by the fused path, 8 by the unfused one (which refuses packed and
# paged sequences, so the bench gives those no unfused twin).
cases=$(wc -l <"$dir/cases.json")
[ "$cases" -eq 18 ] || fail "18 cases expected, $cases ran"
grep -c '"ok":true' "$dir/cases.json" | grep -qx 18 || fail "not every case ok"
# Every variant timed in turn with its plain case; the plain cases not.
paired=$(grep -c '"base":"plain","base_ms_median":[0-9.]*,"base_ratio":[0-9.]*}' "$dir/cases.json" || true)
[ "$paired" -eq 16 ] || fail "16 paired cases expected, $paired found"
for v in window=5 softcap sinks alibi mask varlen paged/3 bshd kv=bf16; do
    grep -q "\"variant\":\"$v " "$dir/cases.json" || fail "no fused case named $v"
done
grep -q '"path":"unfused","variant":"window=5"' "$dir/cases.json" ||
    fail "the unfused case does not name its variant"
if grep -q '"path":"unfused","variant":"\(varlen\|paged/3\)' "$dir/cases.json"; then
    fail "an unfused twin of a packed or paged case"
fi
grep -q "x[0-9.]* the plain case's time" "$dir/out" || fail "no ratio line in the table"

# Refused, exit 2, the bad value named.
refused() {
    local expect=$1
    shift
    local rc=0
    "$bench" "$@" >"$dir/out" 2>"$dir/err" || rc=$?
    [ "$rc" -eq 2 ] || fail "vkattn-bench $*: exit $rc, expected 2"
    grep -qF -- "$expect" "$dir/err" || fail "vkattn-bench $*: no '$expect' in: $(cat "$dir/err")"
}
refused "'paged' needs a value" --shape 1,1,1,1,4,4 --with paged
refused "not '0'" --shape 1,1,1,1,4,4 --with paged=0
refused "not '257'" --shape 1,1,1,1,4,4 --with paged=257
refused "not '-2'" --shape 1,1,1,1,4,4 --with window=-2
refused "not 'f8'" --shape 1,1,1,1,4,4 --with kv=f8
refused "'softcap=3' takes no value" --shape 1,1,1,1,4,4 --with softcap=3
refused "not 'ring'" --shape 1,1,1,1,4,4 --with plain,ring
refused "apply to --shape cases" --with paged=16
refused "--shape gives attention cases, which --op leaves out" --op mha --shape 1,2,2,16,16,8

# --matmul: the given shapes replace the sweep's matmuls, by the kernel named.
# (--matmul-variant=tiled: a value after '=', as getopt_long takes it)
if ! "$bench" --op matmul --reps 2 --matmul 33,17,40,2 --matmul 5,9,3 --matmul-variant=tiled \
        --json "$dir/matmul.json" >"$dir/out" 2>"$dir/err"; then
    cat "$dir/out" "$dir/err" >&2
    fail "vkattn-bench --matmul: a case failed"
fi
[ "$(wc -l <"$dir/matmul.json")" -eq 2 ] || fail "2 --matmul cases expected: $(cat "$dir/matmul.json")"
grep -c '"ok":true' "$dir/matmul.json" | grep -qx 2 || fail "not every --matmul case ok"
[ "$(grep -c '"variant":"tiled"' "$dir/matmul.json")" -eq 2 ] || fail "--matmul-variant not taken"
refused "--matmul takes M,N,K[,B]" --matmul 4,4
refused "not '4,x,4'" --matmul 4,x,4
refused "not 'strassen'" --matmul 4,4,4 --matmul-variant strassen
refused "applies to --matmul cases" --matmul-variant auto
refused "more than 2^40 elements" --matmul 2147483648,2147483648,2
refused "--matmul gives matmul cases, which --op leaves out" --op attention,softmax --matmul 8,8,8
refused "'--causal' takes no value" --causal=1
refused "--reps takes a count >= 1, not ''" --reps=
echo "bench --with: 18 cases verified, 16 paired, 9 refusals; --matmul: 2 cases, 8 refusals"
