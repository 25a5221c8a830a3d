"""A wheel member whose bytes disagree with the CRC-32 its zip headers give is refused on the
first read, as pip refuses to install it, even when RECORD's hash of the bytes is right: zipfile
(which pip extracts with) checks the CRC, not RECORD."""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from buildtool.cli import main
from buildtool.linkage.inputs import inflate
from buildtool.linkage.inputs.head_start import Inflated
from buildtool.linkage.inputs.inflate import MemberSpan
from buildtool.linkage.inputs.wheel_archive import CheckedMember, RecordEntry
from tests.conftest import require
from tests.test_hostile_wheels import Member, _central_entry, write_wheel

SMALL = "demo/lib/libdemo_x.so"
BIG = "demo/lib/libdemo_big.so"
SOURCE = "demo/__init__.py"


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A small shared library, and one over ``inflate.WHOLE_MEMBER_BYTES`` (streamed)."""
    require(shutil.which("gcc") is not None, "needs gcc")
    folder = tmp_path_factory.mktemp("crc")
    (folder / "x.c").write_text("int x(void) { return 1; }\n", encoding="utf-8")
    noise = random.Random(3).randbytes(3 << 20)  # incompressible: stays big deflated
    table = ", ".join(str(byte) for byte in noise)
    (folder / "big.c").write_text(
        f"const unsigned char table[] = {{{table}}};\nint big(void) {{ return table[7]; }}\n",
        encoding="utf-8",
    )
    made = {}
    for source, name in (("x.c", SMALL), ("big.c", BIG)):
        output = folder / Path(name).name
        command = ["gcc", "-shared", "-fPIC", source, "-o", output.name]
        subprocess.run(command, cwd=folder, check=True, capture_output=True)
        made[name] = output.read_bytes()
    assert len(made[BIG]) > inflate.WHOLE_MEMBER_BYTES
    return made


def _wheel(folder: Path, libraries: dict[str, bytes]) -> Path:
    """An installable wheel (pip needs WHEEL and METADATA) holding the libraries."""
    info = "demo-0.1.0.dist-info"
    wheel = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-any\n"
    members: list[Member] = [
        (SOURCE, b"from . import _x\n"),
        *libraries.items(),
        (f"{info}/METADATA", b"Metadata-Version: 2.1\nName: demo\nVersion: 0.1.0\n"),
        (f"{info}/WHEEL", wheel),
    ]
    return write_wheel(folder / "demo-0.1.0-py3-none-any.whl", members)


def flip_crc(path: Path, name: str) -> None:
    """The member's CRC-32 changed in both of its headers (which agree, as a tool that wrote a
    wrong one would have them); its bytes, and RECORD's hash of them, stay right."""
    blob = bytearray(path.read_bytes())
    central = _central_entry(bytes(blob), name.encode())
    (local,) = struct.unpack_from("<I", blob, central + 42)
    (crc,) = struct.unpack_from("<I", blob, central + 16)
    for field in (local + 14, central + 16):
        struct.pack_into("<I", blob, field, crc ^ 0x5A5A5A5A)
    path.write_bytes(bytes(blob))


def _pip_install(wheel: Path, target: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index"]
    command += ["--disable-pip-version-check", "--target", str(target), str(wheel)]
    environment = {**os.environ, "PIP_NO_INPUT": "1"}
    return subprocess.run(command, capture_output=True, text=True, check=False, env=environment)


@pytest.mark.integration
def test_a_wheel_with_right_crcs_installs_and_passes(
    libraries: dict[str, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = _wheel(tmp_path, libraries)
    installed = _pip_install(wheel, tmp_path / "site")
    assert installed.returncode == 0, installed.stderr
    assert (tmp_path / "site" / BIG).read_bytes() == libraries[BIG]
    assert main(["verify-linkage", "--no-recipe", str(wheel)]) == 0, capsys.readouterr()


@pytest.mark.integration
@pytest.mark.parametrize("name", [SMALL, BIG, SOURCE])
@pytest.mark.parametrize("threaded", [False, True])
def test_a_member_whose_crc_is_wrong_is_refused_as_pip_refuses_it(
    libraries: dict[str, bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *,
    name: str,
    threaded: bool,
) -> None:
    """Read whole (the small library), streamed (the big one), the short way (a source); the
    streamed member's hash on a thread or inline."""
    wheel = _wheel(tmp_path, libraries)
    flip_crc(wheel, name)
    with zipfile.ZipFile(wheel) as archive:
        assert archive.testzip() == name  # zipfile's own check names the member
    installed = _pip_install(wheel, tmp_path / "site")
    assert installed.returncode != 0
    assert "Bad CRC-32" in installed.stderr
    monkeypatch.setattr(inflate, "THREADED_HASH_BYTES", 0 if threaded else 1 << 40)
    assert main(["verify-linkage", "--no-recipe", str(wheel)]) == 2
    err = capsys.readouterr().err
    assert f"{wheel}!/{name}: member's CRC-32 is " in err
    assert "pip and zipfile refuse to extract it" in err
    assert "Traceback" not in err


def _member(crc: int) -> CheckedMember:
    span = MemberSpan("demo/lib/libbig.so", 0, zipfile.ZIP_DEFLATED, 10, 100, crc)
    return CheckedMember(span.name, span, RecordEntry("sha256", "digest", 100))


def test_a_head_start_is_taken_only_with_the_central_directorys_crc() -> None:
    inflated = Inflated(100, "digest", 0x1234, ())
    assert inflated.checks_out(_member(0x1234))
    assert not inflated.checks_out(_member(0x1235))
    assert not inflated._replace(digest="other").checks_out(_member(0x1234))
