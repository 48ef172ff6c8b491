"""The fake Graph API as the send tests reach it: the app, its served document, its errors."""

from __future__ import annotations

import functools
from typing import Any

import httpx
import jsonschema_rs
from starlette.applications import Starlette
from starlette.testclient import TestClient

from channels.whatsapp.graph import AcceptAll, create_graph_app
from channels.whatsapp.media import MediaStore
from harness.clock import VirtualClock

PHONE = "100200300400500"
TOKEN = "EAAG-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def graph_app() -> Starlette:
    """A fresh fake Graph API that accepts every valid send."""
    clock = VirtualClock()
    return create_graph_app(
        access_tokens={TOKEN},
        phone_numbers={PHONE: "15550001111"},
        on_send=AcceptAll(),
        media=MediaStore(clock),
        clock=clock,
    )


def graph_client(app: Starlette) -> httpx.AsyncClient:
    """An in-process client of ``app``."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://graph.local")


async def post_send(client: httpx.AsyncClient, body: object) -> httpx.Response:
    """``POST /v25.0/{PHONE}/messages`` with ``body`` as JSON."""
    return await client.post(f"/v25.0/{PHONE}/messages", json=body, headers=AUTH)


@functools.cache
def served_document() -> dict[str, Any]:
    """``/openapi.json`` as the app serves it (fetched once, in-process)."""
    response = TestClient(graph_app()).get("/openapi.json")
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


@functools.cache
def served_request_schema() -> jsonschema_rs.Validator:
    """The served document's schema of the send endpoint's request body."""
    document = served_document()
    operation = document["paths"]["/{version}/{phone_number_id}/messages"]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    return jsonschema_rs.Draft202012Validator({**schema, "components": document["components"]})
