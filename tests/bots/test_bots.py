"""The test bots do what their docstrings say, driven in-process with hand-built webhooks.

Each bot runs through ``httpx.ASGITransport`` with a :class:`FakeGraph` behind
an ``httpx.MockTransport``; the shared log tells when each send reached the
Graph API relative to the webhook's response.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

import httpx
import pytest
from starlette.applications import Starlette

from tests.bots import background, debounce, greeter, inline, per_fragment, pizza, thinking
from tests.bots.meta import (
    PHONE_NUMBER_ID,
    SETTINGS,
    USER,
    Driver,
    FakeGraph,
    compact,
    signature,
    status_update,
    text_message,
)

BOTS: Mapping[str, Callable[..., Starlette]] = {
    "inline": inline.create_app,
    "background": background.create_app,
    "debounce": debounce.create_app,
    "greeter": greeter.create_app,
    "per_fragment": per_fragment.create_app,
    "pizza": pizza.create_app,
    "thinking": thinking.create_app,
}
# Graph API calls a bot makes for one text message: pizza marks it read first, the thinking
# bot marks it read with the typing indicator.
CALLS_PER_TEXT = {
    "inline": 1,
    "background": 1,
    "debounce": 1,
    "greeter": 1,
    "per_fragment": 1,
    "pizza": 2,
    "thinking": 2,
}
QUIET = 0.1  # the debounce bot's quiet time in these tests, unless a test sets its own

Drive = Callable[..., Awaitable[Driver]]


@pytest.fixture
async def drive() -> AsyncIterator[Drive]:
    """Start a bot by name with extra settings; its lifespan runs, and ends with the test."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(name: str, **extra: str) -> Driver:
            graph = FakeGraph()
            client = await stack.enter_async_context(graph.client())
            settings = {
                **SETTINGS,
                "BOT_DEBOUNCE_SECONDS": str(QUIET),
                "BOT_THINK_SECONDS": str(QUIET),
                **extra,
            }
            app = BOTS[name](settings, client=client)
            await stack.enter_async_context(app.router.lifespan_context(app))
            driver = Driver(app, graph)
            stack.push_async_callback(driver.aclose)
            return driver

        yield start


def _texts(graph: FakeGraph) -> list[str]:
    return [reply["text"]["body"] for reply in graph.replies() if reply["type"] == "text"]


@pytest.mark.parametrize("name", BOTS)
async def test_every_bot_answers_the_verification_handshake(drive: Drive, name: str) -> None:
    bot = await drive(name)
    query = {"hub.mode": "subscribe", "hub.challenge": "1158201444"}
    right = await bot.client.get(
        "/webhook", params={**query, "hub.verify_token": "bots-verify-token"}
    )
    assert (right.status_code, right.text) == (200, "1158201444")
    wrong = await bot.client.get("/webhook", params={**query, "hub.verify_token": "guess"})
    assert wrong.status_code == 403
    assert "1158201444" not in wrong.text


@pytest.mark.parametrize("name", BOTS)
async def test_every_bot_refuses_a_missing_or_wrong_signature(drive: Drive, name: str) -> None:
    bot = await drive(name)
    raw = compact(text_message("forged"))
    assert (await bot.post_raw(raw, {})).status_code == 403
    other_key = {"X-Hub-Signature-256": signature(raw, "another-secret")}
    assert (await bot.post_raw(raw, other_key)).status_code == 403
    changed_after_signing = {"X-Hub-Signature-256": signature(raw)}
    assert (await bot.post_raw(raw + b" ", changed_after_signing)).status_code == 403
    await asyncio.sleep(QUIET + 0.1)
    assert bot.graph.sends == []
    # The same bytes, rightly signed, are answered.
    assert (await bot.post_raw(raw, {"X-Hub-Signature-256": signature(raw)})).status_code == 200
    await bot.graph.wait_for(CALLS_PER_TEXT[name])


@pytest.mark.parametrize("name", BOTS)
async def test_every_bot_refuses_a_signed_body_that_is_not_json(drive: Drive, name: str) -> None:
    bot = await drive(name)
    raw = b"{not json"
    assert (await bot.post_raw(raw, {"X-Hub-Signature-256": signature(raw)})).status_code == 400


