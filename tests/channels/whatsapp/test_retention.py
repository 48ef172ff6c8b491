"""What a simulator keeps of the past under a retention policy, and how old ids answer then."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channels.whatsapp.config import SimulatorConfig, StatusTiming
from channels.whatsapp.control import control_app
from channels.whatsapp.retention import SERVE_RETENTION, RetentionPolicy
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from harness.trace import ClockJump, Event, InboundMessage, OutboundSend, StatusUpdate
from tests.channels.whatsapp.echo_bot import BotConfig, EchoBot

ANA = "5511987654321"
BO = "15551234567"


@dataclass
class Served:
    """A simulator with the echo bot connected, its control API, and every event ever recorded."""

    sim: WhatsAppSimulator
    bot: EchoBot
    control: httpx.AsyncClient
    graph: httpx.AsyncClient
    recorded: list[Event] = field(default_factory=list)

    async def turn(self, user: str, text: str = "hello") -> str:
        """The user writes, and the conversation runs until it is quiet; the bot forgets it."""
        [wamid] = await self.sim.say(user, text)
        await self.sim.settle()
        for seen in (self.bot.raw_bodies, self.bot.signatures, self.bot.messages):
            seen.clear()
        self.bot.statuses.clear()
        self.bot.send_results.clear()
        return wamid

    async def run(self, elapsed: timedelta) -> None:
        """Let time pass as it does under ``harness serve`` (the clock runs; it does not jump)."""
        await self.sim.run_until(self.sim.clock.now() + elapsed)
        await self.sim.settle()

    async def send(self, body: dict[str, Any]) -> httpx.Response:
        """The agent sends ``body`` to the fake Graph API."""
        config = self.sim.config
        return await self.graph.post(
            f"/{config.api_version}/{config.phone_number_id}/messages",
            json={"messaging_product": "whatsapp", **body},
            headers={"Authorization": f"Bearer {config.access_token}"},
        )


async def _served(
    policy: RetentionPolicy | None, config: SimulatorConfig | None = None, *, fail_first: int = 0
) -> Served:
    config = config or SimulatorConfig(rate_limits=False)
    recorded: list[Event] = []
    sim = WhatsAppSimulator(config, clock=VirtualClock(), retention=policy, sink=recorded.append)
    graph = sim.graph_client()
    bot = EchoBot(
        BotConfig(
            config.app_secret,
            config.verify_token,
            config.access_token,
            config.phone_number_id,
            graph_url=config.public_url,
            fail_first=fail_first,
        ),
        graph,
    )
    sim.connect(bot.app())
    sim.add_user(ANA, "Ana")
    sim.add_user(BO, "Bo")
    control = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=control_app(sim)), base_url="http://sim"
    )
    return Served(sim, bot, control, graph, recorded)


@pytest.fixture
async def opened() -> AsyncIterator[list[Served]]:
    """Simulators opened by a test, closed after it."""
    served: list[Served] = []
    yield served
    for one in served:
        await one.control.aclose()
        await one.sim.aclose()
        await one.graph.aclose()


async def _open(
    opened: list[Served],
    policy: RetentionPolicy | None,
    config: SimulatorConfig | None = None,
    *,
    fail_first: int = 0,
) -> Served:
    served = await _served(policy, config, fail_first=fail_first)
    opened.append(served)
    return served


# -- events, by count and by age ------------------------------------------------------


async def test_the_log_keeps_the_latest_events_up_to_its_count(opened: list[Served]) -> None:
    served = await _open(opened, RetentionPolicy(events=30))
    for i in range(12):
        await served.turn(ANA if i % 2 else BO, f"message {i}")
    served.sim.retention.sweep()
    kept = served.sim.events
    assert len(served.recorded) > 100
    assert len(kept) == 30
    assert kept == served.recorded[-30:]
    assert served.sim.retention.events_first == len(served.recorded) - 30


async def test_events_older_than_their_age_are_dropped(opened: list[Served]) -> None:
    policy = RetentionPolicy(events_for=timedelta(hours=1), active=timedelta(minutes=1))
    served = await _open(opened, policy)
    first = await served.turn(ANA, "before")
    await served.run(timedelta(hours=2))
    second = await served.turn(ANA, "after")
    served.sim.retention.sweep()
    horizon = served.sim.clock.now() - timedelta(hours=1)
    assert all(event.at >= horizon for event in served.sim.events)
    wamids = {e.wamid for e in served.sim.events if isinstance(e, InboundMessage)}
    assert wamids == {second}
    assert first not in wamids
    assert served.sim.events == served.recorded[served.sim.retention.events_first :]


async def test_a_jump_of_the_clock_ages_nothing(opened: list[Served]) -> None:
    # advance 25h tests the 24-hour window; what came before it is still there to read.
    policy = RetentionPolicy(events_for=timedelta(hours=1), outbox_for=timedelta(hours=1))
    served = await _open(opened, policy)
    before = await served.turn(ANA, "before")
    await served.sim.advance(timedelta(hours=25))
    await served.sim.advance(timedelta(hours=25))
    served.sim.retention.sweep()
    inbound = {e.wamid for e in served.sim.events if isinstance(e, InboundMessage)}
    assert inbound == {before}
    assert len(served.sim.outbox) == 1
    # Time running, as it does under serve, ages it: past the hour, it is forgotten.
    await served.run(timedelta(minutes=59))
    served.sim.retention.sweep()
    assert before in {e.wamid for e in served.sim.events if isinstance(e, InboundMessage)}
    await served.run(timedelta(minutes=2))
    after = await served.turn(ANA, "after")
    served.sim.retention.sweep()
    assert {e.wamid for e in served.sim.events if isinstance(e, InboundMessage)} == {after}
    assert len(served.sim.outbox) == 1


async def test_an_active_conversation_keeps_its_current_turn_whole(opened: list[Served]) -> None:
    served = await _open(opened, RetentionPolicy(events=8, active=timedelta(minutes=10)))
    await served.turn(BO, "earlier")
    await served.run(timedelta(minutes=11))  # Bo has gone quiet
    wamid = await served.turn(ANA, "hello")
    served.sim.retention.sweep()
    start = next(
        i
        for i, e in enumerate(served.recorded)
        if isinstance(e, InboundMessage) and e.wamid == wamid
    )
    turn = served.recorded[start:]
    assert len(turn) > 8  # more than the count: kept all the same, while Ana is active
    assert served.sim.events == turn
    # Once Ana has been quiet for longer than that, her turn goes like any other.
    await served.run(timedelta(minutes=11))
    await served.turn(BO, "later")
    served.sim.retention.sweep()
    kept = {e.wamid for e in served.sim.events if isinstance(e, InboundMessage)}
    assert wamid not in kept
    assert all(e.user == BO for e in served.sim.events if isinstance(e, InboundMessage))


async def test_an_active_conversation_holds_at_most_twice_the_count(
    opened: list[Served],
) -> None:
    served = await _open(opened, RetentionPolicy(events=3, active=timedelta(days=1)))
    await served.turn(ANA, "hello")
    served.sim.retention.sweep()
    assert len(served.sim.events) == 6
    assert served.sim.events == served.recorded[-6:]


# -- the outbox --------------------------------------------------------------------------


async def test_the_outbox_keeps_the_latest_sends_by_count_and_by_age(
    opened: list[Served],
) -> None:
    policy = RetentionPolicy(outbox=3, outbox_for=timedelta(hours=1))
    served = await _open(opened, policy)
    for i in range(5):
        await served.turn(ANA, f"message {i}")
    answer = (await served.control.get("/_harness/outbox")).json()
    texts = [m["text"]["body"] for m in answer["messages"]]
    assert texts == ["echo: message 2", "echo: message 3", "echo: message 4"]
    assert (answer["first"], answer["next"], answer["dropped"]) == (2, 5, 2)
    # indices are absolute: send 3 is still the fourth the outbox took
    later = (await served.control.get("/_harness/outbox", params={"since": 3})).json()
    assert [m["text"]["body"] for m in later["messages"]] == ["echo: message 3", "echo: message 4"]
    assert (later["first"], later["next"], later["dropped"]) == (2, 5, 0)
    await served.run(timedelta(hours=2))
    await served.turn(ANA, "later")
    answer = (await served.control.get("/_harness/outbox", params={"since": 1})).json()
    assert [m["text"]["body"] for m in answer["messages"]] == ["echo: later"]
    assert (answer["first"], answer["next"], answer["dropped"]) == (5, 6, 4)


# -- indices stay absolute ------------------------------------------------------------


async def test_event_indices_stay_absolute_across_what_was_dropped(
    opened: list[Served],
) -> None:
    served = await _open(opened, RetentionPolicy(events=20, active=timedelta(seconds=1)))
    for i in range(6):
        await served.turn(ANA, f"message {i}")
    total = len(served.recorded)
    page = (await served.control.get("/_harness/events", params={"since": 0})).json()
    first = total - 20
    assert (page["first"], page["next"], page["dropped"]) == (first, total, first)
    assert len(page["events"]) == 20
    assert page["events"][0]["at"] == served.recorded[first].at.isoformat().replace("+00:00", "Z")
    later = (await served.control.get("/_harness/events", params={"since": first + 15})).json()
    assert (later["first"], later["next"], later["dropped"]) == (first, total, 0)
    assert later["events"] == page["events"][15:]
    await served.turn(ANA, "one more")
    fresh = (await served.control.get("/_harness/events", params={"since": total})).json()
    assert fresh["dropped"] == 0
    assert len(fresh["events"]) == len(served.recorded) - total
    done = (await served.control.get("/_harness/events", params={"since": fresh["next"]})).json()
    assert done["events"] == []


# -- export and clear ------------------------------------------------------------------


async def test_an_export_then_a_clear_before_its_end_loses_nothing(opened: list[Served]) -> None:
    served = await _open(opened, SERVE_RETENTION)
    for text in ("one", "two"):
        await served.turn(ANA, text)
    exported = await served.control.get("/_harness/export")
    assert exported.headers["content-type"] == "application/x-ndjson"
    header, *lines = [httpx.Response(200, content=line).json() for line in exported.iter_lines()]
    events = [line for line in lines if "event" in line]
    sends = [line for line in lines if "send" in line]
    assert header["export"]["events"] == {"first": 0, "next": len(served.recorded)}
    assert [line["index"] for line in events] == list(range(len(served.recorded)))
    assert [line["event"]["kind"] for line in events] == [e.kind for e in served.recorded]
    assert [line["send"]["text"]["body"] for line in sends] == ["echo: one", "echo: two"]
    assert header["export"]["outbox"] == {"first": 0, "next": 2}
    # Something happens between the export and the clear: it stays.
    await served.turn(ANA, "three")
    cleared = await served.control.post(
        "/_harness/clear",
        json={
            "events_before": header["export"]["events"]["next"],
            "outbox_before": header["export"]["outbox"]["next"],
        },
    )
    assert cleared.status_code == 200, cleared.text
    assert cleared.json() == {
        "events_first": len(events),
        "events_next": len(served.recorded),
        "outbox_first": 2,
        "outbox_next": 3,
        "messages_forgotten": 0,
    }
    page = (await served.control.get("/_harness/events")).json()
    assert page["dropped"] == page["first"] == len(events)
    assert [e["kind"] for e in page["events"]] == [e.kind for e in served.recorded[len(events) :]]
    outbox = (await served.control.get("/_harness/outbox")).json()
    assert [m["text"]["body"] for m in outbox["messages"]] == ["echo: three"]
    # Without indices, everything goes; the indices carry on.
    everything = (await served.control.post("/_harness/clear", json={})).json()
    assert everything["events_first"] == everything["events_next"] == len(served.recorded)
    assert everything["outbox_first"] == everything["outbox_next"] == 3
    assert (await served.control.get("/_harness/events")).json()["events"] == []


async def test_clearing_the_messages_makes_their_ids_unknown(opened: list[Served]) -> None:
    served = await _open(opened, None)  # clearing works whatever the policy
    wamid = await served.turn(ANA, "hello")
    cleared = await served.control.post("/_harness/clear", json={"messages": True})
    assert cleared.json()["messages_forgotten"] == 2  # Ana's message and the echo
    answer = await served.control.post("/_harness/redeliver", json={"wamid": wamid})
    assert answer.status_code == 400
    assert answer.json()["error"]["message"] == (
        f"message {wamid} is not one this server delivered (or still keeps),"
        " so it can't be redelivered"
    )


# -- old ids, once forgotten, answer as unknown ones ---------------------------------


async def test_a_forgotten_message_answers_as_meta_answers_an_unknown_id(
    opened: list[Served],
) -> None:
    served = await _open(opened, RetentionPolicy(messages=2))
    old = await served.turn(ANA, "first")
    for i in range(3):
        await served.turn(ANA, f"later {i}")
    served.sim.retention.sweep()
    # the agent marks it read: Meta's 131009, a 400
    read = await served.send({"status": "read", "message_id": old})
    assert read.status_code == 400, read.text
    assert read.json()["error"]["code"] == 131009
    # the agent reacts to it: accepted, then a failed status with 131009
    reaction = {"to": ANA, "type": "reaction", "reaction": {"message_id": old, "emoji": "👍"}}
    accepted = await served.send(reaction)
    assert accepted.status_code == 200, accepted.text
    await served.sim.settle()
    [failed] = [
        e
        for e in served.recorded
        if isinstance(e, StatusUpdate)
        and e.wamid == accepted.json()["messages"][0]["id"]
        and e.status == "failed"
    ]
    assert [error.code for error in failed.errors] == [131009]
    # the control API can't redeliver it: a 400, not a 500
    redelivered = await served.control.post("/_harness/redeliver", json={"wamid": old})
    assert redelivered.status_code == 400
    assert "still keeps" in redelivered.json()["error"]["message"]


async def test_a_tap_on_forgotten_buttons_or_a_quote_of_a_forgotten_reply_is_refused(
    opened: list[Served],
) -> None:
    served = await _open(opened, RetentionPolicy(messages=2))
    await served.turn(ANA, "menu")
    [buttons] = [
        e.wamid for e in served.recorded if isinstance(e, OutboundSend) and e.type == "interactive"
    ]
    assert (
        await served.control.post("/_harness/tap", json={"user": ANA, "choice": "Keep"})
    ).is_success
    for i in range(3):
        await served.turn(ANA, f"later {i}")
    tap = await served.control.post("/_harness/tap", json={"user": ANA, "choice": "Keep"})
    assert tap.status_code == 409
    assert "no buttons or list to tap" in tap.json()["error"]["message"]
    quote = {"type": "text", "text": {"body": "this"}, "context": {"id": buttons}}
    quoted = await served.control.post("/_harness/inbound", json={"user": ANA, "message": quote})
    assert quoted.status_code == 400
    assert f"no message {buttons} in the chat" in quoted.json()["error"]["message"]
    answer = {
        "type": "interactive",
        "interactive": {"type": "button_reply", "button_reply": {"id": "keep", "title": "Keep"}},
        "context": {"id": buttons},
    }
    tapped = await served.control.post("/_harness/inbound", json={"user": ANA, "message": answer})
    assert tapped.status_code == 400
    assert f"no message {buttons} in the chat" in tapped.json()["error"]["message"]


async def test_reply_n_counts_from_the_agents_first_message_after_events_are_dropped(
    opened: list[Served],
) -> None:
    served = await _open(opened, RetentionPolicy(events=12, active=timedelta(seconds=1)))
    for i in range(4):
        await served.turn(ANA, f"message {i}")
    served.sim.retention.sweep()
    replies = [
        e.wamid
        for e in served.recorded
        if isinstance(e, OutboundSend) and e.type == "text" and e.user == ANA
    ]
    kept = {e.wamid for e in served.sim.events if isinstance(e, OutboundSend)}
    assert replies[0] not in kept  # the first replies are gone from the log
    quote = {"type": "text", "text": {"body": "that"}, "context": {"id": "reply 4"}}
    answer = await served.control.post("/_harness/inbound", json={"user": ANA, "message": quote})
    assert answer.status_code == 200, answer.text
    [sent] = [
        e
        for e in served.recorded
        if isinstance(e, InboundMessage) and e.wamid == answer.json()["wamid"]
    ]
    assert sent.context_id == replies[3]
    quote["context"] = {"id": "reply 1"}
    refused = await served.control.post("/_harness/inbound", json={"user": ANA, "message": quote})
    assert refused.status_code == 400
    assert "reply 1: the agent's first" in refused.json()["error"]["message"]
    assert "older than the server keeps" in refused.json()["error"]["message"]


async def test_statuses_and_retries_still_arrive_after_their_messages_are_forgotten(
    opened: list[Served],
) -> None:
    slow = SimulatorConfig(rate_limits=False, statuses=StatusTiming(sent=30, delivered=40, read=50))
    served = await _open(opened, RetentionPolicy(messages=1), slow, fail_first=2)
    sim = served.sim
    [wamid] = await sim.say(ANA, "hello")  # answered 500 twice: the next try is 10 s later
    await sim.settle(quiet=1)
    assert served.bot.posts == 2
    forgot = await served.control.post("/_harness/clear", json={"messages": True})
    assert forgot.json()["messages_forgotten"] == 1
    await sim.run_until(sim.clock.now() + timedelta(seconds=15))  # the retry goes out
    await served.bot.idle()
    [reply] = [e for e in served.recorded if isinstance(e, OutboundSend) and e.type == "text"]
    forgot = await served.control.post("/_harness/clear", json={"messages": True})
    assert forgot.json()["messages_forgotten"] == 2  # so far: the message, then the echo
    await sim.advance(timedelta(minutes=5))  # the echo's statuses come
    copies = [e for e in served.recorded if isinstance(e, InboundMessage) and e.wamid == wamid]
    assert [(c.user, c.duplicate) for c in copies] == [(ANA, False), (ANA, True), (ANA, True)]
    statuses = [(e.wamid, e.status) for e in served.recorded if isinstance(e, StatusUpdate)]
    assert statuses == [(reply.wamid, "sent"), (reply.wamid, "delivered"), (reply.wamid, "read")]


# -- nothing grows with the turns ----------------------------------------------------------


def _held(served: Served) -> dict[str, int]:
    """How many items each of the simulator's growing containers holds."""
    sim = served.sim
    deliverer = sim._deliverer
    assert deliverer is not None
    clock = sim.clock
    assert isinstance(clock, VirtualClock)
    return {
        "events": len(sim.events),
        "outbox": len(sim.outbox),
        "sent": len(sim._sent),
        "inbound": len(sim._inbound),
        "bursts": len(sim._burst_of),
        "sent items": len(sim._sent_items),
        "statuses seen": len(sim._status_seen),
        "signed bodies": len(deliverer.sent_bodies),
        "latest updates": len(deliverer._latest),
        "media": len(sim.media._media),
        "jumps": len(clock.jumps),
    }


