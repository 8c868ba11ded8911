#!/usr/bin/env bash
# Draws attention throughput (GFLOP/s) against sequence length from one or more
# vkattn-bench CSV files (--csv), one line per device and path, as a PNG.
# Needs gnuplot (Debian: gnuplot-nox; VKATTN_WITH_PLOT=1 scripts/setup-deps.sh
# installs it).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/plot.sh [-o OUT.png] [-f FILTER] [-y gflops|gbps|ms] [-t TITLE] FILE.csv...
  -o OUT.png   the chart (default attention.png)
  -f FILTER    comma list of COLUMN=VALUE the rows must match (default
               B=1,H=8,Hkv=8,D=64,Dv=64,dtype=f32,causal=1: the sweeps' causal
               prefill series); -f '' keeps every prefill row
  -y FIGURE    gflops (default), gbps or ms (median)
  -t TITLE     chart title
Points are attention rows with Tq == Tk > 1 (prefill) that ran and verified;
the x axis is that sequence length. Where several rows give the same device,
path and length (several CSV files, say), the best figure is drawn.
EOF
}

out=attention.png
filter="B=1,H=8,Hkv=8,D=64,Dv=64,dtype=f32,causal=1"
figure=gflops
title=""
while getopts "o:f:y:t:h" opt; do
  case $opt in
    o) out=$OPTARG ;;
    f) filter=$OPTARG ;;
    y) figure=$OPTARG ;;
    t) title=$OPTARG ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then usage >&2; exit 2; fi
case $figure in
  gflops) column=gflops ylabel="GFLOP/s" ;;
  gbps) column=gbps ylabel="GB/s (compulsory traffic)" ;;
  ms) column=ms_median ylabel="ms (median)" ;;
  *) echo "plot.sh: -y takes gflops, gbps or ms" >&2; exit 2 ;;
esac
command -v gnuplot >/dev/null || {
  echo "plot.sh: gnuplot not found (VKATTN_WITH_PLOT=1 scripts/setup-deps.sh)" >&2; exit 1; }
[ -n "$title" ] || title="vkattn attention, prefill${filter:+ ($filter)}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# CSV to "series<TAB>T<TAB>value" rows. Fields may be quoted ("a, b" and ""
# for a quote inside), as vkattn-bench writes device names; plain awk (mawk
# has no FPAT), so the fields are split by hand.
awk -v filter="$filter" -v column="$column" -v OFS='\t' '
function split_csv(line, f,    n, i, c, field, quoted) {
  n = 0; field = ""; quoted = 0
  for (i = 1; i <= length(line); i++) {
    c = substr(line, i, 1)
    if (quoted) {
      if (c == "\"" && substr(line, i + 1, 1) == "\"") { field = field c; i++ }
      else if (c == "\"") quoted = 0
      else field = field c
    } else if (c == "\"") quoted = 1
    else if (c == ",") { f[++n] = field; field = "" }
    else field = field c
  }
  f[++n] = field
  return n
}
FNR == 1 {                      # each file has its own header row
  delete col
  n = split_csv($0, h)
  for (i = 1; i <= n; i++) col[h[i]] = i
  for (k in need) delete need[k]
  nf = split(filter, parts, ",")
  for (i = 1; i <= nf; i++) {
    if (parts[i] == "") continue
    eq = index(parts[i], "=")
    key = substr(parts[i], 1, eq - 1)
    if (!(key in col)) { print "plot.sh: no column " key " in " FILENAME > "/dev/stderr"; exit 2 }
    need[key] = substr(parts[i], eq + 1)
  }
  next
}
{
  sub(/\r$/, "")
  split_csv($0, f)
  if (f[col["op"]] != "attention" || f[col["ok"]] != "1") next
  T = f[col["Tq"]] + 0
  if (T <= 1 || T != f[col["Tk"]] + 0) next
  for (k in need) if (f[col[k]] != need[k]) next
  path = f[col["path"]]
  series = path == "reference" ? f[col["device"]] : f[col["device"]] ", " path
  key = series SUBSEP T
  v = f[col[column]] + 0
  better = column == "ms_median" ? v < best[key] : v > best[key]
  if (!(key in best) || better) best[key] = v
}
END {
  for (key in best) {
    split(key, p, SUBSEP)
    print p[1], p[2], best[key]
  }
}' "$@" | sort -t "$(printf '\t')" -k1,1 -k2,2n >"$work/points"

if [ ! -s "$work/points" ]; then
  echo "plot.sh: no attention prefill rows match '$filter' in $*" >&2
  exit 1
fi

# One gnuplot data block per series, its title on its first line.
awk -F '\t' '
$1 != last { if (NR > 1) printf "\n\n"; gsub(/"/, "", $1); printf "\"%s\" \"\"\n", $1; last = $1 }
{ print $2, $3 }' "$work/points" >"$work/blocks"
count=$(cut -f1 "$work/points" | uniq | wc -l)

gnuplot <<EOF
set terminal pngcairo size 960,600 noenhanced font ",11"
set output "$out"
set title "$title"
set xlabel "sequence length (Tq = Tk)"
set ylabel "$ylabel"
set logscale x 2
set format x "%.0f"
set grid
set key outside bottom center vertical
set datafile separator whitespace
plot for [i=0:$((count - 1))] "$work/blocks" index i using 1:2 with linespoints \
     pointtype 7 linewidth 2 title columnheader(1)
EOF
echo "plot.sh: wrote $out ($count series)" >&2
