# Cross build for ARM64 Linux with Debian's gcc-aarch64-linux-gnu; libraries come from Debian's
# multiarch packages (libcjson-dev:arm64, ...) under /usr/lib/aarch64-linux-gnu. Test programs run
# under qemu-aarch64. The loader and libc must come from one glibc build: qemu's -L prefix gives
# the cross toolchain's loader, and a multiarch install also brings a libc6:arm64 of another
# version in /lib/aarch64-linux-gnu that the loader would otherwise pick (their private
# structures differ, and the first pthread_create loops forever), hence LD_LIBRARY_PATH.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu
    -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib)
