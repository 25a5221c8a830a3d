"""Binaries and wheels built for the verdict tests: gcc and g++ on a source text, a wheel whose
RECORD agrees with its members, and the verdicts as (check, file) pairs."""

from __future__ import annotations

import subprocess
import zipfile
from collections.abc import Sequence
from pathlib import Path

from buildtool.linkage.checks.policy import LinkagePolicy
from buildtool.linkage.inputs.wheel_archive import record_line
from buildtool.linkage.report.model import Report
from buildtool.linkage.verify import verify_paths

EXT = "cpython-311-x86_64-linux-gnu.so"


def ids(report: Report) -> set[tuple[str, str]]:
    """(check id, file name) of every finding."""
    return {(f.check_id, Path(f.path.split("!/")[-1]).name) for f in report.findings}


def errors(report: Report) -> set[tuple[str, str]]:
    return {(f.check_id, f.path) for f in report.findings if f.severity == "error"}


def check(*paths: Path) -> Report:
    return verify_paths(list(paths), LinkagePolicy.empty(), jobs=1)


def gcc(folder: Path, out: Path, source: str, *flags: str, cxx: bool = False) -> Path:
    """Compile one C (or C++) source into ``out``; ``-shared -fPIC`` unless ``flags`` say
    ``-exe``. Libraries to link are found in ``folder``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    suffix = ".cc" if cxx else ".c"
    src = folder / f"{out.name.split('.')[0]}{suffix}"
    src.write_text(source)
    kind = [] if "-exe" in flags else ["-shared", "-fPIC"]
    rest = [flag for flag in flags if flag != "-exe"]
    compiler = "g++" if cxx else "gcc"
    command = [compiler, *kind, "-O1", "-o", str(out), str(src), f"-L{folder}", *rest]
    subprocess.run(command, check=True, capture_output=True)
    return out


def lib(folder: Path, name: str, body: str, *flags: str) -> Path:
    """``lib<name>.so`` with SONAME ``lib<name>.so`` in ``folder``."""
    out = folder / f"lib{name}.so"
    return gcc(folder, out, body, f"-Wl,-soname,lib{name}.so", *flags)


def write_wheel(
    path: Path, dist: str, members: dict[str, bytes], requires: Sequence[str] = ()
) -> Path:
    """A wheel with METADATA (Requires-Dist), WHEEL and a RECORD that agrees with it."""
    info = f"{dist.replace('-', '_')}-1.0.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n"
    metadata += "".join(f"Requires-Dist: {name}>=1.0\n" for name in requires)
    every = dict(members)
    every[f"{info}/METADATA"] = metadata.encode()
    every[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
    rows = [record_line(name, data) for name, data in every.items()]
    rows.append(f"{info}/RECORD,,")
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in every.items():
            archive.writestr(name, data)
        archive.writestr(f"{info}/RECORD", "\n".join(rows) + "\n")
    return path


def cxx(folder: Path, out: str, sources: dict[str, str], *flags: str) -> Path:
    for name, text in sources.items():
        (folder / name).write_text(text)
    command = ["g++", "-O2", "-o", str(folder / out), *sources, f"-L{folder}", *flags]
    subprocess.run(command, cwd=folder, check=True, capture_output=True)
    return folder / out


REFUSING_REGISTRY = """extern "C" void abort(void);
static const char* names[8];
static int count;
static int same(const char* a, const char* b) {
  while (*a && *a == *b) { ++a; ++b; }
  return *a == *b;
}
extern "C" void FUNCTION(const char* name) {
  for (int i = 0; i < count; ++i)
    if (same(names[i], name)) abort();
  names[count++] = name;
}
"""


def refusing_registry(function: str) -> str:
    """C++ source of ``extern "C" void <function>(const char*)``, a registry that aborts when a
    name is registered twice (``count`` holds how many it has); no headers, so any SDK builds
    it."""
    return REFUSING_REGISTRY.replace("FUNCTION", function)


def constructor_fillers(count: int, stores: int, coff: bool = False) -> str:
    """x86-64 assembly (GNU as) of ``count`` constructors, each storing ``stores`` numbers:
    many initializers, quicker to assemble than to compile from C. ELF: local functions listed
    in ``.init_array`` (gone once stripped); ``coff`` (mingw-w64): functions named as g++ names
    a file's static initializer (``_GLOBAL__sub_I_``, what the PE reader finds them by), listed
    in ``.ctors``."""
    lines = (
        ["\t.lcomm fill_cell,256,32"]
        if coff
        else ["\t.local fill_cell", "\t.comm fill_cell,256,32"]
    )
    lines.append("\t.text")
    for index in range(count):
        name = f"_GLOBAL__sub_I_fill_{index}" if coff else f"fill_{index}"
        if coff:
            lines.append(f"\t.def\t{name};\t.scl\t3;\t.type\t32;\t.endef")
        else:
            lines.append(f"\t.type {name}, @function")
        lines.append(f"{name}:")
        lines += [f"\tmovl ${index + k}, fill_cell+{4 * k}(%rip)" for k in range(stores)]
        lines.append("\tret")
        if not coff:
            lines.append(f"\t.size {name}, .-{name}")
        table = '\t.section .ctors,"w"' if coff else '\t.section .init_array,"aw"'
        lines += [table, "\t.align 8", f"\t.quad {name}", "\t.text"]
    if not coff:
        lines.append('\t.section .note.GNU-stack,"",@progbits')
    return "\n".join(lines) + "\n"
