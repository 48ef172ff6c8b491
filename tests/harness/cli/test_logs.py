"""Log records on the command line are one line each: no traceback reaches the terminal."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from harness.cli.logs import OneLineFormatter

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "scenarios" / "booking" / "fixtures" / "happy_confirm_button"


def test_a_record_with_an_exception_is_one_line() -> None:
    try:
        raise ValueError("the store said no\nand more lines")
    except ValueError:
        record = logging.LogRecord(
            "agents.x", logging.ERROR, __file__, 1, "task failed", (), sys.exc_info()
        )
    line = OneLineFormatter().format(record)
    assert line == "error: agents.x: task failed (ValueError: the store said no)"


def test_an_agent_failing_in_a_replay_logs_one_line_not_a_traceback(tmp_path: Path) -> None:
    prompt = tmp_path / "system.md"
    prompt.write_text("You are a rude assistant.\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "harness", "replay", str(FIXTURE), "--prompt", f"system={prompt}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 3  # the changed prompt diverges from the recording
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if "background task failed" in line]
    assert lines
    assert lines[0].startswith("error: agents.booking.core: background task failed (Divergence:")
