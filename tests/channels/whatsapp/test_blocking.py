"""Meta's Block Users API: its answers, its errors per user, and what a block does to the chat."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
import jsonschema_rs
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from channels.whatsapp import blocking
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.forwarding import recipients, routed_call
from channels.whatsapp.openapi import build_openapi
from channels.whatsapp.router import GraphRouter
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from harness.trace import BlockChange, DroppedMessage, InboundMessage, OutboundSend
from tests.bots.loopback import free_port
from tests.channels.whatsapp.conformance import spec
from tests.support.graph_errors import graph_error, no_such_object

CONFIG: Final = SimulatorConfig(handshake=False)
AUTH: Final = {"Authorization": f"Bearer {CONFIG.access_token}"}
BLOCK: Final = f"/v25.0/{CONFIG.phone_number_id}/block_users"
MESSAGES: Final = f"/v25.0/{CONFIG.phone_number_id}/messages"
ANA: Final = "16505551234"  # the number of Meta's examples
BEN: Final = "5511987654321"


def _meta(method: str, part: str) -> Any:
    """The one example Meta's description gives for ``part`` of an operation on block_users."""
    operation = spec.as_written()["paths"]["/{Version}/{Phone-Number-ID}/block_users"][method]
    if part == "request":
        content = operation["requestBody"]["content"]["application/json"]
    else:
        name = operation["responses"]["200"]["$ref"].rsplit("/", 1)[1]
        content = spec.as_written()["components"]["responses"][name]["content"]["application/json"]
    [example] = content["examples"].values()
    return example["value"]


def _fits_meta(method: str, body: Any) -> list[str]:
    operation = spec.as_written()["paths"]["/{Version}/{Phone-Number-ID}/block_users"][method]
    name = operation["responses"]["200"]["$ref"].rsplit("/", 1)[1]
    pointer = f"/components/responses/{name}/content/application~1json/schema"
    return spec.problems(spec.corrected_validator(pointer), body)


@dataclass
class Chat:
    """A simulator with an agent that answers every webhook 200 and keeps what it got."""

    sim: WhatsAppSimulator
    graph: httpx.AsyncClient
    webhooks: list[Any] = field(default_factory=list)

    async def block(self, *users: str, method: str = "POST") -> httpx.Response:
        body = {"messaging_product": "whatsapp", "block_users": [{"user": u} for u in users]}
        return await self.graph.request(method, BLOCK, json=body, headers=AUTH)

    async def text(self, to: str, body: str = "hi") -> httpx.Response:
        send = {"messaging_product": "whatsapp", "to": to, "type": "text", "text": {"body": body}}
        return await self.graph.post(MESSAGES, json=send, headers=AUTH)

    def messages_received(self) -> list[str]:
        """The texts of the user messages the agent was sent."""
        return [
            m["text"]["body"]
            for hook in self.webhooks
            for m in hook["entry"][0]["changes"][0]["value"].get("messages", [])
        ]


@pytest.fixture
async def chat() -> AsyncIterator[Chat]:
    sim = WhatsAppSimulator(CONFIG, clock=VirtualClock())
    got: list[Any] = []

    async def webhook(request: Request) -> Response:
        got.append(await request.json())
        return PlainTextResponse("ok")

    sim.connect(Starlette(routes=[Route(CONFIG.webhook_path, webhook, methods=["POST"])]))
    for wa_id, name in ((ANA, "Ana"), (BEN, "Ben")):
        sim.add_user(wa_id, name)
    try:
        async with sim.graph_client() as graph:
            yield Chat(sim, graph, got)
    finally:
        await sim.aclose()


# -- Meta's examples -------------------------------------------------------------------


async def test_metas_block_example_answers_metas_example_once_the_user_wrote(chat: Chat) -> None:
    await chat.sim.say(ANA, "hello")
    asked = _meta("post", "request")
    answer = await chat.graph.post(BLOCK, json=asked, headers=AUTH)
    assert answer.status_code == 200
    assert answer.json() == _meta("post", "response")
    assert _fits_meta("post", answer.json()) == []


async def test_metas_unblock_example_answers_metas_example(chat: Chat) -> None:
    await chat.sim.say(ANA, "hello")
    assert (await chat.block("+16505551234")).status_code == 200
    asked = _meta("delete", "request")
    answer = await chat.graph.request("DELETE", BLOCK, json=asked, headers=AUTH)
    assert answer.status_code == 200
    assert answer.json() == _meta("delete", "response")
    assert _fits_meta("delete", answer.json()) == []


