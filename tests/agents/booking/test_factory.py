"""The agent as the harness builds it: one factory, the WhatsApp channel and the direct channel."""

from __future__ import annotations

import pytest

from agents.booking import BookingAgent, agent_factory
from channels.direct import DirectChannel
from channels.whatsapp.channel import WhatsAppChannel
from harness.channel import ChannelSetup, UserSpec

KEY = "15551234567"
USERS = [UserSpec(name="Ana", wa_id=KEY)]


async def _book(session: WhatsAppChannel | DirectChannel) -> None:
    await session.start()
    await session.say(KEY, ["Hi, I'm vegan", "a table on friday at 8pm please"])
    await session.settle()
    await session.tap(KEY, "confirm")
    await session.settle()


@pytest.mark.parametrize("channel", [WhatsAppChannel, DirectChannel])
async def test_the_same_agent_books_once_through_either_channel(
    channel: type[WhatsAppChannel] | type[DirectChannel],
) -> None:
    session = channel(ChannelSetup(users=USERS, agent_factory=agent_factory))
    try:
        await _book(session)
        conv = session.conversation()
        [booking] = conv.tool_calls("book_appointment")
        assert booking.side_effect is True
        assert booking.args["notes"] == "vegan"
        assert isinstance(booking.result, dict)
        assert booking.result["status"] == "booked"
        assert [t.replies[-1].type for t in conv.turns] == ["interactive", "text"]
        assert conv.llm_exchanges()
    finally:
        await session.close()


async def test_settings_from_the_scenario_reach_the_agent() -> None:
    setup = ChannelSetup(
        users=USERS,
        agent_factory=agent_factory,
        agent_settings={"BOOKING_REGRESSIONS": "book_without_confirm"},
    )
    session = DirectChannel(setup)
    try:
        await session.start()
        await session.say(KEY, ["friday at 8pm"])
        conv = session.conversation()
        [turn] = conv.turns
        assert [c.name for c in turn.tool_calls] == ["search_slots", "book_appointment"]
    finally:
        await session.close()


def test_without_whatsapp_settings_the_factory_returns_the_bare_agent() -> None:
    from harness.channel import AgentEnvironment
    from harness.clock import VirtualClock
    from harness.store import MemoryStore

    clock = VirtualClock()
    env = AgentEnvironment(
        channel="direct", settings={}, clock=clock, store=MemoryStore(clock=clock)
    )
    assert isinstance(agent_factory(env), BookingAgent)


async def test_a_setting_a_scenario_names_by_field_reaches_the_agent() -> None:
    """``agent: {regressions: [book_without_confirm]}`` in a scenario file switches it on."""
    setup = ChannelSetup(
        users=USERS,
        agent_factory=agent_factory,
        agent_settings={"regressions": "book_without_confirm"},
    )
    session = DirectChannel(setup)
    try:
        await session.start()
        await session.say(KEY, ["friday at 8pm"])
        [turn] = session.conversation().turns
        assert [c.name for c in turn.tool_calls] == ["search_slots", "book_appointment"]
    finally:
        await session.close()


def test_the_factory_names_each_setting_it_would_refuse() -> None:
    problems = agent_factory.check_settings(
        {
            "regressions": "no_dedupe,no_such",
            "regresions": "no_dedupe",
            "BOOKING_DEBOUNCE_SECONDS": "-1",
            "timezone": "Europe/Lisbon",
            "BOOKING_REGRESSIONS": "ignore_window",
            "WHATSAPP_ACCESS_TOKEN": "t0ken",
        }
    )
    assert problems == {
        "regressions": "unknown regression 'no_such'; valid names: book_without_confirm,"
        " no_dedupe, reply_per_fragment, ignore_window, no_chunking, forget_constraint",
        "regresions": "the booking agent has no such setting (did you mean 'regressions'?)",
        "BOOKING_DEBOUNCE_SECONDS": "Input should be greater than or equal to 0",
    }