@pytest.mark.parametrize("ignored", ["a status", "another number's message"])
@pytest.mark.parametrize("name", BOTS)
async def test_every_bot_ignores_statuses_and_other_numbers(
    drive: Drive, name: str, ignored: str
) -> None:
    bot = await drive(name)
    if ignored == "a status":
        update = status_update("wamid.BOTS_OUT_9", "read")
    else:
        update = text_message("not for you", phone_number_id="999888777666555")
    assert (await bot.post(update)).status_code == 200
    assert (await bot.post(text_message("hello"))).status_code == 200
    await bot.graph.wait_for(CALLS_PER_TEXT[name])
    await asyncio.sleep(QUIET + 0.1)  # room for a late, wrong extra send to show up
    assert len(bot.graph.sends) == CALLS_PER_TEXT[name]
    assert "not for you" not in json.dumps([sent.body for sent in bot.graph.sends])


@pytest.mark.parametrize("name", BOTS)
async def test_every_bot_sends_to_the_configured_number_with_its_token(
    drive: Drive, name: str
) -> None:
    bot = await drive(name)
    await bot.post(text_message("hello"))
    await bot.graph.wait_for(CALLS_PER_TEXT[name])
    for sent in bot.graph.sends:
        assert sent.path == f"/v25.0/{PHONE_NUMBER_ID}/messages"
        assert sent.authorization == "Bearer EAAGbotstoken"
        assert sent.body["messaging_product"] == "whatsapp"
    assert bot.graph.replies()[0]["to"] == USER


async def test_the_api_version_and_graph_url_come_from_the_settings() -> None:
    seen: list[str] = []

    def graph(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json={"messages": [{"id": "wamid.X"}]})

    settings = {
        **SETTINGS,
        "WHATSAPP_GRAPH_URL": "http://127.0.0.1:8000/",
        "WHATSAPP_API_VERSION": "v23.0",
    }
    async with httpx.AsyncClient(transport=httpx.MockTransport(graph)) as client:
        bot = Driver(inline.create_app(settings, client=client), FakeGraph())
        await bot.post(text_message("hello"))
        await bot.aclose()
    assert seen == [f"http://127.0.0.1:8000/v23.0/{PHONE_NUMBER_ID}/messages"]


async def test_the_inline_bot_sends_before_its_response_completes(drive: Drive) -> None:
    bot = await drive("inline")
    response = await bot.post(text_message("hello"))
    assert response.status_code == 200
    assert bot.log == ["send", "response"]
    assert bot.graph.replies() == [
        {
            "messaging_product": "whatsapp",
            "to": USER,
            "type": "text",
            "text": {"body": "You said: hello"},
        }
    ]


async def test_the_background_bot_sends_after_its_response_completes(drive: Drive) -> None:
    bot = await drive("background")
    response = await bot.post(text_message("hello"))
    assert response.status_code == 200
    # A Starlette background task runs inside the ASGI call, after the response
    # went out; in-process, ASGITransport hands the response back only once it ended.
    assert bot.log == ["response", "send"]
    assert _texts(bot.graph) == ["You said: hello"]


async def test_the_background_bot_can_detach_its_work_and_take_real_time(drive: Drive) -> None:
    bot = await drive("background", BOT_BACKGROUND="asyncio", BOT_REPLY_DELAY_SECONDS="0.2")
    posted = time.monotonic()
    response = await bot.post(text_message("hello"))
    assert response.status_code == 200
    assert bot.log == ["response"]
    await bot.graph.wait_for(1)
    assert bot.log == ["response", "send"]
    assert bot.graph.sends[0].at - posted >= 0.2
    assert _texts(bot.graph) == ["You said: hello"]


def test_the_background_bot_refuses_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match="BOT_BACKGROUND must be starlette or asyncio"):
        background.create_app({**SETTINGS, "BOT_BACKGROUND": "thread"})


async def test_the_debounce_bot_answers_a_burst_once_when_the_user_is_quiet(drive: Drive) -> None:
    bot = await drive("debounce", BOT_DEBOUNCE_SECONDS="0.2")
    for fragment in ("I'd like a table", "for two", "tomorrow at 8"):
        await asyncio.sleep(0.05)
        last_post = time.monotonic()  # the bot gets the fragment after this instant
        assert (await bot.post(text_message(fragment))).status_code == 200
    await bot.graph.wait_for(1)
    await asyncio.sleep(0.3)  # longer than the quiet time: no second reply comes
    assert _texts(bot.graph) == ["You said: I'd like a table / for two / tomorrow at 8"]
    assert bot.graph.sends[0].at - last_post >= 0.2


