"""``--templates``: a run's fake Graph API has the business's own templates, as Meta lists them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.cli.main import EXIT_DIVERGED, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from tests.support.cli import harness as _harness

ROOT = Path(__file__).resolve().parents[3]
# The reference agent follows up with this template once the 24-hour window has closed.
SCENARIO = ROOT / "scenarios/booking/unconfirmed_followup_template.yaml"
REMINDER = {
    "name": "appointment_reminder",
    "language": "en_US",
    "category": "UTILITY",
    "components": [{"type": "BODY", "text": "Still want {{1}} at {{2}}? Reply to confirm."}],
}


def _run(tmp_path: Path, templates: object) -> tuple[int, str]:
    path = tmp_path / "templates.json"
    path.write_text(json.dumps(templates), encoding="utf-8")
    reports = tmp_path / "reports"
    code = _harness(
        "run", str(SCENARIO), "--target", "agents.booking:agent_factory",
        "--templates", str(path), "--report-dir", str(reports), "-q",
    )  # fmt: skip
    report = (reports / "report.json").read_text(encoding="utf-8") if reports.exists() else ""
    return code, report


def test_the_agents_template_is_sent_when_the_business_has_it(tmp_path: Path) -> None:
    code, report = _run(tmp_path, {"data": [REMINDER]})
    assert code == EXIT_OK, report
    # the report shows the template as the user reads it
    assert re.search(r"Still want \w+ \d+ \w+ at 20:00\? Reply to confirm\.", report), report


@pytest.mark.parametrize(
    ("templates", "answer"),
    [
        ([{**REMINDER, "status": "PAUSED"}], "132015"),
        ([{**REMINDER, "language": "pt_BR"}], "132001"),
        ([{**REMINDER, "components": [{"type": "BODY", "text": "Still want {{1}}?"}]}], "132000"),
    ],
)
def test_a_template_the_business_cant_send_fails_the_run(
    tmp_path: Path, templates: object, answer: str
) -> None:
    code, report = _run(tmp_path, templates)
    assert code == EXIT_FAILED
    assert f"refused a template send with {answer}" in report


def test_a_bad_templates_file_stops_the_run_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _run(tmp_path, [{"name": "appointment_reminder"}])
    assert code == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert "templates.json:1: [0].language: expected a non-empty string" in err
    assert report == ""  # nothing ran


def test_a_fixture_keeps_the_templates_it_was_recorded_with(tmp_path: Path) -> None:
    path = tmp_path / "templates.yaml"
    path.write_text(f"data: {json.dumps([REMINDER])}\n", encoding="utf-8")
    fixture = tmp_path / "fixture"
    recorded = _harness(
        "record", str(SCENARIO), "--target", "agents.booking:agent_factory",
        "--templates", str(path), "--out", str(fixture),
    )  # fmt: skip
    assert recorded == EXIT_OK
    meta = json.loads((fixture / "meta.json").read_text(encoding="utf-8"))
    assert meta["channel_options"]["templates"] == {"data": [REMINDER]}
    sends = [e for e in _events(fixture) if e.get("kind") == "send"]
    assert any(str(e.get("text")).startswith("Still want") for e in sends)
    path.unlink()  # the replay needs no file: the fixture holds the templates
    assert _harness("replay", str(fixture)) == EXIT_OK
    # without them, the agent's template is refused, and the replay differs
    del meta["channel_options"]["templates"]
    (fixture / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    assert _harness("replay", str(fixture)) == EXIT_DIVERGED


def test_record_names_the_line_of_a_bad_template(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "templates.yaml"
    path.write_text("- name: appointment_reminder\n  language: ''\n", encoding="utf-8")
    code = _harness(
        "record", str(SCENARIO), "--target", "agents.booking:agent_factory",
        "--templates", str(path), "--out", str(tmp_path / "fixture"),
    )  # fmt: skip
    assert code == EXIT_USAGE
    assert "templates.yaml:2: [0].language: expected a non-empty string" in capsys.readouterr().err
    assert not (tmp_path / "fixture").exists()


def _events(fixture: Path) -> list[dict[str, object]]:
    lines = (fixture / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]
