"""The simulator end to end, in-process, with an independent bot as the agent."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
from collections.abc import AsyncIterator, MutableMapping
from datetime import timedelta
from typing import Any

import httpx
import pytest

from channels.whatsapp.config import SimulatorConfig, StatusTiming
from channels.whatsapp.faults import FaultProfile
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.transport import GraphRedirect
from harness.clock import VirtualClock
from harness.exceptions import HandshakeError, StepError
from harness.trace import (
    EVENT_ADAPTER,
    DeliveryAttempt,
    InboundMessage,
    OutboundSend,
    StatusUpdate,
)
from tests.channels.whatsapp.echo_bot import BotConfig, EchoBot

WA_ID = "5511987654321"


def _bot_config(config: SimulatorConfig, **kw: object) -> BotConfig:
    return BotConfig(
        app_secret=config.app_secret,
        verify_token=config.verify_token,
        access_token=config.access_token,
        phone_number_id=config.phone_number_id,
        graph_url=config.public_url,
        **kw,  # type: ignore[arg-type]  # test-only pass-through of BotConfig fields
    )


async def _pair(
    config: SimulatorConfig | None = None,
    faults: FaultProfile | None = None,
    seed: int = 0,
    **bot: object,
) -> tuple[WhatsAppSimulator, EchoBot]:
    config = config or SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock(), faults=faults, seed=seed)
    echo = EchoBot(_bot_config(config, **bot), sim.graph_client())
    sim.connect(echo.app())
    sim.add_user(WA_ID, "Ana")
    return sim, echo


@pytest.fixture
async def pair() -> AsyncIterator[tuple[WhatsAppSimulator, EchoBot]]:
    sim, echo = await _pair()
    yield sim, echo
    await sim.aclose()


def _kinds(sim: WhatsAppSimulator) -> list[str]:
    return [e.kind for e in sim.events]


async def test_a_message_gets_a_reply_and_its_statuses_in_order(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, echo = pair
    start = sim.clock.now()
    await sim.say(WA_ID, "hello")
    await sim.settle()
    conv = sim.conversation()
    [inbound] = conv.inbound()
    assert inbound.text == "hello"
    assert inbound.user == WA_ID
    assert [r.text for r in conv.replies()] == ["echo: hello"]
    [receipt] = [s for s in conv.sends() if s.type == "mark_read"]
    assert receipt.request["message_id"] == inbound.wamid
    reply = conv.replies()[0]
    assert reply.in_window is True
    assert reply.wamid is not None
    statuses = conv.statuses()
    assert [s.status for s in statuses] == ["sent", "delivered", "read"]
    assert {s.wamid for s in statuses} == {reply.wamid}
    # the default timing: 1, 2 and 5 virtual seconds after the send
    offsets = [(s.at - reply.at).total_seconds() for s in statuses]
    assert offsets == [1.0, 2.0, 5.0]
    assert (sim.clock.now() - start) < timedelta(minutes=2)
    # the bot saw the same statuses, with Meta's shape
    assert [s["status"] for s in echo.statuses] == ["sent", "delivered", "read"]
    assert echo.statuses[0]["pricing"]["category"] == "service"
    assert echo.statuses[0]["recipient_id"] == WA_ID


async def test_webhook_bytes_are_signed_with_the_app_secret(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, echo = pair
    await sim.say(WA_ID, "olá, ação ✓")
    await sim.settle()
    body, signature = echo.raw_bodies[0], echo.signatures[0]
    expected = hmac.new(sim.config.app_secret.encode(), body, hashlib.sha256).hexdigest()
    assert signature == f"sha256={expected}"
    assert b"\\u00e1" in body  # non-ASCII escaped as Meta does
    payload = json.loads(body)
    value = payload["entry"][0]["changes"][0]["value"]
    assert payload["entry"][0]["id"] == sim.config.waba_id
    assert value["metadata"]["phone_number_id"] == sim.config.phone_number_id
    assert value["contacts"][0]["wa_id"] == WA_ID
    assert value["contacts"][0]["profile"]["name"] == "Ana"
    assert value["contacts"][0]["user_id"]  # the BSUID era
    assert isinstance(value["messages"][0]["timestamp"], str)
    assert list(payload["entry"][0]["changes"][0]) == ["value", "field"]


async def test_redelivery_sends_identical_bytes_and_signature(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, echo = pair
    [wamid] = await sim.say(WA_ID, "book 9am")
    await sim.settle()
    assert await sim.redeliver(user=WA_ID) == wamid
    await sim.settle()
    assert echo.raw_bodies[0] == echo.raw_bodies[-1]
    assert echo.signatures[0] == echo.signatures[-1]
    copies = sim.conversation().inbound(duplicates=True)
    assert [m.duplicate for m in copies] == [False, True]
    # the bot dedupes on raw bytes, so it answered once
    assert len(sim.conversation().replies()) == 1


async def test_a_delivered_update_is_kept_as_its_signed_bytes_and_redelivered_the_same(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, echo = pair
    [wamid] = await sim.say(WA_ID, "book 9am")
    await sim.settle()
    [reply] = [s.wamid for s in sim.conversation().replies()]
    deliverer = sim.deliverer
    assert deliverer is not None
    kept = {item: deliverer.sent_bodies[item].body for item in (wamid, f"{reply}:read")}
    # What is kept to redeliver is the signed bytes, not a second copy of the payload as dicts.
    resting = list(deliverer._latest.values())
    assert len(resting) == 4
    assert not any(hasattr(u, "payload") for u in resting)
    assert len({id(u) for u in resting}) == 2  # the three statuses of the reply share one
    first = sim.conversation()
    for item in kept:
        await sim.redeliver(item)
        await sim.settle()
    assert echo.raw_bodies[-2:] == list(kept.values())
    copies = sim.conversation().inbound(duplicates=True)
    assert [m.duplicate for m in copies] == [False, True]
    original, copy = copies
    assert (copy.body, copy.envelope, copy.text) == (original.body, original.envelope, "book 9am")
    assert sim.conversation().statuses() == first.statuses()  # a status seen is seen once
    # What the simulator remembers of the message is the message its signed bytes carry.
    received = sim._inbound[wamid]
    assert received.user is sim.user(WA_ID)
    assert (
        received.item == json.loads(kept[wamid])["entry"][0]["changes"][0]["value"]["messages"][0]
    )
    assert received.item is original.body  # one dict, shared with the trace


async def test_what_is_kept_of_a_message_shares_the_objects_the_simulator_holds_already(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, _ = pair
    await sim.say(WA_ID, "one")
    await sim.settle()
    await sim.say(WA_ID, "two")
    await sim.settle()
    user = sim.user(WA_ID)
    first, second = sim.conversation().inbound()
    # The business number's metadata: one dict for every message, equal to what was sent.
    assert first.envelope is not None
    assert second.envelope is not None
    assert first.envelope["metadata"] is second.envelope["metadata"]
    assert first.envelope["metadata"] == {
        "display_phone_number": sim.config.display_phone_number,
        "phone_number_id": sim.config.phone_number_id,
    }
    # The agent's send: the trace, the outbox and the send hold one body, and its recipient
    # is the user's own string.
    replies = sim.conversation().replies()
    for reply, kept, sent in zip(replies, sim.outbox, sim._sent.values(), strict=True):
        assert reply.request is kept
        assert kept is sent.send.body
        assert kept["to"] is user.wa_id
        assert sent.send.to is user.wa_id
        assert kept["type"] is sent.send.type is reply.type
    assert [r.request["text"] for r in replies] == [
        {"preview_url": False, "body": "echo: one"},
        {"preview_url": False, "body": "echo: two"},
    ]
    # Each send's version and number: one string for all sends.
    sends = [sent.send for sent in sim._sent.values()]
    assert len({id(send.api_version) for send in sends}) == 1
    assert len({id(send.phone_number_id) for send in sends}) == 1
    # A status seen is named by the very string its delivery names it by.
    named = {item: item for d in sim.conversation().deliveries() for item in d.items}
    assert len(sim._status_seen) == 6
    assert all(named.get(key) is key for key in sim._status_seen)


async def test_handshake_happens_once_before_the_first_delivery() -> None:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    seen: list[str] = []

    echo = EchoBot(_bot_config(config), sim.graph_client())
    app = echo.app()

    async def spy(scope, receive, send):  # type: ignore[no-untyped-def]  # raw ASGI
        seen.append(scope["method"])
        await app(scope, receive, send)

    sim.connect(spy)
    sim.add_user(WA_ID)
    await sim.say(WA_ID, "one")
    await sim.say(WA_ID, "two")
    await sim.settle()
    assert seen[0] == "GET"
    assert seen.count("GET") == 1
    await sim.aclose()


async def test_a_wrong_verify_token_stops_the_run() -> None:
    config = SimulatorConfig(verify_token="right")
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    echo = EchoBot(_bot_config(config), sim.graph_client())
    echo.config.verify_token = "wrong"
    sim.connect(echo.app())
    sim.add_user(WA_ID)
    with pytest.raises(HandshakeError, match=r"verification handshake.*403"):
        await sim.say(WA_ID, "hi")
    await sim.aclose()


async def test_free_form_outside_the_window_fails_on_a_status() -> None:
    sim, echo = await _pair()
    await sim.say(WA_ID, "hi")
    await sim.settle()
    await sim.advance(25 * 3600)
    status_code, body = await echo.send(
        {"messaging_product": "whatsapp", "to": WA_ID, "type": "text", "text": {"body": "late"}}
    )
    assert status_code == 200  # accepted first, as Meta does
    wamid = body["messages"][0]["id"]
    await sim.settle()
    conv = sim.conversation()
    late = conv.send_for(wamid)
    assert late is not None
    assert late.in_window is False
    assert conv.sends_outside_window() == [late]
    [failed] = [s for s in conv.statuses("failed") if s.wamid == wamid]
    assert failed.errors[0].code == 131047
    assert echo.statuses[-1]["status"] == "failed"
    assert echo.statuses[-1]["errors"][0]["code"] == 131047
    # a template goes through
    status_code, body = await echo.send(
        {
            "messaging_product": "whatsapp",
            "to": WA_ID,
            "type": "template",
            "template": {"name": "hello_world", "language": {"code": "en_US"}},
        }
    )
    assert status_code == 200
    await sim.settle()
    template_statuses = sim.conversation().statuses()
    assert [s.status for s in template_statuses if s.wamid == body["messages"][0]["id"]] == [
        "sent",
        "delivered",
        "read",
    ]
    await sim.aclose()


async def test_the_window_can_fail_synchronously() -> None:
    sim, echo = await _pair(SimulatorConfig(window_error="sync"))
    await sim.say(WA_ID, "hi")
    await sim.settle()
    await sim.advance(timedelta(hours=24, seconds=1))
    status_code, body = await echo.send(
        {"messaging_product": "whatsapp", "to": WA_ID, "type": "text", "text": {"body": "x"}}
    )
    assert status_code == 400
    assert body["error"]["code"] == 131047
    refused = [s for s in sim.conversation().sends() if s.error is not None]
    assert refused[0].error is not None
    assert refused[0].error.code == 131047
    await sim.aclose()


async def test_a_user_message_reopens_the_window() -> None:
    sim, _echo = await _pair()
    await sim.say(WA_ID, "hi")
    await sim.settle()
    await sim.advance(30 * 3600)
    await sim.say(WA_ID, "back again")
    await sim.settle()
    assert all(r.in_window for r in sim.conversation().replies())
    assert sim.conversation().statuses("failed") == []
    await sim.aclose()


async def test_non_200_is_retried_on_the_schedule() -> None:
    sim, _echo = await _pair(fail_first=2)
    await sim.say(WA_ID, "hello")
    await sim.settle()
    attempts = [e for e in sim.events if isinstance(e, DeliveryAttempt)]
    first = [a for a in attempts if a.items == attempts[0].items]
    assert [a.attempt for a in first] == [1, 2, 3]
    assert [a.status_code for a in first] == [500, 500, 200]
    # default schedule: again at once, then 10 s after the first attempt
    assert [(a.at - first[0].at).total_seconds() for a in first] == [0.0, 0.0, 10.0]
    assert "retry" in first[1].faults
    copies = sim.conversation().inbound(duplicates=True)
    assert [m.duplicate for m in copies] == [False, True, True]
    assert [r.text for r in sim.conversation().replies()] == ["echo: hello"]
    await sim.aclose()


@pytest.mark.parametrize("first", [201, 204, 302, 403, 429])
async def test_any_answer_but_200_is_retried(first: int) -> None:
    # Meta retries a delivery that gets "any status other than 200", a success code included.
    answers = [first, 200]

    async def agent(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await receive()
        if scope["method"] == "GET":  # the verification handshake
            challenge = dict(
                pair.split("=", 1) for pair in scope["query_string"].decode().split("&")
            )["hub.challenge"]
            status, body = 200, challenge.encode()
        else:
            status, body = answers.pop(0), b""
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": body})

    sim = WhatsAppSimulator(SimulatorConfig(), clock=VirtualClock())
    sim.connect(agent)
    sim.add_user(WA_ID, "Ana")
    await sim.say(WA_ID, "hello")
    await sim.settle()
    attempts = [e for e in sim.events if isinstance(e, DeliveryAttempt)]
    assert [a.status_code for a in attempts] == [first, 200]
    await sim.aclose()


def test_the_default_retry_schedule_is_metas() -> None:
    # whatsapp-cloud-api.md: at 0 s, 10 s, 1 min, 10 min, 1 h, then hourly, for 7 days.
    offsets = SimulatorConfig().retry_offsets()
    assert offsets[:7] == [0, 10, 60, 600, 3600, 7200, 10800]
    assert all(later - earlier == 3600 for earlier, later in itertools.pairwise(offsets[4:]))
    assert offsets[-1] <= 7 * 24 * 3600 < offsets[-1] + 3600


async def test_retries_stop_after_seven_days() -> None:
    config = SimulatorConfig()
    sim, _echo = await _pair(config, fail_first=10_000)
    await sim.say(WA_ID, "anyone?")
    await sim.advance(timedelta(days=8))
    attempts = [e for e in sim.events if isinstance(e, DeliveryAttempt)]
    assert len(attempts) == 1 + len(config.retry_offsets())
    span = attempts[-1].at - attempts[0].at
    assert span <= timedelta(days=7)
    assert span > timedelta(days=6)
    await sim.aclose()


async def test_duplicates_fault_sends_every_update_twice_with_the_same_bytes() -> None:
    sim, echo = await _pair(faults=FaultProfile(duplicate=1.0))
    await sim.say(WA_ID, "once")
    await sim.settle()
    inbound_posts = [b for b in echo.raw_bodies if b'"messages":[' in b]
    assert len(inbound_posts) == 2
    assert inbound_posts[0] == inbound_posts[1]
    dupes = [e for e in sim.events if isinstance(e, DeliveryAttempt) and "duplicate" in e.faults]
    assert dupes
    await sim.aclose()


async def test_batching_puts_several_updates_in_one_post() -> None:
    sim, echo = await _pair(faults=FaultProfile(batch=5, batch_window=3.0))
    await sim.say(WA_ID, ["one", "two", "three"], gap=0.5)
    await sim.settle()
    first = json.loads(echo.raw_bodies[0])
    assert len(first["entry"][0]["changes"][0]["value"]["messages"]) == 3
    assert any("batched" in e.faults for e in sim.events if isinstance(e, DeliveryAttempt))
    assert [m.text for m in sim.conversation().inbound()] == ["one", "two", "three"]
    await sim.aclose()


async def test_reordering_lets_a_later_message_overtake() -> None:
    # seed chosen so that the first message is held back and the second is not
    for seed in range(50):
        sim, _echo = await _pair(faults=FaultProfile(seed=seed, reorder=0.5, reorder_window=5.0))
        await sim.say(WA_ID, ["first", "second"], gap=1.0)
        await sim.settle()
        texts = [m.text for m in sim.conversation().inbound()]
        await sim.aclose()
        if texts == ["second", "first"]:
            break
    else:
        pytest.fail("no seed in 0..49 reordered two messages at reorder=0.5")


async def test_status_faults() -> None:
    sim, echo = await _pair(faults=FaultProfile(status_missing=1.0))
    await sim.say(WA_ID, "x")
    await sim.settle()
    assert sim.conversation().statuses() == []
    await sim.aclose()

    sim, echo = await _pair(faults=FaultProfile(skip_delivered=1.0))
    await sim.say(WA_ID, "x")
    await sim.settle()
    assert [s.status for s in sim.conversation().statuses()] == ["sent", "read"]
    await sim.aclose()

    sim, echo = await _pair(faults=FaultProfile(status_out_of_order=1.0))
    await sim.say(WA_ID, "x")
    await sim.settle()
    assert [s.status for s in sim.conversation().statuses()] == ["read", "delivered", "sent"]
    assert [s["status"] for s in echo.statuses] == ["read", "delivered", "sent"]
    await sim.aclose()

    sim, _echo = await _pair(faults=FaultProfile(status_late=1.0, status_late_delay=30.0))
    await sim.say(WA_ID, "x")
    await sim.settle()
    statuses = sim.conversation().statuses()
    reply = sim.conversation().replies()[0]
    assert [(s.at - reply.at).total_seconds() for s in statuses] == [31.0, 32.0, 35.0]
    await sim.aclose()


async def test_no_read_status_when_timing_says_never() -> None:
    config = SimulatorConfig(statuses=StatusTiming(read=None))
    sim, _echo = await _pair(config)
    await sim.say(WA_ID, "x")
    await sim.settle()
    assert [s.status for s in sim.conversation().statuses()] == ["sent", "delivered"]
    await sim.aclose()


async def test_bursts_and_same_second_timestamps() -> None:
    sim, echo = await _pair(faults=FaultProfile(fragment=1.0, same_second=True, fragment_gap=0.4))
    wamids = await sim.say(WA_ID, "I would like a table for two on friday")
    await sim.settle()
    assert len(wamids) >= 2
    stamps = {m["timestamp"] for m in echo.messages}
    assert len(stamps) == 1
    texts = [m.text for m in sim.conversation().inbound()]
    assert " ".join(t or "" for t in texts) == "I would like a table for two on friday"
    await sim.aclose()


async def test_same_seed_same_trace_different_seed_different_faults() -> None:
    async def run(seed: int) -> list[str]:
        sim, _echo = await _pair(
            faults=FaultProfile(seed=seed, duplicate=0.5, reorder=0.5, status_missing=0.3),
            seed=seed,
        )
        await sim.say(WA_ID, ["a", "b", "c", "d"], gap=1.0)
        await sim.settle()
        events = [e.model_dump_json(exclude={"latency_ms"}) for e in sim.events]
        await sim.aclose()
        return events

    assert await run(1) == await run(1)
    assert await run(1) != await run(2)


async def test_tap_answers_the_last_interactive_message(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, _echo = pair
    await sim.say(WA_ID, "menu")
    await sim.settle()
    buttons = [r for r in sim.conversation().replies() if r.type == "interactive"]
    assert buttons
    await sim.tap(WA_ID, "Move")
    await sim.settle()
    tapped = sim.conversation().inbound()[-1]
    assert tapped.type == "interactive"
    assert tapped.reply_id == "move"
    assert tapped.context_id == buttons[0].wamid
    assert sim.conversation().replies()[-1].text == "you chose Move"
    with pytest.raises(StepError, match="no button or row 'nope'"):
        await sim.tap(WA_ID, "nope")


async def test_user_media_can_be_downloaded_by_the_bot(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, echo = pair
    await sim.send_media(
        WA_ID, "image", b"\xff\xd8fake-jpeg", mime_type="image/jpeg", caption="menu"
    )
    await sim.settle()
    assert echo.downloads == [b"\xff\xd8fake-jpeg"]
    assert sim.conversation().replies()[-1].text == "got 11 bytes"
    inbound = sim.conversation().inbound()[-1]
    assert inbound.type == "image"
    assert inbound.text == "menu"


async def test_events_built_without_validation_are_what_validation_would_build(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, _echo = pair
    await sim.say(WA_ID, ["menu", "caf\u00e9 \U0001f600"])
    await sim.settle()
    await sim.tap(WA_ID, "Move")
    await sim.send_media(WA_ID, "image", b"\xff\xd8jpeg", mime_type="image/jpeg", caption="a")
    await sim.receive(
        WA_ID, {"type": "location", "location": {"latitude": 37.46, "longitude": -122.21}}
    )
    await sim.settle()
    await sim.redeliver(user=WA_ID)  # a copy read back from its signed bytes
    await sim.settle()
    events = sim.conversation().events
    kinds = {e.kind for e in events}
    assert {"inbound", "send", "status", "delivery", "verification"} <= kinds
    for event in events:
        given = {name: getattr(event, name) for name in event.model_fields_set}
        validated = type(event).model_validate(given)  # copies and checks every value
        assert validated == event
        assert validated.model_fields_set == event.model_fields_set
        assert EVENT_ADAPTER.validate_json(EVENT_ADAPTER.dump_json(event)) == event


async def test_any_inbound_type_can_be_injected(pair: tuple[WhatsAppSimulator, EchoBot]) -> None:
    sim, echo = pair
    await sim.receive(
        WA_ID, {"type": "location", "location": {"latitude": 37.46, "longitude": -122.21}}
    )
    await sim.settle()
    assert echo.messages[-1]["location"]["latitude"] == 37.46
    assert sim.conversation().replies()[-1].text == "can't handle location"


async def test_a_system_message_comes_without_contacts(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, echo = pair
    change = {"body": "User Ana changed numbers", "wa_id": "5511912345678"}
    await sim.receive(
        WA_ID, {"type": "system", "system": {**change, "type": "user_changed_number"}}
    )
    await sim.say(WA_ID, "hi")
    await sim.settle()
    values = [json.loads(body)["entry"][0]["changes"][0]["value"] for body in echo.raw_bodies]
    system, text = [value for value in values if "messages" in value]
    assert "contacts" not in system
    assert system["messages"][0]["from"] == WA_ID
    assert text["contacts"][0]["wa_id"] == WA_ID


async def test_user_media_carries_what_meta_always_sends(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, echo = pair
    animated = b"RIFF\x00\x00\x00\x00WEBPVP8X\x00\x00\x00\x00\x02 frames"
    await sim.send_media(WA_ID, "document", b"%PDF-1.4 tiny", mime_type="application/pdf")
    await sim.send_media(WA_ID, "document", b"notes", mime_type="text/plain", filename="a.txt")
    await sim.send_media(WA_ID, "sticker", b"RIFF\x00\x00\x00\x00WEBPVP8 x", mime_type="image/webp")
    await sim.send_media(WA_ID, "sticker", animated, mime_type="image/webp")
    await sim.settle()
    pdf, notes, still, moving = (message[message["type"]] for message in echo.messages)
    assert (pdf["filename"], notes["filename"]) == ("document.pdf", "a.txt")
    assert (still["animated"], moving["animated"]) == (False, True)


async def test_pair_rate_limit_answers_131056(pair: tuple[WhatsAppSimulator, EchoBot]) -> None:
    sim, echo = pair
    await sim.say(WA_ID, "hi")
    await sim.settle()
    body = {"messaging_product": "whatsapp", "to": WA_ID, "type": "text", "text": {"body": "."}}
    codes = [(await echo.send(body))[0] for _ in range(60)]
    assert 400 in codes
    assert echo.send_results[-1][1]["error"]["code"] == 131056
    refused = [s for s in sim.conversation().sends() if s.error is not None]
    assert refused
    assert {s.error.code for s in refused if s.error} == {131056}
    assert sim.conversation().failed_sends() == refused


async def test_mark_read_of_an_unknown_message_is_refused(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    _sim, echo = pair
    code, body = await echo.send(
        {"messaging_product": "whatsapp", "status": "read", "message_id": "wamid.nope"}
    )
    assert code == 400
    assert body["error"]["code"] == 131009


async def test_a_refused_send_is_in_the_trace(pair: tuple[WhatsAppSimulator, EchoBot]) -> None:
    sim, echo = pair
    await sim.say(WA_ID, "hi")
    await sim.settle()
    code, body = await echo.send(
        {"messaging_product": "whatsapp", "to": WA_ID, "type": "text", "text": {"body": "x" * 4097}}
    )
    assert code == 400
    [refused] = [s for s in sim.conversation().sends() if s.error is not None]
    assert refused.error is not None
    assert refused.error.code == body["error"]["code"]
    assert refused.user == WA_ID
    assert refused.type == "text"
    assert refused.text == "x" * 4097


async def test_bot_that_hard_codes_metas_host_reaches_the_simulator() -> None:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    client = httpx.AsyncClient(transport=GraphRedirect(sim.graph_transport()))
    bot_config = _bot_config(config)
    bot_config.graph_url = "https://graph.facebook.com"
    echo = EchoBot(bot_config, client)
    sim.connect(echo.app())
    sim.add_user(WA_ID, "Ana")
    await sim.say(WA_ID, "hi")
    await sim.settle()
    assert [r.text for r in sim.conversation().replies()] == ["echo: hi"]
    await client.aclose()
    await sim.aclose()


async def test_trace_events_carry_virtual_times_in_order(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, _echo = pair
    await sim.say(WA_ID, "a")
    await sim.settle()
    await sim.advance(3600, reason="an hour later")
    await sim.say(WA_ID, "b")
    await sim.settle()
    times = [e.at for e in sim.events]
    assert times == sorted(times)
    kinds = set(_kinds(sim))
    assert {"inbound", "send", "status", "delivery", "clock", "verification"} <= kinds
    jump = next(e for e in sim.events if e.kind == "clock")
    assert jump.reason == "an hour later"
    turns = sim.conversation().turns
    assert [t.texts for t in turns] == [["a"], ["b"]]
    assert all(
        isinstance(e, InboundMessage | OutboundSend | StatusUpdate | DeliveryAttempt)
        or e.kind in ("clock", "verification")
        for e in sim.events
    )
