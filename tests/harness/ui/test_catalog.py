"""The fixture list: scenario, date, turns and whether the recording keeps its invariants."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.report import render_html
from harness.ui.catalog import catalog, recorded_run

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "scenarios" / "booking" / "fixtures"


def test_each_fixture_is_listed_with_its_scenario_date_turns_and_invariants() -> None:
    [entry] = catalog([FIXTURES / "confirm_by_typing_yes"])
    assert entry.id == 0
    assert entry.scenario == "booking confirmed by typing yes"
    assert entry.recorded_at is not None
    assert entry.recorded_at.year == 2026
    assert entry.turns == 3
    assert entry.invariants == "kept"
    assert "confirm_by_typing_yes" in entry.search_text
    assert "booking confirmed by typing yes" in entry.search_text


def test_a_recording_that_breaks_an_invariant_is_listed_as_broken(tmp_path: Path) -> None:
    copy = tmp_path / "asks_twice"
    shutil.copytree(FIXTURES / "confirm_by_typing_yes", copy)
    meta = json.loads((copy / "meta.json").read_text("utf-8"))
    # a rule the recording breaks: once the user said hello, no message may mention a table
    meta["scenario_yaml"] += "- never_reasks: {pattern: table, fact: hello}\n"
    (copy / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    [entry] = catalog([copy])
    assert entry.invariants == "broken", entry.violations
    assert any(v.startswith("never_reasks") for v in entry.violations)


def test_a_fixture_that_cannot_be_read_stays_listed_with_its_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "meta.json").write_text("{not json", encoding="utf-8")
    good, bad = catalog([FIXTURES / "happy_confirm_button", broken])
    assert good.invariants == "kept"
    assert (bad.id, bad.invariants) == (1, "error")
    assert bad.error is not None
    assert "meta.json" in bad.error


def test_the_recorded_conversation_is_drawn_as_the_report_draws_it() -> None:
    from harness.fixture import load_fixture

    html = render_html(recorded_run(load_fixture(FIXTURES / "confirm_by_typing_yes")))
    assert 'class="msg msg-in' in html
    assert 'class="msg msg-out' in html
    assert "I can book you a table at Casa Lucia" in html
