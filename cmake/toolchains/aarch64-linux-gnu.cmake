# Cross build for 64-bit ARM Linux (robots' onboard computers) with Debian's cross toolchain
# (g++-aarch64-linux-gnu) and multiarch arm64 libraries (libssl-dev:arm64), run under qemu-user.
# Used by the aarch64 preset; scripts/bootstrap.sh installs the packages.
set(CMAKE_SYSTEM_NAME      Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER   aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# ctest runs every test program (and gtest_discover_tests lists them) through the emulator;
# -L: the dynamic loader from the cross toolchain's sysroot; LD_LIBRARY_PATH: its libc too,
# ahead of the multiarch libc6:arm64 that libssl-dev:arm64 brings (another build of glibc,
# listed in the host's ld.so.cache: mixed with the sysroot's loader, pthread_create hangs)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib)

# pkg-config sees the arm64 .pc files only (never the host's x86-64 libraries)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
