"""The direct channel: each user step is one ``handle_burst`` call on a virtual clock.

A tiny agent records what it is given and answers by keyword; the last test
runs the reference booking agent through the channel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import pytest
from starlette.applications import Starlette

from channels.direct import DirectChannel, find_direct_agent
from channels.direct_plugin import direct_plugin
from harness.agent import DirectAgent, DirectMessage, DirectOption, DirectReply, DirectTurn
from harness.channel import AgentEnvironment, ChannelSetup, UserSpec
from harness.clock import DEFAULT_START, VirtualClock
from harness.exceptions import ConfigError, StepError
from harness.store import MemoryStore
from harness.suites.expectations import reply_text
from harness.trace import ClockJump, OutboundSend, ToolCall

ANA = UserSpec(name="Ana", wa_id="15550001111")
BEN = UserSpec(name="Ben", bsuid="US.42")
CHOICES = (DirectOption(id="confirm", title="Confirm"), DirectOption(id="change", title="Change"))


class TinyAgent:
    """A :class:`DirectAgent` that answers by keyword and remembers every call."""

    def __init__(self, env: AgentEnvironment) -> None:
        self.env = env
        self.bursts: list[tuple[str, list[DirectMessage], datetime]] = []
        self.reminded_at: datetime | None = None
        self.closed = False
        self.timers: list[asyncio.Task[None]] = []

    async def handle_burst(
        self, user: str, messages: Sequence[DirectMessage], *, now: datetime
    ) -> DirectTurn:
        self.bursts.append((user, list(messages), now))
        last = messages[-1]
        said = " ".join(m.text or "" for m in messages)
        if last.reply_id == "confirm":
            call = ToolCall(
                at=now, user=user, name="book", args={"slot": "20:00"}, side_effect=True
            )
            assert self.env.sink is not None
            self.env.sink(call)  # through the sink, and in the turn too: recorded once
            return DirectTurn(replies=(DirectReply(text="Booked!"),), tool_calls=(call,))
        if "table" in said:
            search = ToolCall(at=now, name="search", args={"day": "friday"})
            proposal = DirectReply(type="interactive", text="Friday 20:00?", options=CHOICES)
            return DirectTurn(replies=(proposal,), tool_calls=(search,))
        if "remind" in said:
            self.timers.append(asyncio.create_task(self._remind()))
            return DirectTurn(replies=(DirectReply(text="I will."),))
        if "template" in said:
            reminder = DirectReply(
                type="template", text="Friday | 20:00", template="appointment_reminder"
            )
            return DirectTurn(replies=(reminder,))
        if last.type != "text":
            return DirectTurn(replies=(DirectReply(text=f"Thanks for the {last.type}."),))
        return DirectTurn(replies=(DirectReply(text=f"you said: {said}"),))

    async def _remind(self) -> None:
        await self.env.clock.sleep(3600)
        self.reminded_at = self.env.clock.now()

    async def aclose(self) -> None:
        for task in self.timers:
            task.cancel()
        self.closed = True


class Built:
    """A factory that keeps what it built and the environment it was given."""

    def __init__(self, wrap: bool = False) -> None:
        self.wrap = wrap
        self.env: AgentEnvironment | None = None
        self.agent: TinyAgent | None = None

    def __call__(self, env: AgentEnvironment) -> object:
        self.env = env
        self.agent = TinyAgent(env)
        if not self.wrap:
            return self.agent
        app = Starlette()
        app.state.agent = self.agent
        return app


async def _channel(built: Built | None = None, **setup: Any) -> tuple[DirectChannel, TinyAgent]:
    built = Built() if built is None else built
    setup.setdefault("users", [ANA, BEN])
    channel = DirectChannel(ChannelSetup(agent_factory=built, **setup))
    await channel.start()
    assert built.agent is not None
    return channel, built.agent


async def test_a_burst_reaches_the_agent_as_one_call_with_its_gaps() -> None:
    channel, agent = await _channel()
    await channel.say("Ana", ["hi", "a table", "for friday"], gap=2.5)
    [(user, messages, now)] = agent.bursts
    assert user == ANA.wa_id
    assert [(m.type, m.text) for m in messages] == [
        ("text", "hi"),
        ("text", "a table"),
        ("text", "for friday"),
    ]
    assert [m.at for m in messages] == [
        DEFAULT_START,
        DEFAULT_START + timedelta(seconds=2.5),
        DEFAULT_START + timedelta(seconds=5),
    ]
    assert now == channel.now() == DEFAULT_START + timedelta(seconds=5)
    conversation = channel.conversation()
    inbound = conversation.inbound()
    assert [(m.text, m.at, m.user, m.type) for m in inbound] == [
        (m.text, m.at, ANA.wa_id, "text") for m in messages
    ]
    assert len({m.wamid for m in inbound}) == 3
    [turn] = conversation.turns
    assert len(turn.messages) == 3
    assert conversation.channel == "direct"
    assert [(p.id, p.name, p.wa_id, p.user_id) for p in conversation.participants] == [
        (ANA.wa_id, "Ana", ANA.wa_id, None),
        ("US.42", "Ben", None, "US.42"),
    ]


async def test_replies_and_tool_calls_are_recorded_as_events() -> None:
    channel, _ = await _channel()
    await channel.say("Ana", ["a table please"])
    search, proposal = channel.conversation().events[1:]
    assert isinstance(search, ToolCall)
    assert (search.name, search.user, search.args) == ("search", ANA.wa_id, {"day": "friday"})
    assert isinstance(proposal, OutboundSend)
    assert proposal.user == ANA.wa_id
    assert proposal.type == "interactive"
    assert proposal.text == "Friday 20:00?"
    assert proposal.request == {
        "text": "Friday 20:00?",
        "options": [{"id": "confirm", "title": "Confirm"}, {"id": "change", "title": "Change"}],
    }
    assert proposal.ok
    assert proposal.wamid
    # A tool call the agent sent through its sink is not recorded a second time.
    await channel.tap("Ana", "confirm")
    assert [c.name for c in channel.conversation().tool_calls()] == ["search", "book"]


async def test_a_template_reply_keeps_its_name() -> None:
    channel, _ = await _channel()
    await channel.say("Ana", ["send me a template"])
    [send] = channel.conversation().replies()
    assert send.is_template
    assert send.request == {"text": "Friday | 20:00", "template": "appointment_reminder"}


@pytest.mark.parametrize("choice", ["confirm", "Confirm"])
async def test_a_tap_by_id_or_title_sends_the_option(choice: str) -> None:
    channel, agent = await _channel()
    await channel.say("Ana", ["a table"])
    await channel.tap("Ana", choice)
    _, [message], _ = agent.bursts[-1]
    assert (message.type, message.reply_id, message.text) == ("reply", "confirm", "Confirm")
    tapped = channel.conversation().inbound()[-1]
    assert (tapped.type, tapped.reply_id, tapped.text) == ("interactive", "confirm", "Confirm")
    assert channel.conversation().replies()[-1].text == "Booked!"


async def test_a_tap_on_something_not_offered_is_a_step_error() -> None:
    channel, agent = await _channel()
    with pytest.raises(
        StepError, match=r"no option 'confirm' among the agent's last choices \(none\)"
    ):
        await channel.tap("Ana", "confirm")
    await channel.say("Ana", ["a table"])
    with pytest.raises(StepError, match=r"no option 'Later' .*\('confirm', 'change'\)"):
        await channel.tap("Ana", "Later")
    # Choices are offered to one user: Ben has none.
    with pytest.raises(StepError, match=r"\(none\)"):
        await channel.tap("Ben", "confirm")
    assert len(agent.bursts) == 1


async def test_send_passes_the_type_and_the_body() -> None:
    channel, agent = await _channel()
    location = {"latitude": 1.5, "longitude": 2.5}
    await channel.send("Ben", {"type": "location", "location": location})
    [(user, [message], _)] = agent.bursts
    assert user == "US.42"
    assert (message.type, message.text, message.body) == ("location", None, {"location": location})
    [inbound] = channel.conversation().inbound()
    assert (inbound.type, inbound.user, inbound.body) == (
        "location",
        "US.42",
        {"location": location},
    )
    assert channel.conversation().replies()[0].text == "Thanks for the location."


async def test_a_text_sent_as_an_object_keeps_its_words_and_what_it_quotes() -> None:
    channel, agent = await _channel()
    await channel.say("Ana", ["hi"])
    [reply] = channel.conversation().replies()
    quote = {"type": "text", "text": {"body": "that one"}, "context": {"id": reply.wamid}}
    await channel.send("Ana", quote)
    message = agent.bursts[-1][1][0]
    assert (message.type, message.text) == ("text", "that one")
    assert message.body["context"] == {"id": reply.wamid}


async def test_redeliver_does_nothing() -> None:
    channel, agent = await _channel()
    await channel.say("Ana", ["hi"])
    before = channel.conversation()
    await channel.redeliver("Ana")
    await channel.redeliver("Ana", 1)
    assert channel.conversation() == before
    assert len(agent.bursts) == 1


async def test_wait_moves_the_clock_and_records_the_jump() -> None:
    channel, agent = await _channel()
    await channel.say("Ana", ["remind me in an hour"])
    start = channel.now()
    await channel.wait(7200)
    assert channel.now() == start + timedelta(hours=2)
    jump = channel.conversation().events[-1]
    assert isinstance(jump, ClockJump)
    assert (jump.previous, jump.at, jump.reason) == (start, channel.now(), "wait 7200s")
    # The agent's own timer fired on the way, at its own deadline.
    assert agent.reminded_at == start + timedelta(hours=1)


async def test_settle_gives_the_user_time_to_read() -> None:
    channel, _ = await _channel()
    start = channel.now()
    await channel.settle()
    assert channel.now() == start + channel.think_time == start + timedelta(seconds=5)


async def test_the_agent_gets_the_channels_clock_settings_and_a_namespaced_store() -> None:
    built = Built()
    store = MemoryStore()
    channel, _ = await _channel(
        built, store=store, namespace="run1:0", agent_settings={"BOOKING_REGRESSIONS": "x"}
    )
    env = built.env
    assert env is not None
    assert env.channel == "direct"
    assert env.settings == {"BOOKING_REGRESSIONS": "x"}
    assert env.clock is channel.clock
    assert env.http_client is None
    await env.store.set("k", "v")
    assert await store.with_namespace("run1:0").with_namespace("agent").get("k") == b"v"
    assert await store.get("k") is None


async def test_a_factory_may_return_an_app_whose_state_holds_the_agent() -> None:
    built = Built(wrap=True)
    channel, agent = await _channel(built)
    await channel.say("Ana", ["hi"])
    assert len(agent.bursts) == 1
    await channel.close()
    assert agent.closed


async def test_close_calls_the_agents_aclose() -> None:
    channel, agent = await _channel()
    await channel.say("Ana", ["remind me"])
    timer = agent.timers[0]
    await channel.close()
    assert agent.closed
    await asyncio.sleep(0)
    assert timer.cancelled()


def _not_an_agent(env: AgentEnvironment) -> object:
    return Starlette()


async def test_a_factory_without_a_direct_entry_point_is_a_config_error() -> None:
    channel = DirectChannel(ChannelSetup(users=[ANA], agent_factory=_not_an_agent))
    with pytest.raises(ConfigError, match="returned Starlette, which offers no direct entry point"):
        await channel.start()
    with pytest.raises(ConfigError, match="returned int"):
        find_direct_agent(42)


def test_find_direct_agent_takes_the_agent_or_the_one_behind_the_app() -> None:
    built = Built(wrap=True)
    app = built(_env())
    assert built.agent is not None
    assert find_direct_agent(app) is built.agent
    assert find_direct_agent(built.agent) is built.agent
    assert isinstance(built.agent, DirectAgent)


def _env() -> AgentEnvironment:
    return AgentEnvironment(
        channel="direct", settings={}, clock=VirtualClock(), store=MemoryStore()
    )


async def test_misuse_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="runs agents in-process; give an agent factory"):
        DirectChannel(ChannelSetup(users=[ANA], target_url="http://127.0.0.1:9/"))
    unstarted = DirectChannel(ChannelSetup(users=[ANA], agent_factory=Built()))
    with pytest.raises(ConfigError, match="was not started"):
        await unstarted.say("Ana", ["hi"])
    channel, _ = await _channel()
    with pytest.raises(ConfigError, match="no user 'Cy' in this scenario"):
        await channel.say("Cy", ["hi"])


async def test_users_are_found_by_name_or_by_key() -> None:
    channel, agent = await _channel()
    await channel.say(ANA.wa_id or "", ["one"])
    await channel.say("US.42", ["two"])
    assert [user for user, _, _ in agent.bursts] == [ANA.wa_id, "US.42"]


def test_the_plugin_builds_direct_channels() -> None:
    assert direct_plugin.name == "direct"
    channel = direct_plugin.factory(ChannelSetup(users=[ANA], agent_factory=lambda env: None))
    assert isinstance(channel, DirectChannel)
    assert tuple(direct_plugin.commands) == ()


async def test_the_reference_agent_books_a_table_in_two_steps() -> None:
    from agents.booking import agent_factory

    channel = DirectChannel(ChannelSetup(users=[ANA], agent_factory=agent_factory))
    try:
        await channel.start()
        await channel.say("Ana", ["friday at 8pm"])
        await channel.settle()
        proposal = channel.conversation().replies()[-1]
        assert proposal.type == "interactive"
        assert reply_text(proposal).endswith("Confirm Change")
        assert channel.conversation().tool_calls("book_appointment") == []
        await channel.tap("Ana", "confirm")
        await channel.settle()
        conversation = channel.conversation()
        [booking] = conversation.tool_calls("book_appointment")
        assert booking.side_effect
        turn = conversation.turn_of(booking)
        assert turn is not None
        assert turn.user == ANA.wa_id
        assert booking.args["slot"] == "20:00"
        assert reply_text(conversation.replies()[-1]).startswith("Booked!")
        assert conversation.llm_exchanges()
        assert [t.user for t in conversation.turns] == [ANA.wa_id, ANA.wa_id]
    finally:
        await channel.close()


async def test_the_clock_starts_where_the_setup_says() -> None:
    start = DEFAULT_START + timedelta(days=30)
    channel, agent = await _channel(start=start)
    await channel.say("Ana", ["hi"])
    assert agent.bursts[0][2] == start


async def test_run_until_moves_time_without_recording_a_jump() -> None:
    channel, agent = await _channel()
    await channel.say("Ana", ["remind me"])
    before = channel.conversation()
    target = channel.now() + timedelta(hours=1, minutes=1)
    await channel.run_until(target)
    assert channel.now() == target
    assert agent.reminded_at == DEFAULT_START + timedelta(hours=1)
    assert channel.conversation() == before
    await channel.run_until(DEFAULT_START)  # the past: time stays where it is
    assert channel.now() == target


async def test_send_with_data_still_passes_only_the_body() -> None:
    channel, agent = await _channel()
    await channel.send("Ana", {"type": "image", "image": {"caption": "menu"}}, data=b"\xff\xd8")
    [(_, [message], _)] = agent.bursts
    assert (message.type, message.body) == ("image", {"image": {"caption": "menu"}})
