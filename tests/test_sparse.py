"""A big wheel member is read without its code: the facts must be those of a whole read, and a
file whose facts could come from what was left out is read again whole."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

from buildtool.linkage.binaries import BinaryFacts
from buildtool.linkage.binaries.elf import (
    Ranges,
    code_ranges,
    cut_ranges,
    left_out_unused,
    read_elf_facts,
    sparse_initializers,
)
from buildtool.linkage.inputs import decoding
from buildtool.linkage.inputs.collect import read_wheel
from buildtool.linkage.inputs.lookups import InitializerLookup
from tests.conftest import require
from tests.test_hostile_wheels import Member, write_wheel
from tests.test_verify import system_libraries

REGISTRATIONS = ("demo.gemm_fp16_int", "rpc.testing.GetShapeElem")
LIBRARY_SOURCE = """
static const char *names[] = {"demo.gemm_fp16_int", "rpc.testing.GetShapeElem"};
const char *name(int i) { return names[i & 1]; }
int work(int x) { int s = 0; for (int i = 0; i < x; ++i) s += i * x; return s; }
"""


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One library with its code in a segment of its own, one with code and tables together;
    without startup files, so without initializers (whose code a sparse read must keep)."""
    require(shutil.which("gcc") is not None, "needs gcc")
    folder = tmp_path_factory.mktemp("layouts")
    (folder / "x.c").write_text(LIBRARY_SOURCE, encoding="utf-8")
    built = {}
    for layout in ("separate-code", "noseparate-code"):
        output = folder / f"lib{layout}.so"
        command = ["gcc", "-shared", "-fPIC", "-O1", "-nostartfiles", "x.c", "-o", str(output)]
        command.append(f"-Wl,-z,{layout}")
        subprocess.run(command, cwd=folder, check=True, capture_output=True)
        built[layout] = output
    return built


def _left_out_filled(data: bytes, left_out: Ranges) -> bytes:
    """``data`` with the left-out bytes made garbage: no fact may depend on them."""
    sparse = bytearray(data)
    for start, end in left_out:
        sparse[start:end] = b"\xa5" * (end - start)
    return bytes(sparse)


def _binaries(good_build: Path, layouts: dict[str, Path]) -> list[Path]:
    built = sorted(p for folder in ("lib", "bin") for p in (good_build / folder).iterdir())
    return [*built, *layouts.values(), *system_libraries()]


@pytest.mark.integration
@pytest.mark.parametrize("names", [(), REGISTRATIONS])
def test_facts_without_the_code_are_the_facts_of_the_whole_file(
    good_build: Path, layouts: dict[str, Path], names: tuple[str, ...]
) -> None:
    left_out_somewhere = False
    for path in _binaries(good_build, layouts):
        data = path.read_bytes()
        left_out = code_ranges(data[: 1 << 20], len(data), 0)
        sparse = _left_out_filled(data, left_out)
        if left_out_unused(sparse, len(data), left_out, names):
            left_out_somewhere |= bool(left_out)
            whole = read_elf_facts(data, path.name, names)
            read = read_elf_facts(sparse, path.name, names)
            assert whole is not None
            assert read is not None
            found = sparse_initializers(sparse, len(data), left_out)
            if found is None:  # the pool marks them unread
                read = dataclasses.replace(read, initializers=None)
                whole = dataclasses.replace(whole, initializers=None)
            else:  # what the walk reads was kept: the sparse read's are the whole read's
                assert found == whole.initializers, path
            assert read == whole, path
    assert left_out_somewhere


@pytest.mark.integration
def test_what_is_left_out_depends_on_the_layout(layouts: dict[str, Path]) -> None:
    for layout, path in layouts.items():
        data = path.read_bytes()
        left_out = code_ranges(data[:4096], len(data), 0)
        assert left_out, layout  # both have an executable segment
        unused = left_out_unused(_left_out_filled(data, left_out), len(data), left_out, ())
        # .dynsym and .dynstr share the executable segment unless code has one of its own
        assert unused == (layout == "separate-code"), layout


def test_headers_not_in_the_first_bytes_leave_nothing_out() -> None:
    assert code_ranges(b"\x7fELF", 1 << 30, 0) == ()
    assert code_ranges(b"not an ELF file at all, but long enough" * 10, 1 << 30, 0) == ()


def test_cut_ranges() -> None:
    assert cut_ranges([(0, 100)], [(10, 20), (50, 60)]) == ((0, 10), (20, 50), (60, 100))
    assert cut_ranges([(0, 10), (20, 30)], [(5, 25)]) == ((0, 5), (25, 30))
    assert cut_ranges([(0, 10)], [(0, 10)]) == ()


