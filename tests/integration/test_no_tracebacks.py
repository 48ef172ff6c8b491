"""What a crash or an outage leaves behind is reported in one line a problem, never a traceback.

Three cases, each through the real ``harness`` command: replaying recordings
that ``harness record`` left when killed with SIGKILL at several instants,
replaying a chat that ``harness proxy`` recorded (whole, and killed
mid-chat), and ``harness run --redis`` with no Redis there. Bad input and
failed infrastructure exit 2.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reliability.kills import proxy_chat, record_command, started
from tests.bots.loopback import free_port
from tests.support.processes import stop

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _quiet_agent() -> Iterator[None]:
    """The in-process agent behind the proxy complains when the proxy dies: not under test."""
    logging.disable(logging.CRITICAL)
    yield
    logging.disable(logging.NOTSET)


def _harness(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
    )


def _no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stdout + done.stderr
    # Whatever reaches stderr is a line of the harness's own: an error or a warning.
    for line in done.stderr.splitlines():
        assert line.startswith(("error: ", "warning: ")), done.stderr


async def _killed_recording(out: Path, after: float) -> None:
    process = await asyncio.create_subprocess_exec(
        *record_command(out),
        cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await started(out, process)
        await asyncio.sleep(after)
    finally:
        await stop(process, signal=signal.SIGKILL)


@pytest.mark.parametrize("after", [0.02, 0.08])
async def test_replaying_a_recording_killed_mid_run_says_what_is_missing_in_one_line(
    tmp_path: Path, after: float
) -> None:
    out = tmp_path / "cut"
    await _killed_recording(out, after)
    done = _harness("replay", str(out))
    _no_traceback(done)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    if done.returncode == 0:  # killed after the last answer: what was recorded replays
        assert done.stdout.startswith("SAME")
        assert not errors
    else:
        assert done.returncode == 2, done.stdout + done.stderr
        problems = errors + [
            line for line in done.stdout.splitlines() if line.startswith("  incomplete: ")
        ]
        assert len(problems) == 1, done.stdout + done.stderr
        assert str(out) in problems[0]
        assert "diverged" not in done.stdout


@pytest.mark.parametrize("kill_after", [None, 0.8], ids=["whole", "killed"])
async def test_replaying_a_chat_the_proxy_recorded_says_what_is_missing_in_one_line(
    tmp_path: Path, kill_after: float | None
) -> None:
    out = tmp_path / "chat"
    await proxy_chat(out, kill_after=kill_after)
    done = _harness("replay", str(out))
    _no_traceback(done)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == ""
    status, problem = done.stdout.splitlines()
    assert status.startswith(f"INCOMPLETE {out} ")
    assert problem.startswith(
        f"  incomplete: {out}: harness proxy recorded the channel only, none of the agent's "
        "model or tool calls, and the agent asked for more than it holds in turn 1"
    )


def test_harness_run_with_redis_down_stops_in_one_line() -> None:
    port = free_port()  # nothing listens here
    started_at = time.monotonic()
    done = _harness("run", "scenarios/booking", "--redis", f"redis://127.0.0.1:{port}/0")
    _no_traceback(done)
    assert done.returncode == 2
    assert time.monotonic() - started_at < 30
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: Redis at redis://127.0.0.1:{port}/0 is unavailable: ")
