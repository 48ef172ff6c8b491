"""``junit.xml``: one test case per scenario, for CI systems that read JUnit reports.

The layout is the common denominator that Jenkins, GitLab and GitHub
reporters read: ``testsuites > testsuite > testcase``, with ``failure`` for
a scenario whose invariants or expectations failed, ``error`` for one
that could not be run to its end and ``skipped`` for one its channel does
not play; the steps a played scenario skipped are listed in its
``system-out``, and the failures of the agent's own background work and its
sends to numbers that are none of the scenario's users in its ``system-err``,
a line each. A failure's message is the headline of the violation that names
its first cause (:mod:`harness.report.causes`) and its body lists every
violation, by cause, with the conversation lines that show it, the sends to
numbers that are none of its users, and the YAML that reproduces it.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC
from pathlib import Path

from harness.files import write_atomic
from harness.report.causes import scenario_causes
from harness.results import RunResult, ScenarioResult

__all__ = ["junit_xml", "write_junit", "xml_safe"]

SUITE_NAME = "harness"

# Characters XML 1.0 cannot hold at all, even escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """``text`` without the characters XML 1.0 forbids (control characters, lone surrogates)."""
    return _NOT_XML.sub("", text)


def _json(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def _set(element: ET.Element, **attrs: str) -> None:
    for key, value in attrs.items():
        element.set(key, xml_safe(value))


def _failure_body(scenario: ScenarioResult) -> str:
    """Every violation of a failed scenario as plain text, by cause, then the reproducing YAML.

    Each cause's leading violation is numbered first; those that follow from
    it come next, each saying which one they follow.
    """
    lines: list[str] = []
    number = 0
    for cause in scenario_causes(scenario):
        lead = number + 1
        for violation in cause.violations:
            number += 1
            same = f" (from the same cause as {lead})" if number != lead else ""
            lines.append(f"{number}. [{violation.kind}] {violation.rule}{same}")
            if violation.turn is not None:
                lines.append(f"   turn: {violation.turn + 1}")
            if violation.step is not None:
                lines.append(f"   step: {violation.step}")
            if violation.line is not None:
                lines.append(f"   line: {violation.line}")
            lines.append(f"   message: {violation.message}")
            if violation.messages:
                lines.append("   messages:")
                lines.extend(f"     {message}" for message in violation.messages)
            lines.append("")
    if scenario.stray_sends:
        lines.append("Sent to numbers that are none of this scenario's users:")
        lines.extend(f"  {stray.headline()}" for stray in scenario.stray_sends)
        lines.append("")
    if scenario.reproduce:
        lines.append("Reproduce with:")
        lines.extend(f"  {line}" for line in scenario.reproduce.rstrip("\n").splitlines())
    return "\n".join(lines).rstrip("\n") + "\n"


def _testcase(parent: ET.Element, scenario: ScenarioResult) -> None:
    case = ET.SubElement(parent, "testcase")
    _set(
        case,
        classname=scenario.path or scenario.channel,
        name=scenario.name,
        time=_seconds(scenario.duration_s),
    )
    # pytest writes per-test properties the same way; CI readers show them as metadata.
    props = {"seed": str(scenario.seed), "channel": scenario.channel}
    if scenario.status == "inconclusive":
        props["status"] = "inconclusive"
    props.update({f"fault.{key}": _json(value) for key, value in sorted(scenario.faults.items())})
    properties = ET.SubElement(case, "properties")
    for key, value in props.items():
        _set(ET.SubElement(properties, "property"), name=key, value=value)
    if scenario.status == "failed":
        found = scenario_causes(scenario)
        first = found[0].lead if found else None
        failure = ET.SubElement(case, "failure")
        _set(
            failure,
            message=first.headline() if first else "scenario failed",
            type=first.rule if first else "failed",
        )
        failure.text = xml_safe(_failure_body(scenario))
    elif scenario.status == "error":
        error = ET.SubElement(case, "error")
        text = scenario.error or "the scenario could not be run"
        _set(error, message=text.strip().splitlines()[0] if text.strip() else text, type="error")
        error.text = xml_safe(text)
    elif scenario.status == "skipped":
        reason = scenario.skipped[0].reason if scenario.skipped else "not played"
        _set(ET.SubElement(case, "skipped"), message=reason)
    elif scenario.status == "inconclusive":
        # JUnit has no such outcome: a skip that says so, and the status as a property.
        judged = scenario.judgement.headline() if scenario.judgement else "judge: inconclusive"
        _set(ET.SubElement(case, "skipped"), message=f"INCONCLUSIVE: {judged}", type="inconclusive")
    if scenario.skipped and scenario.status != "skipped":
        out = ET.SubElement(case, "system-out")
        out.text = xml_safe("".join(f"skipped {s.headline()}\n" for s in scenario.skipped))
    if scenario.agent_errors or scenario.stray_sends:
        err = ET.SubElement(case, "system-err")
        lines = [f"agent: {line}" for line in scenario.agent_errors]
        lines += [f"stray send: {stray.headline()}" for stray in scenario.stray_sends]
        err.text = xml_safe("".join(f"{line}\n" for line in lines))


def junit_xml(run: RunResult) -> str:
    """The JUnit XML document for a run, as text with its XML declaration."""
    counts = {
        "tests": str(len(run.scenarios)),
        "failures": str(run.failed),
        "errors": str(run.errors),
        "skipped": str(run.skipped + run.inconclusive),
        "time": _seconds(run.duration_s),
    }
    root = ET.Element("testsuites")
    _set(root, name=SUITE_NAME, **counts)
    suite = ET.SubElement(root, "testsuite")
    _set(suite, name=SUITE_NAME, **counts)
    if run.started_at is not None:
        # JUnit's schema wants a timestamp without a zone: write UTC, the same on every machine.
        naive = run.started_at.astimezone(UTC).replace(tzinfo=None)
        _set(suite, timestamp=naive.isoformat(timespec="seconds"))
    properties = ET.SubElement(suite, "properties")
    for key, value in (
        ("target", run.target),
        ("channel", run.channel),
        ("seed", str(run.seed)),
    ):
        _set(ET.SubElement(properties, "property"), name=key, value=value)
    for rate in run.pass_rates():  # --repeat: each repeated scenario's pass rate
        value = f"{rate.passed}/{rate.runs}"
        _set(ET.SubElement(properties, "property"), name=f"pass_rate.{rate.name}", value=value)
    for scenario in run.scenarios:
        _testcase(suite, scenario)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(run: RunResult, path: Path | str) -> Path:
    """Write ``junit.xml`` atomically and return its path."""
    return write_atomic(path, junit_xml(run))
