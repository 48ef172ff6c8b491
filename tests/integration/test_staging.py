"""The reference agent at a URL, as on a staging deployment, joined to the run through Redis.

The agent is served over loopback HTTP on real time, configured like a
deployment (the simulator's secrets, the fake Graph API as its Graph API) and
joined to harness runs with ``HARNESS_STORE_URL``: it reports its model and
tool calls, follows each scenario's clock and keeps scenarios apart. The
runner reaches it only through its URL and the store.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agents.booking import BookingSettings, build_llm, create_app
from channels.whatsapp.config import SimulatorConfig
from harness.recording import wrap, wrap_tools
from harness.remote import HarnessLink
from harness.results import RunResult
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import Scenario, load_scenarios, parse_scenario
from tests.bots.loopback import free_port, serve_in_process

SUITE = Path(__file__).resolve().parents[2] / "scenarios" / "booking"

SCENARIO = """
name: booking against a URL
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: A table on friday at 8pm please
  - expect: {reply_contains: Confirm, tool_not_called: book_appointment}
  - tap: confirm
  - expect:
      reply_contains: Booked
      tool_called: {name: book_appointment, args: {date: "2026-01-02"}}
invariants:
  - sends_valid
  - every_inbound_answered
  - no_repeated_side_effects
"""

pytestmark = [pytest.mark.network, pytest.mark.redis]


@asynccontextmanager
async def _booking_agent(
    redis_url: str, *, joined: bool, **settings: str
) -> AsyncIterator[tuple[str, int, str]]:
    """The booking agent on a loopback port; yields its URL, the Graph port, the number's id."""
    defaults = SimulatorConfig()
    graph_port = free_port()
    # A number of its own: the agent's announcement in the shared Redis is per number.
    phone_number_id = str(100_000_000_000_000 + uuid.uuid4().int % 10**14)
    env = {
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}",
        "WHATSAPP_ACCESS_TOKEN": defaults.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": phone_number_id,
        "WHATSAPP_APP_SECRET": defaults.app_secret,
        "WHATSAPP_VERIFY_TOKEN": defaults.verify_token,
        **settings,
    }
    booking = BookingSettings.from_env(env)
    if joined:
        link = HarnessLink.from_settings({"HARNESS_STORE_URL": redis_url})
        assert link is not None
        app = create_app(
            booking, llm=wrap(build_llm(booking), link), tools=wrap_tools(link), link=link
        )
    else:
        app = create_app(booking)
    async with serve_in_process(app) as url:
        yield url, graph_port, phone_number_id


async def _run(
    url: str,
    graph_port: int,
    phone_number_id: str,
    redis_url: str,
    scenarios: list[Scenario],
    concurrency: int,
) -> RunResult:
    options = RunOptions(
        target_url=f"{url}/webhook",
        store_url=redis_url,
        concurrency=concurrency,
        quiet=1.0,
        expect_timeout=10.0,
        channel_options={
            "graph_url": f"http://127.0.0.1:{graph_port}",
            "serve_graph": True,
            "phone_number_id": phone_number_id,
        },
    )
    return await Runner(options).run(scenarios)


def _failures(run: RunResult) -> dict[str, list[str] | str]:
    return {
        r.name: r.error or [v.headline() for v in r.violations]
        for r in run.scenarios
        if r.status != "passed"
    }


async def test_an_agent_joined_to_the_run_is_checked_tools_included(redis_url: str) -> None:
    scenario = parse_scenario(SCENARIO)
    async with _booking_agent(redis_url, joined=True) as (url, graph_port, number):
        run = await _run(url, graph_port, number, redis_url, [scenario], 1)
    assert _failures(run) == {}
    [result] = run.scenarios
    assert result.conversation is not None
    assert result.conversation.observed == ("llm", "tool")
    assert [c.name for c in result.conversation.tool_calls()] == [
        "search_slots",
        "book_appointment",
    ]
    # The scenario started where an in-process run starts: the agent follows its clock.
    assert result.conversation.events[0].at.date().isoformat() == "2026-01-01"
    assert run.target.endswith("/webhook")


async def test_dates_in_expectations_follow_an_agent_on_real_time(redis_url: str) -> None:
    # Not joined to the run, the agent lives on today's date, not on the in-process one.
    scenario = parse_scenario(
        """
name: a proposal for the coming friday, whenever the run is
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: A table on friday at 8pm please
  - expect: {reply_contains: ["${friday:%A %-d %B}", Confirm]}
  - say: what about saturday?
  - expect: {reply_contains: "${saturday:%A %-d %B}", reply_not_contains: "${friday:%A %-d %B}"}
"""
    )
    async with _booking_agent(redis_url, joined=False) as (url, graph_port, number):
        today = datetime.now(UTC).date()
        run = await _run(url, graph_port, number, redis_url, [scenario], 1)
    assert _failures(run) == {}
    [result] = run.scenarios
    assert result.conversation is not None
    assert result.conversation.events[0].at.date() in (today, today + timedelta(days=1))


async def test_tool_checks_over_an_agent_that_reports_none_do_not_pass(redis_url: str) -> None:
    scenario = parse_scenario(SCENARIO)
    async with _booking_agent(redis_url, joined=False) as (url, graph_port, number):
        run = await _run(url, graph_port, number, redis_url, [scenario], 1)
    [result] = run.scenarios
    assert result.status == "failed"
    unseen = [v for v in result.violations if "can't be checked" in v.message]
    assert [(v.rule, v.line) for v in unseen] == [
        ("expect", 7),
        ("expect", 9),
        ("no_repeated_side_effects", 15),
    ]


async def test_a_redelivered_confirm_books_twice_at_a_url_without_dedupe(redis_url: str) -> None:
    suite = load_scenarios([SUITE / "redelivered_confirm_books_once.yaml"])
    regression = {"BOOKING_REGRESSIONS": "no_dedupe"}
    async with _booking_agent(redis_url, joined=True, **regression) as (url, graph_port, number):
        run = await _run(url, graph_port, number, redis_url, suite, 1)
    [result] = run.scenarios
    assert "no_repeated_side_effects" in {v.rule for v in result.violations}


@pytest.mark.slow
async def test_the_bundled_suite_passes_at_a_url_concurrently(redis_url: str) -> None:
    suite = load_scenarios([SUITE])
    async with _booking_agent(redis_url, joined=True) as (url, graph_port, number):
        started = time.perf_counter()
        run = await _run(url, graph_port, number, redis_url, suite, 8)
        elapsed = time.perf_counter() - started
    assert _failures(run) == {}
    assert run.passed == len(suite) == 15
    # Waiting for one scenario's agent never holds up another's: the run takes about as
    # long as its slowest scenario plus the quiet window, not the sum of them all.
    slowest = max(r.duration_s for r in run.scenarios)
    assert elapsed < slowest * 2 + 5
