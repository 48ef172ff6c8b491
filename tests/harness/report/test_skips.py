"""Skipped scenarios and skipped steps in every report: the console, JSON, JUnit XML and HTML.

A skip is never silent: a scenario not played says SKIP and why, and a
scenario played without some of its steps says which and why.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

from rich.console import Console

from harness.report import (
    SuiteProgress,
    print_summary,
    render_html,
    result_line,
    write_json,
    write_junit,
)
from harness.results import RunResult, ScenarioResult, Skip
from tests.harness.report.dom import parse
from tests.harness.report.sample import happy_booking

ELSEWHERE = "tagged whatsapp-only, so not played on the direct channel"
NO_STATUS = "the direct channel has no delivery statuses (sent, delivered, read)"


def _run() -> RunResult:
    whole = ScenarioResult(
        name="chunked policy",
        path="scenarios/booking/policy.yaml",
        channel="direct",
        status="skipped",
        skipped=(Skip(what="scenario", reason=ELSEWHERE),),
    )
    partly = happy_booking().model_copy(
        update={
            "channel": "direct",
            "skipped": (
                Skip(what="expect.status", reason=NO_STATUS, step=3, line=9),
                Skip(what="redeliver", reason="no deliveries to repeat", step=4, line=10),
            ),
        }
    )
    return RunResult(scenarios=(partly, whole), channel="direct", duration_s=0.2)


def test_a_result_line_says_skip_and_why_or_what_was_left_out() -> None:
    partly, whole = _run().scenarios
    assert result_line(whole) == f"SKIP  chunked policy: {ELSEWHERE}"
    assert result_line(partly) == "PASS  happy booking (0.12s; skipped: expect.status, redeliver)"


def test_progress_counts_skipped_scenarios_apart() -> None:
    out = StringIO()
    with SuiteProgress(2, console=Console(file=out, width=200, color_system=None)) as progress:
        for result in _run().scenarios:
            progress.advance(result)
    assert (progress.passed, progress.skipped, progress.done) == (1, 1, 2)
    assert out.getvalue().splitlines()[1] == f"SKIP  chunked policy: {ELSEWHERE}"


def test_the_summary_lists_every_skip_with_its_place_and_reason() -> None:
    console = Console(record=True, width=200, color_system=None, file=StringIO())
    print_summary(_run(), console)
    lines = console.export_text().splitlines()
    assert lines[0] == "1 passed, 1 skipped (-v lists them)"  # no failure: no table
    console = Console(record=True, width=200, color_system=None, file=StringIO())
    print_summary(_run(), console, verbose=True)
    row = next(line for line in console.export_text().splitlines() if "chunked policy" in line)
    assert row.split()[3:6] == ["direct", "SKIP", "-"]
    start = lines.index("PASS happy booking  (scenarios/booking/happy.yaml, direct, seed 7)")
    assert lines[start + 1 : start + 3] == [
        f"  - skipped steps[3].expect.status (line 9): {NO_STATUS}",
        "  - skipped steps[4].redeliver (line 10): no deliveries to repeat",
    ]
    start = lines.index("SKIP chunked policy  (scenarios/booking/policy.yaml, direct, seed 0)")
    assert lines[start + 1] == f"  - skipped scenario: {ELSEWHERE}"
    assert lines[-1] == "2 scenarios: 1 passed, 0 failed, 0 errors, 1 skipped in 0.20s"


def test_the_json_report_keeps_every_skip(tmp_path: Path) -> None:
    data = json.loads(write_json(_run(), tmp_path / "report.json").read_text(encoding="utf-8"))
    assert data["summary"] == {
        "passed": 1,
        "failed": 0,
        "errors": 0,
        "skipped": 1,
        "inconclusive": 0,
        "total": 2,
        "pass_rates": [],
        "models": [
            {
                "provider": None,
                "model": "claude-x",
                "source": "live",
                "calls": 1,
                "label": "1 model call: claude-x via an unrecorded provider",
            }
        ],
    }
    partly, whole = data["scenarios"]
    assert whole["status"] == "skipped"
    assert whole["skipped"] == [
        {"what": "scenario", "reason": ELSEWHERE, "step": None, "line": None}
    ]
    assert [s["what"] for s in partly["skipped"]] == ["expect.status", "redeliver"]


def test_junit_marks_a_skipped_case_and_lists_skipped_steps(tmp_path: Path) -> None:
    root = ET.parse(write_junit(_run(), tmp_path / "junit.xml")).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.get("skipped") == "1"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    skipped = cases["chunked policy"].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == ELSEWHERE
    played = cases["happy booking"]
    assert played.find("skipped") is None
    out = played.find("system-out")
    assert out is not None
    assert (out.text or "").splitlines() == [
        f"skipped steps[3].expect.status (line 9): {NO_STATUS}",
        "skipped steps[4].redeliver (line 10): no deliveries to repeat",
    ]


def test_the_page_shows_skips_and_filters_skipped_scenarios() -> None:
    page = parse(render_html(_run()))
    filters = [a.attrs["data-filter"] for a in page.find_all("a", "filter")]
    assert filters == ["all", "passed", "failed", "error", "skipped"]
    whole = page.find("section", "scenario", data_status="skipped")
    assert whole.find("span", "badge").text == "SKIP"
    assert [li.text for li in whole.find("ul", "skips").find_all("li")] == [
        f"skipped scenario: {ELSEWHERE}"
    ]
    assert "Not played on this channel." in whole.text
    played = page.find("section", "scenario", data_status="passed")
    assert [li.text for li in played.find("ul", "skips").find_all("li")] == [
        f"skipped steps[3].expect.status (line 9): {NO_STATUS}",
        "skipped steps[4].redeliver (line 10): no deliveries to repeat",
    ]
