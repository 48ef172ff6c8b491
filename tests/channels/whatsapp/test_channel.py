"""The WhatsApp channel for the runner: the reference agent in-process, behind the simulator.

Each test builds one channel session the way the runner does, with the
booking agent's factory; a wrapping factory keeps the app and the
environment it was given, so a test can look at the agent after ``close()``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.applications import Starlette

from agents.booking import UNSUPPORTED_TEXT, BookingAgent, agent_factory
from channels.whatsapp.channel import MEDIA_SAMPLES, WhatsAppChannel, agent_settings
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.ids import bsuid_for
from channels.whatsapp.plugin import whatsapp_plugin
from harness.channel import AgentEnvironment, ChannelSetup, UserSpec
from harness.clock import virtual_base
from harness.exceptions import ConfigError
from harness.store import MemoryStore
from harness.suites.expectations import reply_text
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from harness.trace import ClockJump, InboundMessage, OutboundSend

ANA = UserSpec(name="Ana", wa_id="15550001111", bsuid="BR.1234567890")
BEN = UserSpec(name="Ben", wa_id="15550002222")
HOUR = 3600.0


class Keeper:
    """The booking agent's factory, keeping the app it built and the environment it got."""

    def __init__(self) -> None:
        self.env: AgentEnvironment | None = None
        self.app: Starlette | None = None

    def __call__(self, env: AgentEnvironment) -> Starlette:
        self.env = env
        built = agent_factory(env)
        assert isinstance(built, Starlette)
        self.app = built
        return built

    @property
    def agent(self) -> BookingAgent:
        assert self.app is not None
        agent = self.app.state.agent
        assert isinstance(agent, BookingAgent)
        return agent


@pytest.fixture
def keeper() -> Keeper:
    return Keeper()


@pytest.fixture
async def channel(keeper: Keeper) -> AsyncIterator[WhatsAppChannel]:
    session = WhatsAppChannel(ChannelSetup(users=[ANA, BEN], agent_factory=keeper))
    await session.start()
    yield session
    await session.close()


async def _say(channel: WhatsAppChannel, user: str, *texts: str) -> None:
    await channel.say(user, list(texts))
    await channel.settle()


def _inbound(channel: WhatsAppChannel) -> list[InboundMessage]:
    return channel.conversation().inbound(duplicates=True)


async def test_users_are_named_as_in_the_scenario(channel: WhatsAppChannel) -> None:
    await _say(channel, "Ana", "hi")
    await _say(channel, "Ben", "hello")
    await _say(channel, "BR.1234567890", "hi again")  # a BSUID finds its user too
    await _say(channel, "15550002222", "hello again")
    assert [(m.user, m.text) for m in _inbound(channel)] == [
        ("15550001111", "hi"),
        ("15550002222", "hello"),
        ("15550001111", "hi again"),
        ("15550002222", "hello again"),
    ]
    conversation = channel.conversation()
    assert conversation.channel == "whatsapp"
    participants = {p.name: (p.id, p.user_id) for p in conversation.participants}
    assert participants["Ana"] == ("15550001111", "BR.1234567890")
    assert participants["Ben"][0] == "15550002222"
    assert {r.user for r in conversation.replies()} == {"15550001111", "15550002222"}
    with pytest.raises(ConfigError, match="no simulated user 'Cy'"):
        await channel.say("Cy", ["hi"])


async def test_a_burst_arrives_gap_apart_on_the_virtual_clock(channel: WhatsAppChannel) -> None:
    await channel.say("Ana", ["hi", "a table", "friday at 8pm"], gap=1.5)
    await channel.settle()
    first, second, third = (m.at for m in _inbound(channel))
    assert (second - first, third - second) == (timedelta(seconds=1.5), timedelta(seconds=1.5))
    [turn] = channel.conversation().turns
    assert len(turn.messages) == 3
    assert len(turn.replies) == 1  # the agent waits for the burst to end


async def test_a_booking_conversation(channel: WhatsAppChannel, keeper: Keeper) -> None:
    await _say(channel, "Ana", "friday at 8pm")
    proposal = channel.conversation().replies()[-1]
    assert proposal.type == "interactive"
    assert reply_text(proposal).endswith("Confirm Change")
    assert channel.conversation().tool_calls("book_appointment") == []
    await channel.tap("Ana", "Confirm")
    await channel.settle()
    conversation = channel.conversation()
    tapped = conversation.inbound()[-1]
    assert (tapped.type, tapped.reply_id, tapped.context_id) == (
        "interactive",
        "confirm",
        proposal.wamid,
    )
    [booking] = conversation.tool_calls("book_appointment")
    assert booking.side_effect
    assert booking.args["slot"] == "20:00"
    booked = conversation.replies()[-1]
    assert reply_text(booked).startswith("Booked!")
    assert "delivered" in {s.status for s in conversation.statuses() if s.wamid == booked.wamid}
    assert await keeper.agent.calendar.bookings_of(ANA.wa_id or "")


