"""ELF facts for ``verify-linkage``: a struct/memoryview decoder plus a pyelftools reference.

Supported: ELF classes 32 and 64, little and big endian, any machine (common ones are named:
x86_64, i386, aarch64, arm, ppc, ppc64, s390/s390x, riscv, mips, loongarch; others read as
``unknown(<e_machine>)``). Dynamic facts come from ``PT_DYNAMIC`` and the program headers, as ld.so
reads them; symbol tables from the section headers, falling back to ``DT_SYMTAB`` with the hash
tables when a file has no section headers.

Symbol keys
-----------
Dynamic symbols are kept as strings, one per (name, version), never one object per symbol:

* ``name``            unversioned: the file has no ``.gnu.version``, or the version index is
                      0 (local) or 1 (global/base)
* ``name@@VERSION``   the default definition of ``VERSION`` (``.gnu.version_d``, hidden bit clear)
* ``name@VERSION``    a hidden (non-default) definition, any reference (undefined symbol), or a
                      copy-relocated definition whose index points into ``.gnu.version_r``

A key splits at its first ``@`` (symbol names from compilers never contain one). ld.so's rules in
these terms (``resolve.is_satisfied`` implements them): an undefined ``name@V`` is satisfied by a
definition ``name@V``, ``name@@V`` or an unversioned ``name``; an undefined ``name`` by ``name`` or
a ``name@@V``. Several versions of one name stay apart (``memcpy@GLIBC_2.2.5`` beside
``memcpy@@GLIBC_2.14``). The absolute symbols the linker emits for each version node
(``LIBX_1.0@@LIBX_1.0``, value 0) are left out of ``defined``: ld.so never binds to them.

Strings decode as UTF-8 with replacement, so no name can make decoding fail.

Speed: symbol tables are read a column at a time (strided views of the table, 0/1 masks made
with ``bytes.translate``, ``itertools.compress``), never one Python object per row; the names of
``.symtab``'s functions are kept as ``NameDigests``; a big ``.symtab`` can be read in parts by
several processes (``read_symtab_part``, ``with_symtab``); and the pages of a mapped file are
dropped from the process once decoded, so a 434 MB library costs tens of MB of memory.

Modules
-------
``facts`` (the ELF magic, the decoders' names, ``MalformedElf``; the facts themselves are
``binaries.BinaryFacts``), ``constants`` (elf.h), ``decoder`` (headers,
sections, segments, PT_DYNAMIC, versions), ``columns`` (symbol table columns and masks), ``dynsym``
(dynamic symbols), ``symtab`` (``.symtab``, also in parts), ``fast`` (the facts from the decoder),
``initializers`` (what the initializers reach: the code walked with capstone), ``sparse``
(reads that leave the code out) and ``reference`` with ``reference_initializers`` (the same
facts by pyelftools). Import
the names below from the package: the modules are how it is laid out, not its interface.
"""

from __future__ import annotations

from buildtool.linkage.binaries.elf.facts import (
    ELF_MAGIC,
    ElfBuffer,
    MalformedElf,
    file_type_name,
    machine_name,
)
from buildtool.linkage.binaries.elf.fast import (
    is_elf,
    read_elf_facts,
    read_elf_file,
    read_elf_initializers,
)
from buildtool.linkage.binaries.elf.initializers import walks_module_init
from buildtool.linkage.binaries.elf.reference import read_elf_facts_pyelftools
from buildtool.linkage.binaries.elf.sparse import (
    Ranges,
    code_ranges,
    cut_ranges,
    left_out_unused,
    sparse_initializers,
)
from buildtool.linkage.binaries.elf.symtab import (
    SymtabPart,
    read_function_names,
    read_symtab_part,
    with_symtab,
)

__all__ = [
    "ELF_MAGIC",
    "ElfBuffer",
    "MalformedElf",
    "Ranges",
    "SymtabPart",
    "code_ranges",
    "cut_ranges",
    "file_type_name",
    "is_elf",
    "left_out_unused",
    "machine_name",
    "read_elf_facts",
    "read_elf_facts_pyelftools",
    "read_elf_file",
    "read_elf_initializers",
    "read_function_names",
    "read_symtab_part",
    "sparse_initializers",
    "walks_module_init",
    "with_symtab",
]
