"""report.json: the run as data, written atomically and loadable back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.exceptions import ConfigError
from harness.files import write_atomic
from harness.report import load_json, report_data, write_json
from harness.results import RunResult
from tests.harness.report.sample import booking_run


def test_report_is_the_run_plus_a_summary(tmp_path: Path) -> None:
    run = booking_run()
    path = write_json(run, tmp_path / "out" / "report.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["summary"] == {
        "passed": 1,
        "failed": 1,
        "errors": 1,
        "skipped": 0,
        "inconclusive": 0,
        "total": 3,
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
    del data["summary"]
    assert data == run.model_dump(mode="json")


def test_report_loads_back_unchanged(tmp_path: Path) -> None:
    run = booking_run()
    assert load_json(write_json(run, tmp_path / "report.json")) == run


def test_summary_of_an_empty_run() -> None:
    assert report_data(RunResult())["summary"] == {
        "passed": 0,
        "failed": 0,
        "errors": 0,
        "skipped": 0,
        "inconclusive": 0,
        "total": 0,
        "pass_rates": [],
        "models": [],
    }


def test_write_replaces_an_old_report_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text("old", encoding="utf-8")
    write_json(booking_run(), path)
    assert json.loads(path.read_text(encoding="utf-8"))["summary"]["total"] == 3
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text("old", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(path, "new \ud800 text")  # a lone surrogate can't be UTF-8
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "a report is a JSON object, found list"),
        ('{"scenarios": [{"name": "x"}]}', "scenarios.0.status"),
        ('{"scenarios": [], "surprise": 1}', "surprise"),
    ],
)
def test_loading_something_else_names_the_file_and_the_problem(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "report.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=expected) as caught:
        load_json(path)
    assert str(path) in str(caught.value)


def test_loading_a_missing_file_is_a_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_json(tmp_path / "nope.json")