async def test_the_blocked_users_are_listed_as_metas_example_lists_them(chat: Chat) -> None:
    assert (await chat.graph.get(BLOCK, headers=AUTH)).json() == {"data": []}
    await chat.sim.say(ANA, "hello")
    await chat.block("+16505551234")
    answer = (await chat.graph.get(BLOCK, headers=AUTH)).json()
    example = _meta("get", "response")
    assert answer["data"] == example["data"]
    assert set(answer["paging"]["cursors"]) == set(example["paging"]["cursors"])
    assert _fits_meta("get", answer) == []


def test_the_document_describes_the_three_operations_with_metas_examples() -> None:
    document = build_openapi()
    item = document["paths"]["/{version}/{phone_number_id}/block_users"]
    assert {m: item[m]["operationId"] for m in item} == {
        "get": "getBlockedUsers",
        "post": "blockUserS",
        "delete": "unblockUserS",
    }
    for method in ("post", "delete"):
        [asked] = item[method]["requestBody"]["content"]["application/json"]["examples"].values()
        assert asked["value"] == _meta(method, "request")
        ok = item[method]["responses"]["200"]["content"]["application/json"]
        [answered] = ok["examples"].values()
        assert answered["value"] == _meta(method, "response")
    components = {"components": document["components"]}
    request = jsonschema_rs.Draft202012Validator(
        {"$ref": "#/components/schemas/BlockUsersRequest", **components}
    )
    assert request.is_valid(_meta("post", "request"))
    assert not request.is_valid({"messaging_product": "whatsapp", "block_users": []})
    listing = jsonschema_rs.Draft202012Validator(
        {"$ref": "#/components/schemas/GetBlockedUsersData", **components}
    )
    assert listing.is_valid(_meta("get", "response"))


# -- each user on its own ----------------------------------------------------------------


async def test_a_user_silent_for_24_hours_fails_beside_one_who_wrote(chat: Chat) -> None:
    await chat.sim.say(BEN, "hi")
    await chat.sim.advance(24 * 3600 + 1)
    await chat.sim.say(ANA, "hi")
    answer = await chat.block(ANA, f"+{BEN}")
    assert answer.status_code == 400
    body = answer.json()
    assert body["messaging_product"] == "whatsapp"
    assert body["block_users"]["added_users"] == [{"input": ANA, "wa_id": ANA}]
    [failed] = body["block_users"]["failed_users"]
    assert failed == {
        "input": f"+{BEN}",
        "wa_id": BEN,
        "errors": [
            {
                "message": "Re-engagement required",
                "code": 131047,
                "error_data": {"details": "User has not messaged in the last 24 hours"},
            }
        ],
    }
    assert type(failed["errors"][0]["code"]) is int
    error = body["error"]
    assert (error["code"], error["type"]) == (139100, "OAuthException")
    assert error["message"] == "(#139100) Failed to block/unblock users"
    assert error["error_data"]["details"].startswith("Failed to block some users")
    assert error["fbtrace_id"]
    listed = (await chat.graph.get(BLOCK, headers=AUTH)).json()["data"]
    assert listed == [{"messaging_product": "whatsapp", "wa_id": ANA}]


async def test_a_number_that_never_wrote_or_is_not_a_number_fails_with_131047(chat: Chat) -> None:
    chat.sim.add_user("5511900000000", "Nobody", on_whatsapp=False)
    answer = await chat.block("15550009999", "not a number", "5511900000000")
    body = graph_error(answer, 400, 139100)
    assert body.startswith("Failed to block some users")
    failed = answer.json()["block_users"]["failed_users"]
    assert [f.get("wa_id") for f in failed] == ["15550009999", None, None]
    assert {f["errors"][0]["code"] for f in failed} == {131047}
    assert answer.json()["block_users"]["added_users"] == []


async def test_the_business_can_not_block_its_own_number(chat: Chat) -> None:
    answer = await chat.block(f"+{CONFIG.display_phone_number}")
    [failed] = answer.json()["block_users"]["failed_users"]
    assert failed["wa_id"] == CONFIG.display_phone_number
    assert failed["errors"][0]["code"] == 131021


async def test_more_than_1000_users_in_one_call_answers_130429_and_blocks_none(
    chat: Chat,
) -> None:
    await chat.sim.say(ANA, "hi")
    answer = await chat.block(ANA, *(f"1555{n:07d}" for n in range(1000)))
    details = graph_error(answer, 400, 130429)
    assert "1001 users in one request" in details
    assert (await chat.graph.get(BLOCK, headers=AUTH)).json() == {"data": []}
    at_most = await chat.block(ANA, *(f"1555{n:07d}" for n in range(999)))
    graph_error(at_most, 400, 139100)  # 1,000 are taken: the ones who never wrote fail alone
    assert at_most.json()["block_users"]["added_users"] == [{"input": ANA, "wa_id": ANA}]


