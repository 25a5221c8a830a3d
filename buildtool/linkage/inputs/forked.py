"""A value a forked child works out while this process goes on (``Forked``).

The child shares this process's memory as it was at the fork, so nothing is sent to it; its
value comes back pickled through a pipe. A child that fails, or is stopped, gives None: the
caller then does the work itself, and any error is the one it always gave.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

_T = TypeVar("_T")


def can_fork(jobs: int) -> bool:
    """Whether a child may be forked: on Linux (macOS lists fork, but forking there is not safe
    in general), when more than one process may run, from a process without threads."""
    single = threading.active_count() == 1
    return sys.platform.startswith("linux") and jobs > 1 and single


class Forked(Generic[_T]):
    """A child working out one value. Not a value: it owns a process and a pipe, which
    ``result`` or ``end`` gives back."""

    def __init__(self, pid: int, pipe: int, kind: type[_T]) -> None:
        self._pid: int | None = pid
        self._pipe: int | None = pipe
        self._kind = kind
        self._value: _T | None = None

    @classmethod
    def start(cls, work: Callable[[], _T], kind: type[_T]) -> Forked[_T] | None:
        """Fork a child that runs ``work`` and sends back what it returns (of type ``kind``);
        None when no pipe or process can be had."""
        from buildtool.process import fork_with_pipe  # with subprocess: only when forking

        forked = fork_with_pipe(lambda pipe: _send(pipe, work()))
        return None if forked is None else cls(*forked, kind)

    def result(self) -> _T | None:
        """Wait for the child: its value, or None when it failed."""
        if self._pipe is not None:
            payload = _read_all(self._pipe)
            self._reap(kill=False)
            self._value = self._loaded(payload)
        return self._value

    def end(self) -> None:
        """Stop the child if it still runs."""
        self._reap(kill=True)

    def _loaded(self, payload: bytes) -> _T | None:
        try:
            found = pickle.loads(payload)  # written by this process's own child
        except (pickle.UnpicklingError, EOFError, ValueError):
            return None  # the child died before it wrote
        return found if isinstance(found, self._kind) else None

    def _reap(self, kill: bool) -> None:
        if self._pipe is not None:
            os.close(self._pipe)
            self._pipe = None
        if self._pid is not None:
            # gone already where the host reaps children itself (SIGCHLD ignored)
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                if kill:
                    os.kill(self._pid, signal.SIGKILL)
                os.waitpid(self._pid, 0)
            self._pid = None


def _send(pipe: int, value: object) -> None:
    view = memoryview(pickle.dumps(value))
    while view:
        view = view[os.write(pipe, view) :]


def _read_all(pipe: int) -> bytes:
    chunks = []
    while chunk := os.read(pipe, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)
