"""Sends to numbers that are none of a scenario's users, in every report, beside the verdict.

A bot that answers a number of its own instead of the user leaves the
scenario failing with "no answer"; the console, JSON, JUnit XML and HTML all
say where the answer went, and none of them changes the scenario's status.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

from rich.console import Console

from harness.report import print_summary, render_html, result_line, write_json, write_junit
from harness.report.json_report import load_json
from harness.results import RunResult, StraySend
from harness.suites.realtime import with_run_news
from harness.trace import Event
from tests.harness.report.dom import parse
from tests.harness.report.sample import double_booking, happy_booking

STRAY = StraySend(
    to="15550009999",
    type="text",
    text="Booked for friday",
    wamid="wamid.STRAY1",
    outcome="accepted, then failed: 131047 (Re-engagement message)",
)
HEADLINE = (
    "the agent sent text 'Booked for friday' to 15550009999, a number that is none of this "
    "scenario's users; accepted, then failed: 131047 (Re-engagement message)"
)


def _run() -> RunResult:
    passed = happy_booking().model_copy(update={"stray_sends": (STRAY,)})
    failed = double_booking().model_copy(update={"stray_sends": (STRAY,)})
    return RunResult(scenarios=(passed, failed), duration_s=0.3)


def test_a_stray_send_reads_as_one_line_saying_how_many_scenarios_ran() -> None:
    assert STRAY.headline() == HEADLINE
    shared = STRAY.model_copy(update={"running": 3, "outcome": "", "text": None})
    assert shared.headline() == (
        "the agent sent a text message to 15550009999, a number that matched no scenario's "
        "user (sent while 3 scenarios ran: listed on each)"
    )


def test_the_result_line_says_where_the_agent_sent_and_keeps_the_status() -> None:
    passed, failed = _run().scenarios
    assert result_line(passed) == (
        "PASS  happy booking (0.12s); the agent sent to 15550009999, none of its users"
    )
    line = result_line(failed)
    assert line.startswith("FAIL  double booking: ")
    assert line.endswith("; the agent sent to 15550009999, none of its users")


def test_the_summary_shows_the_stray_send_of_a_passing_and_of_a_failing_scenario() -> None:
    console = Console(record=True, width=300, color_system=None, file=StringIO())
    print_summary(_run(), console)
    lines = console.export_text().splitlines()
    assert lines.count(f"  ! stray send: {HEADLINE}") == 2
    assert lines[-1].startswith("2 scenarios: 1 passed, 1 failed")


def test_the_json_report_keeps_each_stray_send_and_loads_it_back(tmp_path: Path) -> None:
    path = write_json(_run(), tmp_path / "report.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["scenarios"][0]["stray_sends"] == [
        {
            "to": "15550009999",
            "type": "text",
            "text": "Booked for friday",
            "at": None,
            "wamid": "wamid.STRAY1",
            "outcome": "accepted, then failed: 131047 (Re-engagement message)",
            "running": 1,
            "written_for": None,
        }
    ]
    assert load_json(path).scenarios[1].stray_sends == (STRAY,)


def test_junit_lists_stray_sends_in_system_err_and_in_the_failure(tmp_path: Path) -> None:
    root = ET.parse(write_junit(_run(), tmp_path / "junit.xml")).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    for case in cases.values():
        err = case.find("system-err")
        assert err is not None
        assert (err.text or "").splitlines() == [f"stray send: {HEADLINE}"]
    assert cases["happy booking"].find("failure") is None
    failure = cases["double booking"].find("failure")
    assert failure is not None
    body = (failure.text or "").splitlines()
    start = body.index("Sent to numbers that are none of this scenario's users:")
    assert body[start + 1] == f"  {HEADLINE}"


def test_the_page_shows_the_stray_sends_of_each_scenario() -> None:
    page = parse(render_html(_run()))
    for status in ("passed", "failed"):
        section = page.find("section", "scenario", data_status=status)
        listed = section.find("ul", "stray-sends")
        assert [li.text for li in listed.find_all("li")] == [f"stray send: {HEADLINE}"]


def test_a_failing_scenario_names_the_numbers_the_agent_saw() -> None:
    # A run against a URL gives each scenario numbers of its own: the reader of a failure
    # needs them to find the conversation in the agent's own logs.
    failed = double_booking().model_copy(update={"numbers": {"Ana": "5517770113166"}})
    passed = happy_booking().model_copy(update={"numbers": {"Bruno": "4915100000001"}})
    console = Console(record=True, width=300, color_system=None, file=StringIO())
    print_summary(RunResult(scenarios=(failed, passed)), console)
    text = console.export_text()
    assert "  The agent saw the users as: Ana 5517770113166" in text.splitlines()
    assert "4915100000001" not in text
    assert json.loads(failed.model_dump_json())["numbers"] == {"Ana": "5517770113166"}


class _Shared:
    """A run context that kept one stray send and no late ones."""

    def late(self, namespace: str) -> list[Event]:
        return []

    def strays(self, namespace: str) -> list[StraySend]:
        return [STRAY]


def test_a_send_to_a_number_as_the_scenario_writes_it_points_to_keep_numbers() -> None:
    # A bot answering the number it is configured with, which the scenario gives Ana: the run
    # gave Ana another, and the line says how to keep the scenario's.
    result = double_booking()
    told = with_run_news(result, _Shared(), "run:0", {"15550009999": "Ana"})
    [stray] = told.stray_sends
    assert stray.written_for == "Ana"
    assert stray.headline() == (
        "the agent sent text 'Booked for friday' to 15550009999, a number that is none of this "
        "scenario's users (it is Ana's number as the scenario writes it; the run gave Ana one "
        "of its own: --keep-numbers keeps the scenario's); accepted, then failed: 131047 "
        "(Re-engagement message)"
    )
    [plain] = with_run_news(result, _Shared(), "run:0", {"5511987654321": "Ana"}).stray_sends
    assert plain.headline() == HEADLINE
