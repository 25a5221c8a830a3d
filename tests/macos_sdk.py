"""A stand-in macOS SDK, so that clang and lld's Mach-O linker (``ld64.lld``) link real arm64
and x86_64 dylibs and executables here, from Debian's packages only: ground truth for what the
generated CMake gives a Mach-O linker. The binaries are never run (there is no dyld here); they
are what ld64 writes: ``@rpath/`` install names, ``LC_RPATH``, two-level binds to libSystem and
libc++.

The SDK is C headers, text stubs and a settings file:
- ``usr/include``: the aarch64 glibc headers (Debian's cross libc), with the few Darwin spellings
  libc++'s ``__APPLE__`` branch and C code compile to (``<xlocale.h>``, ``errno`` as
  ``__error()``, ``stdout`` as ``__stdoutp``);
- ``usr/lib/libSystem.tbd`` and ``libc++.tbd``: TAPI text stubs (what Apple's SDKs ship instead
  of dylibs) whose exports are those of glibc, libunwind, libc++ and libc++abi, read from their
  ELF files with pyelftools, each name with Mach-O's leading underscore;
- ``SDKSettings.json``: the SDK version clang writes into ``LC_BUILD_VERSION``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from tests.conftest import require

CROSS_LIBC = Path("/usr/aarch64-linux-gnu")
LLVM_LIB = Path("/usr/lib/llvm-14/lib")
TOOLS = ("clang", "clang++", "ld64.lld-14", "llvm-install-name-tool-14", "llvm-ar-14")
SYSTEM_LIBRARIES = (
    CROSS_LIBC / "lib" / "libc.so.6",
    CROSS_LIBC / "lib" / "libm.so.6",
    LLVM_LIB / "libunwind.so.1",
)
CXX_LIBRARIES = (LLVM_LIB / "libc++.so.1", LLVM_LIB / "libc++abi.so.1")
DARWIN_ONLY = (
    "dyld_stub_binder", "___stack_chk_guard", "___stack_chk_fail", "___error", "___stdinp",
    "___stdoutp", "___stderrp", "__tlv_bootstrap", "__tlv_atexit", "___mb_cur_max_l",
    "_btowc_l", "_wctob_l", "_wcsnrtombs_l", "_wcrtomb_l", "_mbsnrtowcs_l", "_mbrtowc_l",
    "_mbtowc_l", "_mbrlen_l", "_localeconv_l", "_mbsrtowcs_l", "_snprintf_l", "_asprintf_l",
    "_sscanf_l",
)  # fmt: skip
"""libSystem's names that glibc lacks and the compiled code refers to."""

XLOCALE = """#pragma once
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>
#ifdef __cplusplus
extern "C" {
#endif
int ___mb_cur_max_l(locale_t);
#define MB_CUR_MAX_L(l) ___mb_cur_max_l(l)
wint_t btowc_l(int, locale_t);
int wctob_l(wint_t, locale_t);
size_t wcsnrtombs_l(char *, const wchar_t **, size_t, size_t, mbstate_t *, locale_t);
size_t wcrtomb_l(char *, wchar_t, mbstate_t *, locale_t);
size_t mbsnrtowcs_l(wchar_t *, const char **, size_t, size_t, mbstate_t *, locale_t);
size_t mbrtowc_l(wchar_t *, const char *, size_t, mbstate_t *, locale_t);
int mbtowc_l(wchar_t *, const char *, size_t, locale_t);
size_t mbrlen_l(const char *, size_t, mbstate_t *, locale_t);
struct lconv *localeconv_l(locale_t);
size_t mbsrtowcs_l(wchar_t *, const char **, size_t, mbstate_t *, locale_t);
int snprintf_l(char *, size_t, locale_t, const char *, ...);
int asprintf_l(char **, locale_t, const char *, ...);
int sscanf_l(const char *, locale_t, const char *, ...);
#ifdef __cplusplus
}
#endif
"""
ERRNO = """#include "{headers}/errno.h"
#undef errno
__BEGIN_DECLS extern int *__error(void); __END_DECLS
#define errno (*__error())
"""
STDIO = """#include "{headers}/stdio.h"
#if defined(stdout) && !defined(__stdoutp)
__BEGIN_DECLS extern FILE *__stdinp, *__stdoutp, *__stderrp; __END_DECLS
#undef stdin
#undef stdout
#undef stderr
#define stdin __stdinp
#define stdout __stdoutp
#define stderr __stderrp
#endif
"""
TOOLCHAIN = """# A macOS arm64 cross toolchain over the stand-in SDK (tests/macos_sdk.py).
set(CMAKE_SYSTEM_NAME Darwin)
set(CMAKE_SYSTEM_PROCESSOR arm64)
set(CMAKE_OSX_ARCHITECTURES arm64 CACHE STRING "")
set(CMAKE_OSX_DEPLOYMENT_TARGET 11.0 CACHE STRING "")
set(CMAKE_OSX_SYSROOT "{sdk}" CACHE PATH "")
set(CMAKE_C_COMPILER clang)
set(CMAKE_CXX_COMPILER clang++)
set(CMAKE_C_COMPILER_TARGET arm64-apple-macos11)
set(CMAKE_CXX_COMPILER_TARGET arm64-apple-macos11)
# glibc's headers under a Darwin target: clang predefines __nonnull for Apple, sets _GNU_SOURCE
# for Linux targets only; libc++'s Apple branch must not use glibc's ctype macros.
set(CMAKE_C_FLAGS_INIT "-U__nonnull -U__nullable -D_GNU_SOURCE -D__NO_CTYPE")
set(CMAKE_CXX_FLAGS_INIT "-U__nonnull -U__nullable -D_GNU_SOURCE -D__NO_CTYPE -stdlib=libc++")
# -fuse-ld=lld from CMake itself, so that a project's own CMAKE_*_LINKER_FLAGS keep it.
set(CMAKE_LINKER_TYPE LLD)
set(CMAKE_AR llvm-ar-14)
set(CMAKE_RANLIB llvm-ranlib-14)
set(CMAKE_INSTALL_NAME_TOOL llvm-install-name-tool-14)
set(CMAKE_STRIP llvm-strip-14)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
"""


