# Cross-compiling for Linux aarch64 with GNU's cross compiler (Debian: g++-aarch64-linux-gnu), e.g.
#   buildtool build --build-dir build-aarch64 --toolchain aarch64-linux-gnu
# The layout is the native one (<build>/lib, <build>/bin, RUNPATH $ORIGIN). With qemu's user
# mode installed (Debian: qemu-user-static), CMake runs the executables it cross-built (ctest,
# try_run) under qemu, against the cross C library's folder.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(BT_CROSS_TRIPLE aarch64-linux-gnu)
find_program(CMAKE_C_COMPILER NAMES ${BT_CROSS_TRIPLE}-gcc REQUIRED)
find_program(CMAKE_CXX_COMPILER NAMES ${BT_CROSS_TRIPLE}-g++ REQUIRED)
set(CMAKE_FIND_ROOT_PATH /usr/${BT_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
find_program(BT_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(BT_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${BT_QEMU_AARCH64};-L;/usr/${BT_CROSS_TRIPLE}")
endif()
