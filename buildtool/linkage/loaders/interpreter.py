"""What the Python interpreter has loaded before it opens an extension module.

CPython's executable (or its ``libpython``) NEEDs libm and the C library on every Linux build
(python.org's, manylinux's, the distributions'; before glibc 2.34 also libpthread, libdl and
libutil). ld.so puts them in the global scope, so an extension module opened later binds its
undefined symbols against them too: a module using ``nextafter`` without NEEDing libm imports.
Distributions link more (Debian's python3 NEEDs libz and libexpat); those are not counted, a
wheel cannot rely on them.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.binaries.elf import walks_module_init
from buildtool.linkage.loaders.closure import Environment, resolve_closure
from buildtool.linkage.loaders.glibc import FactsLookup
from buildtool.linkage.loaders.loaded import Closure

INTERPRETER_NEEDED: Final = ("libm.so.6", "libpthread.so.0", "libdl.so.2", "libutil.so.1",
                             "libc.so.6")  # fmt: skip
"""The NEEDED entries CPython's executable has on glibc (the stubs of glibc 2.34+ included)."""

INTERPRETER_PATH: Final = "/(python interpreter)"
"""Where the stand-in interpreter lies: no file of any input or system is there."""


def is_extension_module(facts: BinaryFacts) -> bool:
    """A CPython extension module: an ELF shared object without SONAME (nothing links it, the
    interpreter opens it by path) that defines its ``PyInit_<name>`` entry point."""
    return facts.format == "elf" and walks_module_init(facts.file_type, facts.soname, facts.defined)


def interpreter_closure(module: BinaryFacts, read: FactsLookup, env: Environment) -> Closure:
    """The objects an interpreter of ``module``'s class and machine has loaded: a stand-in root
    that defines nothing and NEEDs ``INTERPRETER_NEEDED``, resolved as ld.so would in ``env``
    (what the system lacks is left out; a foreign platform's come from its policy)."""
    stand_in = dataclasses.replace(
        module,
        path=INTERPRETER_PATH,
        file_type="executable",
        soname=None,
        needed=INTERPRETER_NEEDED,
        rpath=None,
        runpath=None,
        defined=frozenset(),
        versioned_definitions=False,
        undefined=frozenset(),
        weak_undefined=frozenset(),
        version_needs=(),
        nodeflib=False,
    )
    return resolve_closure(INTERPRETER_PATH, stand_in, read, env)
