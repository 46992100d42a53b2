"""Headless Debian chromium for the browser tests (Playwright's own browser downloads are not available)."""

import shutil
import socket
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is missing: install it with `apt-get install -y chromium` (.ci/run does)")


def free_loopback_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now, for a server a test starts."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
