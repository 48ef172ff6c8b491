"""``harness regress`` and ``harness replay`` write the reports ``harness run`` writes, for CI."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.cli.main import EXIT_DIVERGED, EXIT_OK, EXIT_USAGE
from harness.report import load_json
from tests.support.cli import harness as _harness

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "scenarios" / "booking" / "fixtures"
HAPPY = "happy_confirm_button"
REDELIVERED = "redelivered_confirm_books_once"


@pytest.fixture
def two(tmp_path: Path) -> Path:
    """Two of the bundled fixtures, copied into a folder of their own."""
    folder = tmp_path / "fixtures"
    for name in (HAPPY, REDELIVERED):
        shutil.copytree(FIXTURES / name, folder / name)
    return folder


def test_regress_writes_report_json_junit_and_html_for_ci(
    two: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    code = _harness(
        "regress", str(two), "--candidate", "BOOKING_REGRESSIONS=no_dedupe",
        "--report-dir", str(reports),
    )  # fmt: skip
    assert code == EXIT_DIVERGED
    run = load_json(reports / "report.json")
    statuses = {Path(s.path).name: s.status for s in run.scenarios}
    assert statuses == {HAPPY: "passed", REDELIVERED: "failed"}
    failed = next(s for s in run.scenarios if s.status == "failed")
    assert failed.name == "a redelivered Confirm tap books once"
    assert failed.violations[0].kind == "divergence"
    assert failed.violations[0].rule == "replay diverged"
    assert failed.violations[0].turn is not None
    summary = json.loads((reports / "report.json").read_text("utf-8"))["summary"]
    models = summary.pop("models")
    assert summary == {
        "passed": 1,
        "failed": 1,
        "errors": 0,
        "skipped": 0,
        "inconclusive": 0,
        "total": 2,
        "pass_rates": [],
    }
    # Every answer came from the bundled recordings, which the offline stand-in made.
    assert [(m["provider"], m["source"]) for m in models] == [("offline-stand-in", "recorded")]
    suite = ET.parse(reports / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    broken = cases[failed.name].find("failure")
    assert broken is not None
    assert (broken.get("message") or "").startswith("replay diverged at turn ")
    html = (reports / "report.html").read_text("utf-8")
    assert failed.name in html
    assert 'data-kind="divergence"' in html
    assert f"wrote {reports / 'junit.xml'}" in capsys.readouterr().out


def test_regress_without_a_candidate_reports_every_fixture_passed(
    two: Path, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    assert _harness("regress", str(two), "--report-dir", str(reports)) == EXIT_OK
    run = load_json(reports / "report.json")
    assert [s.status for s in run.scenarios] == ["passed", "passed"]
    assert run.target == "agents.booking:agent_factory"


def test_replay_writes_the_same_reports_for_its_one_fixture(two: Path, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    assert _harness("replay", str(two / HAPPY), "--report-dir", str(reports)) == EXIT_OK
    run = load_json(reports / "report.json")
    assert [(s.name, s.status) for s in run.scenarios] == [
        ("happy booking with the Confirm button", "passed")
    ]
    assert run.scenarios[0].conversation is not None
    assert (reports / "junit.xml").is_file()
    assert (reports / "report.html").is_file()


NO_DEDUPE_TARGET = """
import dataclasses

from agents.booking import agent_factory


def factory(env):
    settings = {**env.settings, "BOOKING_REGRESSIONS": "no_dedupe"}
    return agent_factory(dataclasses.replace(env, settings=settings))
"""


def test_regress_replays_each_fixture_against_the_agent_it_was_recorded_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "nodedupe_target.py").write_text(NO_DEDUPE_TARGET, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    scenario = ROOT / "scenarios" / "booking" / f"{REDELIVERED}.yaml"
    fixtures = tmp_path / "fixtures"
    recorded = fixtures / "own"
    record = (
        "record",
        str(scenario),
        "--out",
        str(recorded),
        "--target",
        "nodedupe_target:factory",
    )
    assert _harness(*record) == 1  # the agent books twice: the scenario fails, recorded as it is
    shutil.copytree(FIXTURES / HAPPY, fixtures / HAPPY)  # recorded with the bundled agent
    capsys.readouterr()
    # Each against its own agent: the same conversations, though one agent is not the bundled one.
    assert _harness("regress", str(fixtures)) == 1
    out = capsys.readouterr().out
    assert "diverged" not in out.lower(), out
    assert "2 fixtures: 1 same" in out, out
    assert "FAILED" in out  # the same conversation, its invariants broken as when recorded
    # Naming the target replays every fixture against it.
    code = _harness("regress", str(fixtures), "--candidate", "target=agents.booking:agent_factory")
    assert code == EXIT_DIVERGED


def test_replay_refuses_a_missing_templates_file_and_a_bad_gate_before_replaying(
    two: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture = str(two / HAPPY)
    assert _harness("replay", fixture, "--templates", "no/such/templates.json") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: "), err
    assert "no/such/templates.json" in err
    assert _harness("replay", fixture, "--judge-gate", "7") == 2
    out = capsys.readouterr()
    assert "--judge-gate" in out.err
    assert "SAME" not in out.out  # refused before anything was replayed


@pytest.mark.parametrize(
    ("command", "given"),
    [
        ("regress", "--candidate 'target=needs_a_token_bot:app'"),
        ("run", "--target 'needs_a_token_bot:app'"),
    ],
)
def test_a_target_whose_import_raises_is_one_line_naming_the_option_given_and_exit_2(
    command: str,
    given: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A bot that reads a setting at import time, run where it is not set.
    (tmp_path / "needs_a_token_bot.py").write_text(
        'import os\nTOKEN = os.environ["NEEDS_A_TOKEN_BOT_TOKEN"]\n\ndef app(env):\n    ...\n',
        encoding="utf-8",
    )
    (tmp_path / "hi.yaml").write_text("steps:\n  - say: hi\n", encoding="utf-8")
    monkeypatch.delenv("NEEDS_A_TOKEN_BOT_TOKEN", raising=False)
    monkeypatch.chdir(tmp_path)
    target = "needs_a_token_bot:app"
    if command == "regress":
        code = _harness("regress", str(FIXTURES / HAPPY), "--candidate", f"target={target}")
    else:
        code = _harness("run", "hi.yaml", "--target", target)
    assert code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err == (
        f"error: {given}: importing needs_a_token_bot raised KeyError: 'NEEDS_A_TOKEN_BOT_TOKEN'\n"
    )


@pytest.mark.parametrize("command", ["replay", "regress"])
def test_a_fixture_that_names_no_agent_is_not_replayed_against_a_guess(
    command: str,
    two: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A chat recorded by harness proxy without --target names no agent.
    chat = two / HAPPY
    meta = json.loads((chat / "meta.json").read_text("utf-8"))
    meta["agent_version"] = None
    (chat / "meta.json").write_text(json.dumps(meta), "utf-8")
    elsewhere = tmp_path / "no-project"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no pyproject.toml naming an agent either
    code = _harness(command, str(chat))
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: {chat}: the fixture names no agent (harness proxy names one only when given "
        "--target): give --target-url URL for an agent at a URL, or --target pkg.mod:factory"
    )
    # Named, it replays.
    flag = ["--target"] if command == "replay" else ["--candidate"]
    named = "agents.booking:agent_factory"
    assert (
        _harness(command, str(chat), *flag, named if command == "replay" else f"target={named}")
        == 0
    )
