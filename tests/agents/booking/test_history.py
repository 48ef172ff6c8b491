"""What the agent keeps of a conversation: the messages the model is shown, read once a turn."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents.booking import BookingAgent, BookingSettings, ScriptedModel, create_app
from channels.whatsapp.channel import agent_settings
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.agent import DirectMessage
from harness.clock import VirtualClock
from harness.llm import LLMResponse
from harness.store import MemoryStore

USER = "15551234567"
# A chat that makes the model call tools (search_slots) on some turns and not on others.
CHAT = [
    "hello",
    "a table on friday at 8pm?",
    "what is your cancellation policy?",
    "saturday at 7pm then",
    "thanks",
    "do you have vegan dishes?",
]


class _Spy:
    """The offline model, keeping each request's messages and each answer."""

    def __init__(self) -> None:
        self.inner = ScriptedModel()
        self.calls: list[tuple[list[dict[str, Any]], LLMResponse]] = []

    async def create(self, *, messages: Sequence[Mapping[str, Any]], **kw: Any) -> LLMResponse:
        response = await self.inner.create(messages=messages, **kw)
        self.calls.append(([dict(m) for m in messages], response))
        return response


def _opens_turn(message: Mapping[str, Any]) -> bool:
    content = message["content"]
    return message["role"] == "user" and not (
        isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)
    )


def _last(messages: list[dict[str, Any]], size: int) -> list[dict[str, Any]]:
    """The last ``size`` messages or fewer, from a user message that is not a tool result."""
    if len(messages) <= size:
        return messages
    start = len(messages) - size
    while start < len(messages) and not _opens_turn(messages[start]):
        start += 1
    return messages[start:]


async def test_the_state_keeps_only_the_messages_the_model_is_shown() -> None:
    clock = VirtualClock()
    spy = _Spy()
    agent = BookingAgent(
        BookingSettings(history_messages=6), store=MemoryStore(clock=clock), clock=clock, llm=spy
    )
    whole: list[dict[str, Any]] = []  # the whole conversation, as the model took part in it
    for turn in range(30):
        before = len(spy.calls)
        kept = (await agent.states.load(USER)).history
        await agent.handle_burst(USER, [DirectMessage(text=CHAT[turn % 6])], now=clock.now())
        clock.advance(600)
        first, _ = spy.calls[before]
        # The model is shown the window of the whole conversation, and that is all that is kept.
        assert first[:-1] == _last(whole, 6) == kept
        last, answer = spy.calls[-1]
        whole += [*last[len(kept) :], answer.as_message()]
    assert len(whole) > 60
    assert len((await agent.states.load(USER)).history) <= 6


async def test_a_turn_through_whatsapp_reads_the_users_state_once() -> None:
    reads: list[str] = []

    class CountingStore(MemoryStore):
        async def get(self, key: str) -> bytes | None:
            reads.append(key)
            return await super().get(key)

    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock(), seed=0)
    user = sim.add_user(USER, "Ana")
    client = sim.graph_client()
    app = create_app(
        BookingSettings.from_env(agent_settings(config, config.public_url)),
        store=CountingStore(clock=sim.clock),
        clock=sim.clock,
        http_client=client,
        llm=ScriptedModel(),
    )
    sim.connect(app)
    try:
        for text in ("hello", "do you have vegan dishes?", "thanks"):
            reads.clear()
            await sim.say(user, text)
            await sim.settle()
            assert [key for key in reads if key.startswith("state:")] == [f"state:{USER}"]
        assert len(sim.conversation().replies()) == 3
    finally:
        await app.state.agent.aclose()
        await sim.aclose()
        await client.aclose()