async def test_what_the_simulator_holds_stops_growing_at_its_retention(
    opened: list[Served],
) -> None:
    policy = RetentionPolicy(
        events=60, outbox=10, messages=10, media=2, active=timedelta(seconds=1)
    )
    served = await _open(opened, policy)

    async def play(turns: int) -> None:
        for i in range(turns):
            user = (ANA, BO)[i % 2]
            if i % 10 == 0:
                media = served.sim.media.add(b"%PDF-1.4 tiny", "application/pdf")
                await served.sim.receive(user, {"type": "document", "document": {"id": media}})
                await served.sim.settle()
            await served.turn(user, f"message {i}")
            served.recorded.clear()  # the test's own copy of every event
        served.sim.retention.sweep()

    await play(100)
    gc.collect()
    before, objects = _held(served), len(gc.get_objects())
    await play(300)
    gc.collect()
    after = _held(served)
    assert after["events"] == 60
    assert after["outbox"] == 10
    assert max(after["sent"], after["inbound"], after["bursts"], after["sent items"]) <= 10
    assert after["statuses seen"] <= 3 * 10
    assert after["signed bodies"] == after["latest updates"] <= 10
    assert after["media"] <= 2
    assert after.pop("jumps") <= 200  # the clock's log of jumps is trimmed to its latest 100
    before.pop("jumps")
    assert after == before
    # 300 turns more, and hardly an object more (without the policy: hundreds a turn).
    assert len(gc.get_objects()) - objects < 2_000


