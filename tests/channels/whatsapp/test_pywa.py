"""pywa, a real bot framework from PyPI, unmodified, against the simulator.

Its own webhook handling (signature check, dispatch, and its update, message
and status classes) reads every kind of webhook the simulator sends; and a
pywa bot served as the simulator's webhook answers users through pywa's
client, which reaches the fake Graph API over loopback HTTP (pywa hard-codes
Meta's host but takes the ``httpx`` client it uses, so ``GraphRedirect``
points it at the simulator).

Where pywa breaks on a webhook Meta sends the same way, that is pywa's
problem, noted in ``PYWA_BREAKS``; where it breaks because the simulator does
not yet send as Meta does, the case is in ``NOT_YET_AS_META``. Both are
expected failures, so each flips when its cause goes.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Final

import httpx
import pytest
from pywa import filters
from pywa.client import WhatsApp
from pywa.errors import WhatsAppError
from pywa.handlers import (
    CallbackButtonHandler,
    CallbackSelectionHandler,
    MessageHandler,
    MessageStatusHandler,
    PhoneNumberChangeHandler,
)
from pywa.types.callback import Button, CallbackButton, CallbackSelection
from pywa.types.message import Message
from pywa.types.message_status import MessageStatus
from pywa.types.others import Industry
from pywa.types.system import PhoneNumberChange
from pywa.types.templates import (
    BodyText,
    Buttons,
    CopyCodeButton,
    FooterText,
    HeaderText,
    QuickReplyButton,
    Template,
    TemplateCategory,
    TemplateLanguage,
    TemplateStatus,
    URLButton,
)
from pywa_async.client import WhatsApp as AsyncWhatsApp
from starlette.applications import Starlette

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.control import control_app
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.transport import GraphRedirect
from harness.clock import VirtualClock
from tests.bots.loopback import free_port
from tests.channels.whatsapp.conformance.traffic import (
    NOT_YET_AS_META,
    WEBHOOK_KINDS,
    recorded_traffic,
)

WA_ID: Final = "5511987654321"
PHOTO: Final = b"\xff\xd8\xff\xe0 a photo"

PYWA_BREAKS: Final = {
    "interactive_unreadable_with_value_errors": (
        "pywa 4.5 reads value.errors[0].message, which Meta's observed sample of an"
        " unreadable message (whatsapp-cloud-api.md section 2) does not carry"
    ),
}
"""Webhooks Meta sends as the simulator does, on which pywa itself breaks."""

# The pywa update each kind of webhook must become.
UPDATE_TYPES: Final = {
    "button_reply": CallbackButton,
    "template_quick_reply": CallbackButton,
    "list_reply": CallbackSelection,
    "system_user_changed_number": PhoneNumberChange,
}


def _expected(kind: str) -> type[Any]:
    if kind in UPDATE_TYPES:
        return UPDATE_TYPES[kind]
    return MessageStatus if kind.startswith("status_") else Message


def _kind(kind: str) -> Any:
    reason = PYWA_BREAKS.get(kind) or NOT_YET_AS_META.get(kind)
    marks = [] if reason is None else [pytest.mark.xfail(strict=True, reason=reason)]
    return pytest.param(kind, marks=marks, id=kind)


def _pywa_reader(config: SimulatorConfig, seen: list[Any]) -> WhatsApp:
    """A pywa client that only handles updates, keeping each one it builds."""
    wa = WhatsApp(
        phone_id=config.phone_number_id,
        waba_id=config.waba_id,
        verify_token=config.verify_token,
        app_secret=config.app_secret,
    )

    def keep(_: WhatsApp, update: Any) -> None:
        seen.append(update)

    wa.add_handlers(
        MessageHandler(keep),
        CallbackButtonHandler(keep),
        CallbackSelectionHandler(keep),
        MessageStatusHandler(keep),
        PhoneNumberChangeHandler(keep),
    )
    return wa


def _check_fields(kind: str, update: Any, value: dict[str, Any]) -> None:
    """What pywa read matches what the webhook says."""
    if isinstance(update, MessageStatus):
        item = value["statuses"][0]
        assert (update.id, update.status.value) == (item["id"], item["status"])
        assert update.from_user.bsuid == value["contacts"][0]["user_id"]
        if item["status"] == "failed":
            assert update.error is not None
            assert update.error.code == item["errors"][0]["code"]
        return
    message = value["messages"][0]
    assert update.id == message["id"]
    if isinstance(update, PhoneNumberChange):
        assert (update.old_wa_id, update.new_wa_id) == (message["from"], message["system"]["wa_id"])
        return
    contact = value["contacts"][0]
    assert (update.from_user.bsuid, update.from_user.wa_id) == (
        contact["user_id"],
        contact.get("wa_id"),
    )
    assert update.from_user.name == contact["profile"]["name"]
    if isinstance(update, CallbackButton | CallbackSelection):
        reply = message.get("interactive", {}).get(kind) or message["button"]
        assert update.data == reply.get("id", reply.get("payload"))
    elif kind.startswith("text"):
        assert update.text == message["text"]["body"]
        assert update.forwarded == ("forwarded" in kind)


@pytest.mark.parametrize("kind", [_kind(kind) for kind in WEBHOOK_KINDS])
def test_pywa_reads_every_kind_of_webhook_the_simulator_sends(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    traffic = recorded_traffic()
    delivery = traffic.webhooks[kind]
    seen: list[Any] = []
    wa = _pywa_reader(traffic.config, seen)
    assert wa.webhook_update_validator(delivery.body, delivery.signature) is None
    with caplog.at_level(logging.ERROR, logger="pywa"):
        assert wa.webhook_update_handler(delivery.body) == ("ok", 200)
    assert [record.getMessage() for record in caplog.records] == []
    [update] = seen
    assert type(update) is _expected(kind)
    value = json.loads(delivery.body)["entry"][0]["changes"][0]["value"]
    _check_fields(kind, update, value)


def test_pywa_refuses_a_webhook_with_a_wrong_signature() -> None:
    traffic = recorded_traffic()
    delivery = traffic.webhooks["text"]
    wa = _pywa_reader(traffic.config, [])
    assert wa.webhook_update_validator(delivery.body, "sha256=" + "0" * 64) == ("Forbidden", 403)


def _pywa_bot(
    config: SimulatorConfig, graph_url: str, *, think: float = 0.0
) -> tuple[Starlette, httpx.AsyncClient]:
    """A pywa bot served as a Starlette app, sending through pywa's client to ``graph_url``.

    With ``think``, it answers text as an LLM bot does, after acknowledging the webhook:
    "typing...", then ``think`` seconds of real time (its model), then the answer.
    """
    thinking: set[asyncio.Task[None]] = set()  # strong references, or the loop may drop them
    server = Starlette()
    session = httpx.AsyncClient(transport=GraphRedirect(graph_url))
    wa = AsyncWhatsApp(
        phone_id=config.phone_number_id,
        token=config.access_token,
        session=session,
        server=server,  # type: ignore[arg-type]  # pywa serves on Starlette too; its hint omits it
        webhook_endpoint=config.webhook_path,
        verify_token=config.verify_token,
        app_secret=config.app_secret,
        waba_id=config.waba_id,
    )

    # pywa_async's updates are typed as their synchronous bases (awaiting their methods
    # type-checks as awaiting a result), so the callbacks take them as Any.
    async def on_text(_: AsyncWhatsApp, message: Any) -> None:
        if not think:
            await message.mark_as_read()
            await answer(message)
            return
        # Meta wants the webhook answered at once: the model's work goes on after the 200.
        task = asyncio.get_running_loop().create_task(answer_later(message))
        thinking.add(task)
        task.add_done_callback(thinking.discard)

    async def answer_later(message: Any) -> None:
        await message.indicate_typing()  # marks it read too
        await asyncio.sleep(think)
        await answer(message)

    async def answer(message: Any) -> None:
        if message.text == "menu":
            buttons = [
                Button(title="Keep", callback_data="keep"),
                Button(title="Move", callback_data="move"),
            ]
            await message.reply_text("Keep 9am?", buttons=buttons)
        else:
            await message.reply_text(f"echo: {message.text}")

    async def on_button(_: AsyncWhatsApp, tap: Any) -> None:
        await tap.react("👍")
        await tap.reply_text(f"you chose {tap.title}")

    async def on_image(_: AsyncWhatsApp, message: Any) -> None:
        assert message.image is not None
        data = await message.image.get_bytes()
        await message.reply_text(f"got {len(data)} bytes")
        # Uploaded through the media endpoint, then sent by id, quoting the user's photo.
        await message.reply_image(data, caption="yours, back", quote=True, mime_type="image/jpeg")

    # pywa_async uses pywa's handler classes, whose hints name the synchronous client.
    wa.add_handlers(
        MessageHandler(on_text, filters.text),  # type: ignore[arg-type]  # see above
        MessageHandler(on_image, filters.image),  # type: ignore[arg-type]  # see above
        CallbackButtonHandler(on_button),  # type: ignore[arg-type]  # see above
    )
    return server, session


@pytest.mark.network
async def test_a_pywa_bot_talks_to_users_through_the_fake_graph_api_over_loopback() -> None:
    port = free_port()
    # Media download URLs name the address the fake Graph API is served at.
    config = SimulatorConfig(public_url=f"http://127.0.0.1:{port}")
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    async with BackgroundServer(sim.graph_app, port=port) as graph:
        bot, session = _pywa_bot(config, graph.url)
        sim.connect(bot)
        sim.add_user(WA_ID, "Ana")
        await sim.say(WA_ID, "hello")
        await sim.settle(real_quiet=0.2)
        await sim.say(WA_ID, "menu")
        await sim.settle(real_quiet=0.2)
        await sim.tap(WA_ID, "Move")
        await sim.settle(real_quiet=0.2)
        await sim.send_media(WA_ID, "image", PHOTO, mime_type="image/jpeg")
        await sim.settle(real_quiet=0.2)
        await session.aclose()
    await sim.aclose()
    conversation = sim.conversation()
    replies = [reply.text for reply in conversation.replies() if reply.type != "reaction"]
    assert replies == [
        "echo: hello",
        "Keep 9am?",
        "you chose Move",
        f"got {len(PHOTO)} bytes",
        "yours, back",
    ]
    photo = conversation.inbound()[-1]
    [image] = [send.request for send in conversation.sends() if send.type == "image"]
    assert image["context"] == {"message_id": photo.wamid}
    sent = image["image"]
    assert isinstance(sent, dict)
    assert sim.media.get(str(sent["id"])) is not None
    sends = conversation.sends()
    assert [send.type for send in sends].count("mark_read") == 2
    assert [send.error for send in sends] == [None] * len(sends)
    [reaction] = [send.request for send in sends if send.type == "reaction"]
    assert reaction["reaction"] == {"message_id": conversation.inbound()[2].wamid, "emoji": "👍"}


@pytest.mark.network
async def test_a_pywa_bot_showing_typing_while_it_thinks_is_waited_for_by_a_serve_call() -> None:
    # As under harness serve: time paced on real time, users played through the control API.
    # The bot's model takes longer than the 0.3 s of silence that ends a call with no answer;
    # pywa's own typing indicator is what holds the call until the answer.
    port = free_port()
    config = SimulatorConfig(public_url=f"http://127.0.0.1:{port}")
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    pacer = asyncio.get_running_loop().create_task(sim.run_paced())
    try:
        async with BackgroundServer(sim.graph_app, port=port) as graph:
            bot, session = _pywa_bot(config, graph.url, think=0.8)
            sim.connect(bot)
            control = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=control_app(sim)), base_url="http://sim"
            )
            async with control, session:
                answered: list[list[str]] = []  # the outbox as each call answered
                for text in ("hello", "menu"):
                    said = await control.post(
                        "/_harness/inbound", json={"user": WA_ID, "text": text}, timeout=30
                    )
                    assert said.status_code == 200, said.text
                    outbox = (await control.get("/_harness/outbox")).json()["messages"]
                    answered.append(
                        [
                            m["text"]["body"] if "text" in m else m["interactive"]["body"]["text"]
                            for m in outbox
                        ]
                    )
    finally:
        pacer.cancel()
        await sim.aclose()
    assert answered == [["echo: hello"], ["echo: hello", "Keep 9am?"]]
    sends = sim.conversation().sends()
    assert [send.type for send in sends] == ["typing", "text", "typing", "interactive"]


@pytest.mark.network
async def test_pywa_sends_a_template_it_created_as_meta_takes_it() -> None:
    # The template as pywa writes it for Meta's template endpoint is the business's template;
    # pywa's own parameters for it must pass, and pywa must hear Meta's code when one is missing.
    created = Template(
        name="order_ready",
        language=TemplateLanguage.ENGLISH_US,
        category=TemplateCategory.UTILITY,
        components=[
            HeaderText("Order {{1}}", "#7"),
            BodyText("Hi {{1}}, order {{2}} is ready.", "Ana", "#7"),
            FooterText(text="Reply STOP to opt out"),
            Buttons(
                buttons=[
                    URLButton(
                        text="Track",
                        url="https://example.com/t/{{1}}",
                        example="https://example.com/t/7",
                    ),
                    QuickReplyButton(text="Stop"),
                    CopyCodeButton(example="25OFF"),
                ]
            ),
        ],
    )
    config = SimulatorConfig(templates=(json.loads(created.to_json()),))
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    sim.add_user(WA_ID, "Ana")
    params: list[Any] = [
        # pywa calls these on the class; they lack @staticmethod, so a type checker binds self
        HeaderText.params("#7"),  # type: ignore[arg-type]
        BodyText.params("Ana", "#7"),  # type: ignore[arg-type]
        URLButton.params(url_variable="7", index=0),
        QuickReplyButton.params(callback_data="stop", index=1),
        CopyCodeButton.params(coupon_code="25OFF", index=2),
    ]
    async with BackgroundServer(sim.graph_app, port=free_port()) as graph:
        session = httpx.AsyncClient(transport=GraphRedirect(graph.url))
        wa = AsyncWhatsApp(
            phone_id=config.phone_number_id, token=config.access_token, session=session
        )
        sent = await wa.send_template(WA_ID, "order_ready", TemplateLanguage.ENGLISH_US, params)
        try:
            await wa.send_template(WA_ID, "order_ready", TemplateLanguage.ENGLISH_US, params[:-1])
        except WhatsAppError as exc:  # pywa's errors don't survive pytest.raises' traceback
            refused: WhatsAppError | None = exc
        else:
            refused = None
        await session.aclose()
    await sim.aclose()
    assert refused is not None
    assert refused.code == 132000
    assert "button 2 (copy_code)" in str(refused.details)
    [reply] = sim.conversation().replies()
    assert reply.wamid == sent.id
    assert reply.text == "Order #7\nHi Ana, order #7 is ready.\nReply STOP to opt out"


@pytest.mark.network
async def test_pywa_reads_the_business_it_speaks_for() -> None:
    # What a pywa bot reads at start or on a dashboard: its number, its account, its profile
    # (and changes it), its templates; each parsed by pywa's own classes, unmodified.
    config = SimulatorConfig(
        templates=(
            {
                "name": "order_ready",
                "language": "en_US",
                "status": "APPROVED",
                "category": "UTILITY",
                "components": [
                    {
                        "type": "BODY",
                        "text": "Hi {{1}}, order {{2}} is ready.",
                        "example": {"body_text": [["Ana", "#7"]]},
                    }
                ],
            },
        )
    )
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    async with BackgroundServer(sim.graph_app, port=free_port()) as graph:
        session = httpx.AsyncClient(transport=GraphRedirect(graph.url))
        wa = AsyncWhatsApp(
            phone_id=config.phone_number_id,
            token=config.access_token,
            session=session,
            waba_id=config.waba_id,
        )
        number = await wa.get_business_phone_number()
        numbers = (await wa.get_business_phone_numbers())[:]
        account = await wa.get_business_account()
        await wa.update_business_profile(
            about="Tables for two to ten", industry=Industry.RESTAURANT
        )
        profile = await wa.get_business_profile()
        templates = await wa.get_templates(statuses=[TemplateStatus.APPROVED])
        listed = templates[:]
        one = await wa.get_template(listed[0].id)
        await session.aclose()
    await sim.aclose()
    assert (number.id, number.display_phone_number) == (
        config.phone_number_id,
        "+1 555-000-1111",
    )
    assert [found.id for found in numbers] == [config.phone_number_id]
    assert account.id == config.waba_id
    assert (profile.about, profile.industry) == ("Tables for two to ten", Industry.RESTAURANT)
    assert templates.total_count == 1
    assert [template.name for template in listed] == ["order_ready"]
    assert (one.name, one.status) == ("order_ready", TemplateStatus.APPROVED)
    assert isinstance(one.components[0], BodyText)
    assert one.components[0].text == "Hi {{1}}, order {{2}} is ready."
