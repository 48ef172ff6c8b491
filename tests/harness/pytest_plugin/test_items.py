"""Scenario files as pytest items: collected when asked for, named, run, reported as scenarios."""

from __future__ import annotations

import pytest

from tests.harness.pytest_plugin.conftest import WRONG_DAY, bundled, write_ini

pytest_plugins = ["pytester"]

TARGET = "agents.booking:agent_factory"


def test_scenario_files_under_the_option_are_one_item_each_named_by_file_and_name(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester, harness_target=TARGET)
    bundled(pytester, "happy_confirm_button", "burst_answered_once")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("--collect-only", "-q", "--harness-scenarios", "scenarios")
    assert result.ret == 0
    lines = [line for line in result.outlines if "::" in line]
    assert lines == [
        "scenarios/burst_answered_once.yaml::a three-message burst is answered once",
        "scenarios/happy_confirm_button.yaml::happy booking with the Confirm button",
        "test_plain.py::test_plain",
    ]


def test_yaml_files_are_not_collected_without_opting_in(pytester: pytest.Pytester) -> None:
    write_ini(pytester, harness_target=TARGET)
    bundled(pytester, "happy_confirm_button")
    result = pytester.runpytest("--collect-only", "-q", "scenarios")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_the_ini_names_the_scenarios_and_they_run_beside_the_tests(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester, harness_target=TARGET, harness_scenarios="scenarios", testpaths="tests")
    bundled(pytester, "happy_confirm_button", "redelivered_confirm_books_once")
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_plain.py").write_text("def test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    # Tests named on the command line run alone, as with testpaths.
    alone = pytester.runpytest("-p", "no:cacheprovider", "tests/test_plain.py")
    alone.assert_outcomes(passed=1)


def test_k_selects_scenarios_by_name_and_by_tag(pytester: pytest.Pytester) -> None:
    write_ini(pytester, harness_target=TARGET, harness_scenarios="scenarios")
    bundled(pytester, "happy_confirm_button", "burst_answered_once")
    by_name = pytester.runpytest("-p", "no:cacheprovider", "-k", "burst and answered")
    by_name.assert_outcomes(passed=1, deselected=1)
    by_tag = pytester.runpytest("-p", "no:cacheprovider", "-k", "debounce")  # burst's tag
    by_tag.assert_outcomes(passed=1, deselected=1)


def test_a_failing_scenario_reads_as_the_turn_the_rule_and_the_messages_not_a_traceback(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester, harness_target=TARGET, harness_scenarios="scenarios")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "wrong.yaml").write_text(WRONG_DAY)
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ scenario: the wrong day is expected _*",
            "scenario 'the wrong day is expected' (scenarios/wrong.yaml)",
            "failed: 1 violation",
            "✗ expect at turn 1 (line 4): no reply contains 'Saturday'",
            "    [[]turn 1[]] agent (interactive): I can book you a table on Friday 2 January*",
            "reproduce with:",
            "  name: the wrong day is expected",
            "FAILED scenarios/wrong.yaml::the wrong day is expected - *",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert "play_scenario" not in result.stdout.str()


def test_an_agent_that_cannot_be_built_is_an_error_line(pytester: pytest.Pytester) -> None:
    write_ini(pytester, harness_target="nowhere_at_all:factory", harness_scenarios="scenarios")
    bundled(pytester, "happy_confirm_button")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*'nowhere_at_all:factory': can't import nowhere_at_all*"])


def test_a_scenario_for_another_channel_is_skipped_with_its_reason(
    pytester: pytest.Pytester,
) -> None:
    write_ini(
        pytester, harness_target=TARGET, harness_scenarios="scenarios", harness_channel="direct"
    )
    bundled(pytester, "burst_answered_once")  # tagged whatsapp-only
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED *whatsapp*"])


def test_a_malformed_scenario_file_is_a_one_line_collection_error(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester, harness_target=TARGET, harness_scenarios="scenarios")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "broken.yaml").write_text("steps:\n  - sya: hi\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*scenarios/broken.yaml:2: steps[[]0[]]*sya*"])
    assert "Traceback" not in result.stdout.str()


def test_a_simulated_scenario_replays_from_its_recording_with_its_users_stream(
    pytester: pytest.Pytester,
) -> None:
    bundled(pytester, "simulated_hesitant_customer")
    write_ini(pytester, harness_target=TARGET, harness_scenarios="scenarios")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


UNKNOWN_INVARIANT = """\
name: a misspelled invariant
steps:
  - say: hi
invariants: [every_inbound_answerd]
"""


@pytest.mark.parametrize("mode", ["none", "once"])
def test_a_bad_invariant_is_one_line_before_any_recording_is_looked_for(
    pytester: pytest.Pytester, mode: str
) -> None:
    write_ini(pytester, harness_target=TARGET, harness_scenarios="scenarios")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "typo.yaml").write_text(UNKNOWN_INVARIANT)
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", mode)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "unknown invariant 'every_inbound_answerd'" in out
    assert "scenarios/typo.yaml:4" in out
    assert "record it" not in out  # recording would not help
    assert "Traceback" not in out
    assert "harness/" not in out  # no frames of the harness's own code


ASKS = "name: {name}\nsteps:\n  - say: Could I book a table for friday at 9pm?\n"


def test_a_scenario_whose_replay_diverged_says_so_first_and_counts_no_violations_it_lacks(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester, harness_target=TARGET, harness_scenarios="scenarios")
    folder = pytester.path / "scenarios"
    folder.mkdir()
    (folder / "ask.yaml").write_text(ASKS.format(name="a question"))
    expects = ASKS.format(name="a question answered") + "  - expect: {replies: 1}\n"
    (folder / "answered.yaml").write_text(expects)
    once = pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once")
    once.assert_outcomes(passed=2)
    for name in ("ask.yaml", "answered.yaml"):
        path = folder / name
        path.write_text(path.read_text().replace("friday", "saturday"))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    diverged = "✗ replay diverged from */scenarios/fixtures/{}: messages[[]0[]] differs (recorded:*"
    result.stdout.fnmatch_lines(
        [
            "scenario 'a question answered' (scenarios/answered.yaml)",
            "failed: the replay diverged, then 1 violation",
            "",
            diverged.format("answered"),
            "✗ expect at turn 1 (line 4): expected 1 reply, got 0",
            "scenario 'a question' (scenarios/ask.yaml)",
            "failed: the replay diverged",
            "",
            diverged.format("ask"),
        ]
    )
    out = result.stdout.str()
    assert "0 violations" not in out
    assert "replay diverged: replay diverged" not in out
