#!/usr/bin/env bash
# Cross-builds edgelm for ARM64 twice and runs the kernel tests, the greedy golden tests and the
# per-ISA tests under qemu-aarch64, exercising the NEON kernels, plus the JNI bridge check:
#  - BUILD_DIR: gcc (aarch64-linux-gnu-gcc, cmake/aarch64.cmake), the full library; the kernel
#    tests also on an emulated Cortex-A76, the NEON table without FEAT_BF16;
#  - BUILD_DIR-clang: clang --target=aarch64-linux-gnu on the same sysroot
#    (cmake/aarch64-clang.cmake) with -DEDGELM_MINIMAL=ON, the library an app links, which also
#    runs the example chat program on it (minimal_example). Installs the cross tools and the arm64
# libraries with apt-get when missing (as root); otherwise, or when that fails, prints one line
# saying the ARM64 tests were skipped and exits 0 (so `make test` works without them).
# usage: scripts/test_arm64.sh BUILD_DIR SHARED_DIR
set -u
build=${1:-build-arm64} shared=${2:-../shared}
libs=(libcjson-dev:arm64 libpcre2-dev:arm64 liblapacke-dev:arm64 libopenblas-dev:arm64 libmicrohttpd-dev:arm64
      libprotobuf-c-dev:arm64 libsqlite3-dev:arm64)
# the reason is also left in BUILD_DIR/skipped.txt for the list `make test` prints at the end
skip() {
  echo "edgelm: skipping the ARM64 tests: $*" >&2
  mkdir -p "$build" && echo "ARM64 tests under qemu: $*" >"$build/skipped.txt"
  exit 0
}
rm -f "$build/skipped.txt" "$build/ctest.log"

have_tools() {
  command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1 &&
    command -v clang >/dev/null 2>&1 &&
    [ -f /usr/lib/aarch64-linux-gnu/libcjson.so ] && [ -f /usr/lib/aarch64-linux-gnu/libpcre2-8.so ] &&
    [ -f /usr/lib/aarch64-linux-gnu/liblapacke.so ] && [ -f /usr/lib/aarch64-linux-gnu/libopenblas.so ] &&
    [ -f /usr/lib/aarch64-linux-gnu/libmicrohttpd.so ] &&
    [ -f /usr/lib/aarch64-linux-gnu/libprotobuf-c.so ] && [ -f /usr/lib/aarch64-linux-gnu/libsqlite3.so ]
}

if ! have_tools; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 ||
    skip "needs gcc-aarch64-linux-gnu, qemu-user, clang and ${libs[*]} (run as root to install them)"
  echo "edgelm: installing the ARM64 cross tools with apt-get" >&2
  { dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64; } &&
    apt-get update -qq >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      gcc-aarch64-linux-gnu qemu-user clang "${libs[@]}" >/dev/null ||
    skip "apt-get could not install the cross tools"
  have_tools || skip "the cross tools are still missing after apt-get"
fi

set -e
jobs=$(nproc 2>/dev/null || echo 2)
tests='test_kernels test_kquant_kernels test_iquant_kernels test_generate test_isa'
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64.cmake" -DCMAKE_BUILD_TYPE=Release \
  -DEDGELM_SHARED="$shared" >/dev/null
cmake --build "$build" -j "$jobs" --target $tests edgelm_jni -- --no-print-directory >/dev/null
cmake -S . -B "$build-clang" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-clang.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DEDGELM_MINIMAL=ON -DEDGELM_SHARED="$shared" >/dev/null
cmake --build "$build-clang" -j "$jobs" -- --no-print-directory >/dev/null
# qemu-user once left a two-thread test asleep in a futex wait with both threads blocked (a run
# that passes in 2 s, never seen natively; on 2026-12-07 the clang build's test_isa_neon twice in
# one run, while 26 runs by hand passed in 1-2 s): a test gets 120 s and two more tries.
retry=(--timeout 120 --repeat until-pass:3)
echo "edgelm: ARM64, gcc" >&2
(cd "$build" && ctest --output-on-failure -O ctest.log -j "$jobs" "${retry[@]}" \
  -R '^(test_kernels|test_kquant_kernels|test_iquant_kernels|test_generate|test_isa|test_isa_neon|jni_bridge)$')
# qemu's default CPU (max) has FEAT_BF16, so the NEON table there takes BF16 by BFDOT; a Cortex-A76
# (dot product, no BF16) runs the table's float path for it
echo "edgelm: ARM64, gcc, QEMU_CPU=cortex-a76 (NEON without BF16)" >&2
(cd "$build" && QEMU_CPU=cortex-a76 ctest --output-on-failure -O ctest-a76.log -j "$jobs" "${retry[@]}" \
  -R '^(test_kernels|test_isa_neon)$')
echo "edgelm: ARM64, clang, -DEDGELM_MINIMAL=ON" >&2
(cd "$build-clang" && ctest --output-on-failure -O ctest.log -j "$jobs" "${retry[@]}")
