#!/usr/bin/env bash
# Builds the .npy parser's libFuzzer target with Debian's clang and runs it.
#   scripts/fuzz.sh [seconds]     (default 300)
# New inputs go to build-fuzz/corpus; crashes to build-fuzz/ as crash-*. Copy a
# crash into fuzz/corpus/ once it is fixed, so ctest replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
need=()
for p in clang-14 libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
bash scripts/setup-deps.sh
CC=clang-14 cmake -S . -B build-fuzz -DVKATTN_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz --target npy_fuzz -j "$(nproc)"
mkdir -p build-fuzz/corpus
cd build-fuzz
./fuzz/npy_fuzz -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 corpus ../fuzz/corpus
