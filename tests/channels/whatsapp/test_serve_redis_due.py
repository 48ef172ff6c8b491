"""What is due later on one Meta of several ``harness serve --redis`` processes, and late joiners.

Independent bots from ``tests.bots`` (the inline replier, the after-the-200
replier, the pizza bot) run as processes of their own. Between the servers
and the bot sits a recorder that keeps every webhook as it arrived (bytes and
signature), passes it on, and can answer 500 to a message's first delivery or
keep a user's messages from the bot. The bot's replies go through a
round-robin balancer that skips a server that has stopped. Servers are
stopped with SIGTERM or SIGKILL while work they took is still due.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.bots.loopback import free_port, serve_in_process, started_process
from tests.channels.whatsapp.test_serve_redis import (
    BOT_SETTINGS,
    _drop,
    _say,
    _send,
    _serve,
    _started,
    _stop,
)

pytestmark = [pytest.mark.network, pytest.mark.redis, pytest.mark.slow]

ANA, BEN = "15550003001", "15550003002"


@dataclass
class Webhook:
    """One POST the recorder received, as it came."""

    body: bytes
    signature: str
    status: int

    def items(self) -> list[dict[str, Any]]:
        """The messages and statuses it carried."""
        found: list[dict[str, Any]] = []
        for entry in json.loads(self.body)["entry"]:
            for change in entry["changes"]:
                value = change["value"]
                found += value.get("messages", []) + value.get("statuses", [])
        return found


@dataclass
class Recorder:
    """Stands between the servers and the bot: keeps each webhook, passes it on (or not)."""

    bot: str = ""
    client: httpx.AsyncClient | None = None
    #: A message whose text this says fails its first ``failures`` deliveries with 500.
    fail_first: Callable[[str], bool] = lambda text: False
    failures: int = 1
    #: Seconds the first delivery of a message whose text is the key is held, then answered
    #: 200 without reaching the bot (the server that sent it is stopped meanwhile).
    held: dict[str, float] = field(default_factory=dict)
    #: Users whose messages never reach the bot (it stays silent to them).
    withheld: set[str] = field(default_factory=set)
    received: list[Webhook] = field(default_factory=list)

    def statuses(self, wamid: str) -> list[str]:
        """The statuses of ``wamid`` received, in the order they arrived."""
        return [
            item["status"]
            for hook in self.received
            for item in hook.items()
            if item.get("status") and item["id"] == wamid
        ]

    def deliveries(self, wamid: str) -> list[Webhook]:
        """Every POST that carried the user's message ``wamid``."""
        return [h for h in self.received if any(i["id"] == wamid for i in h.items())]

    def app(self) -> Starlette:
        async def webhook(request: Request) -> Response:
            assert self.client is not None
            if request.method == "GET":  # the handshake, answered by the bot
                answer = await self.client.get(self.bot, params=request.query_params)
                return Response(answer.content, answer.status_code)
            raw = await request.body()
            signature = request.headers.get("x-hub-signature-256", "")
            messages = [i for i in Webhook(raw, signature, 0).items() if "from" in i]
            early = all(len(self.deliveries(m["id"])) < self.failures for m in messages)
            texts = [m.get("text", {}).get("body", "") for m in messages]
            if early and any(self.fail_first(text) for text in texts):
                self.received.append(Webhook(raw, signature, 500))
                return Response("try again later", 500)
            hold = max((self.held.get(text, 0.0) for text in texts), default=0.0)
            if early and hold:
                self.received.append(Webhook(raw, signature, 200))
                await asyncio.sleep(hold)
                return Response("ok")
            if messages and all(m["from"] in self.withheld for m in messages):
                self.received.append(Webhook(raw, signature, 200))
                return Response("ok")
            headers = {"x-hub-signature-256": signature, "content-type": "application/json"}
            answer = await self.client.post(self.bot, content=raw, headers=headers)
            self.received.append(Webhook(raw, signature, answer.status_code))
            return Response(answer.content, answer.status_code)

        return Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])])


