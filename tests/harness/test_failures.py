"""The agent's background work failing: reported to the run in progress, else left to the agent."""

from __future__ import annotations

import asyncio
from io import StringIO

from rich.console import Console

from harness.failures import collecting_failures, failure_line, report_failure
from harness.report import print_summary
from harness.results import RunResult
from tests.harness.report.sample import happy_booking


def test_outside_a_run_nothing_takes_the_failure() -> None:
    assert report_failure(RuntimeError("boom")) is False


def test_a_failure_is_one_line_naming_the_work_and_the_error() -> None:
    error = ValueError("the store said no\nand more lines")
    assert failure_line(error, "background task") == (
        "background task failed: ValueError: the store said no"
    )
    assert failure_line(KeyError()) == "background work failed: KeyError"


def test_the_tasks_an_agent_starts_report_to_the_run_they_belong_to() -> None:
    def done(task: asyncio.Task[None]) -> None:
        error = task.exception()
        assert error is not None
        assert report_failure(error, "background task")

    async def fail() -> None:
        raise RuntimeError("the follow-up could not be sent")

    async def agent() -> None:
        task = asyncio.get_running_loop().create_task(fail())
        task.add_done_callback(done)
        await asyncio.wait([task])
        await asyncio.sleep(0)  # the done callback runs on the next pass of the loop

    async def run() -> list[str]:
        with collecting_failures() as collected:
            await agent()
        assert report_failure(RuntimeError("after the run")) is False
        return collected

    assert asyncio.run(run()) == [
        "background task failed: RuntimeError: the follow-up could not be sent"
    ]


def test_the_console_shows_what_failed_even_for_a_scenario_that_passed() -> None:
    line = "background task failed: RuntimeError: boom"
    scenario = happy_booking().model_copy(update={"agent_errors": (line,)})
    console = Console(record=True, width=200, color_system=None, file=StringIO())
    print_summary(RunResult(scenarios=(scenario,)), console)
    assert f"  ! agent: {line}" in console.export_text().splitlines()
