# Cross-compiling for Windows x64 with mingw-w64 (Debian: g++-mingw-w64-x86-64), e.g.
#   buildtool build --build-dir build-win64 --toolchain mingw-w64-x86_64
# The project's DLLs and executables land in <build>/bin, import libraries in <build>/lib.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR AMD64)
set(BT_MINGW_TRIPLE x86_64-w64-mingw32)
# The posix thread model first: with GCC before 13, the win32 one has no std::mutex.
find_program(CMAKE_C_COMPILER NAMES ${BT_MINGW_TRIPLE}-gcc-posix ${BT_MINGW_TRIPLE}-gcc REQUIRED)
find_program(CMAKE_CXX_COMPILER NAMES ${BT_MINGW_TRIPLE}-g++-posix ${BT_MINGW_TRIPLE}-g++ REQUIRED)
find_program(CMAKE_RC_COMPILER NAMES ${BT_MINGW_TRIPLE}-windres)
set(CMAKE_FIND_ROOT_PATH /usr/${BT_MINGW_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The compiler's own runtime (libstdc++, libgcc, winpthread) linked statically into every
# binary: they then import only system DLLs (KERNEL32, msvcrt) and the project's own, and run
# from their folder without the compiler's DLLs on PATH. Each DLL gets its own copy of that
# code; it is the layout wheels need (nothing else to graft beside them).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-static")
