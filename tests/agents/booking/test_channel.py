"""WhatsApp behaviour of the webhook path: window and follow-ups, chunking, retries, regressions."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agents.booking import CONFIRM_BUTTONS, SHORT_CONFIRM_TEXT, Reply
from tests.agents.booking.support import USER, Harness, make_settings, text_payload

HOUR = 3600.0


@pytest.fixture
async def h() -> AsyncIterator[Harness]:
    harness = Harness()
    yield harness
    await harness.aclose()


async def _propose(h: Harness) -> None:
    await h.post(text_payload("wamid.1", "a table on friday at 8pm", at=h.clock.now()))
    await h.run()
    assert h.graph.messages[-1]["type"] == "interactive"


async def test_an_unconfirmed_proposal_gets_a_template_after_25_hours(h: Harness) -> None:
    await _propose(h)
    await h.run(24 * HOUR)
    assert len(h.graph.messages) == 1  # nothing before the follow-up is due
    await h.run(1 * HOUR + 60)
    followup = h.graph.messages[-1]
    assert followup["type"] == "template"
    template = followup["template"]
    assert template["name"] == "appointment_reminder"
    assert template["language"] == {"code": "en_US"}
    params = template["components"][0]["parameters"]
    assert [p["text"] for p in params] == ["Friday 2 January", "20:00"]
    await h.run(30 * HOUR)
    assert len(h.graph.messages) == 2  # one follow-up, not one a day


async def test_a_followup_inside_the_window_is_free_text_with_buttons() -> None:
    h = Harness(settings=make_settings(followup_hours=2))
    try:
        await _propose(h)
        await h.run(2 * HOUR + 60)
        followup = h.graph.messages[-1]
        assert followup["type"] == "interactive"
        assert "Just checking" in followup["interactive"]["body"]["text"]
    finally:
        await h.aclose()


async def test_a_new_message_cancels_the_followup(h: Harness) -> None:
    await _propose(h)
    await h.run(HOUR)
    await h.post(text_payload("wamid.2", "what are your policies?", at=h.clock.now()))
    await h.run(30 * HOUR)
    assert all(m["type"] != "template" for m in h.graph.messages)


async def test_ignore_window_sends_free_text_after_the_window_closed() -> None:
    h = Harness(settings=make_settings(regressions="ignore_window"))
    try:
        await _propose(h)
        await h.run(25 * HOUR + 60)
        assert h.graph.messages[-1]["type"] == "interactive"
        assert all(m["type"] != "template" for m in h.graph.messages)
    finally:
        await h.aclose()


async def test_a_long_reply_is_split_on_word_boundaries(h: Harness) -> None:
    await h.post(text_payload("wamid.1", "what is your cancellation policy?"))
    await h.run()
    texts = [m["text"]["body"] for m in h.graph.messages]
    assert len(texts) >= 2
    assert all(len(t) <= 4096 for t in texts)
    full = h.agent.prompts.get("system")
    assert " ".join(texts).split()[-5:] == full.split()[-5:]
    assert all(not t[-1].isspace() and not t[0].isspace() for t in texts)


async def test_no_chunking_sends_one_over_long_text_that_meta_refuses() -> None:
    h = Harness(settings=make_settings(regressions="no_chunking"))
    try:
        await h.post(text_payload("wamid.1", "what is your cancellation policy?"))
        await h.run()
        [send] = h.graph.messages
        assert len(send["text"]["body"]) > 4096
        assert h.graph.count == 0  # refused
        [failure] = await h.agent.states.failures(USER)
        assert failure.code == 100
    finally:
        await h.aclose()


async def test_reply_per_fragment_answers_every_message_of_a_burst() -> None:
    h = Harness(settings=make_settings(regressions="reply_per_fragment"))
    try:
        for i, text in enumerate(["hi", "I'd like a table", "friday at 8pm"]):
            await h.post(text_payload(f"wamid.{i}", text))
            await h.run(1.0)
        await h.run()
        assert len(h.graph.messages) == 3
    finally:
        await h.aclose()


@pytest.mark.parametrize("code", [131056, 130429])
async def test_rate_limits_are_retried_with_backoff_on_the_clock(h: Harness, code: int) -> None:
    h.graph.fail_next.extend([code, code])
    await h.post(text_payload("wamid.1", "hello"))
    await h.run(2.0)  # debounce done; first try refused, next tries wait 1 s then 4 s
    assert h.graph.count == 0
    await h.run(1.0)
    assert h.graph.count == 0
    await h.run(4.0)
    assert h.graph.count == 1
    attempts = [m for m in h.graph.requests if "type" in m]
    assert len(attempts) == 3
    assert await h.agent.states.failures(USER) == []


async def test_other_graph_errors_are_not_retried_and_are_recorded(h: Harness) -> None:
    h.graph.fail_next.append(131009)
    await h.post(text_payload("wamid.1", "hello"))
    await h.run()
    assert len(h.graph.messages) == 1
    [failure] = await h.agent.states.failures(USER)
    assert failure.code == 131009
    assert "details 131009" in failure.details


async def test_a_long_proposal_goes_as_text_then_a_short_button_message(h: Harness) -> None:
    reply_text = "x " * 700
    await h.app.state.front.send(
        USER, Reply(kind="buttons", text=reply_text, buttons=CONFIRM_BUTTONS), window_open=True
    )
    first, second = h.graph.messages
    assert first["type"] == "text"
    assert second["interactive"]["body"]["text"] == SHORT_CONFIRM_TEXT
