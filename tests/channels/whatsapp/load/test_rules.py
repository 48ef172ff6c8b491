"""Meta's rules in a load run, on real time over loopback, against bots that know nothing of them.

The throughput (130429) and pair rate (131056) limits, the 24-hour window
(131047, made short for the test through the simulator's settings), and the
status webhooks of each accepted send, checked at the bot's door: in order
for each message and signed with the app secret.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from channels.whatsapp.config import SimulatorConfig, StatusTiming
from channels.whatsapp.load import (
    Gate,
    LoadPlan,
    LoadResult,
    Template,
    TurnSpec,
    run_load,
    write_load_html,
    write_load_json,
)
from channels.whatsapp.signing import verify
from tests.bots import inline, unreliable
from tests.bots.loopback import free_port, serve_in_process

pytestmark = pytest.mark.network

FAST = StatusTiming(sent=0.02, delivered=0.05, read=0.1)
CHAT = Template("chat", (TurnSpec("say", ("hello",)),))


class Doorway:
    """Wraps a bot's app and keeps every POST it receives: the raw body and its signature."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.posts: list[tuple[bytes, str | None]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        signature = dict(scope["headers"]).get(b"x-hub-signature-256")
        self.posts.append((body, None if signature is None else signature.decode()))
        given = False

        async def replay() -> Any:
            nonlocal given
            if given:
                return await receive()
            given = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def statuses(self) -> list[dict[str, Any]]:
        """The status items received, in the order they came."""
        found = []
        for body, _ in self.posts:
            value = json.loads(body)["entry"][0]["changes"][0]["value"]
            found.extend(value.get("statuses", []))
        return found

    def messages(self) -> int:
        """How many webhooks carried a user's message."""
        return sum(
            1
            for body, _ in self.posts
            if "messages" in json.loads(body)["entry"][0]["changes"][0]["value"]
        )


def _settings(graph_port: int, **extra: str) -> dict[str, str]:
    config = SimulatorConfig()
    return {
        "WHATSAPP_APP_SECRET": config.app_secret,
        "WHATSAPP_VERIFY_TOKEN": config.verify_token,
        "WHATSAPP_ACCESS_TOKEN": config.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": config.phone_number_id,
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}",
        **extra,
    }


async def _run(
    app: ASGIApp, graph_port: int, config: SimulatorConfig, **plan: Any
) -> tuple[LoadResult, Doorway]:
    door = Doorway(app)
    settings: dict[str, Any] = {
        "users": 3,
        "rate": 1_000_000.0,
        "duration": 30.0,
        "reply_timeout": 0.5,
        "think": 0.0,
        "statuses": False,
        **plan,
    }
    async with serve_in_process(door) as url:
        result = await run_load(
            LoadPlan(target_url=f"{url}/webhook", templates=(CHAT,), **settings),
            config,
            graph_port=graph_port,
        )
    return result, door


@pytest.fixture
def port() -> int:
    """The port the load run's Graph API takes, and the bot sends to."""
    return free_port()


@pytest.mark.parametrize("users", [19, 20], ids=["just under", "at"])
async def test_up_to_the_throughput_limit_at_once_nothing_is_refused(users: int, port: int) -> None:
    # 20 a second means a second's worth at once: the bucket starts full.
    config = SimulatorConfig(throughput_mps=20)
    result, _ = await _run(
        unreliable.create_app(_settings(port)), port, config, users=users, max_messages=users
    )
    stats = result.stats
    assert (stats.sent, stats.replied, stats.lost, stats.errors) == (users, users, 0, 0)


async def test_a_rate_at_the_throughput_limit_held_on_real_time_is_never_refused(
    port: int,
) -> None:
    config = SimulatorConfig(throughput_mps=20)
    result, _ = await _run(
        unreliable.create_app(_settings(port)), port, config, users=5, rate=20.0, duration=1.5
    )
    stats = result.stats
    assert stats.sent >= 25
    assert (stats.replied, stats.lost, stats.errors) == (stats.sent, 0, 0)


