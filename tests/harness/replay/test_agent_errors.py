"""A replay reports the agent's failed background work in its result, a line each, never logged."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from agents.booking import agent_factory
from harness.channel import AgentEnvironment
from harness.failures import report_failure
from harness.fixture import load_fixture
from harness.replay.outcome import replay_scenario_result
from harness.replay.playback import replay_fixture
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import load_scenario

FIXTURE = Path(__file__).resolve().parents[3] / "scenarios/booking/fixtures/happy_confirm_button"
HERE = "tests.harness.replay.test_agent_errors"

_kept: set[asyncio.Task[None]] = set()


async def _lost() -> None:
    raise RuntimeError("the CRM could not be told")


def careless_factory(env: AgentEnvironment) -> object:
    """The booking agent, plus work started on every webhook that fails and nobody awaits."""
    app: Any = agent_factory(env)

    async def careless(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            task = asyncio.get_running_loop().create_task(_lost())
            _kept.add(task)
            task.add_done_callback(_kept.discard)
        await app(scope, receive, send)

    return careless


async def test_work_that_fails_unawaited_is_a_line_of_the_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = Runner(RunOptions(target=f"{HERE}:careless_factory"))
    with caplog.at_level(logging.DEBUG):
        result = await replay_fixture(runner, load_fixture(FIXTURE))
    assert result.status == "same"  # the conversation itself is unchanged
    assert result.agent_errors
    assert set(result.agent_errors) == {
        "background task failed: RuntimeError: the CRM could not be told"
    }
    assert not [r for r in caplog.records if r.exc_info]  # no traceback was logged
    assert replay_scenario_result(result).agent_errors == result.agent_errors


async def test_the_replays_own_divergence_is_reported_once_not_as_the_agents_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The booking agent's background task fails with the replay's Divergence: the replay
    # reports it as its divergence, and neither logs it nor lists it as the agent's failure.
    with caplog.at_level(logging.DEBUG):
        result = await replay_fixture(
            Runner(RunOptions()), load_fixture(FIXTURE), prompts={"system": "Be rude."}
        )
    assert result.status == "diverged"
    assert [d for d in result.divergences if "system prompt differs" in d]
    assert result.agent_errors == ()
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []


async def test_the_booking_agent_reports_its_own_failures_instead_of_logging_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = Runner(RunOptions(target=f"{HERE}:reporting_factory"))
    with caplog.at_level(logging.DEBUG):
        result = await replay_fixture(runner, load_fixture(FIXTURE))
    assert result.status == "same"
    assert set(result.agent_errors) == {
        "CRM update failed: RuntimeError: the CRM could not be told"
    }
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []


def reporting_factory(env: AgentEnvironment) -> object:
    """The booking agent, plus work on every message that fails and says so to the harness."""
    app: Any = agent_factory(env)

    def done(task: asyncio.Task[None]) -> None:
        error = task.exception()
        if error is not None and not report_failure(error, "CRM update"):
            logging.getLogger(HERE).error("CRM update failed", exc_info=error)

    async def reporting(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            task = asyncio.get_running_loop().create_task(_lost())
            _kept.add(task)
            task.add_done_callback(_kept.discard)
            task.add_done_callback(done)
        await app(scope, receive, send)

    return reporting


async def test_a_run_lists_what_the_agent_reported_in_the_scenarios_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    scenario = load_scenario(FIXTURE.parents[1] / "happy_confirm_button.yaml")
    runner = Runner(RunOptions(target=f"{HERE}:reporting_factory"))
    with caplog.at_level(logging.DEBUG):
        result = await runner.run_scenario(scenario)
    assert result.status == "passed"
    assert result.agent_errors
    assert set(result.agent_errors) == {
        "CRM update failed: RuntimeError: the CRM could not be told"
    }
    assert not [r for r in caplog.records if r.exc_info]
