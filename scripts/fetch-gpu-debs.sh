#!/usr/bin/env bash
# Downloads, into ./.gl (ignored by git), the Debian 12 amd64 packages that a GPU
# machine may lack to run the build there (see scripts/gpu-check.sh):
#   needed   libvulkan1 (the loader), libcmocka0 (the tests), vulkan-validationlayers
#            (the tests run with validation on), and GLVND's dispatch libraries
#            (libglvnd0, libglx0, libegl1, libgl1): without them NVIDIA's Vulkan
#            driver (libGLX_nvidia.so.0) loads but cannot create an instance
#            ("Could not get 'vkCreateInstance'"; seen on an H100 container,
#            driver 580, 2026-11-24); unpacked there unless installed
#   spares   the validation layer's own dependencies (libstdc++6, libgcc-s1) and what
#            NVIDIA's Vulkan driver library libGLX_nvidia.so.0 loads (libglvnd0,
#            libxext6, libx11-6 and theirs); unpacked there only for a library
#            that `ldd` reports missing
# It also writes .gl/SOURCE.txt (the commit and build this is for). Run it from
# a Debian 12 machine after building into build/ (bash scripts/run.sh build).
# Needs apt-get, not root: the package lists go to a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${VKATTN_BUILD_DIR:-build}

needed=(libvulkan1 libcmocka0 vulkan-validationlayers libglvnd0 libglx0 libegl1 libgl1)
spare_roots=(vulkan-validationlayers libglvnd0 libxext6 libx11-6)   # not the GL ones: their closure is Mesa and LLVM
never=(libc6 gcc-12-base)   # glibc comes with the machine; gcc-12-base holds only docs

for f in "$build/vkattn" "$build/vkattn-bench" "$build/tests/CTestTestfile.cmake"; do
  [ -e "$f" ] || { echo "fetch-gpu-debs: $f is missing: build first (bash scripts/run.sh build)" >&2; exit 1; }
done

lists=$(mktemp -d)
trap 'rm -rf "$lists"' EXIT
mkdir -p "$lists/partial" .gl
apt=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
# As root, apt would hand the downloads to its _apt user, who cannot write here.
[ "$(id -u)" -eq 0 ] && apt+=(-oAPT::Sandbox::User=root)
apt-get "${apt[@]}" update -qq

# The spares: everything those packages depend on, recursively, less the needed
# ones and what never goes.
mapfile -t closure < <(apt-cache "${apt[@]}" depends --recurse --no-recommends --no-suggests \
    --no-conflicts --no-breaks --no-replaces --no-enhances "${spare_roots[@]}" |
  grep -v '^ ' | grep -v '^<' | sort -u)
spares=()
for p in "${closure[@]}"; do
  skip=0
  for q in "${needed[@]}" "${never[@]}"; do [ "$p" = "$q" ] && skip=1; done
  [ $skip = 0 ] && spares+=("$p")
done

rm -f .gl/*.deb
(cd .gl && apt-get "${apt[@]}" download "${needed[@]}" "${spares[@]}" >/dev/null)
printf '%s\n' "${needed[@]}" > .gl/NEEDED

{
  echo "vkattn runtime packages for $build/, fetched $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "build type: $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)"
  echo "built on: $(. /etc/os-release && echo "$PRETTY_NAME"), $(cc --version 2>/dev/null | head -1)"
  echo "needed: ${needed[*]}"
  echo "spares: ${spares[*]}"
} > .gl/SOURCE.txt
ls -1 .gl
echo "fetch-gpu-debs: copy .gl/ and $build/ beside this checkout on the GPU machine," \
     "then run there: bash scripts/gpu-check.sh" >&2
