"""The slow CRM answers what it should, records every call, and really takes its time."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from tests.bots.loopback import started_process
from tests.bots.slow_service import SlowService, serve_slow_service


def _client(service: SlowService) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=service.app), base_url="http://crm.test"
    )


async def test_a_customer_is_found_after_the_delay() -> None:
    service = SlowService(delay=0.2)
    async with _client(service) as client:
        started = time.monotonic()
        found = await client.get("/customers/c-100")
        waited = time.monotonic() - started
        missing = await client.get("/customers/c-999")
    assert waited >= 0.2
    assert found.json() == {
        "id": "c-100",
        "name": "Ana Souza",
        "phone": "5511987654321",
        "tier": "gold",
    }
    assert missing.status_code == 404
    assert [(call.method, call.path, call.body) for call in service.calls] == [
        ("GET", "/customers/c-100", None),
        ("GET", "/customers/c-999", None),
    ]


async def test_a_booking_is_made_and_recorded() -> None:
    service = SlowService(delay=0.05)
    async with _client(service) as client:
        booked = await client.post("/bookings", json={"customer_id": "c-200", "slot": "fri 20:00"})
        unknown = await client.post("/bookings", json={"customer_id": "c-9", "slot": "fri 20:00"})
        incomplete = await client.post("/bookings", json={"customer_id": "c-200"})
        not_json = await client.post("/bookings", content=b"slot=fri")
    assert booked.status_code == 201
    booking = {"id": "bk-0001", "customer_id": "c-200", "slot": "fri 20:00", "status": "confirmed"}
    assert booked.json() == booking
    assert service.bookings == [booking]
    assert (unknown.status_code, incomplete.status_code, not_json.status_code) == (404, 400, 400)
    assert [call.body for call in service.calls] == [
        {"customer_id": "c-200", "slot": "fri 20:00"},
        {"customer_id": "c-9", "slot": "fri 20:00"},
        {"customer_id": "c-200"},
        "slot=fri",
    ]


@pytest.mark.network
async def test_calls_in_parallel_wait_side_by_side_not_in_a_queue() -> None:
    async with serve_slow_service(delay=0.3) as (url, service), httpx.AsyncClient() as client:
        started = time.monotonic()
        answers = await asyncio.gather(*(client.get(f"{url}/customers/c-100") for _ in range(3)))
        waited = time.monotonic() - started
        recorded = (await client.get(f"{url}/_fake/requests")).json()["requests"]
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert 0.3 <= waited < 0.9
    assert len(service.calls) == 3
    assert [call["path"] for call in recorded] == ["/customers/c-100"] * 3


@pytest.mark.network
async def test_the_service_runs_as_a_process() -> None:
    service = started_process(
        "tests.bots.slow_service", "--delay", "0.2", ready_path="/_fake/requests"
    )
    async with service as (url, _), httpx.AsyncClient() as client:
        started = time.monotonic()
        found = await client.get(f"{url}/customers/c-200")
        waited = time.monotonic() - started
        recorded = (await client.get(f"{url}/_fake/requests")).json()["requests"]
    assert found.json()["name"] == "Ben Okafor"
    assert waited >= 0.2
    assert [call["path"] for call in recorded] == ["/customers/c-200"]
