# Cross build for ARM64 Linux with clang (--target=aarch64-linux-gnu) on the same Debian cross
# sysroot as cmake/aarch64.cmake: clang finds the headers, crt files and linker that
# gcc-aarch64-linux-gnu installs under /usr/aarch64-linux-gnu and /usr/lib/gcc-cross. Test programs
# run under qemu-aarch64 as there (see that file for why LD_LIBRARY_PATH is set).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER clang)
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu
    -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib)
