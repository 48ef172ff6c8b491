"""Media: the store's rules and lifetimes, and upload -> metadata -> download over HTTP."""

from __future__ import annotations

import base64
import hashlib
import random
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from channels.whatsapp.errors import GraphAPIError
from channels.whatsapp.graph import AcceptAll, create_graph_app
from channels.whatsapp.media import (
    MediaStore,
    is_animated_webp,
    media_kind,
    size_limit,
)
from harness.clock import VirtualClock
from tests.support.graph_errors import no_such_object

PHONE = "100200300400500"
OTHER_PHONE = "100200300400999"
TOKEN = "EAAG-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
KIB = 1024
MIB = 1024 * KIB


def webp(size: int, *, animated: bool) -> bytes:
    """A WebP-looking file of ``size`` bytes, with the extended header's animation flag."""
    flags = b"\x02" if animated else b"\x00"
    head = b"RIFF" + (size - 8).to_bytes(4, "little") + b"WEBPVP8X" + b"\x0a\x00\x00\x00" + flags
    return head + bytes(size - len(head))


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def store(clock: VirtualClock) -> MediaStore:
    return MediaStore(clock, "http://graph.local/")


@pytest.fixture
async def client(clock: VirtualClock, store: MediaStore) -> AsyncIterator[httpx.AsyncClient]:
    app = create_graph_app(
        access_tokens={TOKEN},
        phone_numbers={PHONE: "15550001111", OTHER_PHONE: "15550009999"},
        on_send=AcceptAll(),
        media=store,
        clock=clock,
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://graph.local") as http:
        yield http


async def upload(
    client: httpx.AsyncClient,
    data: bytes,
    mime_type: str | None = "image/png",
    *,
    phone: str = PHONE,
    product: str | None = "whatsapp",
    file_field: str = "file",
) -> httpx.Response:
    fields: dict[str, str] = {}
    if product is not None:
        fields["messaging_product"] = product
    if mime_type is not None:
        fields["type"] = mime_type
    files = {file_field: ("upload.bin", data, mime_type or "application/octet-stream")}
    return await client.post(f"/v25.0/{phone}/media", data=fields, files=files, headers=AUTH)


def error_of(response: httpx.Response, status: int, code: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code
    assert error["type"] == "OAuthException"
    if code not in (0, 190):  # Graph's own errors about the token carry no error_data
        assert error["error_data"]["messaging_product"] == "whatsapp"
    assert isinstance(error["fbtrace_id"], str)
    return error


# -- the store -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mime_type", "kind"),
    [
        ("image/jpeg", "image"),
        ("image/png", "image"),
        ("IMAGE/PNG", "image"),
        ("image/webp", "sticker"),
        ("audio/ogg; codecs=opus", "audio"),
        ("audio/mpeg", "audio"),
        ("video/mp4", "video"),
        ("application/pdf", "document"),
        ("text/plain", "document"),
        ("image/gif", None),
        ("application/x-sh", None),
        ("", None),
    ],
)
def test_media_kind(mime_type: str, kind: str | None) -> None:
    assert media_kind(mime_type) == kind


def test_size_limits() -> None:
    assert size_limit("image") == 5 * MIB
    assert size_limit("audio") == size_limit("video") == 16 * MIB
    assert size_limit("document") == 100 * MIB
    assert size_limit("sticker", webp(1000, animated=False)) == 100 * KIB
    assert size_limit("sticker", webp(1000, animated=True)) == 500 * KIB


def test_animated_webp_detection() -> None:
    assert is_animated_webp(webp(100, animated=True))
    assert not is_animated_webp(webp(100, animated=False))
    assert not is_animated_webp(PNG)
    assert not is_animated_webp(b"")


def test_added_media_has_meta_digests(store: MediaStore) -> None:
    media_id = store.add(PNG, "image/png")
    media = store.get(media_id)
    assert media is not None
    assert media_id.isdigit()
    assert media.sha256 == hashlib.sha256(PNG).hexdigest()
    assert media.sha256_base64 == base64.b64encode(hashlib.sha256(PNG).digest()).decode()
    assert media.file_size == len(PNG)


def test_lifetimes(clock: VirtualClock, store: MediaStore) -> None:
    inbound = store.add(PNG, "image/png")
    uploaded = store.upload(PNG, "image/png")
    clock.advance(timedelta(days=7) - timedelta(seconds=1))
    assert store.exists(inbound)
    clock.advance(1)
    assert not store.exists(inbound)
    assert store.exists(uploaded)
    clock.advance(timedelta(days=23))
    assert not store.exists(uploaded)


def test_ids_are_reproducible(clock: VirtualClock) -> None:
    def ids() -> list[str]:
        store = MediaStore(clock, rng=random.Random(7))
        return [store.add(PNG, "image/png") for _ in range(3)]

    assert ids() == ids()
    assert len(set(ids())) == 3


def test_download_url_expires_after_5_minutes(clock: VirtualClock, store: MediaStore) -> None:
    media_id = store.add(PNG, "image/png")
    token = store.issue_url(media_id).rsplit("/", 1)[1]
    clock.advance(299)
    assert store.download(token) is not None
    clock.advance(1)
    assert store.download(token) is None


@pytest.mark.parametrize(
    ("data", "mime_type", "code"),
    [
        (bytes(5 * MIB + 1), "image/jpeg", 131053),
        (bytes(16 * MIB + 1), "video/mp4", 131053),
        (webp(100 * KIB + 1, animated=False), "image/webp", 131053),
        (webp(500 * KIB + 1, animated=True), "image/webp", 131053),
        (b"", "image/png", 131053),
        (PNG, "image/gif", 100),
    ],
)
def test_upload_refusals(store: MediaStore, data: bytes, mime_type: str, code: int) -> None:
    with pytest.raises(GraphAPIError) as info:
        store.upload(data, mime_type)
    assert info.value.code == code


def test_upload_limits_at_the_edge(store: MediaStore) -> None:
    store.upload(bytes(5 * MIB), "image/jpeg")
    store.upload(webp(100 * KIB, animated=False), "image/webp")
    store.upload(webp(500 * KIB, animated=True), "image/webp")


# -- over HTTP ---------------------------------------------------------------------


async def test_upload_metadata_download(client: httpx.AsyncClient, clock: VirtualClock) -> None:
    response = await upload(client, PNG)
    assert response.status_code == 200, response.text
    media_id = response.json()["id"]
    assert response.json() == {"id": media_id}
    assert media_id.isdigit()

    info = (await client.get(f"/v25.0/{media_id}", headers=AUTH)).json()
    url = info.pop("url")
    assert info == {
        "messaging_product": "whatsapp",
        "mime_type": "image/png",
        "sha256": hashlib.sha256(PNG).hexdigest(),
        "file_size": str(len(PNG)),  # a string of digits, as Meta writes it
        "id": media_id,
    }
    assert url.startswith("http://graph.local/_media/")

    download = await client.get(url, headers=AUTH)
    assert download.status_code == 200
    assert download.content == PNG
    assert download.headers["content-type"] == "image/png"

    error_of(await client.get(url), 401, 190)
    clock.advance(300)
    error_of(await client.get(url, headers=AUTH), 404, 100)

    fresh = (await client.get(f"/v25.0/{media_id}", headers=AUTH)).json()["url"]
    assert fresh != url
    assert (await client.get(fresh, params={"access_token": TOKEN})).content == PNG


async def test_send_uploaded_media_by_id(client: httpx.AsyncClient) -> None:
    media_id = (await upload(client, PNG)).json()["id"]
    body = {
        "messaging_product": "whatsapp",
        "to": "5511987654321",
        "type": "image",
        "image": {"id": media_id, "caption": "Menu"},
    }
    sent = await client.post(f"/v25.0/{PHONE}/messages", json=body, headers=AUTH)
    assert sent.status_code == 200
    deleted = await client.delete(f"/v25.0/{media_id}", headers=AUTH)
    assert deleted.json() == {"success": True}
    again = await client.post(f"/v25.0/{PHONE}/messages", json=body, headers=AUTH)
    assert "image.id" in error_of(again, 400, 131009)["error_data"]["details"]


async def test_unknown_or_deleted_media(client: httpx.AsyncClient) -> None:
    no_such_object(await client.get("/v25.0/123456", headers=AUTH), "123456")
    no_such_object(await client.delete("/v25.0/123456", headers=AUTH), "123456", "delete")


async def test_media_expires_after_30_days(client: httpx.AsyncClient, clock: VirtualClock) -> None:
    media_id = (await upload(client, PNG)).json()["id"]
    clock.advance(timedelta(days=30))
    no_such_object(await client.get(f"/v25.0/{media_id}", headers=AUTH), media_id)


async def test_media_of_another_number(client: httpx.AsyncClient) -> None:
    media_id = (await upload(client, PNG)).json()["id"]
    mine = await client.get(f"/v25.0/{media_id}", params={"phone_number_id": PHONE}, headers=AUTH)
    assert mine.status_code == 200
    theirs = {"phone_number_id": OTHER_PHONE}
    no_such_object(await client.get(f"/v25.0/{media_id}", params=theirs, headers=AUTH), media_id)


async def test_media_endpoints_need_a_token(client: httpx.AsyncClient) -> None:
    media_id = (await upload(client, PNG)).json()["id"]
    error_of(await client.get(f"/v25.0/{media_id}"), 401, 190)
    error_of(await client.delete(f"/v25.0/{media_id}"), 401, 190)
    unauthorized = await client.post(
        f"/v25.0/{PHONE}/media",
        data={"messaging_product": "whatsapp", "type": "image/png"},
        files={"file": ("a.png", PNG, "image/png")},
    )
    error_of(unauthorized, 401, 190)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"mime_type": None}, "file"),  # nor does its part name one: octet-stream
        ({"product": None}, "messaging_product"),
        ({"product": "instagram"}, "messaging_product"),
        ({"file_field": "upload"}, "file"),
    ],
)
async def test_upload_form_problems_answer_100(
    client: httpx.AsyncClient, kwargs: dict[str, Any], field: str
) -> None:
    error = error_of(await upload(client, PNG, **kwargs), 400, 100)
    assert error["error_data"]["details"].startswith(f"{field}:")


