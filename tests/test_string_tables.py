"""A string table is decoded once per read, and only when a name is read from it: ``.dynstr``
is named by the dynamic section and linked from ``.dynsym`` and both version tables (a big
library's is tens of megabytes: tensorflow's libtensorflow_cc.so.2, 78 MB, was decoded five
times by the main process), and a sparse read's check needs only its extent."""

from __future__ import annotations

import collections
import io
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from buildtool.linkage.binaries.elf import left_out_unused, read_elf_facts
from buildtool.linkage.binaries.elf.decoder import _Image
from buildtool.linkage.binaries.elf.reference import read_elf_facts_pyelftools
from tests.conftest import require

LIBRARY = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
"""A library with a ``.dynstr`` that its dynamic section, ``.dynsym``, ``.gnu.version_d`` and
``.gnu.version_r`` all name."""


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[tuple[int, int]]:
    """The string tables decoded, by (offset, size): each time one is decoded."""
    counts: collections.Counter[tuple[int, int]] = collections.Counter()
    original = _Image.text

    def counting(image: _Image, offset: int, size: int) -> str:
        if (offset, size) not in image.texts:
            counts[offset, size] += 1
        return original(image, offset, size)

    monkeypatch.setattr(_Image, "text", counting)
    return counts


def _library() -> tuple[bytes, tuple[int, int]]:
    """The library's bytes, and its ``.dynstr``'s (offset, size)."""
    require(Path(LIBRARY).exists(), f"{LIBRARY} is not installed")
    data = Path(LIBRARY).read_bytes()
    dynstr = ELFFile(io.BytesIO(data)).get_section_by_name(".dynstr")
    assert dynstr is not None
    return data, (dynstr["sh_offset"], dynstr["sh_size"])


def test_dynstr_is_decoded_once_per_read(decoded: collections.Counter[tuple[int, int]]) -> None:
    data, dynstr = _library()
    facts = read_elf_facts(data, LIBRARY)
    assert facts is not None
    assert facts == read_elf_facts_pyelftools(io.BytesIO(data), LIBRARY)
    assert facts.versioned_definitions  # names and versions, from .dynstr
    assert facts.soname == "libstdc++.so.6"
    assert decoded[dynstr] == 1
    assert set(decoded.values()) == {1}
    read_elf_facts(data, LIBRARY)  # another read decodes its own
    assert decoded[dynstr] == 2


def test_a_sparse_reads_check_decodes_no_table(
    decoded: collections.Counter[tuple[int, int]],
) -> None:
    data, dynstr = _library()
    assert left_out_unused(data, len(data), (), ())
    assert dynstr not in decoded
    (start, end) = (dynstr[0] + 8, dynstr[0] + 16)  # a read that left out part of .dynstr
    assert not left_out_unused(data, len(data), ((start, end),), ())
    assert dynstr not in decoded
