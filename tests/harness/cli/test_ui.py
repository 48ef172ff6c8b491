"""``harness ui``: loopback only, bad input as one line, and no web server for other commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import EXIT_USAGE
from tests.support.cli import harness as _harness

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "scenarios" / "booking" / "fixtures"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::"])
def test_ui_refuses_to_listen_anywhere_but_loopback(
    host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _harness("ui", str(FIXTURES), "--host", host) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err == (
        f"error: --host {host!r}: harness ui listens on 127.0.0.1 only, since it can write "
        "the agent's prompt files\n"
    )


def test_ui_on_a_folder_without_fixtures_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _harness("ui", str(tmp_path / "nowhere")) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "nowhere: not a fixture directory" in err


def test_ui_live_without_an_api_key_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert _harness("ui", str(FIXTURES), "--live") == EXIT_USAGE
    assert capsys.readouterr().err == "error: --live needs ANTHROPIC_API_KEY in the environment\n"


def test_ui_with_an_agent_setting_the_agent_refuses_is_one_line() -> None:
    # in a process of its own: were the setting let through, the app would start serving
    command = [
        sys.executable, "-m", "harness", "ui", str(FIXTURES), "--port", "0",
        "--agent-setting", "BOOKING_TIMEZONE=Mars/Olympus",
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("harness ui started serving with a setting the agent refuses")
    assert done.returncode == EXIT_USAGE
    err = done.stderr
    assert err.count("\n") == 1
    assert "BOOKING_TIMEZONE" in err
    assert "Mars/Olympus" in err


def test_ui_is_a_command_of_the_harness(capsys: pytest.CaptureFixture[str]) -> None:
    assert _harness("ui", "--help") == 0
    assert "Edit the agent's prompts, replay recorded chats" in capsys.readouterr().out


def test_importing_the_command_line_loads_no_web_server() -> None:
    probe = (
        "import sys, harness.cli.main\n"
        "loaded = [m for m in ('starlette', 'uvicorn', 'harness.ui') if m in sys.modules]\n"
        "print(','.join(loaded))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == ""
