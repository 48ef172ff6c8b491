"""Output that is piped or redirected keeps every line whole: no wrapping at 80 columns.

Each test runs the command in a subprocess with its output captured, as CI,
``grep`` or ``| tee`` see it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "scenarios" / "booking" / "fixtures" / "happy_confirm_button"
LONG_NAME = "a scenario whose name goes on " + "and on " * 20 + "to the end"
NEEDLE = "a phrase the agent never says, " * 4


def _harness(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
        timeout=120,
    )


def test_a_piped_run_prints_long_names_and_messages_on_one_line(tmp_path: Path) -> None:
    (tmp_path / "long.yaml").write_text(
        f"name: {LONG_NAME}\nsteps:\n  - say: friday at 8pm\n"
        f"  - expect: {{reply_contains: '{NEEDLE}'}}\n",
        encoding="utf-8",
    )
    done = _harness(
        "run", "long.yaml", "--target", "agents.booking:agent_factory", "--channel", "direct",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    [row] = [line for line in lines if line.startswith(LONG_NAME)]
    assert row.split()[-4:-1] == ["direct", "FAIL", "1"]  # the table row, whole
    assert "long.yaml" in row
    expected = f"  ✗ expect at turn 1 (line 4): no reply contains {NEEDLE!r}"
    assert expected in lines
    assert max(len(line) for line in lines) > 200  # nothing was cut to a terminal's width


def test_a_piped_replay_keeps_each_divergence_and_change_on_one_line(tmp_path: Path) -> None:
    prompt = tmp_path / "system.md"
    prompt.write_text("You are a rude assistant.\n", encoding="utf-8")
    done = _harness("replay", str(FIXTURE), "--prompt", f"system={prompt}", cwd=ROOT)
    assert done.returncode == 3
    lines = done.stdout.splitlines()
    [diverged] = [line for line in lines if line.startswith("  diverged: ")]
    assert "system prompt differs (recorded: 'You are the WhatsApp booking" in diverged
    assert diverged.endswith(")")  # the request it was compared with, on the same line
    assert '  changed turn 1: tool search_slots only in a: args {"date":"2026-01-02"}' in lines
