# Cross-compiling the C core for 64-bit ARM Linux with Debian's gcc-aarch64-linux-gnu and
# arm64 zlib (multiarch: zlib1g-dev:arm64); programs run under qemu-aarch64 (qemu-user),
# which ctest calls through CMAKE_CROSSCOMPILING_EMULATOR. Used by tests/test_c_aarch64.py;
# scripts/setup_cross.sh installs the three packages.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(ZLIB_LIBRARY /usr/lib/aarch64-linux-gnu/libz.so)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
