"""What a simulated user sends, completed and checked as Meta would pass it on.

An independent bot (``echo_bot``) receives the webhooks; the tests make it
send what Meta's samples answer (buttons, a list, a template) through the
fake Graph API, then have the user answer in the fewest words a scenario or
a control API caller would write, and compare what the bot got with Meta's
sample in ``tests/data/whatsapp``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from channels.whatsapp.composing import check_message_shape
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.messages import check_inbound, parse_message
from channels.whatsapp.payloads import PayloadError
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from harness.exceptions import StepError
from tests.channels.whatsapp.echo_bot import BotConfig, EchoBot

DATA = Path(__file__).resolve().parents[2] / "data" / "whatsapp"
WA_ID = "5511987654321"
CONFIG = SimulatorConfig()


def sample(name: str) -> dict[str, Any]:
    """The message item of Meta's sample webhook ``message_<name>.json``."""
    payload = json.loads((DATA / f"message_{name}.json").read_text(encoding="utf-8"))
    item: dict[str, Any] = payload["entry"][0]["changes"][0]["value"]["messages"][0]
    return item


def user_part(item: dict[str, Any]) -> dict[str, Any]:
    """What a user's message holds once the channel's fields are left out."""
    return {k: v for k, v in item.items() if k not in ("id", "from", "from_user_id", "timestamp")}


@pytest.fixture
async def pair() -> AsyncIterator[tuple[WhatsAppSimulator, EchoBot]]:
    sim = WhatsAppSimulator(CONFIG, clock=VirtualClock())
    bot = EchoBot(
        BotConfig(
            app_secret=CONFIG.app_secret,
            verify_token=CONFIG.verify_token,
            access_token=CONFIG.access_token,
            phone_number_id=CONFIG.phone_number_id,
            graph_url=CONFIG.public_url,
        ),
        sim.graph_client(),
    )
    sim.connect(bot.app())
    sim.add_user(WA_ID, "Ana")
    yield sim, bot
    await sim.aclose()


async def agent_sends(bot: EchoBot, kind: str, content: dict[str, Any]) -> str:
    """The bot sends the user one message of ``kind``; its wamid."""
    body = {"messaging_product": "whatsapp", "to": WA_ID, "type": kind, kind: content}
    status, answer = await bot.send(body)
    assert status == 200, answer
    wamid: str = answer["messages"][0]["id"]
    return wamid


LIST = {
    "type": "list",
    "body": {"text": "How fast?"},
    "action": {
        "button": "Options",
        "sections": [
            {
                "title": "Shipping",
                "rows": [
                    {"id": "standard", "title": "Standard"},
                    {"id": "express", "title": "Express", "description": "1-2 days"},
                ],
            }
        ],
    },
}
BUTTONS = {
    "type": "button",
    "body": {"text": "Keep 9am?"},
    "action": {
        "buttons": [
            {"type": "reply", "reply": {"id": "keep", "title": "Keep"}},
            {"type": "reply", "reply": {"id": "move", "title": "Move"}},
        ]
    },
}
TEMPLATE = {"name": "hello_world", "language": {"code": "en_US"}}


async def delivered(sim: WhatsAppSimulator, bot: EchoBot, message: dict[str, Any]) -> Any:
    """Send ``message`` as the user; the item the bot's webhook carried."""
    wamid = await sim.receive(WA_ID, message)
    await sim.settle()
    [item] = [m for m in bot.messages if m["id"] == wamid]
    return item


# -- Meta's samples, from the fewest words --------------------------------------------


@pytest.mark.parametrize(
    ("name", "agent", "written"),
    [
        (
            "interactive_list_reply",
            ("interactive", LIST),
            {"type": "interactive", "interactive": sample("interactive_list_reply")["interactive"]},
        ),
        (
            "interactive_button_reply",
            ("interactive", BUTTONS),
            {
                "type": "interactive",
                "interactive": sample("interactive_button_reply")["interactive"],
            },
        ),
        (
            "button",
            ("template", TEMPLATE),
            {"type": "button", "button": sample("button")["button"]},
        ),
        (
            "text_reply",
            ("text", {"body": "Posso às 10h?"}),
            {**user_part(sample("text_reply")), "context": {"id": "last_reply"}},
        ),
        (
            "reaction",
            ("text", {"body": "Combinado!"}),
            {"type": "reaction", "reaction": {"emoji": "👍"}},
        ),
        (
            "reaction_removed",
            ("text", {"body": "Combinado!"}),
            {"type": "reaction", "reaction": {}},
        ),
    ],
)
async def test_a_users_answer_is_delivered_in_the_shape_of_metas_sample(
    pair: tuple[WhatsAppSimulator, EchoBot],
    name: str,
    agent: tuple[str, dict[str, Any]],
    written: dict[str, Any],
) -> None:
    sim, bot = pair
    answered = await agent_sends(bot, *agent)
    item = await delivered(sim, bot, written)
    expected = user_part(sample(name))
    if "context" in expected:
        expected["context"] = {"from": CONFIG.display_phone_number, "id": answered}
    if "reaction" in expected:
        expected["reaction"] = {**expected["reaction"], "message_id": answered}
    assert user_part(item) == expected
    assert list(user_part(item)) == list(expected)  # Meta's order of keys, too
    assert parse_message(item).to_dict() == item
    check_inbound(item)