@pytest.mark.parametrize("kind", sorted(MEDIA_SAMPLES))
async def test_media_shorthand_sends_sample_bytes(channel: WhatsAppChannel, kind: str) -> None:
    await channel.send("Ana", {"type": kind, kind: {}})
    await channel.settle()
    [message] = _inbound(channel)
    assert message.type == kind
    media = message.body[kind]
    assert isinstance(media, dict)
    data, mime = MEDIA_SAMPLES[kind]
    assert media["mime_type"] == mime
    stored = channel.sim.media.get(str(media["id"]))
    assert stored is not None
    assert stored.data == data
    assert media["sha256"] == base64.b64encode(hashlib.sha256(data).digest()).decode()
    # The agent can't read media, and says so.
    assert [r.text for r in channel.conversation().replies()] == [UNSUPPORTED_TEXT]


async def test_media_shorthand_keeps_caption_filename_and_mime_type(
    channel: WhatsAppChannel,
) -> None:
    await channel.send("Ana", {"type": "image", "image": {"caption": "the menu"}})
    await channel.send(
        "Ana",
        {"type": "document", "document": {"filename": "menu.pdf", "mime_type": "text/plain"}},
    )
    await channel.settle()
    image, document = (m.body for m in _inbound(channel))
    assert isinstance(image["image"], dict)
    assert image["image"]["caption"] == "the menu"
    assert isinstance(document["document"], dict)
    assert document["document"]["filename"] == "menu.pdf"
    assert document["document"]["mime_type"] == "text/plain"


async def test_other_messages_are_sent_as_given(channel: WhatsAppChannel) -> None:
    location = {"latitude": 38.7, "longitude": -9.1, "name": "Casa Lucia"}
    await channel.send("Ben", {"type": "location", "location": location})
    await channel.settle()
    [message] = _inbound(channel)
    assert (message.user, message.type, message.body["location"]) == (
        "15550002222",
        "location",
        location,
    )
    assert channel.conversation().replies()[-1].user == "15550002222"


async def test_the_documented_reaction_step_reacts_to_the_agents_last_reply() -> None:
    """``send: {type: reaction, reaction: {emoji: "👍"}}``, as scenarios/README.md shows it."""
    text = """\
steps:
  - say: a table on friday at 8pm for 2
  - send: {type: reaction, reaction: {emoji: "👍"}}
  - say: about that
    reply_to: reply 1
"""
    result = await Runner(RunOptions()).run_scenario(parse_scenario(text))
    assert result.status == "passed", (result.error, result.violations)
    assert result.conversation is not None
    events = result.conversation.events
    _, thumbs, quote = result.conversation.inbound()
    before = events[: events.index(thumbs)]
    replies = [e.wamid for e in before if isinstance(e, OutboundSend) and e.is_message and e.ok]
    assert thumbs.body["reaction"] == {"message_id": replies[-1], "emoji": "👍"}
    assert quote.body["context"] == {"from": "15550001111", "id": replies[0]}
    assert quote.text == "about that"


async def test_redeliver_sends_a_message_again(channel: WhatsAppChannel) -> None:
    await _say(channel, "Ana", "hi")
    await _say(channel, "Ana", "what are your opening hours?")
    first, second = _inbound(channel)
    await channel.redeliver("Ana", 1)
    await channel.settle()
    again = _inbound(channel)[-1]
    assert (again.wamid, again.duplicate, again.body) == (first.wamid, True, first.body)
    await channel.redeliver("Ana")  # the last one by default
    await channel.settle()
    again = _inbound(channel)[-1]
    assert (again.wamid, again.duplicate) == (second.wamid, True)
    assert len(channel.conversation().inbound()) == 2  # copies aren't new messages


@pytest.mark.parametrize("index", [0, 3, -1])
async def test_redeliver_refuses_a_message_that_was_not_sent(
    channel: WhatsAppChannel, index: int
) -> None:
    await _say(channel, "Ana", "hi", "there")
    with pytest.raises(
        ConfigError, match=rf"^user Ana has sent 2 messages; can't redeliver #{index}$"
    ):
        await channel.redeliver("Ana", index)


async def test_redeliver_before_anything_was_sent(channel: WhatsAppChannel) -> None:
    with pytest.raises(ConfigError, match="has sent 0 messages; can't redeliver #1"):
        await channel.redeliver("Ben", 1)
    with pytest.raises(ConfigError, match="has sent nothing to redeliver"):
        await channel.redeliver("Ben")


