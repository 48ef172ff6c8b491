"""Load runs over loopback against planted bots: the tally matches what the bots did."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from channels.whatsapp.config import SimulatorConfig, StatusTiming
from channels.whatsapp.load import (
    REPORT_KIND,
    LoadPlan,
    LoadResult,
    Template,
    TurnSpec,
    run_load,
    write_load_html,
    write_load_json,
)
from tests.bots import debounce, inline, per_fragment, pizza, unreliable
from tests.bots.loopback import free_port, serve_in_process

pytestmark = pytest.mark.network

# Statuses soon after each send: every run below sends them too, and its tally must not change.
CONFIG = SimulatorConfig(statuses=StatusTiming(sent=0.01, delivered=0.02, read=0.05))
TEMPLATE = Template("small talk", (TurnSpec("say", ("hello",)), TurnSpec("say", ("and you?",))))


@dataclass
class Bot:
    """A bot served on loopback, and the port the load run's Graph API must take."""

    app: Starlette
    webhook: str
    graph_port: int


def _settings(graph_port: int, **extra: str) -> dict[str, str]:
    return {
        "WHATSAPP_APP_SECRET": CONFIG.app_secret,
        "WHATSAPP_VERIFY_TOKEN": CONFIG.verify_token,
        "WHATSAPP_ACCESS_TOKEN": CONFIG.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": CONFIG.phone_number_id,
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}",
        **extra,
    }


async def _served(app: Starlette, graph_port: int) -> AsyncIterator[Bot]:
    async with serve_in_process(app) as url:
        yield Bot(app, f"{url}/webhook", graph_port)


@pytest.fixture
async def unreliable_bot() -> AsyncIterator[Bot]:
    """Loses every 4th message, sends every 3rd reply twice."""
    port = free_port()
    settings = _settings(port, UNRELIABLE_LOSE_EVERY="4", UNRELIABLE_DUPLICATE_EVERY="3")
    async for bot in _served(unreliable.create_app(settings), port):
        yield bot


@pytest.fixture
async def slow_bot() -> AsyncIterator[Bot]:
    """Answers every message, half a second after it came."""
    port = free_port()
    async for bot in _served(unreliable.create_app(_settings(port, UNRELIABLE_DELAY="0.5")), port):
        yield bot


@pytest.fixture
async def echo_bot() -> AsyncIterator[Bot]:
    """The plain inline echo bot."""
    port = free_port()
    async for bot in _served(inline.create_app(_settings(port)), port):
        yield bot


async def _run(
    bot: Bot,
    templates: tuple[Template, ...] = (TEMPLATE,),
    config: SimulatorConfig = CONFIG,
    **plan: Any,
) -> LoadResult:
    settings: Mapping[str, Any] = {
        "users": 3,
        "rate": 40.0,
        "duration": 1.0,
        "reply_timeout": 2.0,
        "think": 0.05,
        **plan,
    }
    return await run_load(
        LoadPlan(target_url=bot.webhook, templates=templates, **settings),
        config,
        graph_port=bot.graph_port,
    )


async def test_lost_and_duplicated_replies_are_counted_as_the_bot_planted_them(
    unreliable_bot: Bot,
) -> None:
    result = await _run(unreliable_bot)
    stats = result.stats
    planted_lost = unreliable_bot.app.state.lost
    planted_duplicated = unreliable_bot.app.state.duplicated
    assert planted_lost > 0
    assert planted_duplicated > 0
    assert stats.lost == planted_lost
    assert stats.duplicated == planted_duplicated
    assert stats.replied == stats.sent - planted_lost
    assert (stats.late, stats.extra, stats.unexpected, stats.errors) == (0, 0, 0, 0)
    assert result.failed


async def test_a_bot_that_answers_everything_once_passes(echo_bot: Bot) -> None:
    result = await _run(echo_bot)
    stats = result.stats
    assert stats.sent > 3
    assert stats.replied == stats.turns == stats.sent
    assert (stats.lost, stats.duplicated, stats.errors) == (0, 0, 0)
    assert len(stats.latencies) == stats.replied
    assert not result.failed