@pytest.mark.parametrize("name", ["image", "audio", "video", "document", "sticker"])
async def test_media_gets_its_type_and_digest_from_the_file_behind_its_id(
    pair: tuple[WhatsAppSimulator, EchoBot], name: str
) -> None:
    sim, bot = pair
    meta = user_part(sample(name))
    content = meta[name]
    data = f"the bytes of a {name}".encode()
    media_id = sim.media.add(data, content["mime_type"], filename=content.get("filename"))
    written = {
        k: v for k, v in content.items() if k not in ("id", "mime_type", "sha256", "url", "voice")
    }
    item = await delivered(sim, bot, {"type": name, name: {"id": media_id, **written}})
    digest = base64.b64encode(hashlib.sha256(data).digest()).decode()
    expected = {**content, "id": media_id, "sha256": digest}
    expected.pop("url", None)  # Meta's url is not always there; the simulator sends none
    assert item[name] == expected
    assert bot.downloads[-1] == data


@pytest.mark.parametrize("name", ["contacts", "location", "text", "text_forwarded", "order"])
async def test_a_message_that_needs_nothing_filled_in_goes_as_written(
    pair: tuple[WhatsAppSimulator, EchoBot], name: str
) -> None:
    sim, bot = pair
    written = user_part(sample(name))
    item = await delivered(sim, bot, written)
    assert user_part(item) == written


