"""ownsplit: loads its libraries from ``ownsplit/lib/``: the registry and the runtime
``RTLD_GLOBAL``, then the compiler beside them."""

import ctypes
import os

_LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")
_ffi = ctypes.CDLL(os.path.join(_LIB, "libownsplit_ffi.so"), mode=ctypes.RTLD_GLOBAL)
_runtime = ctypes.CDLL(os.path.join(_LIB, "libownsplit_runtime.so"), mode=ctypes.RTLD_GLOBAL)
_compiler = ctypes.CDLL(os.path.join(_LIB, "libownsplit_compiler.so"))
_ffi.ownsplit_call.restype = ctypes.c_int
_ffi.ownsplit_call.argtypes = [ctypes.c_char_p]


def call(name: str) -> int:
    """Call a registered function; -1 when nothing registered ``name``."""
    return int(_ffi.ownsplit_call(name.encode()))