def _without_paths(facts: object) -> object:
    return dataclasses.replace(facts, path="") if isinstance(facts, BinaryFacts) else facts


@pytest.mark.integration
def test_wheel_members_read_without_their_code(
    good_build: Path, layouts: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every member goes the sparse way; the noseparate-code one must be read again whole."""
    paths = _binaries(good_build, layouts)
    members: list[Member] = [(f"demo/lib/{p.name}", p.read_bytes()) for p in paths]
    wheel = write_wheel(tmp_path / "sparse-0.1.0-py3-none-any.whl", members)
    whole = [_without_paths(b.facts) for b in read_wheel(wheel, REGISTRATIONS, jobs=1).files]

    monkeypatch.setattr(decoding, "SPARSE_MIN_BYTES", 0)
    monkeypatch.setattr(decoding, "KEEP_FRONT_BYTES", 0)
    inflations: list[bool] = []
    inflate = decoding.SourceDecoder._inflate

    def counted(
        self: decoding.SourceDecoder,
        source: decoding.Source,
        member: object,
        sparse: bool,
        into: object = None,
    ) -> object:
        inflations.append(sparse)
        return inflate(self, source, member, sparse, into)  # type: ignore[arg-type]

    monkeypatch.setattr(decoding.SourceDecoder, "_inflate", counted)
    files = read_wheel(wheel, REGISTRATIONS, jobs=1).files
    sparse = [_without_paths(b.facts) for b in files]
    unread = [
        i for i, b in enumerate(files) if b.facts is not None and b.facts.initializers is None
    ]
    assert unread  # the example's libraries have initializers in their code
    lookup = InitializerLookup()
    for index in unread:
        source, facts = files[index].source, whole[index]
        assert source is not None
        assert isinstance(facts, BinaryFacts)
        assert lookup(source) == facts.initializers
        whole[index] = dataclasses.replace(facts, initializers=None)
    lookup.close()
    assert sparse == whole
    assert inflations.count(False) >= 1  # at least the noseparate-code library, read again
    assert inflations.count(True) == len(members)


@pytest.mark.integration
def test_dynamic_strings_found_in_the_code_are_no_left_out_bytes(
    layouts: dict[str, Path],
) -> None:
    """A hostile DT_STRTAB pointing into the code: the strings are read from there, so the
    code cannot be left out."""
    import struct

    from elftools.elf.elffile import ELFFile

    data = bytearray(layouts["separate-code"].read_bytes())
    with layouts["separate-code"].open("rb") as stream:
        elf = ELFFile(stream)
        text = elf.get_section_by_name(".text")
        dynamic = elf.get_section_by_name(".dynamic")
        assert text is not None
        assert dynamic is not None
        text_address, dynamic_offset, dynamic_size = (
            text["sh_addr"], dynamic["sh_offset"], dynamic["sh_size"]
        )  # fmt: skip
    for at in range(dynamic_offset, dynamic_offset + dynamic_size, 16):
        tag, _value = struct.unpack_from("<qQ", data, at)
        if tag == 5:  # DT_STRTAB
            struct.pack_into("<qQ", data, at, tag, text_address)
    left_out = code_ranges(bytes(data[:4096]), len(data), 0)
    assert left_out_unused(bytes(layouts["separate-code"].read_bytes()), len(data), left_out, ())
    assert not left_out_unused(bytes(data), len(data), left_out, ())


@pytest.mark.integration
def test_an_initializers_code_left_out_needs_a_whole_read(tmp_path: Path) -> None:
    """The initializers' walk reads code: a read that left it out must read the file again."""
    source = tmp_path / "init.c"
    source.write_text(
        "int calls;\n__attribute__((constructor)) static void up(void) { calls++; }\n"
    )
    output = tmp_path / "libinit.so"
    command = ["gcc", "-shared", "-fPIC", "-O1", str(source), "-o", str(output)]
    subprocess.run([*command, "-Wl,-z,separate-code"], check=True, capture_output=True)
    data = output.read_bytes()
    left_out = code_ranges(data[:4096], len(data), 0)
    assert read_elf_facts(data, output.name) is not None
    assert sparse_initializers(_left_out_filled(data, left_out), len(data), left_out) is None
    whole = read_elf_facts(data, output.name)
    assert whole is not None
    assert sparse_initializers(data, len(data), ()) == whole.initializers