async def test_a_full_blocklist_refuses_the_next_user_with_139101(
    chat: Chat, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blocking, "BLOCKLIST_LIMIT", 1)
    await chat.sim.say(ANA, "hi")
    await chat.sim.say(BEN, "hi")
    answer = await chat.block(ANA, BEN, ANA)
    result = answer.json()["block_users"]
    assert result["added_users"] == [{"input": ANA, "wa_id": ANA}] * 2  # once blocked, still
    [failed] = result["failed_users"]
    assert (failed["wa_id"], failed["errors"][0]["code"]) == (BEN, 139101)


async def test_unblocking_knows_no_24_hour_rule(chat: Chat) -> None:
    await chat.sim.say(ANA, "hi")
    assert (await chat.block(ANA)).status_code == 200
    await chat.sim.advance(48 * 3600)
    answer = await chat.block(ANA, method="DELETE")
    assert answer.json() == {
        "messaging_product": "whatsapp",
        "block_users": {"removed_users": [{"input": ANA, "wa_id": ANA}]},
    }
    again = await chat.block(ANA)  # blocking again: the rule holds
    assert again.json()["block_users"]["failed_users"][0]["errors"][0]["code"] == 131047
    failed_unblock = await chat.block(CONFIG.display_phone_number, method="DELETE")
    assert "Failed to unblock some users" in graph_error(failed_unblock, 400, 139100)


async def test_a_user_blocked_by_bsuid_is_answered_by_bsuid_and_listed_by_wa_id(chat: Chat) -> None:
    await chat.sim.say(ANA, "hi")
    bsuid = chat.sim.user(ANA).user_id
    body = {"messaging_product": "whatsapp", "block_users": [{"user_id": bsuid}]}
    answer = await chat.graph.post(BLOCK, json=body, headers=AUTH)
    assert answer.json()["block_users"]["added_users"] == [{"input": bsuid, "user_id": bsuid}]
    assert chat.sim.blocklist.holds(ANA)
    listed = (await chat.graph.get(BLOCK, headers=AUTH)).json()["data"]
    assert listed == [{"messaging_product": "whatsapp", "wa_id": ANA}]
    [change] = [e for e in chat.sim.events if isinstance(e, BlockChange)]
    assert change.user == ANA  # the trace names the user by wa_id, as every event does


async def test_a_user_named_both_ways_is_blocked_by_phone_number(chat: Chat) -> None:
    # whatsapp-api-js writes each user as {"user": phone, "user_id": bsuid}.
    await chat.sim.say(ANA, "hi")
    bsuid = chat.sim.user(ANA).user_id
    body = {"messaging_product": "whatsapp", "block_users": [{"user": ANA, "user_id": bsuid}]}
    answer = await chat.graph.post(BLOCK, json=body, headers=AUTH)
    assert answer.json()["block_users"]["added_users"] == [{"input": ANA, "wa_id": ANA}]
    answer = await chat.graph.request("DELETE", BLOCK, json=body, headers=AUTH)
    assert answer.json()["block_users"]["removed_users"] == [{"input": ANA, "wa_id": ANA}]
    assert not chat.sim.blocklist.holds(ANA)


async def test_the_list_is_paged_with_graphs_cursors(chat: Chat) -> None:
    users = [f"1555000{n:04d}" for n in range(5)]
    for user in users:
        chat.sim.add_user(user)
        await chat.sim.say(user, "hi")
    assert (await chat.block(*users)).status_code == 200
    first = (await chat.graph.get(BLOCK, params={"limit": "2"}, headers=AUTH)).json()
    assert [u["wa_id"] for u in first["data"]] == users[:2]
    after = first["paging"]["cursors"]["after"]
    second = await chat.graph.get(BLOCK, params={"limit": "2", "after": after}, headers=AUTH)
    assert [u["wa_id"] for u in second.json()["data"]] == users[2:4]
    before = second.json()["paging"]["cursors"]["before"]
    back = await chat.graph.get(BLOCK, params={"limit": "2", "before": before}, headers=AUTH)
    assert [u["wa_id"] for u in back.json()["data"]] == users[:2]
    assert "next" in first["paging"]
    bad = await chat.graph.get(BLOCK, params={"after": "zzz"}, headers=AUTH)
    assert graph_error(bad).startswith("after: is not a cursor")