async def test_without_a_policy_the_simulator_keeps_everything(opened: list[Served]) -> None:
    served = await _open(opened, None)
    for i in range(30):
        await served.turn(ANA if i % 2 else BO, f"message {i}")
    served.sim.retention.sweep()
    assert served.sim.retention.policy.keeps_all
    assert served.sim.events == served.recorded
    assert len(served.sim.outbox) == len(served.sim._sent) == len(served.sim._inbound) == 30


def test_the_count_of_events_keeps_growing_when_the_log_forgets() -> None:
    # A wait for silence compares this count, not the log's length, which pruning shortens.
    sim = WhatsAppSimulator(
        SimulatorConfig(), clock=VirtualClock(), retention=RetentionPolicy(events=2)
    )
    for _ in range(600):
        now = sim.clock.now()
        sim.record(ClockJump(at=now, previous=now, reason="tick"))
    assert sim.activity.count == 600
    assert len(sim.events) < 600


async def test_time_still_moves_for_an_agent_at_a_url_once_the_log_has_forgotten() -> None:
    # With the agent in another process, a wait for silence counts what happens; the log,
    # shortened by retention, is no measure of that (every advance used to hang here).
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from tests.bots.loopback import serve_in_process

    async def webhook(request: Request) -> Response:
        return PlainTextResponse(request.query_params.get("hub.challenge", "ok"))

    bot = Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])])
    policy = RetentionPolicy(events=5, events_for=timedelta(hours=1), active=timedelta(minutes=1))
    sim = WhatsAppSimulator(
        SimulatorConfig(rate_limits=False), clock=VirtualClock(), retention=policy
    )

    async def play(url: str) -> None:
        sim.connect(f"{url}/webhook")
        sim.add_user(ANA, "Ana")
        for text in ("one", "two", "three"):
            await sim.say(ANA, text)
            await sim.settle()
            await sim.advance(timedelta(minutes=40))  # the log forgets as the clock moves
        sim.retention.sweep()
        assert len(sim.events) < sim.activity.count
        await sim.advance(timedelta(seconds=1))
        await sim.settle()

    try:
        async with serve_in_process(bot) as url:
            await asyncio.wait_for(play(url), timeout=20)  # a hang fails, not holds the run
    finally:
        await sim.aclose()