@dataclass
class Balancer:
    """Hands each Graph API request to the next server in turn, skipping one that is gone."""

    targets: list[str]
    client: httpx.AsyncClient

    def app(self) -> Starlette:
        turn = itertools.cycle(self.targets)

        async def forward(request: Request) -> Response:
            body = await request.body()
            headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
            for _ in self.targets:
                try:
                    answer = await self.client.request(
                        request.method,
                        next(turn) + request.url.path,
                        params=request.query_params,
                        content=body,
                        headers=headers,
                    )
                except httpx.TransportError:
                    continue  # that server has stopped: the next one takes it
                return Response(answer.content, answer.status_code, media_type="application/json")
            return Response("no server answers", 502)

        return Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST"])])


@dataclass
class Servers:
    """The servers of one Meta as the test reaches them, and how to start one more."""

    clients: list[httpx.AsyncClient]
    processes: list[asyncio.subprocess.Process]
    recorder: Recorder
    bot_url: str
    join: Callable[[], Any]

    async def stop(self, index: int, how: signal.Signals) -> None:
        """Stop server ``index`` with ``how``, and wait until it is gone."""
        process = self.processes[index]
        process.send_signal(how)
        await asyncio.wait_for(process.wait(), timeout=60)  # a busy machine stops slowly


@asynccontextmanager
async def _one_meta(
    redis_url: str,
    namespace: str,
    *,
    bot: str = "inline",
    count: int = 2,
    options: Sequence[str] = (),
    recorder: Recorder | None = None,
) -> AsyncIterator[Servers]:
    recorder = recorder or Recorder()
    ports = [free_port() for _ in range(count + 1)]  # one spare, for a server that joins late
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    async with AsyncExitStack() as stack:
        stack.push_async_callback(_drop, redis_url, namespace)
        forwarding = await stack.enter_async_context(httpx.AsyncClient(timeout=10))
        graph = await stack.enter_async_context(
            serve_in_process(Balancer(urls[:count], forwarding).app())
        )
        env = {**BOT_SETTINGS, "WHATSAPP_GRAPH_URL": graph}
        bot_url, _ = await stack.enter_async_context(
            started_process(f"tests.bots.{bot}", env=env, ready_path="/webhook")
        )
        recorder.bot, recorder.client = f"{bot_url}/webhook", forwarding
        hook = await stack.enter_async_context(serve_in_process(recorder.app()))
        clients: list[httpx.AsyncClient] = []
        processes: list[asyncio.subprocess.Process] = []

        async def start(port: int, url: str) -> httpx.AsyncClient:
            process = await _serve(port, f"{hook}/webhook", redis_url, namespace, *options)
            stack.push_async_callback(_stop, process)
            client = await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=30))
            await _started(client, process)
            clients.append(client)
            processes.append(process)
            return client

        for port, url in zip(ports[:count], urls[:count], strict=True):
            await start(port, url)
        yield Servers(clients, processes, recorder, bot_url, lambda: start(ports[-1], urls[-1]))


