"""What a distributed run hands a worker: plain JSON that gives back the same options and lines."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.exceptions import ConfigError
from harness.suites.jobs import ScenarioJob, decode_options, encode_options, job_key
from harness.suites.runner import RunOptions
from harness.suites.scenario import load_scenario, parse_scenario

SUITE = Path(__file__).resolve().parents[3] / "scenarios" / "booking"


def test_the_run_options_go_to_json_and_come_back_equal() -> None:
    options = RunOptions(
        target="agents.booking:agent_factory",
        concurrency=3,
        seed=7,
        store_url="redis://127.0.0.1:6379/3",
        agent_settings={"BOOKING_REGRESSIONS": "no_dedupe"},
        channel_options={"app_secret": "s3cret"},
        import_paths=("/srv/project",),
        start=datetime(2026, 1, 1, 9, tzinfo=UTC),
        fail_fast=True,
    )
    data = json.loads(json.dumps(encode_options(options)))
    assert decode_options(data) == options


def test_options_with_a_field_this_version_does_not_know_are_refused() -> None:
    data = encode_options(RunOptions())
    data["warp_speed"] = 9
    with pytest.raises(ConfigError, match="unknown field 'warp_speed'"):
        decode_options(data)


def test_a_job_carries_the_file_as_written_so_violations_name_the_same_lines() -> None:
    path = SUITE / "happy_confirm_button.yaml"
    scenario = load_scenario(path)
    job = ScenarioJob.of("run0-1", 4, scenario, RunOptions())
    sent = ScenarioJob.from_kwargs(json.loads(json.dumps(job.to_kwargs())))
    again = sent.scenario()
    assert again == scenario
    assert [s.line for s in again.steps] == [s.line for s in scenario.steps]
    assert sent.key == job_key("run0-1", 4) == "run0-1:4"


def test_a_scenario_without_a_file_travels_as_its_yaml() -> None:
    scenario = parse_scenario("name: inline\nsteps:\n  - say: hi\n")
    job = ScenarioJob.of("run0-1", 0, scenario, RunOptions())
    assert job.path == ""
    assert job.scenario().name == "inline"
    assert [s.action for s in job.scenario().steps] == ["say"]


def test_a_job_missing_a_field_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="bad field 'text'"):
        ScenarioJob.from_kwargs({"run_id": "r", "index": 0, "path": "", "options": {}})
