#!/usr/bin/env bash
# Cross-builds edgelm for ARM64 into BUILD_DIR and runs the kernel tests and the greedy golden
# tests under qemu-aarch64, exercising the NEON kernels. Installs the cross tools and the arm64
# libraries with apt-get when missing (as root); otherwise, or when that fails, prints one line
# saying the ARM64 tests were skipped and exits 0 (so `make test` works without them).
# usage: scripts/test_arm64.sh BUILD_DIR SHARED_DIR
set -u
build=${1:-build-arm64} shared=${2:-../shared}
libs=(libcjson-dev:arm64 libpcre2-dev:arm64 liblapacke-dev:arm64 libopenblas-dev:arm64)
skip() { echo "edgelm: skipping the ARM64 tests: $*" >&2; exit 0; }

have_tools() {
  command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1 &&
    [ -f /usr/lib/aarch64-linux-gnu/libcjson.so ] && [ -f /usr/lib/aarch64-linux-gnu/libpcre2-8.so ] &&
    [ -f /usr/lib/aarch64-linux-gnu/liblapacke.so ] && [ -f /usr/lib/aarch64-linux-gnu/libopenblas.so ]
}

if ! have_tools; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 ||
    skip "needs gcc-aarch64-linux-gnu, qemu-user and ${libs[*]} (run as root to install them)"
  echo "edgelm: installing the ARM64 cross tools with apt-get" >&2
  { dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64; } &&
    apt-get update -qq >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      gcc-aarch64-linux-gnu qemu-user "${libs[@]}" >/dev/null ||
    skip "apt-get could not install the cross tools"
  have_tools || skip "the cross tools are still missing after apt-get"
fi

set -e
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64.cmake" -DCMAKE_BUILD_TYPE=Release \
  -DEDGELM_SHARED="$shared" >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target test_kernels test_kquant_kernels test_generate test_isa \
  -- --no-print-directory >/dev/null
cd "$build"
ctest --output-on-failure -R '^(test_kernels|test_kquant_kernels|test_generate|test_isa)$'
