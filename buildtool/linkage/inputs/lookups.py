"""Reading files again after the read, for the checks and findings that need more than the facts
hold: ``.symtab`` function names to show, initializers a sparse read left unread or a check walks
whole. A wheel is mapped once however many of its members are read."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from buildtool.linkage.binaries import InitializerReach
from buildtool.linkage.binaries.elf import read_function_names
from buildtool.linkage.binaries.read import read_initializers_again
from buildtool.linkage.inputs.decoding import Source, SourceDecoder


class FunctionNameLookup:
    """Reads the ``.symtab`` function names of files again, for the findings that show them;
    a wheel is opened once however many of its members are read."""

    def __init__(self) -> None:
        self._reader = SourceDecoder()

    def __call__(self, source: Source, digests: Collection[int]) -> dict[int, str]:
        """The names whose digests are ``digests``, by digest."""
        found = self._reader.decode(
            source,
            lambda raw: read_function_names(
                raw.data, source.display, digests, size=raw.size, file_backed=raw.file_backed
            ),
        )
        return found or {}

    def close(self) -> None:
        self._reader.close()


class InitializerLookup:
    """Reads files' initializers again, whole, for the checks that need those a sparse read
    left unread (``BinaryFacts.initializers`` None)."""

    def __init__(self) -> None:
        self._reader = SourceDecoder(whole=True)

    def __call__(
        self, source: Source, deep: Sequence[int] | None = None
    ) -> tuple[InitializerReach, ...]:
        """Each initializer as a read's facts hold it; ``deep``: only those at these positions
        of the initializer array, walked whole, in that order (none when the file has fewer)."""
        found = self._reader.decode(
            source,
            lambda raw: read_initializers_again(
                raw.data,
                source.display,
                size=raw.size,
                file_backed=raw.file_backed,
                deep=tuple(deep) if deep is not None else False,
            ),
        )
        return found or ()

    def close(self) -> None:
        self._reader.close()