def require_macos_cross() -> None:
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    missing += [str(p) for p in (*SYSTEM_LIBRARIES, *CXX_LIBRARIES) if not p.exists()]
    require(not missing, f"no macOS cross toolchain here ({', '.join(missing)}; Debian: clang, "
            "lld, llvm, libc++-14-dev, libc++abi-14-dev, g++-aarch64-linux-gnu)")  # fmt: skip


def _exports(libraries: Iterable[Path]) -> set[str]:
    """Defined dynamic symbols of ELF libraries, named as Mach-O names them."""
    names: set[str] = set()
    for library in libraries:
        with library.open("rb") as stream:
            table = ELFFile(stream).get_section_by_name(".dynsym")
            assert isinstance(table, SymbolTableSection), library
            for symbol in table.iter_symbols():
                defined = symbol["st_shndx"] != "SHN_UNDEF"
                # pyelftools names STT_GNU_IFUNC (glibc's memcpy, strlen) STT_LOOS
                kind = symbol["st_info"]["type"] in ("STT_FUNC", "STT_OBJECT", "STT_TLS",
                                                     "STT_GNU_IFUNC", "STT_LOOS")  # fmt: skip
                if defined and kind and symbol.name:
                    names.add("_" + symbol.name)
    return names


def _stub(path: Path, install_name: str, version: str, symbols: Iterable[str]) -> None:
    listed = ", ".join(f"'{name}'" for name in sorted(symbols))
    targets = "[ arm64-macos, x86_64-macos ]"
    path.write_text(
        f"--- !tapi-tbd\ntbd-version: 4\ntargets: {targets}\n"
        f"install-name: '{install_name}'\ncurrent-version: {version}\n"
        f"exports:\n  - targets: {targets}\n    symbols: [ {listed} ]\n...\n"
    )


def write_sdk(sdk: Path) -> Path:
    """The stand-in SDK in ``sdk``, and a CMake toolchain file over it (returned)."""
    require_macos_cross()
    include, lib = sdk / "usr" / "include", sdk / "usr" / "lib"
    include.mkdir(parents=True)
    lib.mkdir()
    headers = CROSS_LIBC / "include"
    for entry in headers.iterdir():
        if entry.name not in ("errno.h", "stdio.h"):
            (include / entry.name).symlink_to(entry)
    (include / "xlocale.h").write_text(XLOCALE)
    (include / "errno.h").write_text(ERRNO.format(headers=headers))
    (include / "stdio.h").write_text(STDIO.format(headers=headers))
    settings = {"Version": "11.0", "MaximumDeploymentTarget": "11.99",
                "CanonicalName": "macosx11.0"}  # fmt: skip
    (sdk / "SDKSettings.json").write_text(json.dumps(settings))
    system = _exports(SYSTEM_LIBRARIES) | set(DARWIN_ONLY)
    _stub(lib / "libSystem.tbd", "/usr/lib/libSystem.B.dylib", "1311", system)
    _stub(lib / "libc++.tbd", "/usr/lib/libc++.1.dylib", "1200", _exports(CXX_LIBRARIES) - system)
    toolchain = sdk / "macos-arm64.cmake"
    toolchain.write_text(TOOLCHAIN.format(sdk=sdk))
    return toolchain


def clang_macos(sdk: Path, arch: str, out: Path, source: str, *flags: str) -> Path:
    """One C source compiled and linked for macOS ``arch`` (arm64, x86_64) over the SDK."""
    src = out.with_suffix(".c")
    src.write_text(source)
    command = ["clang", f"--target={arch}-apple-macos11", "-isysroot", str(sdk),
               "-fuse-ld=lld", "-o", str(out), str(src), *flags]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True)
    return out
