"""A decoder that fails with anything but a malformed-file error (a bug, an interrupt) must not
leave the bytes mapped: its frames hold views of them, and closing the map under a view raises
BufferError in place of the real error."""

from __future__ import annotations

from pathlib import Path

import pytest

from buildtool.linkage.inputs import decoding
from buildtool.linkage.inputs.collect import read_wheel
from tests.test_elf import SMALL
from tests.test_hostile_wheels import write_wheel


class DecoderBug(Exception):
    """Stands for any failure of a decoder other than ``MalformedBinary``."""


def failing_decode(raw: decoding.SourceBytes) -> None:
    view = memoryview(raw.data)  # what a decoder's frames hold while it reads
    header = view[:4]
    raise DecoderBug(f"failed after reading {bytes(header)!r}")


def mapped(path: Path) -> bool:
    """Whether this process still maps ``path``."""
    return str(path) in Path("/proc/self/maps").read_text(encoding="utf-8")


def test_a_failing_decode_of_a_file_raises_its_own_error_and_unmaps_it(tmp_path: Path) -> None:
    path = tmp_path / "libx.so"
    path.write_bytes(SMALL)
    reader = decoding.SourceDecoder()
    with pytest.raises(DecoderBug, match="failed after reading"):
        reader.decode(decoding.Source(str(path), "libx.so", len(SMALL)), failing_decode)
    assert not mapped(path)
    reader.close()


def test_a_failing_decode_of_a_wheel_member_leaves_the_buffer_closable(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "x-1.0-py3-none-any.whl", [("x/libx.so", SMALL)])
    (binary,) = read_wheel(wheel, (), jobs=1).files
    assert binary.source is not None
    reader = decoding.SourceDecoder()
    with pytest.raises(DecoderBug) as failure:
        reader.decode(binary.source, failing_decode)
    # the error is still alive (a caller reports it): its frames must not pin the buffer
    reader.close()  # BufferError if a view of the buffer or of the wheel's map were alive
    assert not mapped(wheel)
    assert failure.value.__traceback__ is not None
