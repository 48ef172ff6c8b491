"""Record modes: none replays only (a missing recording fails), once, new and all record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.exceptions import ConfigError
from harness.pytest_plugin.modes import (
    RecordingMode,
    function_recording,
    plan_for,
    scenario_recording,
)
from tests.harness.pytest_plugin.conftest import bundled, write_ini

pytest_plugins = ["pytester"]

TARGET = "agents.booking:agent_factory"
ONE_TEST = """\
async def test_proposal(wa):
    await wa.say("user", "Could I book a table for friday at 9pm?")
    assert "21:00" in wa.replies("user")[0]
"""
RECORDING = Path("recordings") / "test_booking" / "test_proposal"


@pytest.mark.parametrize(
    ("mode", "recorded", "plan"),
    [
        ("none", False, "missing"),
        ("none", True, "replay"),
        ("once", False, "record"),
        ("once", True, "replay"),
        ("new", False, "record"),
        ("new", True, "extend"),
        ("all", False, "record"),
        ("all", True, "record"),
    ],
)
def test_each_mode_plans_as_pytest_recording_does(mode: str, recorded: bool, plan: str) -> None:
    assert plan_for(RecordingMode.parse(mode), recorded) == plan


def test_an_unknown_mode_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        RecordingMode.parse("sometimes")
    assert str(caught.value) == (
        "--harness-record-mode 'sometimes': expected one of none, once, new, all"
    )


def test_recordings_live_beside_the_test_module_and_the_scenario_file() -> None:
    assert function_recording(Path("t/test_a.py"), "test_b[x y-1]") == Path(
        "t/recordings/test_a/test_b_x_y-1"
    )
    assert scenario_recording(Path("s/book.yaml")) == Path("s/fixtures/book")


def _llm_lines(pytester: pytest.Pytester) -> list[str]:
    return (pytester.path / RECORDING / "llm.jsonl").read_text("utf-8").splitlines()


def test_by_default_a_missing_recording_fails_and_nothing_is_recorded(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester, harness_target=TARGET, harness_scenarios="scenarios")
    pytester.makepyfile(test_booking=ONE_TEST)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "new.yaml").write_text("steps:\n  - say: hi\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "no recording at */recordings/test_booking/test_proposal: record it with pytest "
            "--harness-record-mode once*",
            "*no recording at */scenarios/fixtures/new: record it with pytest*",
        ],
        consecutive=False,
    )
    assert not (pytester.path / "recordings").exists()
    assert not (pytester.path / "scenarios" / "fixtures").exists()


def test_once_records_then_the_default_replays_and_a_changed_request_diverges(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester, harness_target=TARGET)
    pytester.makepyfile(test_booking=ONE_TEST)
    pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once").assert_outcomes(
        passed=1
    )
    meta = json.loads((pytester.path / RECORDING / "meta.json").read_text("utf-8"))
    assert meta["scenario"] == "test_booking.py::test_proposal"
    assert _llm_lines(pytester)  # the model's answers, to replay
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    # The agent now asks its model something the recording never saw: a failure, not a live call.
    pytester.makepyfile(test_booking=ONE_TEST.replace("friday at 9pm", "saturday at 9pm"))
    changed = pytester.runpytest("-p", "no:cacheprovider")
    changed.assert_outcomes(failed=1, errors=1)  # no answer, then the divergence that explains it
    changed.stdout.fnmatch_lines(
        ["the replay diverged:", "replay diverged: messages[[]0[]] differs (recorded: *friday*"]
    )


def test_new_keeps_the_recorded_answers_and_adds_the_new_requests(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester, harness_target=TARGET)
    pytester.makepyfile(test_booking=ONE_TEST)
    pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once")
    first = _llm_lines(pytester)
    longer = ONE_TEST + '    await wa.say("user", "and for saturday?")\n'
    pytester.makepyfile(test_booking=longer)
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "new")
    result.assert_outcomes(passed=1)
    grown = _llm_lines(pytester)
    assert len(grown) > len(first)
    assert grown[: len(first)] == first
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_all_records_again_and_a_scenario_in_once_mode_gets_its_fixture(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester, harness_target=TARGET, harness_scenarios="scenarios")
    pytester.makepyfile(test_booking=ONE_TEST)
    folder = bundled(pytester, "happy_confirm_button")
    (folder / "unrecorded.yaml").write_text("steps:\n  - say: Could I book for friday at 9pm?\n")
    pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once").assert_outcomes(
        passed=3
    )
    assert (folder / "fixtures" / "unrecorded" / "conversation.json").is_file()
    recorded_at = json.loads((pytester.path / RECORDING / "meta.json").read_text())["recorded_at"]
    pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "all").assert_outcomes(
        passed=3
    )
    again = json.loads((pytester.path / RECORDING / "meta.json").read_text())["recorded_at"]
    assert again > recorded_at


def test_a_bad_mode_in_the_ini_stops_the_run_with_one_line(pytester: pytest.Pytester) -> None:
    write_ini(pytester, harness_target=TARGET, harness_record_mode="sometimes")
    pytester.makepyfile(test_booking=ONE_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*harness_record_mode in the pytest ini 'sometimes': expected one of none, once, new, all"]
    )
