"""Headless Chromium for the page tests: finding it, and running it on a page.

Needs Debian's ``chromium`` package. Without it the tests skip, unless
``CI`` or ``HARNESS_REQUIRE_BROWSER`` is set: then a missing browser fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

# Read at import: the autouse fixture in tests/conftest.py clears HARNESS_* before each test.
REQUIRE_BROWSER = bool(os.environ.get("CI")) or bool(os.environ.get("HARNESS_REQUIRE_BROWSER"))
TIMEOUT = 60
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def find_chromium() -> str:
    """The Chromium binary; skips the test without one (fails under CI)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "headless Chromium is not installed (apt-get install chromium)"
        if REQUIRE_BROWSER:
            pytest.fail(message + "; CI and HARNESS_REQUIRE_BROWSER need it")
        pytest.skip(message)
    return found


def run_chromium(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with a fresh profile, the network quiet, and ``args``."""
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done