async def test_just_over_the_throughput_limit_the_extra_replies_are_refused_with_130429(
    port: int,
) -> None:
    # 30 users write at once to an agent allowed 20 a second: the 21st reply onwards, bar the
    # few the bucket refilled while they came in, meets 130429.
    config = SimulatorConfig(throughput_mps=20)
    result, _ = await _run(
        unreliable.create_app(_settings(port)), port, config, users=30, max_messages=30
    )
    stats = result.stats
    refused = stats.refused[130429]
    assert 1 <= refused <= 10
    assert set(stats.refused) == {130429}
    assert stats.refused_turns == {130429: refused}  # each refused reply, not a lost one
    assert (stats.lost, stats.replied) == (0, 30 - refused)
    assert result.failed
    summary = result.summary()
    assert summary["refused_turns"] == {"130429": refused}
    assert summary["lost_replies"] == 0


async def test_a_raised_throughput_limit_takes_the_same_burst(port: int) -> None:
    config = SimulatorConfig(throughput_mps=40)
    result, _ = await _run(
        unreliable.create_app(_settings(port)), port, config, users=30, max_messages=30
    )
    assert (result.stats.replied, result.stats.errors) == (30, 0)


async def test_the_46th_message_to_one_user_within_6_seconds_is_refused_with_131056(
    port: int,
) -> None:
    # Meta's pair rate: bursts of 45 to one user, then one every 6 s. One user and 46 quick
    # turns, each answered once: the 46th reply is refused (the run takes well under 6 s).
    result, _ = await _run(
        inline.create_app(_settings(port)), port, SimulatorConfig(), users=1, max_messages=46
    )
    stats = result.stats
    assert stats.sent == 46
    assert stats.refused == {131056: 1}
    assert stats.refused_turns == {131056: 1}
    assert (stats.replied, stats.lost) == (45, 0)


async def test_without_rate_limits_the_46th_message_to_one_user_goes_out(port: int) -> None:
    config = SimulatorConfig(rate_limits=False, throughput_mps=1)
    result, _ = await _run(
        inline.create_app(_settings(port)), port, config, users=1, max_messages=46
    )
    stats = result.stats
    assert (stats.sent, stats.replied, stats.lost) == (46, 46, 0)
    assert stats.refused == {}


async def test_a_reply_after_the_window_closed_fails_on_a_status_with_131047(
    port: int, tmp_path: Path
) -> None:
    # The window is half a second; the bot answers a second after each message.
    config = SimulatorConfig(window_seconds=0.5, statuses=FAST)
    bot = unreliable.create_app(_settings(port, UNRELIABLE_DELAY="1.0"))
    result, door = await _run(
        bot, port, config, users=2, max_messages=2, reply_timeout=2.0, statuses=True
    )
    stats = result.stats
    assert stats.refused == {131047: 2}
    assert stats.refused_turns == {131047: 2}
    assert (stats.replied, stats.lost) == (0, 0)
    failed = door.statuses()
    assert [item["status"] for item in failed] == ["failed", "failed"]
    assert {item["errors"][0]["code"] for item in failed} == {131047}
    assert {item["recipient_id"] for item in failed} == {"15550000000", "15550000001"}

    data = json.loads(write_load_json(result, tmp_path / "load.json").read_text())
    assert data["results"]["refused_turns"] == {"131047": 2}
    assert data["settings"]["window_s"] == 0.5
    assert sum(second["refused"] for second in data["timeline"]) == 2
    page = write_load_html(result, tmp_path / "load.html").read_text()
    assert (
        '<th>131047</th><td class="words">outside the 24-hour window</td><td>2</td><td>2</td>'
        in page
    )


async def test_a_reply_within_the_window_goes_out(port: int) -> None:
    config = SimulatorConfig(window_seconds=2.0)
    bot = unreliable.create_app(_settings(port, UNRELIABLE_DELAY="0.2"))
    result, _ = await _run(bot, port, config, users=2, max_messages=2, reply_timeout=2.0)
    assert (result.stats.replied, result.stats.errors) == (2, 0)


