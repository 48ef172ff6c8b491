"""The ``harness`` command line: its commands, its version, exit codes and one-line errors.

Most tests call :func:`harness.cli.main.main` in-process and read the exit code
the ``harness`` script would end with; two run ``python -m harness`` as a
real process.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from harness import __version__
from harness.cli.main import EXIT_FAILED, EXIT_OK, EXIT_USAGE, cli
from harness.exceptions import ConfigError
from tests.bots.loopback import free_port
from tests.support.cli import harness as _harness

BROKEN = "steps:\n  - say: [unclosed\n"
BOOKS = """\
steps:
  - say: friday at 8pm
  - expect: {reply_contains: Friday, replies: 1}
"""
NEVER = """\
steps:
  - say: friday at 8pm
  - expect: {reply_contains: Saturday}
"""


def _python_m_harness(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def _suite(root: Path, **files: str) -> Path:
    root.mkdir()
    for name, text in files.items():
        (root / f"{name}.yaml").write_text(text, encoding="utf-8")
    return root


def _commands(help_text: str) -> set[str]:
    section = help_text.split("Commands:", 1)[1]
    return {line.split()[0] for line in section.splitlines() if line.strip()}


def test_a_command_runs_with_the_collector_at_its_pace_and_the_process_gets_its_own_back() -> None:
    seen: list[tuple[int, ...]] = []

    def probe(fail: bool) -> None:
        seen.append(gc.get_threshold())
        if fail:
            raise ConfigError("a bad flag")

    cli.add_command(
        click.Command("gc-probe", callback=probe, params=[click.Option(["--fail"], is_flag=True)])
    )
    before = gc.get_threshold()
    try:
        assert _harness("gc-probe") == EXIT_OK
        assert _harness("gc-probe", "--fail") == EXIT_USAGE
    finally:
        del cli.commands["gc-probe"]
    # Young objects every 10,000 allocations while the command runs, not Python's 700.
    assert seen == [(10_000, 10, 10)] * 2
    assert gc.get_threshold() == before


def test_help_lists_the_builtin_and_the_plugin_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _harness("--help") == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("Usage: harness [OPTIONS] COMMAND [ARGS]...")
    assert _commands(out) >= {"run", "schema", "serve"}


def test_python_m_harness_prints_the_version(tmp_path: Path) -> None:
    done = _python_m_harness("--version", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"harness, version {__version__}\n"


def test_a_harness_error_is_one_line_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path / "suite", broken=BROKEN)
    assert _harness("run", str(suite)) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {suite / 'broken.yaml'}:")
    assert "invalid YAML" in captured.err
    assert captured.err.count("\n") == 1
    assert "Traceback" not in captured.err + captured.out


def test_the_process_exits_2_on_a_harness_error_without_a_traceback(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite", broken=BROKEN)
    done = _python_m_harness("run", str(suite), cwd=tmp_path)
    assert done.returncode == EXIT_USAGE
    assert done.stderr.startswith("error: ")
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_an_empty_suite_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = _suite(tmp_path / "empty")
    assert _harness("run", str(suite)) == EXIT_USAGE
    assert capsys.readouterr().err == f"error: no scenario files in {suite}\n"


def test_an_unknown_channel_is_an_error_listing_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path / "suite", books=BOOKS)
    assert _harness("run", str(suite), "--channel", "telegram") == EXIT_USAGE
    assert capsys.readouterr().err == (
        "error: --channel 'telegram': unknown channel (direct, whatsapp)\n"
    )


def test_a_bad_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert _harness("run", "--concurrency", "many") == EXIT_USAGE
    err = capsys.readouterr().err
    assert "Invalid value for '--concurrency'" in err
    assert "Traceback" not in err


def test_run_exits_0_when_every_scenario_passes_and_1_otherwise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    passing = _suite(tmp_path / "passing", books=BOOKS)
    assert _harness("run", str(passing), "--channel", "direct") == EXIT_OK
    reports = tmp_path / "reports"
    failing = _suite(tmp_path / "failing", books=BOOKS, never=NEVER)
    code = _harness("run", str(failing), "--channel", "direct", "--report-dir", str(reports))
    assert code == EXIT_FAILED
    report = json.loads((reports / "report.json").read_text(encoding="utf-8"))
    statuses = {s["name"]: s["status"] for s in report["scenarios"]}
    assert statuses == {"books": "passed", "never": "failed"}
    assert "Traceback" not in capsys.readouterr().err


def test_schema_prints_the_scenario_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert _harness("schema") == EXIT_OK
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "steps" in schema["required"]
    assert {"steps", "users", "invariants"} <= set(schema["properties"])


def test_schema_can_be_written_to_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "scenario.schema.json"
    assert _harness("schema", "--out", str(out)) == EXIT_OK
    assert json.loads(out.read_text(encoding="utf-8"))["type"] == "object"
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"wrote {out}\n"


def test_run_plays_only_the_scenarios_its_tags_select(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(
        tmp_path / "suite",
        books=f"tags: [booking]\n{BOOKS}",
        never=f"tags: [booking, broken]\n{NEVER}",
        plain=BOOKS,
    )
    reports = tmp_path / "reports"
    code = _harness(
        "run", str(suite), "--channel", "direct", "--tag", "booking", "--skip-tag", "broken",
        "--report-dir", str(reports),
    )  # fmt: skip
    assert code == EXIT_OK
    report = json.loads((reports / "report.json").read_text(encoding="utf-8"))
    assert [s["name"] for s in report["scenarios"]] == ["books"]
    assert capsys.readouterr().out.startswith("1 scenario against ")


def test_run_exits_2_when_the_tags_select_no_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path / "suite", books=f"tags: [booking]\n{BOOKS}", plain=BOOKS)
    assert _harness("run", str(suite), "--tag", "nope", "--tag", "none") == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.err == (
        "error: --tag none --tag nope selects none of the 2 scenarios (their tags: booking)\n"
    )
    assert captured.out == ""


def test_an_unreachable_store_stops_the_run_at_once_with_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()  # nothing listens here
    suite = _suite(tmp_path / "suite", books=BOOKS, never=NEVER)
    started = time.monotonic()
    code = _harness("run", str(suite), "--redis", f"redis://:hunter2@127.0.0.1:{port}/0")
    assert code == EXIT_USAGE
    assert time.monotonic() - started < 3.0
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: Redis at redis://")
    assert f"127.0.0.1:{port}" in err
    assert "hunter2" not in err
