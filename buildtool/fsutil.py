"""Writing files so that a failure or Ctrl-C leaves the destination as it was."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from buildtool.errors import UsageError

log = logging.getLogger("buildtool")


def _is_special(path: Path) -> bool:
    """A device, FIFO or socket (``/dev/null``, ``/dev/stdout``): never replace it by a file."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def write_atomic(path: Path, data: str | bytes, mode: int = 0o644) -> None:
    """Write to a temporary file beside ``path``, then rename it into place (with ``mode``).

    A special file (``/dev/null``, a FIFO) is written to directly: renaming over it would replace
    the device itself, and a stream has no half-written state to protect anyway.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if _is_special(path):
        with path.open("wb") as stream:
            stream.write(payload)
        return
    import tempfile  # here: most runs write no file, and its import costs a few ms

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    temporary = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        temporary.chmod(mode)
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def folder_lock(folder: Path, purpose: str) -> Iterator[None]:
    """Serialize runs on one folder (two ``configure`` at once would corrupt the cache)."""
    folder.mkdir(parents=True, exist_ok=True)
    lock_path = folder / ".buildtool.lock"
    with lock_path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.EACCES):
                raise UsageError(f"{lock_path}: cannot lock: {error}") from None
            log.warning(
                "another buildtool %s is running on %s; waiting for it to finish", purpose, folder
            )
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