BURST = Template(
    "a thought in three messages", (TurnSpec("say", ("so", "about", "tomorrow"), 0.05),)
)


async def test_a_bot_that_waits_for_the_burst_to_end_answers_each_turn_once() -> None:
    # The debounce bot answers once, 0.3 s after a user's last fragment: one reply per turn,
    # its latency counted from the last fragment, not the first.
    port = free_port()
    app = debounce.create_app(_settings(port, BOT_DEBOUNCE_SECONDS="0.3"))
    async for bot in _served(app, port):
        result = await _run(bot, (BURST,), rate=60.0, reply_timeout=3.0)
    stats = result.stats
    assert stats.turns >= 3
    # Each user's last burst may be cut short by the end of the run, and is still one turn.
    assert 3 * (stats.turns - 3) < stats.sent <= 3 * stats.turns
    assert stats.replied == stats.turns
    assert (stats.lost, stats.duplicated, stats.extra, stats.errors) == (0, 0, 0, 0)
    assert all(0.3 <= latency < 1.3 for latency in stats.latencies)


async def test_a_bot_that_answers_each_fragment_sends_extra_parts() -> None:
    port = free_port()
    async for bot in _served(per_fragment.create_app(_settings(port)), port):
        result = await _run(bot, (BURST,), users=2, rate=60.0, duration=0.6, think=0.3)
    stats = result.stats
    assert stats.turns >= 2
    assert stats.replied == stats.turns
    # Every fragment after a turn's first gets an answer of its own (the run's end may cut a
    # last burst short).
    assert stats.sent > stats.turns
    assert stats.extra == stats.sent - stats.turns
    assert (stats.lost, stats.duplicated, stats.errors) == (0, 0, 0)


async def test_a_tap_picks_the_button_the_bot_offered() -> None:
    # The pizza bot asks a size, offers Confirm and Cancel buttons (ids confirm, cancel), and
    # places an order only for a tap whose id is "confirm": the template names the title.
    port = free_port()
    order = Template(
        "pizza",
        (TurnSpec("say", ("hi",)), TurnSpec("say", ("large",)), TurnSpec("tap", ("Confirm",))),
    )
    async for bot in _served(pizza.create_app(_settings(port)), port):
        result = await run_load(
            LoadPlan(
                target_url=bot.webhook,
                templates=(order,),
                users=1,
                rate=100.0,
                duration=30.0,
                max_messages=3,
                think=0.0,
                reply_timeout=5.0,
            ),
            CONFIG,
            graph_port=port,
        )
        assert bot.app.state.orders == [{"id": 1, "user": "15550000000", "size": "large"}]
    assert (result.stats.replied, result.stats.lost, result.stats.errors) == (3, 0, 0)


async def test_the_message_cap_stops_the_run_at_exactly_that_many(echo_bot: Bot) -> None:
    result = await _run(echo_bot, users=4, rate=1000.0, duration=30.0, max_messages=7, think=0.0)
    assert result.stats.sent == 7
    assert result.elapsed < 10


async def test_the_rate_bounds_the_messages_sent(echo_bot: Bot) -> None:
    result = await _run(echo_bot, users=5, rate=10.0, duration=1.0, think=0.0)
    # one slot every 0.1 s within the second: 10 at most (fewer if the users all lag)
    assert 5 <= result.stats.sent <= 10


async def test_waiting_for_a_free_connection_is_not_counted_as_the_agents_latency(
    slow_bot: Bot,
) -> None:
    # One connection for four users: each webhook waits for the ones before it to be answered
    # (half a second each), but its latency runs from when it was written to the bot.
    result = await _run(
        slow_bot, users=4, rate=100.0, duration=0.1, connections=1, think=0.0, reply_timeout=5.0
    )
    latencies = sorted(result.stats.latencies)
    assert len(latencies) == 4
    assert latencies[-1] < 1.0  # queued behind three others, it would be 2 s