async def test_wait_moves_virtual_time_and_the_followup_comes(channel: WhatsAppChannel) -> None:
    await _say(channel, "Ana", "friday at 8pm")
    before = channel.now()
    await channel.wait(26 * HOUR)
    assert channel.now() >= before + timedelta(hours=26)
    jumps = [e for e in channel.conversation().events if isinstance(e, ClockJump)]
    assert jumps[-1].reason == "wait 93600s"
    assert channel.conversation().replies()[-1].is_template  # the window had closed


async def test_the_agent_is_built_with_the_simulators_settings(keeper: Keeper) -> None:
    setup = ChannelSetup(
        users=[ANA],
        agent_factory=keeper,
        agent_settings={"BOOKING_FOLLOWUP_HOURS": "2", "WHATSAPP_API_VERSION": "v24.0"},
        options={"app_secret": "s3cret", "phone_number_id": "123456"},
        store=MemoryStore(),
        namespace="run:0",
    )
    channel = WhatsAppChannel(setup)
    try:
        await channel.start()
        env = keeper.env
        assert env is not None
        assert env.channel == "whatsapp"
        # The simulator's clock, seen through the offset a clock_skew fault may move later.
        assert virtual_base(env.clock) is channel.sim.clock
        assert env.clock.now() == channel.sim.clock.now()
        assert env.http_client is not None
        assert env.settings == {
            **agent_settings(channel.config, channel.config.public_url),
            "BOOKING_FOLLOWUP_HOURS": "2",
            "WHATSAPP_API_VERSION": "v24.0",  # the scenario's settings win
        }
        assert env.settings["WHATSAPP_APP_SECRET"] == "s3cret"
        assert env.settings["WHATSAPP_PHONE_NUMBER_ID"] == "123456"
        assert keeper.agent.settings.followup_hours == 2
        await _say(channel, "Ana", "hi")
        assert channel.conversation().replies()  # the signed webhook was accepted
    finally:
        await channel.close()


def test_agent_settings_name_the_simulator_like_environment_variables() -> None:
    config = SimulatorConfig(app_secret="a", verify_token="v", access_token="t")
    assert agent_settings(config, "http://graph.test") == {
        "WHATSAPP_GRAPH_URL": "http://graph.test",
        "WHATSAPP_API_VERSION": config.api_version,
        "WHATSAPP_ACCESS_TOKEN": "t",
        "WHATSAPP_PHONE_NUMBER_ID": config.phone_number_id,
        "WHATSAPP_APP_SECRET": "a",
        "WHATSAPP_VERIFY_TOKEN": "v",
    }


def test_faults_get_the_scenarios_seed() -> None:
    preset = WhatsAppChannel(
        ChannelSetup(users=[ANA], agent_factory=agent_factory, faults="duplicates", seed=9)
    )
    assert (preset.sim.faults.duplicate, preset.sim.faults.seed) == (1.0, 9)
    mapping = WhatsAppChannel(
        ChannelSetup(users=[ANA], agent_factory=agent_factory, faults={"reorder": 0.5}, seed=4)
    )
    assert (mapping.sim.faults.reorder, mapping.sim.faults.seed) == (0.5, 4)
    with pytest.raises(ConfigError, match="fault profile 'sometimes'"):
        WhatsAppChannel(ChannelSetup(users=[ANA], agent_factory=agent_factory, faults="sometimes"))


async def test_each_run_gives_its_messages_ids_of_its_own() -> None:
    async def first_wamid(namespace: str, seed: int = 0) -> str:
        setup = ChannelSetup(users=[ANA], agent_factory=Keeper(), seed=seed, namespace=namespace)
        session = WhatsAppChannel(setup)
        await session.start()
        await _say(session, "Ana", "hi")
        wamid = _inbound(session)[0].wamid
        await session.close()
        return wamid

    # the runner names each scenario of each run: run<seed>-<start time>:<index>
    first = await first_wamid("run0-20260101000000000000:0")
    assert first == await first_wamid("run0-20260101000000000000:0")  # the same run, again
    assert first != await first_wamid("run0-20260101000000000001:0")  # a later run
    assert first != await first_wamid("run0-20260101000000000000:1")  # another scenario
    assert first != await first_wamid("run0-20260101000000000000:0", seed=1)


def test_users_without_a_bsuid_get_their_numbers_own() -> None:
    users = [UserSpec(name=f"U{n}", wa_id=f"5511900000{n:03d}") for n in range(20)]
    channel = WhatsAppChannel(ChannelSetup(users=[*users, ANA], agent_factory=agent_factory))
    waba = channel.config.waba_id
    bsuids = [channel.sim.user(u.wa_id or "").user_id for u in users]
    assert bsuids == [bsuid_for(u.wa_id or "", waba) for u in users]
    assert len(set(bsuids)) == len(users)
    assert all(b.startswith("BR.") for b in bsuids)
    assert channel.sim.user("15550001111").user_id == "BR.1234567890"  # given: kept
    again = WhatsAppChannel(ChannelSetup(users=users, agent_factory=agent_factory, seed=5))
    assert [again.sim.user(u.wa_id or "").user_id for u in users] == bsuids