@given(
    gaps=st.lists(st.tuples(st.integers(0, 7_200), st.integers(1, 200_000)), max_size=6),
    age=st.integers(1, 20_000),
)
@settings(max_examples=60, deadline=None)
def test_an_age_counts_the_time_the_clock_ran_between_its_jumps(
    gaps: list[tuple[int, int]], age: int
) -> None:
    # The clock runs `ran` seconds, then jumps `jumped`, in turn; the horizon of an age is
    # where the running time back from now adds up to it, the jumps skipped.
    sim = WhatsAppSimulator(
        SimulatorConfig(), clock=VirtualClock(), retention=RetentionPolicy(events=10_000)
    )
    start = at = sim.clock.now()
    spans = []  # the stretches the clock ran, as (from, to)
    for ran, jumped in gaps:
        spans.append((at, at + timedelta(seconds=ran)))
        at += timedelta(seconds=ran)
        sim.record(ClockJump(at=at + timedelta(seconds=jumped), previous=at))
        at += timedelta(seconds=jumped)
    now = at + timedelta(seconds=30)
    spans.append((at, now))
    wanted = timedelta(seconds=age)
    horizon = sim.retention.older_than(now, wanted)
    counted = sum(
        (end - max(begin, horizon) for begin, end in spans if end > horizon), timedelta(0)
    )
    total = sum((end - begin for begin, end in spans), timedelta(0))
    if total >= wanted:
        assert counted == wanted
    else:  # older than anything the clock ran: the rest is counted before its start
        assert horizon == start - (wanted - total)
