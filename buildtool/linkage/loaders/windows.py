"""How the Windows loader finds a PE file's DLLs, as CPython loads an extension module
(``LoadLibraryExW`` with ``LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR``):

1. a DLL of that name already loaded (names compare case-insensitively);
2. the system's DLLs (``KERNEL32``, the ``api-ms-win-*`` API sets, what a fresh Windows has in
   its system folders for the module's machine, the universal CRT, the Visual C++ runtime, ...)
   and the interpreter's ``python3X.dll``: provided, never files of an input;
3. the folder of the module being loaded (the ``.pyd``, or an executable's own folder);
4. the folders the packages add with ``os.add_dll_directory`` (``inputs.dll_directories``
   reads them from the packages' Python files, as delvewheel writes them);
5. System32: the system's DLLs again (step 2).

``PATH`` is not searched for an extension module's dependencies since Python 3.8.
"""

from __future__ import annotations

import re
from typing import Final

from buildtool.linkage.loaders.windows_dlls import SYSTEM32

SYSTEM: Final = "system"
INTERPRETER: Final = "interpreter"

SYSTEM_DLLS: Final = frozenset(
    name.lower()
    for name in [
        "kernel32.dll",
        "kernelbase.dll",
        "ntdll.dll",
        "user32.dll",
        "gdi32.dll",
        "advapi32.dll",
        "shell32.dll",
        "ole32.dll",
        "oleaut32.dll",
        "ws2_32.dll",
        "wsock32.dll",
        "comctl32.dll",
        "comdlg32.dll",
        "crypt32.dll",
        "bcrypt.dll",
        "ncrypt.dll",
        "secur32.dll",
        "shlwapi.dll",
        "version.dll",
        "winmm.dll",
        "wintrust.dll",
        "imagehlp.dll",
        "dbghelp.dll",
        "psapi.dll",
        "iphlpapi.dll",
        "userenv.dll",
        "setupapi.dll",
        "cfgmgr32.dll",
        "rpcrt4.dll",
        "netapi32.dll",
        "mpr.dll",
        "dwmapi.dll",
        "uxtheme.dll",
        "opengl32.dll",
        "d3d11.dll",
        "d3d12.dll",
        "dxgi.dll",
        "dxcore.dll",
        "powrprof.dll",
        "normaliz.dll",
        "msvcrt.dll",
        "ucrtbase.dll",
        "winhttp.dll",
        "wininet.dll",
        "dnsapi.dll",
        "sspicli.dll",
        "wtsapi32.dll",
        "nvcuda.dll",
        "vcruntime140.dll",
        "vcruntime140_1.dll",
        "msvcp140.dll",
        "msvcp140_1.dll",
        "msvcp140_2.dll",
        "msvcp140_atomic_wait.dll",
        "msvcp140_codecvt_ids.dll",
        "concrt140.dll",
        "vcomp140.dll",
    ]
)
"""DLLs every supported Windows has, beside those of a fresh installation's system folders
(``windows_dlls``): the Visual C++ 2015-2022 runtime (CPython's installer installs it, and
python.org's python3X.dll needs it), the universal CRT, and the GPU driver's ``nvcuda.dll``."""
API_SETS: Final = re.compile(r"(api|ext)-ms-win-[a-z0-9-]+\.dll\Z", re.IGNORECASE)
INTERPRETER_DLL: Final = re.compile(r"python3[0-9]*(_d)?\.dll\Z", re.IGNORECASE)


SYSTEM32_OF: Final = {"arm64ec": "arm64"}
"""PE machines whose system DLLs are another machine's list: an ARM64EC module runs in an
ARM64 Windows process."""


def provided(name: str, machine: str = "x86_64") -> str | None:
    """``SYSTEM`` or ``INTERPRETER`` when Windows or the interpreter provides DLL ``name`` to a
    module built for ``machine`` (the PE reader's name: ``x86_64``, ``arm64``, ``i386``)."""
    lowered = name.lower()
    system32 = SYSTEM32.get(SYSTEM32_OF.get(machine, machine), frozenset())
    if lowered in SYSTEM_DLLS or lowered in system32 or API_SETS.match(lowered):
        return SYSTEM
    if INTERPRETER_DLL.match(lowered):
        return INTERPRETER
    return None
