"""The business's message templates, given to tests and scenario files as ``--templates`` is."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from tests.harness.pytest_plugin.conftest import write_ini

pytest_plugins = ["pytester"]

TARGET = "agents.booking:agent_factory"
# The reference agent follows up with this template once the 24-hour window has closed.
REMINDER: dict[str, object] = {
    "name": "appointment_reminder",
    "language": "en_US",
    "category": "UTILITY",
    "components": [{"type": "BODY", "text": "Still want {{1}} at {{2}}? Reply to confirm."}],
}
FOLLOW_UP = """\
import re


async def test_the_follow_up_reads_as_the_businesss_template(wa):
    await wa.say("user", "Is there a table next wednesday at 8pm?")
    await wa.advance("25h")
    follow_up = wa.replies("user")[-1]
    assert re.match(r"Still want \\w+ \\d+ \\w+ at 20:00\\? Reply to confirm\\.", follow_up)
"""
SCENARIO = """\
name: the follow-up is the business's template
steps:
  - say: Is there a table next wednesday at 8pm?
  - wait: 25h
  - expect: {template: true, reply_contains: "Still want"}
"""


def _project(pytester: pytest.Pytester, reminder: Mapping[str, object], **ini: str) -> None:
    write_ini(pytester, harness_target=TARGET, harness_scenarios="scenarios", **ini)
    pytester.makepyfile(test_follow_up=FOLLOW_UP)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "follow_up.yaml").write_text(SCENARIO, encoding="utf-8")
    (pytester.path / "business").mkdir()
    templates = json.dumps({"data": [reminder]})
    (pytester.path / "business" / "templates.json").write_text(templates, encoding="utf-8")


def test_the_ini_names_the_templates_of_the_tests_and_the_scenarios(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, REMINDER, harness_templates="business/templates.json")
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once")
    result.assert_outcomes(passed=2)
    # replayed, the agent's template is still the business's
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_the_option_names_them_too_and_wins_over_the_ini(pytester: pytest.Pytester) -> None:
    paused = {**REMINDER, "status": "PAUSED"}
    _project(pytester, REMINDER, harness_templates="business/templates.json")
    (pytester.path / "paused.json").write_text(json.dumps([paused]), encoding="utf-8")
    given = ("-p", "no:cacheprovider", "--harness-record-mode", "once")
    result = pytester.runpytest(*given, "--harness-templates", "paused.json")
    result.assert_outcomes(failed=2)  # the paused template is refused (132015)
    result.stdout.fnmatch_lines(["*132015*"])
    (pytester.path / "ok.json").write_text(json.dumps([REMINDER]), encoding="utf-8")
    pytester.runpytest(*given, "--harness-templates", "ok.json").assert_outcomes(passed=2)


def test_a_bad_templates_file_stops_the_run_with_one_line_naming_it(
    pytester: pytest.Pytester,
) -> None:
    nameless = {"name": "appointment_reminder"}
    _project(pytester, nameless, harness_templates="business/templates.json")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: */business/templates.json:1: data[[]0[]].language: expected a non-empty string"]
    )
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    missing = pytester.runpytest("-p", "no:cacheprovider", "--harness-templates", "nowhere.json")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    [line] = [line for line in missing.stderr.lines if line.strip()]
    assert line.startswith("ERROR: ")
    assert line.endswith("/nowhere.json: can't read the file: No such file or directory")
