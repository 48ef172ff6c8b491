"""Log records on the command line are one line each: no traceback reaches the terminal.

The agent's own background work that fails during a replay is not logged at all: the
result reports it, a line per failure.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.cli.logs import OneLineFormatter, configure_logging
from harness.exceptions import Divergence, StoreUnavailable

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


def test_an_agent_failing_in_a_replay_is_reported_in_the_result_not_logged(
    tmp_path: Path,
) -> None:
    reports = tmp_path / "reports"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "harness", "replay", str(FIXTURE)),
            *("--target", "tests.harness.replay.test_agent_errors:reporting_factory"),
            *("--report-dir", str(reports)),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # the conversation is the same
    assert done.stderr == ""  # nothing logged: no traceback, not even a line
    failure = "CRM update failed: RuntimeError: the CRM could not be told"
    lines = [line for line in done.stdout.splitlines() if line.startswith("  agent: ")]
    assert lines
    assert set(lines) == {f"  agent: {failure}"}
    report = json.loads((reports / "report.json").read_text(encoding="utf-8"))
    assert set(report["scenarios"][0]["agent_errors"]) == {failure}
    junit = ET.parse(reports / "junit.xml").getroot()
    assert (junit.findtext("testsuite/testcase/system-err") or "").startswith(f"agent: {failure}")
    html = (reports / "report.html").read_text(encoding="utf-8")
    assert '<ul class="agent-errors"' in html
    assert f"<li>agent: {failure}" in html


def test_a_replay_that_diverges_says_so_once(tmp_path: Path) -> None:
    prompt = tmp_path / "system.md"
    prompt.write_text("You are a rude assistant.\n", encoding="utf-8")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "harness", "replay", str(FIXTURE)),
            *("--prompt", f"system={prompt}"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 3  # the changed prompt diverges from the recording
    assert done.stderr == ""  # nothing logged: no traceback, not even a line
    assert "diverged: turn 1: replay diverged: system prompt differs" in done.stdout
    assert done.stdout.count("system prompt differs") == 1
    assert "  agent: " not in done.stdout


def _logged(error: Exception) -> logging.LogRecord:
    try:
        raise error
    except Exception:
        return logging.LogRecord(
            "agents.x", logging.ERROR, __file__, 1, "task failed", (), sys.exc_info()
        )


def test_the_terminal_skips_only_what_the_run_reports_itself() -> None:
    configure_logging()  # what every command does first
    [handler] = [
        h for h in logging.getLogger().handlers if isinstance(h.formatter, OneLineFormatter)
    ]
    assert handler.filter(_logged(RuntimeError("the calendar service said no")))
    down = "Redis at redis://h:1/0 is unavailable"
    assert not handler.filter(_logged(StoreUnavailable(down, noted=True)))  # in the results
    assert handler.filter(_logged(StoreUnavailable(down)))  # no scenario heard of it
    assert not handler.filter(_logged(Divergence("system prompt differs")))


def test_a_recording_cut_short_replays_with_its_warning_on_one_line(tmp_path: Path) -> None:
    cut = tmp_path / "cut"
    shutil.copytree(FIXTURE, cut)
    (cut / "conversation.json").unlink()
    events = (cut / "events.jsonl").read_bytes()
    (cut / "events.jsonl").write_bytes(events[: events.index(b"\n", 1500) + 40])  # a torn line
    done = subprocess.run(
        [sys.executable, "-m", "harness", "replay", str(cut)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert "Traceback" not in done.stderr + done.stdout
    assert done.returncode == 0, done.stdout  # the users' names come from the kept scenario
    assert done.stdout.startswith("SAME")
    [warning] = done.stderr.splitlines()
    assert warning.startswith(f"warning: {cut / 'events.jsonl'}:")
    assert "torn last line dropped" in warning
