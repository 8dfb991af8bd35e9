# Cross build for ARM64 Linux with Debian's gcc-aarch64-linux-gnu; libraries come from Debian's
# multiarch packages (libcjson-dev:arm64, ...) under /usr/lib/aarch64-linux-gnu. Programs run
# under qemu-aarch64 (ctest uses the emulator for the test programs).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
