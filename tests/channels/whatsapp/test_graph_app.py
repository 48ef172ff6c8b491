"""The send route taken straight to its endpoint answers as Starlette's router would."""

from __future__ import annotations

import random
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route

from channels.whatsapp._graph_app import SuccessJSON
from channels.whatsapp.graph import AcceptAll, create_graph_app
from channels.whatsapp.media import MediaStore
from harness.clock import VirtualClock

PHONE = "100200300400500"
TOKEN = "EAAG-test-token"
GOOD = {"messaging_product": "whatsapp", "to": "15550001234", "type": "text", "text": {"body": "é"}}
# (path, headers, body): valid and refused sends, each answered by the send endpoint.
SENDS: list[tuple[str, dict[str, str], bytes]] = [
    (f"/v25.0/{PHONE}/messages", {"Authorization": f"Bearer {TOKEN}"}, b""),
    (f"/v25.0/{PHONE}/messages", {}, b"{}"),
    (f"/v25.0/{PHONE}/messages", {"Authorization": "Bearer nope"}, b"{}"),
    (f"/v99.0/{PHONE}/messages", {"Authorization": f"Bearer {TOKEN}"}, b"{}"),
    (f"/latest/{PHONE}/messages", {"Authorization": f"Bearer {TOKEN}"}, b"{}"),
    ("/v25.0/999/messages", {"Authorization": f"Bearer {TOKEN}"}, b"{}"),
    (f"/v25.0/{PHONE}/messages", {"Authorization": f"Bearer {TOKEN}"}, b'{"to": 1}'),
    (f"/v25.0/{PHONE}/messages", {"Authorization": f"Bearer {TOKEN}"}, b"not json"),
    (f"/v25.0/{PHONE}/messages?access_token={TOKEN}", {}, b"{}"),
]


def _app(routes: Any = (), app_class: Any = None) -> Starlette:
    return create_graph_app(
        access_tokens={TOKEN},
        phone_numbers={PHONE: "15550001111"},
        on_send=AcceptAll(rng=random.Random(3)),
        media=MediaStore(VirtualClock()),
        clock=VirtualClock(),
        rng=random.Random(5),
        routes=routes,
    )


def _through_starlette(app: Starlette) -> Starlette:
    """The same routes and handlers behind Starlette's own router."""
    return Starlette(routes=app.routes, exception_handlers=app.exception_handlers)


async def _post(app: Any, path: str, headers: dict[str, str], body: bytes) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://graph.local") as client:
        sent = {"Content-Type": "application/json", **headers}
        content = body or httpx.Request("POST", "/", json=GOOD).content
        return await client.post(path, content=content, headers=sent)


@pytest.mark.parametrize(("path", "headers", "body"), SENDS)
async def test_a_send_answers_the_same_bytes_as_through_starlettes_router(
    path: str, headers: dict[str, str], body: bytes
) -> None:
    direct = _app()
    routed = _through_starlette(_app())
    first = await _post(direct, path, headers, body)
    second = await _post(routed, path, headers, body)
    assert (first.status_code, first.content) == (second.status_code, second.content)
    assert first.headers == second.headers
    # Taken straight to the endpoint: Starlette's middleware stack was never built.
    assert direct.middleware_stack is None


async def test_a_route_served_before_the_graph_api_keeps_its_send_shaped_path() -> None:
    async def mine(request: Request) -> Response:
        return PlainTextResponse(f"control {request.path_params['name']}")

    app = _app(routes=[Route("/_harness/{name}/messages", mine, methods=["POST"])])
    answer = await _post(app, "/_harness/inbox/messages", {}, b"{}")
    assert answer.text == "control inbox"
    sent = await _post(app, f"/v25.0/{PHONE}/messages", {"Authorization": f"Bearer {TOKEN}"}, b"")
    assert sent.status_code == 200
    assert sent.json()["messages"][0]["id"].startswith("wamid.")


@pytest.mark.parametrize(
    "route",
    [
        Route("/{anything}/{name}/messages", lambda r: PlainTextResponse("x"), methods=["POST"]),
        Mount("/", routes=[]),
    ],
    ids=["parameter-first", "root-mount"],
)
async def test_an_extra_route_that_may_match_any_path_turns_the_shortcut_off(route: Any) -> None:
    app = _app(routes=[route])
    await _post(app, f"/v25.0/{PHONE}/messages", {"Authorization": f"Bearer {TOKEN}"}, b"")
    assert app.middleware_stack is not None  # Starlette's router decided


async def test_under_a_root_path_starlette_finds_the_route() -> None:
    app = _app()
    transport = httpx.ASGITransport(app=app, root_path="/graph")
    async with httpx.AsyncClient(transport=transport, base_url="http://graph.local") as client:
        answer = await client.post(
            f"/graph/v25.0/{PHONE}/messages",
            json=GOOD,
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
    assert answer.status_code == 200
    assert app.middleware_stack is not None


def test_a_success_body_is_written_as_starlettes_json_response_writes_it() -> None:
    characters = [*range(0x800), 0x2028, 0x2029, 0xFEFF, 0xFFFF, 0x1F600, 0x10FFFF]
    for code in characters:
        text = f"+1 555{chr(code)}0001"
        body = {
            "messaging_product": "whatsapp",
            "contacts": [{"input": text, "wa_id": "15550001"}],
            "messages": [{"id": "wamid.X", "message_status": "accepted"}],
            "success": True,
            "count": -(2**63),
            "none": None,
        }
        assert SuccessJSON(body).body == JSONResponse(body).body, hex(code)
