"""Headless Debian chromium for the browser tests (Playwright's own browser downloads are not available)."""

import shutil
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
