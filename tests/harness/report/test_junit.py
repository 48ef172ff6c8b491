"""junit.xml: a test case per scenario, read the way CI systems read it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from harness.report import junit_xml, write_junit, xml_safe
from harness.results import RunResult, ScenarioResult, Violation
from tests.harness.report.sample import DANGEROUS, booking_run

# What the common JUnit schema (Jenkins/Ant, as GitLab and GitHub reporters read it) allows.
_CHILDREN = {
    "testsuites": {"testsuite"},
    "testsuite": {"properties", "testcase", "system-out", "system-err"},
    "properties": {"property"},
    "testcase": {"properties", "failure", "error", "skipped", "system-out", "system-err"},
    "property": set(),
    "failure": set(),
    "error": set(),
}
_REQUIRED = {
    "testsuite": {"name", "tests", "failures", "errors", "time"},
    "testcase": {"name", "classname", "time"},
    "property": {"name", "value"},
    "failure": {"message", "type"},
    "error": {"message", "type"},
}


def _check_schema(root: ET.Element) -> None:
    assert root.tag == "testsuites"
    for element in root.iter():
        children = {child.tag for child in element}
        assert children <= _CHILDREN[element.tag], element.tag
        assert _REQUIRED.get(element.tag, set()) <= set(element.attrib), element.tag
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        assert int(suite.get("tests", "")) == len(cases)
        assert int(suite.get("failures", "")) == sum(
            1 for c in cases if c.find("failure") is not None
        )
        assert int(suite.get("errors", "")) == sum(1 for c in cases if c.find("error") is not None)
        float(suite.get("time", ""))
        for case in cases:
            float(case.get("time", ""))
            assert len([c for c in case if c.tag in ("failure", "error", "skipped")]) <= 1


def _cases(xml: str) -> dict[str, ET.Element]:
    root = ET.fromstring(xml)
    _check_schema(root)
    return {case.get("name", ""): case for case in root.iter("testcase")}


def test_the_document_follows_the_junit_layout(tmp_path: Path) -> None:
    path = write_junit(booking_run(), tmp_path / "junit.xml")
    text = path.read_text(encoding="utf-8")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.parse(path).getroot()
    _check_schema(root)
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.get("name") == "harness"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    assert suite.get("time") == "0.480"
    assert suite.get("timestamp") == "2025-03-01T10:00:00"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["target"] == "agents.booking:app"


def test_one_testcase_per_scenario() -> None:
    cases = _cases(junit_xml(booking_run()))
    assert list(cases) == ["happy booking", "double booking", "agent crash"]
    happy = cases["happy booking"]
    assert happy.get("classname") == "scenarios/booking/happy.yaml"
    assert happy.get("time") == "0.120"
    assert happy.find("failure") is None
    assert happy.find("error") is None


def test_a_failure_carries_the_invariant_the_turn_and_the_messages() -> None:
    failure = _cases(junit_xml(booking_run()))["double booking"].find("failure")
    assert failure is not None
    assert failure.get("type") == "no_repeated_side_effects"
    assert failure.get("message") == (
        "no_repeated_side_effects at turn 2 (line 5): "
        "book_table ran 2 times for one message (wamid.A2)"
    )
    body = failure.text or ""
    assert "1. [invariant] no_repeated_side_effects\n   turn: 2\n" in body
    assert "     tool 09:59:43: book_table {party: 2} -> B-2" in body
    assert "2. [expectation] expect" in body
    assert "expected exactly 1 booking, found 2" in body
    assert body.index("Reproduce with:") > body.index("2. [expectation]")
    assert '    - say: "yes"' in body


def test_an_errored_scenario_is_an_error_not_a_failure() -> None:
    case = _cases(junit_xml(booking_run()))["agent crash"]
    assert case.find("failure") is None
    error = case.find("error")
    assert error is not None
    assert error.get("message") == "agent answered 500 to every delivery"
    assert "RuntimeError: boom" in (error.text or "")


def test_classname_falls_back_to_the_channel() -> None:
    run = RunResult(scenarios=(ScenarioResult(name="x", channel="direct", status="passed"),))
    assert _cases(junit_xml(run))["x"].get("classname") == "direct"


def test_markup_and_characters_xml_cannot_hold_survive_as_text() -> None:
    nasty = f"{DANGEROUS}\x00\x1b[31m\ufffe ]]> end"
    scenario = ScenarioResult(
        name=nasty,
        status="failed",
        violations=(Violation(rule="r<1>", message=nasty, turn=0, messages=(nasty,)),),
        reproduce=f"say: {nasty}\n",
    )
    xml = junit_xml(RunResult(scenarios=(scenario,)))
    clean = f"{DANGEROUS}[31m ]]> end"
    case = _cases(xml)[clean]
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("type") == "r<1>"
    assert failure.get("message") == f"r<1> at turn 1: {clean}"
    assert f"     {clean}" in (failure.text or "")
    assert "<script>" not in xml


def test_xml_safe_keeps_what_xml_allows() -> None:
    assert xml_safe("a\tb\nc\rd é 😀") == "a\tb\nc\rd é 😀"
    assert xml_safe("a\x00b\x08c\x1fd\ud800e\uffff") == "abcde"


def test_a_failed_scenario_without_violations_still_fails() -> None:
    run = RunResult(scenarios=(ScenarioResult(name="x", status="failed"),))
    failure = _cases(junit_xml(run))["x"].find("failure")
    assert failure is not None
    assert failure.get("message") == "scenario failed"