async def test_a_user_opening_the_chat_for_the_first_time_is_a_request_welcome(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    # Meta's webhook when a user first opens the chat (the trigger of a welcome message):
    # a message of type request_welcome with no object of its own (pywa names the type).
    sim, bot = pair
    item = await delivered(sim, bot, {"type": "request_welcome"})
    assert user_part(item) == {"type": "request_welcome"}
    assert item["from"] == WA_ID
    assert item["id"].startswith("wamid.")
    assert sim.conversation().inbound()[-1].type == "request_welcome"


# -- what a user can't send ---------------------------------------------------------


async def test_a_tap_with_nothing_to_answer_is_a_step_error(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, _ = pair
    tap = {"type": "interactive", "interactive": sample("interactive_list_reply")["interactive"]}
    with pytest.raises(StepError, match=r"^context: the agent has sent user 5511987654321 no butt"):
        await sim.receive(WA_ID, tap)
    button = {"type": "button", "button": {"payload": "CONFIRM", "text": "Confirm"}}
    with pytest.raises(StepError, match="no template with buttons to answer"):
        await sim.receive(WA_ID, button)


async def test_a_tap_must_be_one_of_the_choices_it_answers(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, bot = pair
    await agent_sends(bot, "interactive", BUTTONS)
    other = {"type": "button_reply", "button_reply": {"id": "cancel", "title": "Cancel"}}
    with pytest.raises(
        StepError, match=r"^interactive.button_reply.id: no choice 'cancel' .*'keep'"
    ):
        await sim.receive(WA_ID, {"type": "interactive", "interactive": other})
    renamed = {"type": "button_reply", "button_reply": {"id": "keep", "title": "Stay"}}
    with pytest.raises(PayloadError, match=r"button_reply.title: 'Stay', but the choice 'keep'"):
        await sim.receive(WA_ID, {"type": "interactive", "interactive": renamed})
    row = {"type": "list_reply", "list_reply": {"id": "keep", "title": "Keep"}}
    with pytest.raises(
        PayloadError, match=r"^invalid message at interactive.list_reply: .* no list"
    ):
        await sim.receive(WA_ID, {"type": "interactive", "interactive": row})


async def test_a_message_id_must_be_one_of_this_chat_and_not_a_reaction(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, bot = pair
    sim.add_user("15550002222", "Bo")
    theirs = await agent_sends(bot, "text", {"body": "hi Ana"})
    await sim.receive(WA_ID, {"type": "text", "text": {"body": "hey"}})
    await sim.settle()
    with pytest.raises(PayloadError, match=r"^invalid message at reaction.message_id: no message"):
        await sim.receive("15550002222", {"type": "reaction", "reaction": {"message_id": theirs}})
    with pytest.raises(PayloadError, match=r"at context.id: no message wamid.NOPE in the chat"):
        await sim.receive(
            WA_ID, {"type": "text", "text": {"body": "x"}, "context": {"id": "wamid.NOPE"}}
        )
    reacted = await sim.receive(WA_ID, {"type": "reaction", "reaction": {"emoji": "👍"}})
    with pytest.raises(PayloadError, match="is a reaction; a reaction can't be answered"):
        await sim.receive(WA_ID, {"type": "reaction", "reaction": {"message_id": reacted}})
    with pytest.raises(PayloadError, match="'offer' is not a message reference"):
        await sim.receive(WA_ID, {"type": "reaction", "reaction": {"message_id": "offer"}})


async def test_a_user_quoting_their_own_message_quotes_themselves(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, bot = pair
    first = await sim.receive(WA_ID, {"type": "text", "text": {"body": "9am"}})
    item = await delivered(
        sim, bot, {"type": "text", "text": {"body": "^"}, "context": {"id": first}}
    )
    assert item["context"] == {"from": WA_ID, "id": first}


async def test_media_must_name_a_stored_file_of_its_kind(
    pair: tuple[WhatsAppSimulator, EchoBot],
) -> None:
    sim, _ = pair
    voice = sim.media.add(b"OggS voice", "audio/ogg; codecs=opus")
    with pytest.raises(PayloadError, match=r"^invalid message at image.id: required: the id"):
        await sim.receive(WA_ID, {"type": "image", "image": {"caption": "x"}})
    with pytest.raises(PayloadError, match=r"image.id: no media '404' \(upload the file first"):
        await sim.receive(WA_ID, {"type": "image", "image": {"id": "404"}})
    with pytest.raises(
        PayloadError, match=r"image.id: media .* is audio/ogg; codecs=opus, not image"
    ):
        await sim.receive(WA_ID, {"type": "image", "image": {"id": voice}})
    with pytest.raises(PayloadError, match=r"at audio.mime_type: 'audio/mpeg', but media"):
        await sim.receive(
            WA_ID, {"type": "audio", "audio": {"id": voice, "mime_type": "audio/mpeg"}}
        )


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"type": "poll", "poll": {}}, "invalid message at type: expected a type Meta sends"),
        ({"text": {"body": "hi"}}, "invalid message at type: expected a type Meta sends (text,"),
        ({"type": "interactive"}, "at interactive: a message of type 'interactive' carries an obj"),
        (
            {"type": "contacts", "contacts": {}},
            "at contacts: a message of type 'contacts' carries a ",
        ),
        ({"type": "text", "text": {"body": ""}}, "at text.body: empty; WhatsApp sends no empty"),
        ({"type": "text", "text": {"body": " \n\t"}}, "at text.body: empty; WhatsApp sends no emp"),
        ({"type": "text", "text": {}}, "at text.body: Field required"),
        (
            {"type": "contacts", "contacts": []},
            "at contacts: a contacts message shares at least one",
        ),
        (
            {"type": "location", "location": {"latitude": 91, "longitude": 0}},
            "at location.latitude: must lie between -90 and 90",
        ),
        (
            {"type": "location", "location": {"latitude": 0, "longitude": -181}},
            "at location.longitude: must lie between -180 and 180",
        ),
        (
            {"type": "text", "text": {"body": "x"}, "context": {"from": "15550001111"}},
            "at context.id: required: a message quoting another names its sender (from) and its id",
        ),
        (
            {"type": "interactive", "interactive": {"type": "button_reply"}},
            "at interactive.button_reply: required: the button_reply object",
        ),
        (
            {"type": "interactive", "interactive": {"type": "button", "button": {}}},
            "at interactive.type: expected one of button_reply, list_reply, nfm_reply, "
            "got 'button'",
        ),
        ({"type": "order"}, "at order: a message of type 'order' carries an object under 'order'"),
        (
            {"type": "reaction", "reaction": {"message_id": 5}},
            "at reaction.message_id: Input should",
        ),
    ],
)
def test_a_message_meta_would_not_send_is_refused_naming_the_field(
    message: dict[str, Any], error: str
) -> None:
    with pytest.raises(PayloadError, match=_escaped(error)):
        check_message_shape(message)


def _escaped(text: str) -> str:
    return "".join("\\" + c if c in "()[].*+?^$|{}" else c for c in text)


@pytest.mark.parametrize(
    "message",
    [
        {"type": "reaction", "reaction": {"emoji": "👍"}},
        {
            "type": "interactive",
            "interactive": {"type": "list_reply", "list_reply": {"id": "a", "title": "A"}},
        },
        {"type": "image", "image": {"caption": "the menu"}},
        {"type": "text", "text": {"body": "that"}, "context": {"id": "last_reply"}},
        {"type": "unsupported", "unsupported": {"type": "poll"}},
        {"type": "text", "text": {"body": "hi"}, "referral": {"source_type": "ad"}},
    ],
)
def test_what_the_channel_fills_in_later_may_be_left_out_of_a_shape(
    message: dict[str, Any],
) -> None:
    check_message_shape(message)
