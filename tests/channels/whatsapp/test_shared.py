"""Two simulators in one process, sharing their state through one Redis (the ``--redis`` mode).

Each simulator has its own :class:`~channels.whatsapp.shared.SharedMeta`,
as each ``harness serve`` process would, and is driven through its own
control API and fake Graph API in-process; no agent is connected, so the
tests play the agent's side themselves. Their clocks stand still (no
pacing), so the rate limits meet the same sends at the same instants.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.control import control_app
from channels.whatsapp.retention import RetentionPolicy
from channels.whatsapp.shared import SharedMeta, open_shared
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock

pytestmark = pytest.mark.redis

ANA = "5511987654321"
TEXT = {"type": "text", "text": {"body": "hello"}}


@dataclass
class Pair:
    """Two simulators of one Meta, and a client for each one's app."""

    a: httpx.AsyncClient
    b: httpx.AsyncClient
    sims: tuple[WhatsAppSimulator, WhatsAppSimulator]
    shared: tuple[SharedMeta, SharedMeta]

    async def send(self, client: httpx.AsyncClient, body: Mapping[str, Any]) -> httpx.Response:
        token = self.sims[0].config.access_token
        return await client.post(
            "/v25.0/100200300400500/messages",
            json={"messaging_product": "whatsapp", **body},
            headers={"Authorization": f"Bearer {token}"},
        )


