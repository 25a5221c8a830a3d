"""What a binary holds, whatever its format: ``BinaryFacts``; ``elf/`` is the one place that knows
ELF."""

from __future__ import annotations

from buildtool.linkage.binaries.facts import (
    CRT_FUNCTIONS,
    DECODERS,
    LINKER_GENERATED,
    MIN_SHAPE_INSTRUCTIONS,
    NO_NAMES,
    STATIC_INIT_PREFIX,
    TOOLCHAIN_FUNCTIONS,
    BinaryFacts,
    Decoder,
    InitializerReach,
    NameDigests,
    defines_module_init,
    is_toolchain_function,
    name_digest,
    named_as_extension_module,
)

__all__ = [
    "CRT_FUNCTIONS",
    "DECODERS",
    "LINKER_GENERATED",
    "MIN_SHAPE_INSTRUCTIONS",
    "NO_NAMES",
    "STATIC_INIT_PREFIX",
    "TOOLCHAIN_FUNCTIONS",
    "BinaryFacts",
    "Decoder",
    "InitializerReach",
    "NameDigests",
    "defines_module_init",
    "is_toolchain_function",
    "name_digest",
    "named_as_extension_module",
]
