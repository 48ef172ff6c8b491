"""``harness run``, ``record`` and ``replay`` with simulated users, from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.main import EXIT_DIVERGED, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from tests.support.cli import harness as _harness

ROOT = Path(__file__).resolve().parents[3]
BUNDLED = str(ROOT / "scenarios" / "booking" / "simulated_hesitant_customer.yaml")
FIXTURE = str(ROOT / "scenarios" / "booking" / "fixtures" / "simulated_hesitant_customer")
TARGET = "agents.booking:agent_factory"


def test_repeat_runs_a_simulated_scenario_with_seeds_counting_up_and_prints_its_pass_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    args = ("run", "--target", TARGET, "--channel", "direct", "--repeat", "3", BUNDLED)
    code = _harness(*args, "--report-dir", str(reports))
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    assert "3 scenarios against" in out
    assert "pass rate over repeated runs:" in out
    assert (
        "a hesitant customer, played by a model, books a step-free table: 3/3 passed (100%)" in out
    )
    assert "judge: 3 scenarios not judged: no judge model configured" in out
    data = json.loads((reports / "report.json").read_text(encoding="utf-8"))
    assert [s["seed"] for s in data["scenarios"]] == [7, 8, 9]
    [rate] = data["summary"]["pass_rates"]
    assert (rate["runs"], rate["passed"], rate["rate"]) == (3, 3, 1.0)


def test_a_planted_regression_fails_the_simulated_scenario_from_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    setting = "BOOKING_REGRESSIONS=forget_constraint"
    code = _harness("run", "--target", TARGET, "--agent-setting", setting, BUNDLED)
    assert code == EXIT_FAILED
    assert "constraint_honored" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--judge",), "--judge needs ANTHROPIC_API_KEY in the environment"),
        (("--user-model", "anthropic"), "the anthropic user model needs ANTHROPIC_API_KEY"),
    ],
)
def test_the_real_models_need_the_usual_key_and_say_so_in_one_line(
    flags: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _harness("run", "--target", TARGET, *flags, BUNDLED)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert message in err
    assert "Traceback" not in err


def test_record_and_replay_a_simulated_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fixture"
    assert _harness("record", BUNDLED, "--target", TARGET, "--out", str(out)) == EXIT_OK
    assert (out / "users.jsonl").is_file()
    assert _harness("replay", str(out)) == EXIT_OK
    assert "SAME" in capsys.readouterr().out


@pytest.mark.parametrize(("policy", "code"), [("pinned", EXIT_DIVERGED), ("live", EXIT_FAILED)])
def test_the_bundled_fixture_against_a_changed_agent(
    policy: str, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    setting = "BOOKING_REGRESSIONS=book_without_confirm"
    assert _harness("replay", FIXTURE, "--policy", policy, "--agent-setting", setting) == code
    out = capsys.readouterr().out
    assert ("DIVERGED" if policy == "pinned" else "action_only_after_confirmation") in out
