"""A slow HTTP service an agent's tools call: a tiny CRM that takes real time to answer.

``GET /customers/{id}`` answers a customer record (404 for an unknown id) and
``POST /bookings`` with ``{"customer_id": ..., "slot": ...}`` books (201), each
after a real delay (default 0.3 s), the way a remote service keeps an agent
waiting. Every call is recorded: ``service.calls`` in-process,
``GET /_fake/requests`` over HTTP (not delayed, not recorded).

In-process: ``async with serve_slow_service(delay=0.5) as (url, service)``.
As a process: ``python -m tests.bots.slow_service --port 8020 --delay 0.3``.
Nothing here imports the harness.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.bots.loopback import serve_in_process

__all__ = ["CUSTOMERS", "Call", "SlowService", "main", "serve_slow_service"]

CUSTOMERS: Mapping[str, Mapping[str, str]] = {
    "c-100": {"id": "c-100", "name": "Ana Souza", "phone": "5511987654321", "tier": "gold"},
    "c-200": {"id": "c-200", "name": "Ben Okafor", "phone": "447700900123", "tier": "basic"},
}


@dataclass(frozen=True)
class Call:
    """One call as received: method, path, JSON body (None for none), when it came."""

    method: str
    path: str
    body: Any
    received_at: float  # time.monotonic() of the serving process


class SlowService:
    """The service; :attr:`app` is the Starlette app, :attr:`calls` what it got."""

    def __init__(self, *, delay: float = 0.3) -> None:
        self.delay = delay
        self.calls: list[Call] = []
        self.bookings: list[dict[str, Any]] = []
        self.app = Starlette(
            routes=[
                Route("/customers/{customer_id}", self._customer),
                Route("/bookings", self._book, methods=["POST"]),
                Route("/_fake/requests", self._recorded),
            ]
        )

    async def _received(self, request: Request) -> Any:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        self.calls.append(Call(request.method, request.url.path, body, time.monotonic()))
        await asyncio.sleep(self.delay)
        return body

    async def _customer(self, request: Request) -> Response:
        await self._received(request)
        customer = CUSTOMERS.get(request.path_params["customer_id"])
        if customer is None:
            return JSONResponse({"error": "no such customer"}, status_code=404)
        return JSONResponse(dict(customer))

    async def _book(self, request: Request) -> Response:
        body = await self._received(request)
        if not isinstance(body, dict) or not {"customer_id", "slot"} <= body.keys():
            return JSONResponse({"error": "customer_id and slot are required"}, status_code=400)
        if body["customer_id"] not in CUSTOMERS:
            return JSONResponse({"error": "no such customer"}, status_code=404)
        booking = {
            "id": f"bk-{len(self.bookings) + 1:04d}",
            "customer_id": body["customer_id"],
            "slot": body["slot"],
            "status": "confirmed",
        }
        self.bookings.append(booking)
        return JSONResponse(booking, status_code=201)

    async def _recorded(self, request: Request) -> Response:
        return JSONResponse({"requests": [asdict(call) for call in self.calls]})


@asynccontextmanager
async def serve_slow_service(
    *, delay: float = 0.3, port: int = 0
) -> AsyncIterator[tuple[str, SlowService]]:
    """Serve a :class:`SlowService` on loopback; yields its base URL and the service."""
    service = SlowService(delay=delay)
    async with serve_in_process(service.app, port=port) as url:
        yield url, service


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the service on 127.0.0.1."""
    parser = argparse.ArgumentParser(description="A slow CRM service.")
    parser.add_argument("--port", type=int, default=8020)
    parser.add_argument("--delay", type=float, default=0.3)
    args = parser.parse_args(argv)
    service = SlowService(delay=args.delay)
    uvicorn.run(service.app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
