"""Spans that reach the harness after the reply: judged where their work happened.

The bot (:mod:`tests.bots.late_spans`) books a table the user never agreed
to, and its span of the booking comes late. Exported a turn late, after the
user's "yes" to something else: in the order things reached the harness the
booking follows that "yes", and ``action_only_after_confirmation`` would
pass; put where the work happened, it precedes it, and the rule catches it.
Exported on a timer, in the scenario's last turn: the scenario would end
before it came; the harness has learnt from the first turn's span how late
spans come, and waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import pytest

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.remote import RemoteSession
from harness.results import ScenarioResult
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from harness.trace import Event, InboundMessage, OutboundSend, ToolCall
from tests.bots.late_spans import ANSWERS, create_app
from tests.bots.loopback import free_port, serve_in_process

pytestmark = pytest.mark.network

LAST_TURN = """
name: a table booked in the last turn
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: A table for 2 at 7, please
  - expect: {reply_contains: Shall I}
  - say: Is there a garden?
  - expect: {reply_contains: Great}
  - say: Make it 8
  - expect: {reply_contains: Booked}
invariants:
  - action_only_after_confirmation: {tool: book_table}
"""
SCENARIO = """
name: a table booked before the yes
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: A table for 2 at 7, please
  - expect: {reply_contains: Shall I}
  - say: Make it 8
  - expect: {reply_contains: Booked}
  - say: yes
  - expect: {reply_contains: Great}
invariants:
  - action_only_after_confirmation: {tool: book_table}
"""


@asynccontextmanager
async def late_bot(delay: float | None = None) -> AsyncIterator[tuple[str, str]]:
    """The bot on loopback; yields its webhook URL and where the run's Graph API is to listen."""
    defaults = SimulatorConfig()
    graph = f"http://127.0.0.1:{free_port()}"
    settings = {
        "WHATSAPP_GRAPH_URL": graph,
        "WHATSAPP_ACCESS_TOKEN": defaults.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": defaults.phone_number_id,
        "WHATSAPP_APP_SECRET": defaults.app_secret,
        "WHATSAPP_VERIFY_TOKEN": defaults.verify_token,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{graph}/v1/traces",
    }
    async with serve_in_process(create_app(settings, delay=delay)) as url:
        yield f"{url}/webhook", graph


def _options(url: str, graph: str, *, concurrency: int = 1) -> RunOptions:
    return RunOptions(
        target_url=url,
        concurrency=concurrency,
        quiet=0.3,
        expect_timeout=10.0,
        channel_options={"graph_url": graph, "serve_graph": True},
    )


def _shape(events: tuple[Event, ...]) -> list[str]:
    shown: list[str] = []
    for event in events:
        if isinstance(event, InboundMessage):
            shown.append(f"user: {event.text}")
        elif isinstance(event, OutboundSend) and event.is_message:
            shown.append(f"agent: {event.text}")
        elif isinstance(event, ToolCall):
            shown.append(f"tool: {event.name}")
    return shown


#: The first turn, as it happened: the bot looked at the tables, then proposed.
FIRST_TURN = ["user: A table for 2 at 7, please", "tool: check_tables", f"agent: {ANSWERS[0]}"]


def _judged_where_the_work_happened(result: ScenarioResult) -> None:
    assert result.error is None
    assert result.conversation is not None
    assert _shape(result.conversation.events) == [
        *FIRST_TURN,
        "user: Make it 8",
        "tool: book_table",
        f"agent: {ANSWERS[1]}",
        "user: yes",
        f"agent: {ANSWERS[2]}",
    ]
    [violation] = result.violations
    assert violation.rule == "action_only_after_confirmation"
    assert "before the user confirmed" in violation.message
    assert violation.turn == 1  # the second turn, where the booking was made
    ats = [e.at for e in result.conversation.events]
    assert ats == sorted(ats)
    [turn] = [
        t
        for t in result.conversation.turns
        if any(isinstance(a, ToolCall) and a.name == "book_table" for a in t.actions)
    ]
    assert [m.text for m in turn.inbound] == ["Make it 8"]


async def test_a_span_exported_a_turn_late_is_judged_where_its_work_happened() -> None:
    async with late_bot() as (url, graph):
        result = await Runner(_options(url, graph)).run_scenario(parse_scenario(SCENARIO))
    _judged_where_the_work_happened(result)


async def test_the_same_in_a_run_of_several_scenarios_sharing_one_graph_api() -> None:
    other = SCENARIO.replace("a table booked before", "Bia's table booked before").replace(
        "5511987654321", "5511987654322"
    )
    async with late_bot() as (url, graph):
        options = _options(url, graph, concurrency=2)
        run = await Runner(options).run([parse_scenario(SCENARIO), parse_scenario(other)])
    assert len(run.scenarios) == 2
    for result in run.scenarios:
        _judged_where_the_work_happened(result)


async def test_a_scenario_ends_once_the_spans_of_its_last_turn_are_in() -> None:
    async with late_bot(delay=0.8) as (url, graph):
        result = await Runner(_options(url, graph)).run_scenario(parse_scenario(LAST_TURN))
    assert result.error is None
    assert result.conversation is not None
    assert _shape(result.conversation.events) == [
        *FIRST_TURN,
        "user: Is there a garden?",
        f"agent: {ANSWERS[2]}",
        "user: Make it 8",
        "tool: book_table",
        f"agent: {ANSWERS[1]}",
    ]
    assert [v.rule for v in result.violations] == ["action_only_after_confirmation"]


class _Sim:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.session: RemoteSession | None = None

    def record(self, event: Event) -> None:
        self.events.append(event)
        assert self.session is not None
        self.session.saw(event)


def _message(text: str, at: datetime) -> InboundMessage:
    return InboundMessage(at=at, user="1", wamid=f"wamid.{text}", type="text", text=text)


async def test_only_reported_events_move_and_never_later_than_they_arrived() -> None:
    sim = _Sim()
    session = RemoteSession(sim, None, "http://agent", "s", None)  # type: ignore[arg-type]
    sim.session = session
    start = datetime(2026, 1, 1, 9, tzinfo=UTC)
    first, second = _message("first", start), _message("second", start + timedelta(seconds=5))
    sim.record(first)
    await asyncio.sleep(0.01)
    before_second = datetime.now(UTC).timestamp()
    await asyncio.sleep(0.01)
    sim.record(second)
    early = ToolCall(at=start + timedelta(seconds=9), user="1", name="early")
    session.reported(early, before_second, before_second)  # its work began before "second" arrived
    late = ToolCall(at=start + timedelta(seconds=9), user="1", name="ahead")
    session.reported(
        late, datetime.now(UTC).timestamp() + 60, datetime.now(UTC).timestamp() + 60
    )  # a clock ahead: stays where it is
    ordered = session.in_order_of_work(sim.events)
    assert [getattr(e, "text", None) or getattr(e, "name", None) for e in ordered] == [
        "first",
        "early",
        "second",
        "ahead",
    ]
    assert ordered[1].at == first.at  # the time of the event it now follows
    assert ordered[3] is late
    assert session.in_order_of_work(sim.events[:2]) == sim.events[:2]  # not the trace it saw