async def _until(check: Callable[[], Any], within: float = 20.0) -> None:
    """Wait until ``check()`` is true (it may be a coroutine function), ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        found = check()
        if asyncio.iscoroutine(found):
            found = await found
        if found:
            return
        if time.monotonic() > deadline:
            return
        await asyncio.sleep(0.1)


async def _events(client: httpx.AsyncClient, since: int = 0) -> dict[str, Any]:
    answer = await client.get("/_harness/events", params={"since": since})
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
async def test_statuses_due_after_their_server_stops_are_sent_by_the_other_once_each_in_order(
    redis_url: str, namespace: str, how: signal.Signals
) -> None:
    async with _one_meta(redis_url, namespace, bot="background") as meta:
        a, b = meta.clients
        await _say(b, ANA, "hello")  # Ana's window opens; the bot answers after its 200
        sent = await _send(a, {"to": ANA, "type": "text", "text": {"body": "Your order is ready"}})
        assert sent.status_code == 200, sent.text
        wamid = sent.json()["messages"][0]["id"]
        await meta.stop(0, how)  # before the first of its statuses is due (1 s)
        await _until(lambda: "read" in meta.recorder.statuses(wamid))
        statuses = meta.recorder.statuses(wamid)
        events = (await _events(b))["events"]
    assert statuses == ["sent", "delivered", "read"]
    logged = [e["status"] for e in events if e["kind"] == "status" and e["wamid"] == wamid]
    assert logged == ["sent", "delivered", "read"]
    # No status of any message reached the bot twice, whichever server sent it.
    seen = [
        (i["id"], i["status"]) for h in meta.recorder.received for i in h.items() if "status" in i
    ]
    assert len(seen) == len(set(seen))


async def test_a_retry_due_after_its_server_stops_is_made_by_the_other_with_the_same_bytes(
    redis_url: str, namespace: str
) -> None:
    # Meta tries again at once, then 10 s after the first attempt: both first tries fail.
    recorder = Recorder(fail_first=lambda text: text == "fail twice", failures=2)
    async with _one_meta(redis_url, namespace, recorder=recorder) as meta:
        a, b = meta.clients
        wamid = await _say(a, BEN, "fail twice")
        await _until(lambda: len(recorder.deliveries(wamid)) >= 2)
        # The bot has the second try; its server writes what it made of it once answered.
        await _until(lambda: _attempts_seen(b, wamid, 2))
        await meta.stop(0, signal.SIGKILL)  # before its retry at 10 s
        advanced = await b.post("/_harness/advance", json={"duration": "11s"})
        assert advanced.status_code == 200, advanced.text
        await _until(lambda: len(recorder.deliveries(wamid)) >= 3)
        await _until(
            lambda: _replied(b, BEN, "You said: fail twice"),
        )
        deliveries = recorder.deliveries(wamid)
        events = (await _events(b))["events"]
        replied = await _replied(b, BEN, "You said: fail twice")
    assert [d.status for d in deliveries] == [500, 500, 200]
    assert {(d.body, d.signature) for d in deliveries} == {
        (deliveries[0].body, deliveries[0].signature)
    }
    attempts = [e for e in events if e["kind"] == "delivery" and wamid in e["items"]]
    assert [(e["attempt"], e["status_code"]) for e in attempts] == [(1, 500), (2, 500), (3, 200)]
    assert len({e["delivery"] for e in attempts}) == 1
    assert replied


async def test_a_delivery_cut_short_by_its_server_dying_is_made_again_after_the_lease(
    redis_url: str, namespace: str
) -> None:
    recorder = Recorder(held={"slow": 5.0})
    async with _one_meta(redis_url, namespace, recorder=recorder) as meta:
        a, b = meta.clients
        said = await a.post("/_harness/inbound", json={"user": ANA, "text": "slow", "wait": False})
        wamid = said.json()["wamid"]
        await _until(lambda: recorder.deliveries(wamid))
        await meta.stop(0, signal.SIGKILL)  # in the middle of its POST
        # Its claim holds for the webhook timeout (10 s) and 5 s more; then B sends it.
        await _until(lambda: len(recorder.deliveries(wamid)) >= 2, within=30)
        await _until(lambda: _replied(b, ANA, "You said: slow"))
        deliveries = recorder.deliveries(wamid)
        events = (await _events(b))["events"]
    assert len(deliveries) == 2
    assert deliveries[1].body == deliveries[0].body
    assert deliveries[1].signature == deliveries[0].signature
    inbound = [e["duplicate"] for e in events if e["kind"] == "inbound" and e["wamid"] == wamid]
    assert inbound == [False, True]  # the agent may have had the first: the second is a copy
    attempts = [e for e in events if e["kind"] == "delivery" and wamid in e["items"]]
    assert [(e["attempt"], e["status_code"]) for e in attempts] == [(1, 200)]


async def _attempts_seen(client: httpx.AsyncClient, wamid: str, count: int) -> bool:
    events: list[dict[str, Any]] = (await _events(client))["events"]
    made = [e for e in events if e["kind"] == "delivery" and wamid in e["items"]]
    return len(made) >= count


async def _replied(client: httpx.AsyncClient, user: str, text: str) -> bool:
    outbox = (await client.get("/_harness/outbox", params={"user": user})).json()
    return any(m.get("text", {}).get("body") == text for m in outbox["messages"])


async def test_a_message_delivered_by_one_server_is_redelivered_byte_for_byte_by_the_other(
    redis_url: str, namespace: str
) -> None:
    async with _one_meta(redis_url, namespace) as meta:
        a, b = meta.clients
        wamid = await _say(a, ANA, "say it again")
        by_wamid = await b.post("/_harness/redeliver", json={"wamid": wamid})
        by_user = await b.post("/_harness/redeliver", json={"user": ANA})
        deliveries = meta.recorder.deliveries(wamid)
        events = (await _events(a))["events"]
    assert by_wamid.status_code == 200, by_wamid.text
    assert by_user.status_code == 200, by_user.text
    assert by_user.json()["wamid"] == wamid
    assert len(deliveries) == 3
    assert {(d.body, d.signature) for d in deliveries} == {
        (deliveries[0].body, deliveries[0].signature)
    }
    inbound = [e for e in events if e["kind"] == "inbound" and e["wamid"] == wamid]
    assert [e["duplicate"] for e in inbound] == [False, True, True]


async def test_the_shared_logs_are_trimmed_by_age_keeping_an_active_turn_whole(
    redis_url: str, namespace: str
) -> None:
    # Ages count the clock as it runs (here, real time), not its jumps.
    options = ("--keep-events-for", "1s", "--keep-outbox-for", "1s", "--active-for", "3s")
    recorder = Recorder(withheld={ANA})  # the bot never answers Ana: her turn stays open
    async with _one_meta(redis_url, namespace, options=options, recorder=recorder) as meta:
        a, b = meta.clients
        early = await _say(a, BEN, "early")
        outbox_before = (await b.get("/_harness/outbox")).json()
        assert outbox_before["first"] == 0
        assert outbox_before["messages"]
        await _advance(a, "25h")  # a jump ages nothing
        assert early in [e.get("wamid") for e in (await _events(b))["events"]]
        await asyncio.sleep(2)
        first = await _say(b, ANA, "first")
        await asyncio.sleep(2)  # Ben has now been quiet for 4 seconds, Ana for 2
        second = await _say(b, ANA, "second")
        before = await _events(b)

        async def trimmed() -> bool:
            found = await _events(b)
            return all(e.get("wamid") != early for e in found["events"])

        await _until(trimmed, within=10)
        events_a, events_b = await _events(a), await _events(b)
        outbox = (await b.get("/_harness/outbox")).json()
    kept = [e["wamid"] for e in events_b["events"] if e["kind"] == "inbound"]
    assert early not in kept  # four seconds old, and Ben has been quiet for longer than 3
    assert kept == [first, second]  # Ana's turn is kept whole, two seconds old or not
    assert events_b["first"] > 0
    assert events_b["dropped"] == events_b["first"]  # read from 0: the indices stay absolute
    assert events_b["next"] >= before["next"]
    assert events_a == events_b
    assert outbox["first"] == outbox_before["next"]  # the bot's reply to Ben aged out
    assert outbox["messages"] == []


async def _advance(client: httpx.AsyncClient, duration: str) -> None:
    advanced = await client.post("/_harness/advance", json={"duration": duration})
    assert advanced.status_code == 200, advanced.text


async def _read_alike(
    *clients: httpx.AsyncClient, within: float = 20.0
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each server's event log and conversation, read when no event came in between.

    Statuses of the last turn still fall due while the test reads (at +1, +2
    and +5 s): reads that straddle one differ by it, on any correct server.
    The logs are read again after the conversations, until none has moved.
    """
    deadline = time.monotonic() + within
    while True:
        reads = [await _events(c) for c in clients]
        conversations = [(await c.get("/_harness/conversation")).json() for c in clients]
        after = [await _events(c) for c in clients]
        ends = {read["next"] for read in reads + after}
        if len(ends) == 1 or time.monotonic() > deadline:
            return reads, conversations
        await asyncio.sleep(0.2)


async def test_a_server_started_late_loads_what_the_others_did_and_answers_as_they_do(
    redis_url: str, namespace: str
) -> None:
    async with _one_meta(redis_url, namespace, bot="pizza") as meta:
        a, b = meta.clients
        await _say(a, ANA, "hi")  # the pizza bot asks for a size
        size = await _say(b, ANA, "large")  # and offers Confirm and Cancel
        late = await meta.join()
        again = await late.post("/_harness/redeliver", json={"user": ANA})
        tapped = await late.post("/_harness/tap", json={"user": ANA, "choice": "Confirm"})
        async with httpx.AsyncClient() as client:
            orders = (await client.get(f"{meta.bot_url}/orders")).json()["orders"]
        reads, conversations = await _read_alike(a, b, late)
    assert again.status_code == 200, again.text
    assert again.json()["wamid"] == size
    assert tapped.status_code == 200, tapped.text
    assert [(o["user"], o["size"]) for o in orders] == [(ANA, "large")]
    assert reads[0] == reads[1] == reads[2]
    assert conversations[0] == conversations[1] == conversations[2]