async def test_a_webhook_that_refuses_is_counted_as_an_error(echo_bot: Bot) -> None:
    wrong_secret = SimulatorConfig(app_secret="not-the-bots-secret")
    result = await run_load(
        LoadPlan(
            target_url=echo_bot.webhook,
            templates=(TEMPLATE,),
            users=1,
            rate=20.0,
            duration=0.3,
            reply_timeout=0.2,
            think=0.0,
        ),
        wrong_secret,
        graph_port=echo_bot.graph_port,
    )
    assert result.stats.webhook_errors["HTTP 403"] == result.stats.sent > 0
    assert result.stats.lost == result.stats.sent
    assert result.failed


async def test_both_reports_are_written_and_hold_the_same_figures(
    unreliable_bot: Bot, tmp_path: Path
) -> None:
    result = await _run(unreliable_bot)
    data = json.loads(write_load_json(result, tmp_path / "load.json").read_text())
    assert data["kind"] == REPORT_KIND
    assert data["passed"] is False
    results = data["results"]
    assert results["lost_replies"] == unreliable_bot.app.state.lost
    assert results["duplicated_replies"] == unreliable_bot.app.state.duplicated
    assert results["replies"] == len(result.stats.latencies)
    assert set(results["latency_s"]) == {"p50", "p95", "p99", "max", "mean"}
    assert sum(second["sent"] for second in data["timeline"]) == results["messages_sent"]
    binned = sum(sum(second["latency_bins"]) for second in data["timeline"])
    assert binned == results["replies"]

    page = write_load_html(result, tmp_path / "load.html").read_text()
    checker = _Balanced()
    checker.feed(page)
    assert checker.open == []
    assert checker.cells == sum(
        1 for second in data["timeline"] for count in second["latency_bins"] if count
    )
    assert f"{results['lost_replies']} lost, {results['duplicated_replies']} duplicated" in page


class _Balanced(HTMLParser):
    """Checks that every opened element is closed, and counts the histogram's cells."""

    VOID = frozenset({"meta", "br", "rect"})

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.cells = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "rect" and ("class", "cell") in attrs:
            self.cells += 1
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        assert self.open[-1:] == [tag], (self.open, tag)
        self.open.pop()


ORDER_READY = {
    "name": "order_ready",
    "language": "en_US",
    "status": "APPROVED",
    "category": "UTILITY",
    "components": [{"type": "BODY", "text": "Order {{1}} is ready."}],
}


def _template_bot(settings: Mapping[str, str], http: httpx.AsyncClient) -> Starlette:
    """Answers every message with the business's own template, ``order_ready``."""
    graph = f"{settings['WHATSAPP_GRAPH_URL']}/v25.0/{settings['WHATSAPP_PHONE_NUMBER_ID']}"
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}

    async def webhook(request: Request) -> Response:
        if request.method == "GET":
            return PlainTextResponse(request.query_params.get("hub.challenge", ""))
        for entry in (await request.json())["entry"]:
            for message in entry["changes"][0]["value"].get("messages", []):
                template = {
                    "name": "order_ready",
                    "language": {"code": "en_US"},
                    "components": [
                        {"type": "body", "parameters": [{"type": "text", "text": "#7"}]}
                    ],
                }
                body = {"messaging_product": "whatsapp", "to": message["from"]}
                body |= {"type": "template", "template": template}
                await http.post(f"{graph}/messages", json=body, headers=auth)
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])])


@pytest.mark.parametrize("given", [True, False])
async def test_the_graph_api_takes_the_business_templates_it_is_given(given: bool) -> None:
    port = free_port()
    async with httpx.AsyncClient(timeout=10) as http:
        async for bot in _served(_template_bot(_settings(port), http), port):
            config = CONFIG.model_copy(update={"templates": (ORDER_READY,) if given else None})
            result = await _run(bot, config=config, users=2, rate=20.0, duration=0.5)
            stats = result.stats
            if given:  # every message answered with the template
                assert stats.replied == stats.sent > 0
                assert not result.failed
            else:  # Meta's 132001 for a template the business lacks: no answer arrives
                assert stats.replied == 0
                assert result.failed