# -- the request -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "problem"),
    [
        ({"block_users": [{"user": ANA}]}, 100, "messaging_product: required"),
        ({"messaging_product": "sms", "block_users": [{"user": ANA}]}, 100, "messaging_product"),
        ({"messaging_product": "whatsapp"}, 131008, "block_users: required"),
        ({"messaging_product": "whatsapp", "block_users": []}, 131009, "block_users: must be"),
        ({"messaging_product": "whatsapp", "block_users": ANA}, 131009, "block_users: must be"),
        (
            {"messaging_product": "whatsapp", "block_users": [ANA]},
            131009,
            "block_users[0]: must be",
        ),
        (
            {"messaging_product": "whatsapp", "block_users": [{"user": 16505551234}]},
            131009,
            "block_users[0].user: must be",
        ),
        (
            {"messaging_product": "whatsapp", "block_users": [{"phone": ANA}]},
            131009,
            "block_users[0]: must be",
        ),
        (
            {"messaging_product": "whatsapp", "block_users": [{"user": ANA, "phone": ANA}]},
            131009,
            "block_users[0]: must be",
        ),
        (
            {"messaging_product": "whatsapp", "block_users": [{"user": ANA, "user_id": 5}]},
            131009,
            "block_users[0].user_id: must be",
        ),
    ],
)
async def test_a_bad_call_is_refused_as_a_sends_would_be(
    chat: Chat, body: dict[str, Any], code: int, problem: str
) -> None:
    await chat.sim.say(ANA, "hi")
    for method in ("POST", "DELETE"):
        answer = await chat.graph.request(method, BLOCK, json=body, headers=AUTH)
        assert graph_error(answer, 400, code).startswith(problem)
    assert not chat.sim.blocklist.holds(ANA)


async def test_a_call_as_form_fields_is_read_as_graph_reads_it(chat: Chat) -> None:
    await chat.sim.say(ANA, "hi")
    form = {"messaging_product": "whatsapp", "block_users": f'[{{"user": "{ANA}"}}]'}
    answer = await chat.graph.post(BLOCK, data=form, headers=AUTH)
    assert answer.json()["block_users"]["added_users"] == [{"input": ANA, "wa_id": ANA}]


async def test_the_token_and_the_number_are_checked_first(chat: Chat) -> None:
    assert (await chat.graph.get(BLOCK)).status_code == 401
    no_such_object(await chat.graph.get("/v25.0/123/block_users", headers=AUTH), "123")
    # A method the endpoint does not take: Graph's "unsupported put request" on the number
    no_such_object(await chat.graph.put(BLOCK, headers=AUTH), BLOCK.split("/")[2], "put")