async def test_with_the_window_refused_at_once_the_reply_gets_131047_in_its_answer(
    port: int,
) -> None:
    config = SimulatorConfig(window_seconds=0.2, window_error="sync")
    bot = unreliable.create_app(_settings(port, UNRELIABLE_DELAY="0.5"))
    result, door = await _run(
        bot, port, config, users=1, max_messages=1, reply_timeout=1.0, statuses=True
    )
    stats = result.stats
    assert stats.refused == {131047: 1}
    assert stats.refused_turns == {131047: 1}
    assert door.statuses() == []  # refused at once: no message, no status
    # The bot raises on a refused send: its webhook answers 500, which the run counts too.
    assert stats.webhook_errors == {"HTTP 500": 1}


async def test_each_accepted_send_gets_sent_delivered_and_read_in_order_and_signed(
    port: int,
) -> None:
    config = SimulatorConfig(statuses=FAST)
    app = unreliable.create_app(
        _settings(port, UNRELIABLE_LOSE_EVERY="4", UNRELIABLE_DUPLICATE_EVERY="3")
    )
    result, door = await _run(
        app,
        port,
        config,
        users=3,
        rate=40.0,
        duration=1.0,
        think=0.05,
        statuses=True,
    )
    stats = result.stats
    for body, signature in door.posts:
        verify(body, signature, config.app_secret)
    assert door.messages() == stats.sent
    by_message: dict[str, list[dict[str, Any]]] = {}
    for item in door.statuses():
        by_message.setdefault(item["id"], []).append(item)
    accepted = stats.replied + stats.duplicated + stats.extra + stats.late
    assert stats.duplicated == app.state.duplicated > 0
    assert len(by_message) == accepted
    for items in by_message.values():
        assert [item["status"] for item in items] == ["sent", "delivered", "read"]
        assert ["pricing" in item for item in items] == [True, True, False]
        assert len({item["recipient_id"] for item in items}) == 1
    assert dict(stats.statuses) == {"sent": accepted, "delivered": accepted, "read": accepted}
    assert (stats.status_errors, stats.statuses_unsent) == ({}, 0)
    # The statuses the bot answered are not replies: the tally is the bot's own.
    assert stats.lost == app.state.lost > 0
    assert stats.replied == stats.sent - app.state.lost
    assert stats.webhook_errors == {}
    assert len(stats.acks) == stats.sent


async def test_without_statuses_the_bot_gets_only_the_users_messages(port: int) -> None:
    config = SimulatorConfig(statuses=FAST)
    result, door = await _run(
        unreliable.create_app(_settings(port)),
        port,
        config,
        users=3,
        rate=40.0,
        duration=0.5,
        statuses=False,
    )
    assert result.stats.sent > 3
    assert len(door.posts) == door.messages() == result.stats.sent
    assert not result.stats.statuses
    assert result.summary()["statuses_answered"] == {}


async def test_stopping_the_run_while_statuses_are_due_drops_them_as_unsent(port: int) -> None:
    # Read receipts a minute after each send: stopped a moment after the users are done, the
    # run ends at once and counts what it did not send, rather than wait for the minute.
    config = SimulatorConfig(statuses=StatusTiming(sent=0.01, delivered=0.02, read=60.0))
    gate = Gate(1_000_000.0, 2, float("inf"))
    door = Doorway(unreliable.create_app(_settings(port)))
    plan = LoadPlan(
        target_url="http://127.0.0.1:1/webhook",
        templates=(CHAT,),
        users=2,
        rate=1_000_000.0,
        max_messages=2,
        reply_timeout=1.0,
        think=0.0,
    )
    async with serve_in_process(door) as url:
        loop = asyncio.get_running_loop()
        loop.call_later(1.0, gate.close)
        started = loop.time()
        result = await run_load(
            replace(plan, target_url=f"{url}/webhook"), config, graph_port=port, gate=gate
        )
        took = loop.time() - started
    stats = result.stats
    assert took < 10
    assert result.stopped_early
    assert stats.replied == 2
    assert dict(stats.statuses) == {"sent": 2, "delivered": 2}
    assert stats.statuses_unsent == 2  # the two read receipts
