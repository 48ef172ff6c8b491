"""The pizza bot: orders only after confirm, marks reads first, and (unless told not to)
never orders twice for a redelivered confirm."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from tests.bots import pizza
from tests.bots.meta import SETTINGS, USER, Driver, FakeGraph, button_reply, compact, signature
from tests.bots.meta import text_message as text

Start = Callable[..., Awaitable[Driver]]


@pytest.fixture
async def start() -> AsyncIterator[Start]:
    """Start a pizza bot with extra settings."""
    async with contextlib.AsyncExitStack() as stack:

        async def make(**extra: str) -> Driver:
            graph = FakeGraph()
            client = await stack.enter_async_context(graph.client())
            driver = Driver(pizza.create_app({**SETTINGS, **extra}, client=client), graph)
            stack.push_async_callback(driver.aclose)
            return driver

        yield make


def _orders(bot: Driver) -> list[dict[str, Any]]:
    orders: list[dict[str, Any]] = bot.app.state.orders
    return orders


def _last_answer(bot: Driver) -> dict[str, Any]:
    return bot.graph.replies()[-1]


async def _to_the_buttons(bot: Driver, size: str = "large") -> None:
    await bot.post(text("hi, I'm hungry"))
    assert _last_answer(bot)["text"]["body"] == pizza.ASK_SIZE
    await bot.post(text(size))


async def test_an_order_is_placed_only_when_the_user_taps_confirm(start: Start) -> None:
    bot = await start()
    await _to_the_buttons(bot, "Large ")
    assert _orders(bot) == []
    buttons = _last_answer(bot)
    assert buttons["type"] == "interactive"
    assert buttons["interactive"]["type"] == "button"
    assert "large" in buttons["interactive"]["body"]["text"]
    ids = [button["reply"]["id"] for button in buttons["interactive"]["action"]["buttons"]]
    assert ids == ["confirm", "cancel"]
    await bot.post(text("yes please"))  # typing is not tapping
    assert _orders(bot) == []
    assert _last_answer(bot)["type"] == "interactive"
    await bot.post(button_reply("confirm", "Confirm"))
    assert _orders(bot) == [{"id": 1, "user": USER, "size": "large"}]
    assert _last_answer(bot)["text"]["body"] == "Order #1 placed: one large pizza."
    listed = await bot.client.get("/orders")
    assert listed.json() == {"orders": [{"id": 1, "user": USER, "size": "large"}]}


async def test_cancel_places_nothing_and_a_later_confirm_has_nothing_to_confirm(
    start: Start,
) -> None:
    bot = await start()
    await _to_the_buttons(bot)
    await bot.post(button_reply("cancel", "Cancel"))
    assert _last_answer(bot)["text"]["body"].startswith("Cancelled")
    await bot.post(button_reply("confirm", "Confirm"))
    assert _orders(bot) == []
    assert _last_answer(bot)["text"]["body"] == pizza.ASK_SIZE


async def test_a_size_the_bot_does_not_sell_is_asked_again(start: Start) -> None:
    bot = await start()
    await _to_the_buttons(bot, "enormous")
    assert _last_answer(bot)["text"]["body"] == pizza.ASK_SIZE
    await bot.post(text("small"))
    assert "small" in _last_answer(bot)["interactive"]["body"]["text"]


async def test_each_message_is_marked_read_before_it_is_answered(start: Start) -> None:
    bot = await start()
    first, second = text("hi", wamid="wamid.READ_ME_1"), text("medium", wamid="wamid.READ_ME_2")
    await bot.post(first)
    await bot.post(second)
    bodies = [sent.body for sent in bot.graph.sends]
    wamids = [
        update["entry"][0]["changes"][0]["value"]["messages"][0]["id"] for update in (first, second)
    ]
    read = {"messaging_product": "whatsapp", "status": "read"}
    assert bodies[0] == {**read, "message_id": wamids[0]}
    assert bodies[1]["to"] == USER
    assert bodies[2] == {**read, "message_id": wamids[1]}
    assert bodies[3]["type"] == "interactive"
    assert len(bodies) == 4


async def test_a_redelivered_confirm_does_not_order_twice(start: Start) -> None:
    bot = await start()
    await _to_the_buttons(bot)
    raw = compact(button_reply("confirm", "Confirm"))
    headers = {"X-Hub-Signature-256": signature(raw)}
    assert (await bot.post_raw(raw, headers)).status_code == 200
    calls = len(bot.graph.sends)
    assert (await bot.post_raw(raw, headers)).status_code == 200
    assert len(_orders(bot)) == 1
    assert len(bot.graph.sends) == calls  # the redelivery is not even marked read again


async def test_without_dedupe_a_redelivered_confirm_orders_twice(start: Start) -> None:
    bot = await start(PIZZA_NO_DEDUPE="1")
    await _to_the_buttons(bot)
    raw = compact(button_reply("confirm", "Confirm"))
    headers = {"X-Hub-Signature-256": signature(raw)}
    await bot.post_raw(raw, headers)
    await bot.post_raw(raw, headers)
    assert _orders(bot) == [
        {"id": 1, "user": USER, "size": "large"},
        {"id": 2, "user": USER, "size": "large"},
    ]


async def test_each_user_has_a_dialogue_of_their_own(start: Start) -> None:
    bot = await start()
    ana, ben = "5511900000001", "447700900123"
    await bot.post(text("hi", user=ana))
    await bot.post(text("hi", user=ben))
    await bot.post(text("small", user=ana))
    await bot.post(text("medium", user=ben))
    await bot.post(button_reply("confirm", "Confirm", user=ben))
    assert _orders(bot) == [{"id": 1, "user": ben, "size": "medium"}]