async def test_a_blocklist_that_can_not_change_answers_139103(
    chat: Chat, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(chat.sim.blocklist, "change", broken)
    details = graph_error(await chat.block(ANA), 500, 139103)
    assert details == "The blocklist could not be changed (RuntimeError)."


# -- what a block does ---------------------------------------------------------------


async def test_a_blocked_users_messages_are_dropped_and_sends_to_them_refused(
    chat: Chat,
) -> None:
    sim = chat.sim
    [first] = await sim.say(ANA, "you idiot")
    await sim.settle()
    assert (await chat.block(ANA)).status_code == 200
    [dropped] = await sim.say(ANA, "hello??")
    await sim.say(BEN, "hi")
    await sim.settle()
    assert chat.messages_received() == ["you idiot", "hi"]
    events = sim.conversation().events
    [drop] = [e for e in events if isinstance(e, DroppedMessage)]
    assert (drop.user, drop.wamid, drop.text, drop.reason) == (ANA, dropped, "hello??", "blocked")
    assert [e.text for e in events if isinstance(e, InboundMessage)] == ["you idiot", "hi"]
    refused = await chat.text(ANA)
    assert graph_error(refused, 400, 131048) == (
        "The business has blocked this user; unblock them to message them."
    )
    assert refused.json()["error"]["message"] == "(#131048) User is blocked"
    read = {"messaging_product": "whatsapp", "status": "read", "message_id": first}
    assert graph_error(await chat.graph.post(MESSAGES, json=read, headers=AUTH), 400, 131048)
    assert (await chat.text(BEN)).status_code == 200
    [send] = [e for e in sim.conversation().sends(ANA) if e.type == "text"]
    assert send.error is not None
    assert send.error.code == 131048
    [change] = [e for e in events if isinstance(e, BlockChange)]
    assert (change.user, change.blocked, change.input, change.error) == (ANA, True, ANA, None)

    assert (await chat.block(ANA, method="DELETE")).status_code == 200
    await sim.say(ANA, "sorry")
    await sim.settle()
    assert chat.messages_received() == ["you idiot", "hi", "sorry"]
    assert (await chat.text(ANA)).status_code == 200
    assert [e.blocked for e in sim.events if isinstance(e, BlockChange)] == [True, False]
    assert not [e for e in sim.events if isinstance(e, OutboundSend) and e.user is None]


async def test_a_dropped_message_opens_no_window(chat: Chat) -> None:
    sim = chat.sim
    await sim.say(ANA, "hi")
    await chat.block(ANA)
    await sim.advance(23 * 3600)
    await sim.say(ANA, "still here")
    await sim.advance(2 * 3600)
    await chat.block(ANA, method="DELETE")
    assert not await sim.windows.is_open(ANA)


# -- a run against a URL: one Graph API for every scenario -------------------------------


@asynccontextmanager
async def _two_scenarios() -> AsyncIterator[tuple[httpx.AsyncClient, list[WhatsAppSimulator]]]:
    """A run's router with two scenarios attached, Ana in the first and Ben in the second."""
    router = GraphRouter(CONFIG, "127.0.0.1", free_port())
    sims = []
    for namespace, (wa_id, name) in (("one", (ANA, "Ana")), ("two", (BEN, "Ben"))):
        sim = WhatsAppSimulator(CONFIG, clock=VirtualClock())
        sim.connect(Starlette(routes=[Route(CONFIG.webhook_path, _ok, methods=["POST"])]))
        user = sim.add_user(wa_id, name)
        await sim.say(wa_id, "hi")
        await sim.settle()
        users = [user.wa_id or "", user.user_id]
        router.attach(namespace, sim.graph_app, sim.clock, users, blocklist=sim.blocklist)
        sims.append(sim)
    transport = httpx.ASGITransport(app=router)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://graph.local") as client:
            yield client, sims
    finally:
        for sim in sims:
            await sim.aclose()


async def _ok(request: Request) -> Response:
    return PlainTextResponse("ok")


def _body(*users: str) -> dict[str, Any]:
    return {"messaging_product": "whatsapp", "block_users": [{"user": u} for u in users]}


async def test_a_run_routes_each_block_to_the_scenario_of_its_users() -> None:
    async with _two_scenarios() as (client, (one, two)):
        assert (await client.post(BLOCK, json=_body(f"+{ANA}"), headers=AUTH)).status_code == 200
        assert one.blocklist.holds(ANA)
        assert not two.blocklist.holds(ANA)
        bsuid = two.user(BEN).user_id
        by_bsuid = {"messaging_product": "whatsapp", "block_users": [{"user_id": bsuid}]}
        assert (await client.post(BLOCK, json=by_bsuid, headers=AUTH)).status_code == 200
        assert two.blocklist.holds(BEN)
        listed = (await client.get(BLOCK, headers=AUTH)).json()["data"]
        assert [u["wa_id"] for u in listed] == [ANA, BEN]
        undo = await client.request("DELETE", BLOCK, json=_body(ANA), headers=AUTH)
        assert undo.status_code == 200
        assert not one.blocklist.holds(ANA)
        assert [e.blocked for e in one.events if isinstance(e, BlockChange)] == [True, False]


async def test_a_run_refuses_a_block_naming_users_of_two_scenarios() -> None:
    async with _two_scenarios() as (client, (one, two)):
        answer = await client.post(BLOCK, json=_body(ANA, BEN), headers=AUTH)
        details = graph_error(answer)
        assert details.startswith("block_users: the users named belong to different scenarios")
        assert "(one, two)" in details
        assert answer.json()["error"]["fbtrace_id"]
        assert not one.blocklist.holds(ANA)
        assert not two.blocklist.holds(BEN)


async def test_a_run_answers_a_block_of_a_number_no_scenario_plays_as_meta_would() -> None:
    async with _two_scenarios() as (client, _):
        answer = await client.post(BLOCK, json=_body("15550009999"), headers=AUTH)
        [failed] = answer.json()["block_users"]["failed_users"]
        assert failed["errors"][0]["code"] == 131047
        assert graph_error(answer, 400, 139100)


def test_a_block_names_its_users_for_routing() -> None:
    body = {
        "messaging_product": "whatsapp",
        "block_users": [{"user": "+1 650-555-1234"}, {"user_id": "US.1"}, "junk", {"user": 5}],
    }
    assert recipients(body) == [("user", "16505551234"), ("user", "US.1")]
    assert routed_call("POST", "/v25.0/1/block_users")
    assert routed_call("DELETE", "/v25.0/1/block_users/")
    assert not routed_call("GET", "/v25.0/1/block_users")
    assert routed_call("POST", "/v25.0/1/messages")
    assert not routed_call("DELETE", "/v25.0/1/messages")
