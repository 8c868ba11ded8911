#!/usr/bin/env bash
# Installs the Debian 12 packages vkattn needs to build and test, when missing.
# Runs apt-get only if something is missing, so a prepared machine pays nothing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libvulkan-dev libvulkan-volk-dev      # Vulkan headers, volk loader source
  glslang-tools spirv-tools             # shader compiler, SPIR-V validator
  libcmocka-dev                         # unit tests
  mesa-vulkan-drivers                   # lavapipe: the CPU Vulkan device CI runs on
  vulkan-validationlayers vulkan-tools  # Khronos validation in tests, vulkaninfo
  python3-numpy                         # tests/cli_vs_numpy.py: the CLI against float64
  libjemalloc2                          # tests: lavapipe's LLVM a third faster (tests/CMakeLists.txt)
)
[ "${VKATTN_WITH_PLOT:-0}" = 1 ] && packages+=(gnuplot-nox)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
