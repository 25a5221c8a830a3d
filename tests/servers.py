"""Local servers the tests start (distccd, redis-server): a free port on 127.0.0.1, and the wait
until the server listens on it."""

from __future__ import annotations

import socket
import subprocess
import time

import pytest

START_SECONDS = 15.0
"""How long a server may take to listen, at most."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for_port(port: int, server: subprocess.Popen[bytes], name: str) -> None:
    """Return once ``server`` (``name`` in messages) accepts connections on ``port``; fail the
    test if it exits first or does not listen within ``START_SECONDS``."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"{name} exited with {server.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except OSError:
            time.sleep(0.1)
        else:
            return
    pytest.fail(f"{name} did not listen on 127.0.0.1:{port} within {START_SECONDS} s")