async def test_the_debounce_bot_keeps_each_users_burst_apart(drive: Drive) -> None:
    bot = await drive("debounce")
    await bot.post(text_message("hi", user="5511900000001"))
    await bot.post(text_message("hola", user="5511900000002"))
    await bot.post(text_message("there", user="5511900000001"))
    await bot.graph.wait_for(2)
    await asyncio.sleep(QUIET + 0.1)
    answers = {reply["to"]: reply["text"]["body"] for reply in bot.graph.replies()}
    assert answers == {"5511900000001": "You said: hi / there", "5511900000002": "You said: hola"}
    assert len(bot.graph.sends) == 2


async def test_the_debounce_bot_answers_two_separate_bursts_twice(drive: Drive) -> None:
    bot = await drive("debounce")
    await bot.post(text_message("first"))
    await bot.graph.wait_for(1)
    await bot.post(text_message("second"))
    await bot.graph.wait_for(2)
    assert _texts(bot.graph) == ["You said: first", "You said: second"]


async def test_the_debounce_bot_waits_half_a_second_by_default() -> None:
    graph = FakeGraph()
    settings = {**SETTINGS}  # no BOT_DEBOUNCE_SECONDS
    async with graph.client() as client:
        bot = Driver(debounce.create_app(settings, client=client), graph)
        posted = time.monotonic()
        await bot.post(text_message("hello"))
        await graph.wait_for(1)
        assert graph.sends[0].at - posted >= 0.5
        await bot.aclose()


async def test_the_per_fragment_bot_answers_every_message_at_once(drive: Drive) -> None:
    bot = await drive("per_fragment")
    fragments = ["I'd like a table", "for two", "tomorrow at 8"]
    for count, fragment in enumerate(fragments, start=1):
        await bot.post(text_message(fragment))
        await bot.graph.wait_for(count, within=0.5)  # answered before the next fragment
    await asyncio.sleep(0.1)
    assert _texts(bot.graph) == [f"Got it: {fragment}" for fragment in fragments]


async def test_the_thinking_bot_shows_typing_then_answers_after_thinking(drive: Drive) -> None:
    bot = await drive("thinking", BOT_THINK_SECONDS="0.3")
    inbound = text_message("hello")
    assert (await bot.post(inbound)).status_code == 200
    await bot.graph.wait_for(2)
    typing, answer = bot.graph.sends
    message_id = inbound["entry"][0]["changes"][0]["value"]["messages"][0]["id"]
    assert typing.body == {
        "messaging_product": "whatsapp",
        "status": "read",
        "message_id": message_id,
        "typing_indicator": {"type": "text"},
    }
    assert answer.at - typing.at >= 0.3
    assert _texts(bot.graph) == ["You said: hello"]


async def test_the_thinking_bot_can_say_it_is_on_it_first(drive: Drive) -> None:
    bot = await drive("thinking", BOT_HOLDING="One moment...")
    await bot.post(text_message("hello"))
    await bot.graph.wait_for(3)
    assert [sent.body.get("status", "text") for sent in bot.graph.sends] == ["text", "read", "text"]
    assert _texts(bot.graph) == ["One moment...", "You said: hello"]


async def test_the_greeter_greets_a_new_number_welcomes_it_back_and_drops_a_seen_message_id(
    drive: Drive,
) -> None:
    bot = await drive("greeter")
    first = text_message("hello", wamid="wamid.GREETER_1")
    await bot.post(first)
    await bot.graph.wait_for(1)
    await bot.post(first)  # Meta redelivers: the same id is not answered again
    await bot.post(text_message("again", wamid="wamid.GREETER_2"))
    await bot.post(text_message("hi", wamid="wamid.GREETER_3", user="4915123456789"))
    await bot.graph.wait_for(3)
    await asyncio.sleep(0.1)  # room for a wrong answer to the redelivery
    assert _texts(bot.graph) == [
        "Nice to meet you! You said: hello",
        "Welcome back! You said: again",
        "Nice to meet you! You said: hi",
    ]
