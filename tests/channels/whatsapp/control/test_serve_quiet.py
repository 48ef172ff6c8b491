"""On a paced server (``harness serve``), a call that plays a user waits for that user alone.

The bots here answer the way real ones do: inside the webhook handler, after
the 200, in several steps, after a pause, or not at all; each decides per user.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.control import control_app
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from harness.trace import OutboundSend, Verification

ANA = "5511987654321"
BRUNO = "4915112345678"


@dataclass
class Bot:
    """A bot whose way of answering is set per user: ``inline``, ``after``, ``steps``,
    ``holding``, ``typing``, ``holding-typing``, ``react`` or ``silent``.

    ``pause`` (seconds) delays the answer of a user's message, after the 200; ``holding``
    answers "one moment" at once, then thinks for ``think`` seconds before the answer;
    ``typing`` shows the typing indicator, then thinks; ``holding-typing`` does both;
    ``react`` reacts with 👀, then thinks a little.
    """

    graph: httpx.AsyncClient
    config: SimulatorConfig
    ways: dict[str, str] = field(default_factory=dict)
    pause: dict[str, float] = field(default_factory=dict)
    think: float = 0.5
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    answers_handshake: bool = True

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/webhook", self.handshake, methods=["GET"]),
                Route("/webhook", self.webhook, methods=["POST"]),
            ]
        )

    async def handshake(self, request: Request) -> Response:
        params = request.query_params
        if not self.answers_handshake or params.get("hub.verify_token") != self.config.verify_token:
            return Response(status_code=403)
        return Response(params.get("hub.challenge", ""))

    async def webhook(self, request: Request) -> Response:
        value = json.loads(await request.body())["entry"][0]["changes"][0]["value"]
        for message in value.get("messages", []):
            user, text = message["from"], message["text"]["body"]
            way = self.ways.get(user, "after")
            if way == "inline":
                await self.send(user, f"re: {text}")
            elif way != "silent":
                answer = self.answer(user, text, way, message["id"])
                task = asyncio.get_running_loop().create_task(answer)
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
        return Response("ok")

    async def answer(self, user: str, text: str, way: str, wamid: str) -> None:
        if self.pause.get(user):
            await asyncio.sleep(self.pause[user])
        if way.startswith("holding"):
            await self.send(user, "one moment")
        if way == "react":  # 👀: seen, on it
            reaction = {"message_id": wamid, "emoji": "\N{EYES}"}
            await self.post({"to": user, "type": "reaction", "reaction": reaction})
            await asyncio.sleep(0.05)  # a quick model: well within the 0.3 s of silence
        if way.endswith("typing"):
            await self.post(
                {"status": "read", "message_id": wamid, "typing_indicator": {"type": "text"}}
            )
        if way.startswith("holding") or way == "typing":
            await asyncio.sleep(self.think)  # a model or a service taking real time
        await self.send(user, f"re: {text}")
        if way == "steps":
            await self.send(user, "and one more thing")
            await self.send(user, "that's all")

    async def send(self, user: str, text: str) -> None:
        await self.post({"to": user, "text": {"body": text}})

    async def post(self, body: dict[str, Any]) -> None:
        answer = await self.graph.post(
            f"/v25.0/{self.config.phone_number_id}/messages",
            headers={"Authorization": f"Bearer {self.config.access_token}"},
            json={"messaging_product": "whatsapp", **body},
        )
        assert answer.status_code == 200, answer.text


@dataclass
class Served:
    sim: WhatsAppSimulator
    bot: Bot
    control: httpx.AsyncClient

    def replies(self, user: str) -> list[str]:
        return [m["text"]["body"] for m in self.sim.outbox if m["to"] == user and "text" in m]


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock(datetime.now(UTC).replace(microsecond=0)))
    bot = Bot(sim.graph_client(), config)
    sim.connect(bot.app())
    pacer = asyncio.get_running_loop().create_task(sim.run_paced())
    transport = httpx.ASGITransport(app=control_app(sim))
    async with httpx.AsyncClient(transport=transport, base_url="http://sim", timeout=30) as http:
        for user, name in ((ANA, "Ana"), (BRUNO, "Bruno")):
            registered = await http.post("/_harness/users", json={"wa_id": user, "name": name})
            assert registered.is_success
        yield Served(sim, bot, http)
    pacer.cancel()
    for task in list(bot.tasks):
        task.cancel()
    await sim.aclose()


async def _say(served: Served, user: str, text: str, **options: Any) -> httpx.Response:
    answer = await served.control.post(
        "/_harness/inbound", json={"user": user, "text": text, **options}
    )
    assert answer.status_code == 200, answer.text
    return answer


@pytest.mark.parametrize("way", ["inline", "after", "steps"])
async def test_the_call_answers_with_the_whole_answer_in_the_outbox(
    served: Served, way: str
) -> None:
    served.bot.ways[ANA] = way
    for text in ("hi", "a table for two", "at 8"):
        await _say(served, ANA, text)
        more = ["and one more thing", "that's all"] if way == "steps" else []
        expected = [f"re: {text}", *more]
        assert served.replies(ANA)[-len(expected) :] == expected


async def test_the_answer_is_in_the_outbox_before_any_of_its_statuses(served: Served) -> None:
    # Statuses come 1, 2 and 5 seconds after a send: the call does not wait for them.
    await _say(served, ANA, "hi")
    assert served.replies(ANA) == ["re: hi"]
    assert not served.sim.conversation().statuses()


async def test_another_users_slow_answer_does_not_hold_the_call(served: Served) -> None:
    served.bot.pause[BRUNO] = 1.0
    slow = asyncio.create_task(_say(served, BRUNO, "anything free tonight?", quiet=3))
    await asyncio.sleep(0.05)
    await _say(served, ANA, "hi")
    assert served.replies(ANA) == ["re: hi"]
    assert served.replies(BRUNO) == [], "Ana's call waited for Bruno's answer"
    await slow
    assert served.replies(BRUNO) == ["re: anything free tonight?"]


async def test_an_agent_still_thinking_is_waited_for_as_long_as_quiet_says(
    served: Served,
) -> None:
    served.bot.pause[ANA] = 0.6
    await _say(served, ANA, "hi", quiet=2)
    assert served.replies(ANA) == ["re: hi"]
    # With the default 0.3 s of silence, an answer 0.6 s away is not waited for.
    await _say(served, ANA, "still there?")
    assert served.replies(ANA) == ["re: hi"]


async def test_an_agent_that_holds_then_thinks_is_waited_for_when_quiet_is_given(
    served: Served,
) -> None:
    # "One moment", then half a second of thinking: without "quiet" the call may answer at
    # the holding message (the agent answered, then went silent); with it, silence must last.
    served.bot.ways[ANA] = "holding"
    served.bot.think = 0.5
    await _say(served, ANA, "a table for two", quiet=1.5)
    assert served.replies(ANA) == ["one moment", "re: a table for two"]


@pytest.mark.parametrize("way", ["typing", "holding-typing"])
async def test_an_agent_showing_typing_is_waited_for_until_it_answers(
    served: Served, way: str
) -> None:
    # Longer than the 0.3 s of silence that ends a call with no answer, and no "quiet" given:
    # the typing indicator, up until the answer, is what holds the call.
    served.bot.ways[ANA] = way
    served.bot.think = 0.8
    await _say(served, ANA, "a table for two")
    holding = ["one moment"] if way == "holding-typing" else []
    assert served.replies(ANA) == [*holding, "re: a table for two"]


async def test_a_typing_indicator_no_message_follows_holds_the_call_as_long_as_meta_shows_it(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("channels.whatsapp.activity.TYPING_SHOWN", 0.6)
    served.bot.ways[ANA] = "typing"
    served.bot.think = 30  # never answers within the test
    started = time.monotonic()
    await _say(served, ANA, "hello?")
    took = time.monotonic() - started
    assert served.replies(ANA) == []
    # Held for the indicator's 0.6 s (by then the conversation has been silent for longer
    # than the 0.3 s that ends a call with no answer), not cut short at 0.3 s.
    assert 0.6 <= took < 5, took


async def test_a_reaction_is_not_taken_for_the_answer(served: Served) -> None:
    served.bot.ways[ANA] = "react"
    await _say(served, ANA, "a table for two")
    assert served.replies(ANA) == ["re: a table for two"]  # the reaction has no text
    sends = [e for e in served.sim.events if isinstance(e, OutboundSend) and e.user == ANA]
    assert [e.type for e in sends] == ["reaction", "text"]


async def test_a_silent_agent_ends_the_call_after_the_quiet_time(served: Served) -> None:
    served.bot.ways[ANA] = "silent"
    answer = await _say(served, ANA, "hello?")
    assert answer.json()["wamid"].startswith("wamid.")
    assert served.replies(ANA) == []
    kinds = [e.kind for e in served.sim.events if e.user == ANA]
    assert kinds[-2:] == ["inbound", "delivery"], "the call answered before the delivery"


async def test_a_call_that_does_not_wait_answers_before_the_agent_does(served: Served) -> None:
    served.bot.pause[ANA] = 0.2
    answer = await _say(served, ANA, "hi", wait=False)
    wamid = answer.json()["wamid"]
    assert served.replies(ANA) == []
    # The outbox can be read as the answer comes, waiting for it rather than sleeping.
    read = await served.control.get("/_harness/outbox", params={"user": ANA, "wait": 5})
    assert [m["text"]["body"] for m in read.json()["messages"]] == ["re: hi"]
    inbound = [e for e in served.sim.events if e.kind == "inbound"]
    assert [e.wamid for e in inbound] == [wamid]


async def test_many_users_at_once_each_get_their_own_answer(served: Served) -> None:
    users = [f"1555000{n:04d}" for n in range(20)]
    for user in users:
        served.bot.ways[user] = "steps"
    await asyncio.gather(*(_say(served, user, f"hi from {user}") for user in users))
    for user in users:
        assert served.replies(user) == [f"re: hi from {user}", "and one more thing", "that's all"]


# -- reading with ?since, ?user and ?wait ------------------------------------------------


async def test_a_read_from_next_answers_only_what_is_new(served: Served) -> None:
    await _say(served, ANA, "one")
    first = (await served.control.get("/_harness/outbox")).json()
    assert [m["text"]["body"] for m in first["messages"]] == ["re: one"]
    await _say(served, BRUNO, "two")
    later = (await served.control.get("/_harness/outbox", params={"since": first["next"]})).json()
    assert [m["text"]["body"] for m in later["messages"]] == ["re: two"]
    assert later["next"] == 2


async def test_a_read_for_one_user_leaves_out_the_others(served: Served) -> None:
    await _say(served, ANA, "one")
    await _say(served, BRUNO, "two")
    ana = (await served.control.get("/_harness/outbox", params={"user": ANA})).json()
    assert [m["text"]["body"] for m in ana["messages"]] == ["re: one"]
    events = (await served.control.get("/_harness/events", params={"user": BRUNO})).json()
    assert events["events"]
    assert {e["user"] for e in events["events"]} == {BRUNO}


async def test_a_waiting_read_answers_at_the_first_new_entry(served: Served) -> None:
    served.bot.pause[ANA] = 0.3
    start = len(served.sim.events)
    reader = asyncio.create_task(
        served.control.get("/_harness/outbox", params={"user": ANA, "wait": 10})
    )
    await asyncio.sleep(0.05)
    assert not reader.done(), "the read answered with nothing instead of waiting"
    await _say(served, ANA, "hi", wait=False)
    read = (await asyncio.wait_for(reader, 5)).json()
    assert [m["text"]["body"] for m in read["messages"]] == ["re: hi"]
    events = (
        await served.control.get("/_harness/events", params={"since": start, "wait": 1})
    ).json()
    assert "inbound" in [e["kind"] for e in events["events"]]


async def test_a_read_can_wait_for_a_number_that_has_not_written_yet(served: Served) -> None:
    newcomer = "5511900000042"  # a phone number writes in as a new user, as on Meta
    reader = asyncio.create_task(
        served.control.get("/_harness/outbox", params={"user": newcomer, "wait": 10})
    )
    await asyncio.sleep(0.05)
    assert not reader.done(), "the read refused a number that may write later"
    await _say(served, newcomer, "hi", wait=False)
    read = await asyncio.wait_for(reader, 5)
    assert read.status_code == 200, read.text
    assert [m["text"]["body"] for m in read.json()["messages"]] == ["re: hi"]


async def test_a_waiting_read_with_nothing_new_answers_empty_at_its_deadline(
    served: Served,
) -> None:
    read = await served.control.get("/_harness/outbox", params={"wait": 0.2})
    assert read.status_code == 200
    assert read.json() == {"messages": [], "first": 0, "next": 0, "dropped": 0}


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"wait": "61"}, "'wait'"),
        ({"wait": "-1"}, "'wait'"),
        ({"wait": "nan"}, "'wait'"),
        ({"wait": "soon"}, "'wait'"),
        ({"since": "-2"}, "'since'"),
        ({"user": "nobody"}, "'user'"),
    ],
)
async def test_a_bad_read_answers_400_naming_the_parameter(
    served: Served, params: dict[str, str], named: str
) -> None:
    for path in ("/_harness/outbox", "/_harness/events"):
        answer = await served.control.get(path, params=params)
        assert answer.status_code == 400, answer.text
        assert named in answer.json()["error"]["message"]


@pytest.mark.parametrize("body", [{"wait": "no"}, {"quiet": 0}, {"quiet": 61}, {"quiet": "1"}])
async def test_bad_waiting_options_answer_400(served: Served, body: dict[str, Any]) -> None:
    answer = await served.control.post(
        "/_harness/inbound", json={"user": ANA, "text": "hi", **body}
    )
    assert answer.status_code == 400, answer.text
    assert not served.sim.events or all(e.kind != "inbound" for e in served.sim.events)


async def test_a_webhook_lost_before_the_call_does_not_fail_it(served: Served) -> None:
    # The business writes to Ana while the bot refuses Meta's verification: the status
    # webhooks about her are dropped. Once the bot answers it, neither Bruno's call nor Ana's
    # own next one is failed by that older loss (the trace keeps the failed handshake).
    served.bot.answers_handshake = False
    await served.bot.send(ANA, "our table is ready")
    deadline = time.monotonic() + 10
    while not any(isinstance(e, Verification) and not e.passed for e in served.sim.events):
        assert time.monotonic() < deadline, "no status was due for delivery"
        await asyncio.sleep(0.02)
    served.bot.answers_handshake = True
    await _say(served, BRUNO, "hi")
    await _say(served, ANA, "hello")
    assert served.replies(BRUNO) == ["re: hi"]
    assert served.replies(ANA) == ["our table is ready", "re: hello"]
