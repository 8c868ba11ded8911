#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, builds the examples against
# it with find_package (shared and static) and with pkg-config, and runs them
# with the validation layer on: any validation message fails.
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/vkattn.h bin/vkattn bin/vkattn-bench; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done

export VKATTN_VALIDATION=1 XDG_CACHE_HOME=$work/cache
run() {
  local out
  if ! out=$("$@" 2>&1); then echo "$out"; echo "FAILED: $*"; exit 1; fi
  echo "$out"
  if grep -q "VALIDATION" <<<"$out"; then echo "validation messages from $*"; exit 1; fi
}

# CMake package.
cmake -S "$source/examples" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
for program in minimal host_app minimal_static host_app_static; do
  [ -x "$work/cmake/$program" ] || { echo "not built: $program"; exit 1; }
  run "$work/cmake/$program"
done
# The static programs need no libvkattn.so at run time.
if ldd "$work/cmake/minimal_static" | grep -q libvkattn; then
  echo "minimal_static links libvkattn.so"; exit 1
fi

# pkg-config.
pc_dir=$(dirname "$(find "$prefix" -name vkattn.pc)")
export PKG_CONFIG_PATH=$pc_dir
[ "$(pkg-config --modversion vkattn)" = "$(sed -n 's/^project(vkattn VERSION \([0-9.]*\).*/\1/p' "$source/CMakeLists.txt")" ]
cc -std=c11 -Wall -Werror "$source/examples/minimal.c" $(pkg-config --cflags --libs vkattn) \
   -o "$work/minimal_pc"
cc -std=c11 -Wall -Werror "$source/examples/host_app.c" $(pkg-config --cflags --libs vkattn) \
   -lvulkan -lm -o "$work/host_app_pc"
lib_dir=$(pkg-config --variable=libdir vkattn)
LD_LIBRARY_PATH=$lib_dir run "$work/minimal_pc"
LD_LIBRARY_PATH=$lib_dir run "$work/host_app_pc"
echo "install test: ok"