def test_a_scenario_user_can_be_a_number_not_on_whatsapp() -> None:
    desk = UserSpec(name="Desk", wa_id="15550009999", on_whatsapp=False)
    channel = WhatsAppChannel(ChannelSetup(users=[ANA, desk], agent_factory=agent_factory))
    assert channel.sim.user("15550009999").on_whatsapp is False
    assert channel.sim.user("15550001111").on_whatsapp is True


@pytest.mark.parametrize(
    "where",
    [
        pytest.param({}, id="neither"),
        pytest.param(
            {"agent_factory": agent_factory, "target_url": "http://127.0.0.1:9/webhook"},
            id="both",
        ),
    ],
)
def test_an_agent_factory_or_a_target_url_exactly(where: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="needs an agent factory or a target URL"):
        WhatsAppChannel(ChannelSetup(users=[ANA], **where))


def test_a_target_url_alone_is_enough_to_build_the_channel() -> None:
    channel = WhatsAppChannel(ChannelSetup(users=[ANA], target_url="http://127.0.0.1:9/webhook"))
    assert channel.sim.user("15550001111").name == "Ana"


async def test_close_stops_the_agents_own_work(keeper: Keeper) -> None:
    channel = WhatsAppChannel(ChannelSetup(users=[ANA], agent_factory=keeper))
    await channel.start()
    await _say(channel, "Ana", "friday at 8pm")
    agent = keeper.agent
    assert agent.timers == 1  # the follow-up, due in 25 hours
    await channel.close()
    assert agent.timers == 0
    assert agent.idle
    assert keeper.env is not None
    assert keeper.env.http_client is not None
    assert keeper.env.http_client.is_closed


def test_the_plugin_builds_whatsapp_channels_and_adds_serve_proxy_and_load() -> None:
    assert whatsapp_plugin.name == "whatsapp"
    channel = whatsapp_plugin.factory(ChannelSetup(users=[ANA], agent_factory=lambda env: None))
    assert isinstance(channel, WhatsAppChannel)
    assert [c.name for c in whatsapp_plugin.commands] == ["serve", "proxy", "load"]


async def test_send_with_data_delivers_those_bytes(channel: WhatsAppChannel) -> None:
    await channel.send("Ana", {"type": "image", "image": {"caption": "x"}}, data=b"\x89PNG real")
    await channel.send("Ana", {"type": "location", "location": {"latitude": 1, "longitude": 2}})
    await channel.settle()
    image, location = _inbound(channel)
    assert channel.media(image.wamid) == (b"\x89PNG real", "image/jpeg")
    assert channel.media(location.wamid) is None
    assert channel.media("wamid.unknown") is None


async def test_run_until_moves_time_without_settling(channel: WhatsAppChannel) -> None:
    await channel.say("Ana", ["hi"])
    target = channel.now() + timedelta(seconds=1)
    await channel.run_until(target)
    assert channel.now() == target
    assert channel.conversation().replies() == []  # the agent's debounce is still running
    await channel.run_until(target - timedelta(hours=1))  # the past: time stays put
    assert channel.now() == target
    await channel.settle()
    assert len(channel.conversation().replies()) == 1


async def test_the_clock_starts_where_the_setup_says() -> None:
    start = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    channel = WhatsAppChannel(ChannelSetup(users=[ANA], agent_factory=agent_factory, start=start))
    assert channel.now() == start


async def test_a_clock_skew_moves_the_agents_clock_from_each_faults_step_on(keeper: Keeper) -> None:
    setup = ChannelSetup(users=[ANA], agent_factory=keeper, faults={"clock_skew": 60})
    session = WhatsAppChannel(setup)
    await session.start()
    try:
        assert keeper.env is not None
        agent_clock = keeper.env.clock
        assert agent_clock.now() - session.now() == timedelta(seconds=60)
        await session.set_faults({"clock_skew": -300})
        assert agent_clock.now() - session.now() == timedelta(minutes=-5)
        await session.set_faults(None)
        assert agent_clock.now() == session.now()
    finally:
        await session.close()


def test_an_agent_at_a_url_keeps_its_own_clock_so_it_cant_be_skewed() -> None:
    setup = ChannelSetup(
        users=[ANA], target_url="http://127.0.0.1:9/webhook", faults={"clock_skew": 5}
    )
    with pytest.raises(ConfigError, match="an agent at a URL keeps its own clock"):
        WhatsAppChannel(setup)
