"""Shared pieces for the booking agent's tests: a fake Graph API, webhook builders, a driver."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx
from starlette.applications import Starlette

from agents.booking import BookingAgent, BookingSettings, create_app, sign
from harness.clock import DEFAULT_START, VirtualClock
from harness.store import MemoryStore, Store

__all__ = [
    "PHONE_ID",
    "SECRET",
    "USER",
    "FakeGraph",
    "Harness",
    "button_payload",
    "make_settings",
    "message_payload",
    "status_payload",
    "text_payload",
]

PHONE_ID = "100200300400500"
SECRET = "test-app-secret"
USER = "15551234567"


def make_settings(**overrides: Any) -> BookingSettings:
    """Settings for an in-process app talking to a fake Graph API."""
    values: dict[str, Any] = {
        "graph_url": "http://graph.test",
        "access_token": "test-token",
        "phone_number_id": PHONE_ID,
        "app_secret": SECRET,
        "verify_token": "test-verify",
    }
    values.update(overrides)
    return BookingSettings(**values)


@dataclass
class FakeGraph:
    """A Graph API stand-in behind ``httpx.MockTransport``: records sends, can fail some."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[httpx.Headers] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    #: Error codes to answer the next message sends with, in order.
    fail_next: deque[int] = field(default_factory=deque)
    count: int = 0

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        self.headers.append(request.headers)
        self.urls.append(str(request.url))
        if body.get("status") == "read":
            return httpx.Response(200, json={"success": True})
        if self.fail_next:
            return _error(self.fail_next.popleft())
        text = (body.get("text") or {}).get("body")
        if text is not None and len(text) > 4096:
            return _error(100)
        self.count += 1
        to = body.get("to") or body.get("recipient")
        return httpx.Response(
            200,
            json={
                "messaging_product": "whatsapp",
                "contacts": [{"input": to, "wa_id": to}],
                "messages": [{"id": f"wamid.OUT{self.count}"}],
            },
        )

    def client(self) -> httpx.AsyncClient:
        """An HTTP client whose requests reach this fake."""
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handler))

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Message sends (not read receipts), in order."""
        return [r for r in self.requests if "type" in r]

    @property
    def receipts(self) -> list[dict[str, Any]]:
        """Read receipts (with or without typing indicator), in order."""
        return [r for r in self.requests if r.get("status") == "read"]

    def bodies(self) -> list[str]:
        """The visible text of each message send (text body, button body, or template name)."""
        out = []
        for message in self.messages:
            kind = message["type"]
            if kind == "text":
                out.append(message["text"]["body"])
            elif kind == "interactive":
                out.append(message["interactive"]["body"]["text"])
            else:
                out.append(f"<template {message['template']['name']}>")
        return out


def _error(code: int) -> httpx.Response:
    return httpx.Response(
        400,
        json={
            "error": {
                "message": f"(#{code}) simulated",
                "type": "OAuthException",
                "code": code,
                "error_data": {"messaging_product": "whatsapp", "details": f"details {code}"},
                "fbtrace_id": "Atest",
            }
        },
    )


def _envelope(value: dict[str, Any], phone_number_id: str = PHONE_ID) -> dict[str, Any]:
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": phone_number_id},
        **value,
    }
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": "900", "changes": [{"value": value, "field": "messages"}]}],
    }


def message_payload(
    wamid: str,
    message: dict[str, Any],
    *,
    user: str = USER,
    at: datetime | None = None,
    phone_number_id: str = PHONE_ID,
) -> dict[str, Any]:
    """A webhook carrying one message of any type (``message`` holds ``type`` and its object)."""
    stamp = str(int((at or DEFAULT_START).timestamp()))
    item = {"from": user, "id": wamid, "timestamp": stamp}
    item.update(message)
    contacts = [{"profile": {"name": "Ana"}, "wa_id": user, "user_id": "US.1234567890"}]
    return _envelope({"contacts": contacts, "messages": [item]}, phone_number_id)


def text_payload(wamid: str, text: str, **kw: Any) -> dict[str, Any]:
    """A webhook carrying one text message."""
    return message_payload(wamid, {"type": "text", "text": {"body": text}}, **kw)


def button_payload(
    wamid: str, reply_id: str, title: str, *, context: str | None = None, **kw: Any
) -> dict[str, Any]:
    """A webhook carrying a tapped reply button."""
    message: dict[str, Any] = {
        "type": "interactive",
        "interactive": {"type": "button_reply", "button_reply": {"id": reply_id, "title": title}},
    }
    if context is not None:
        message["context"] = {"from": "15550001111", "id": context}
    return message_payload(wamid, message, **kw)


def status_payload(
    wamid: str, status: str, *, user: str = USER, errors: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A webhook carrying one status update."""
    item: dict[str, Any] = {
        "id": wamid,
        "status": status,
        "timestamp": "1767225600",
        "recipient_id": user,
    }
    if errors is not None:
        item["errors"] = errors
    return _envelope({"statuses": [item]})


class Harness:
    """One webhook app in-process: a fake Graph API, a virtual clock, and a client to POST."""

    def __init__(
        self,
        *,
        settings: BookingSettings | None = None,
        store: Store | None = None,
        clock: VirtualClock | None = None,
        graph: FakeGraph | None = None,
        **app_kwargs: Any,
    ) -> None:
        self.clock = clock or VirtualClock()
        self.graph = graph or FakeGraph()
        self.settings = settings or make_settings()
        self.store = store if store is not None else MemoryStore(clock=self.clock)
        self.app: Starlette = create_app(
            self.settings,
            store=self.store,
            clock=self.clock,
            http_client=self.graph.client(),
            **app_kwargs,
        )
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://agent.test"
        )

    @property
    def agent(self) -> BookingAgent:
        """The app's agent."""
        agent: BookingAgent = self.app.state.agent
        return agent

    async def post(self, payload: dict[str, Any], *, secret: str = SECRET) -> httpx.Response:
        """POST a signed webhook body."""
        body = json.dumps(payload).encode()
        return await self.client.post(
            "/webhook",
            content=body,
            headers={"Content-Type": "application/json", "X-Hub-Signature-256": sign(secret, body)},
        )

    async def run(self, seconds: float = 10.0, *, io_step: float | None = None) -> None:
        """Let ``seconds`` of virtual time pass, running everything due on the way.

        With a store the event loop can't see into (Redis), give ``io_step``:
        time then moves in steps of that many seconds, with a short real
        pause before each so replies from the server land first.
        """
        end = self.clock.now() + timedelta(seconds=seconds)
        if io_step is not None:
            while self.clock.now() < end:
                await asyncio.sleep(0.03)
                await self.clock.run_until(min(end, self.clock.now() + timedelta(seconds=io_step)))
            await asyncio.sleep(0.03)
        await self.clock.run_until(end)

    async def aclose(self, *, expect_errors: bool = False) -> None:
        """Stop the agent's tasks and close the client; background failures fail the test."""
        await self.agent.aclose()
        await self.client.aclose()
        if not expect_errors:
            assert self.agent.errors == []