async def test_an_upload_takes_its_type_from_the_file_part_and_its_product_from_the_query(
    client: httpx.AsyncClient,
) -> None:
    # As Meta describes the endpoint, and as whatsapp-api-js uploads: no type field, and
    # messaging_product in the query string.
    response = await client.post(
        f"/v25.0/{PHONE}/media",
        params={"messaging_product": "whatsapp"},
        files={"file": ("menu.png", PNG, "image/png")},
        headers=AUTH,
    )
    assert response.status_code == 200, response.text
    info = await client.get(f"/v25.0/{response.json()['id']}", headers=AUTH)
    assert info.json()["mime_type"] == "image/png"


async def test_an_uploads_type_field_names_the_type_its_part_does_not(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        f"/v25.0/{PHONE}/media",
        data={"messaging_product": "whatsapp", "type": "image/png"},
        files={"file": ("menu.bin", PNG, "application/octet-stream")},
        headers=AUTH,
    )
    assert response.status_code == 200, response.text
    info = await client.get(f"/v25.0/{response.json()['id']}", headers=AUTH)
    assert info.json()["mime_type"] == "image/png"


@pytest.mark.parametrize(
    ("form", "part_type", "field"),
    [
        ({"type": ""}, "image/png", "type"),  # a type field says nothing
        ({}, None, "file"),  # a part with no Content-Type (nor a name to guess one by)
        ({"messaging_product": "instagram"}, "image/png", "messaging_product"),  # the body wins
    ],
)
async def test_an_upload_that_names_no_type_or_the_wrong_product_answers_100(
    client: httpx.AsyncClient, form: dict[str, str], part_type: str | None, field: str
) -> None:
    part = ("menu", PNG) if part_type is None else ("menu.png", PNG, part_type)
    response = await client.post(
        f"/v25.0/{PHONE}/media",
        params={"messaging_product": "whatsapp"},
        data=form,
        files={"file": part},
        headers=AUTH,
    )
    error = error_of(response, 400, 100)
    assert error["error_data"]["details"].startswith(f"{field}:"), error


async def test_upload_refusals_over_http(client: httpx.AsyncClient) -> None:
    error_of(await upload(client, bytes(5 * MIB + 1), "image/jpeg"), 400, 131053)
    error_of(await upload(client, PNG, "image/gif"), 400, 100)
    no_such_object(await upload(client, PNG, phone="999"), "999", "post")


@pytest.mark.parametrize(
    ("content_type", "content"),
    [
        ("application/json", b'{"messaging_product": "whatsapp"}'),
        ("multipart/form-data", b"--x\r\n"),
        ("multipart/form-data; boundary=x", b"garbage"),
        ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition: form-data\r\n\r\n"),
    ],
)
async def test_broken_uploads_answer_100(
    client: httpx.AsyncClient, content_type: str, content: bytes
) -> None:
    response = await client.post(
        f"/v25.0/{PHONE}/media", content=content, headers={**AUTH, "Content-Type": content_type}
    )
    error_of(response, 400, 100)