async def _drop(url: str, namespace: str) -> None:
    client = aioredis.Redis.from_url(url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{namespace}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


async def _pair(
    stack: AsyncExitStack,
    url: str,
    namespace: str,
    *,
    retention: RetentionPolicy | None = None,
    throughput: int = 80,
) -> Pair:
    stack.push_async_callback(_drop, url, namespace)
    config = SimulatorConfig(throughput_mps=throughput)
    clients, sims, shares = [], [], []
    for _ in range(2):
        shared = await open_shared(url, namespace, config.phone_number_id)
        stack.push_async_callback(shared.aclose)
        clock = VirtualClock(shared.start())
        sim = WhatsAppSimulator(
            config,
            clock=clock,
            store=shared.base,
            media=shared.media_store(clock, config.public_url),
            retention=retention,
        )
        await shared.attach(sim)
        transport = httpx.ASGITransport(app=control_app(sim))
        client = httpx.AsyncClient(transport=transport, base_url=config.public_url)
        await stack.enter_async_context(client)
        clients.append(client)
        sims.append(sim)
        shares.append(shared)
    return Pair(clients[0], clients[1], (sims[0], sims[1]), (shares[0], shares[1]))


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as stack:
        yield stack


async def test_the_shared_event_log_keeps_its_count_and_reads_the_same_from_either(
    stack: AsyncExitStack, redis_url: str, namespace: str
) -> None:
    pair = await _pair(stack, redis_url, namespace, retention=RetentionPolicy(events=4, outbox=3))
    await pair.a.post("/_harness/users", json={"wa_id": ANA})
    for i in range(5):
        answer = await pair.send(pair.a if i % 2 else pair.b, {"to": ANA, **TEXT})
        assert answer.status_code == 200
    events_a = (await pair.a.get("/_harness/events")).json()
    events_b = (await pair.b.get("/_harness/events")).json()
    outbox = (await pair.b.get("/_harness/outbox", params={"since": 1})).json()
    assert events_a == events_b
    assert (events_a["first"], events_a["next"], events_a["dropped"]) == (1, 5, 1)
    assert len(events_a["events"]) == 4
    assert (outbox["first"], outbox["next"], outbox["dropped"]) == (2, 5, 1)
    assert len(outbox["messages"]) == 3


async def test_a_clear_through_one_is_read_through_the_other_and_the_export_holds_both(
    stack: AsyncExitStack, redis_url: str, namespace: str
) -> None:
    pair = await _pair(stack, redis_url, namespace)
    await pair.send(pair.a, {"to": ANA, **TEXT})
    await pair.send(pair.b, {"to": ANA, **TEXT})
    exported = (await pair.b.get("/_harness/export")).text.splitlines()
    cleared = (await pair.a.post("/_harness/clear", json={"outbox_before": 1})).json()
    after = (await pair.b.get("/_harness/outbox")).json()
    assert len([line for line in exported if line.startswith('{"index":0,"send"')]) == 1
    assert len([line for line in exported if line.startswith('{"index":1,"send"')]) == 1
    assert (cleared["outbox_first"], cleared["outbox_next"]) == (1, 2)
    assert (after["first"], after["next"], len(after["messages"])) == (1, 2, 1)


async def test_the_throughput_limit_counts_the_sends_of_both(
    stack: AsyncExitStack, redis_url: str, namespace: str
) -> None:
    pair = await _pair(stack, redis_url, namespace, throughput=3)
    users = [f"55119876543{n:02d}" for n in range(4)]
    answers = [
        await pair.send(pair.a if n % 2 else pair.b, {"to": u, **TEXT}) for n, u in enumerate(users)
    ]
    codes = [a.status_code if a.status_code == 200 else a.json()["error"]["code"] for a in answers]
    assert codes == [200, 200, 200, 130429]


async def test_a_user_registered_through_one_is_in_the_other_s_conversation(
    stack: AsyncExitStack, redis_url: str, namespace: str
) -> None:
    pair = await _pair(stack, redis_url, namespace)
    await pair.a.post("/_harness/users", json={"wa_id": ANA, "name": "Ana"})
    await pair.shared[1].caught_up()
    conversation = (await pair.b.get("/_harness/conversation")).json()
    assert [p["name"] for p in conversation["participants"]] == ["Ana"]


async def test_one_users_conversation_reads_alike_from_either(
    stack: AsyncExitStack, redis_url: str, namespace: str
) -> None:
    pair = await _pair(stack, redis_url, namespace)
    await pair.a.post("/_harness/users", json={"wa_id": ANA, "name": "Ana"})
    await pair.b.post("/_harness/users", json={"wa_id": "15550002222", "name": "Ben"})
    for client, to in ((pair.a, ANA), (pair.b, "15550002222")):
        assert (await pair.send(client, {"to": to, **TEXT})).status_code == 200
    query = {"user": ANA}
    read = [(await c.get("/_harness/conversation", params=query)).json() for c in (pair.a, pair.b)]
    assert read[0] == read[1]
    assert [p["name"] for p in read[0]["participants"]] == ["Ana"]
    assert {e["user"] for e in read[0]["events"]} == {ANA}


async def test_each_process_that_joins_is_numbered_and_starts_on_the_shared_clock(
    stack: AsyncExitStack, redis_url: str, namespace: str
) -> None:
    pair = await _pair(stack, redis_url, namespace)
    assert [shared.node for shared in pair.shared] == [1, 2]
    await pair.a.post("/_harness/advance", json={"duration": "2d"})
    late = await open_shared(redis_url, namespace, "100200300400500")
    try:
        assert late.node == 3
        assert abs((late.start() - pair.sims[0].clock.now()).total_seconds()) < 5
    finally:
        await late.aclose()


async def test_a_media_id_or_url_answered_by_one_works_at_once_through_the_other(
    stack: AsyncExitStack, redis_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No changes sent or heard in the background: what the answers themselves wait for and
    # read is all there is, so an answer given before its change reached Redis, or a file
    # served after Redis lost it, fails here every time.
    async def never(self: SharedMeta) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(SharedMeta, "_flushing", never)
    monkeypatch.setattr(SharedMeta, "_following", never)
    pair = await _pair(stack, redis_url, namespace)
    auth = {"Authorization": f"Bearer {pair.sims[0].config.access_token}"}
    photo = b"\xff\xd8\xff\xe0" + b"a photo" * 40
    form = {"messaging_product": "whatsapp", "type": "image/jpeg"}
    files = {"file": ("photo.jpg", photo, "image/jpeg")}
    uploaded = await pair.a.post(
        "/v25.0/100200300400500/media", data=form, files=files, headers=auth
    )
    assert uploaded.status_code == 200, uploaded.text
    described = await pair.b.get(f"/v25.0/{uploaded.json()['id']}", headers=auth)
    assert described.status_code == 200, described.text
    path = "/" + described.json()["url"].split("/", 3)[3]
    downloaded = await pair.a.get(path, headers=auth)
    assert downloaded.status_code == 200, downloaded.text
    assert downloaded.content == photo

    # A user's file, added through the control API of one, is there through the other (the
    # control API shares what each call changed before it answers).
    added = await pair.b.post(
        "/_harness/media", content=photo, headers={"Content-Type": "image/jpeg"}
    )
    assert added.status_code == 201, added.text
    found = await pair.a.get(f"/v25.0/{added.json()['id']}", headers=auth)
    assert found.status_code == 200, found.text

    # A file deleted through one is gone from Redis once the answer comes.
    media_id = uploaded.json()["id"]
    assert await _media_keys(redis_url, namespace, media_id)
    deleted = await pair.a.delete(f"/v25.0/{media_id}", headers=auth)
    assert deleted.status_code == 200, deleted.text
    assert not await _media_keys(redis_url, namespace, media_id)
    # The other had it, and its download URL: both are gone there too.
    again = await pair.b.get(f"/v25.0/{media_id}", headers=auth)
    assert again.status_code == 400, again.text
    assert again.json()["error"]["code"] == 100
    stale = await pair.b.get(path, headers=auth)
    assert stale.status_code == 404, stale.text


async def _media_keys(url: str, namespace: str, media_id: str) -> list[bytes]:
    client = aioredis.Redis.from_url(url)
    try:
        return [key async for key in client.scan_iter(match=f"{namespace}:*media:{media_id}")]
    finally:
        await client.aclose()
