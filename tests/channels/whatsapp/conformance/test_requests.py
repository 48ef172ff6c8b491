"""Every request example of Meta's that Meta would take, the fake Graph API takes over HTTP.

Meta's examples assume a business that has what they name: the template,
in that language, with those parameters; the media id; a payment
configuration for order messages. Each example is sent to a fresh fake
Graph API set up that way, with placeholders filled in as
``sends/test_meta_examples`` fills them. The examples listed in ``defects``
are refused, each with the code and path listed there; the media upload
examples, written in curl's form notation, are sent as the multipart forms
they stand for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import httpx
import pytest
from starlette.applications import Starlette

from channels.whatsapp.channel import MEDIA_SAMPLES
from channels.whatsapp.graph import AcceptAll, create_graph_app
from channels.whatsapp.media import MediaStore
from channels.whatsapp.templates import TemplateRegistry, TemplateSpec
from harness.clock import VirtualClock
from tests.channels.whatsapp.conformance import spec
from tests.channels.whatsapp.conformance.defects import DEFECTS, defect
from tests.channels.whatsapp.sends.test_meta_examples import filled, meta_examples

PHONE: Final = "100200300400500"
TOKEN: Final = "EAAG-test-token"
AUTH: Final = {"Authorization": f"Bearer {TOKEN}"}
_OK: Final = "responses/200/content/application~1json/schema"
SEND_ANSWER: Final = f"/paths/~1{{Version}}~1{{Phone-Number-ID}}~1messages/post/{_OK}"
READ_ANSWER: Final = "/components/schemas/MarkMessageResponsePayload"
UPLOAD: Final = "/paths/~1{Version}~1{Phone-Number-ID}~1media/post"
MEDIA: Final = "/paths/~1{Version}~1{Media-ID}"

REFUSED: Final = {
    name: entry.refused_as
    for entry in DEFECTS
    if entry.refused_as is not None
    for name in entry.examples
}
"""Meta's request examples the fake Graph API refuses, with the code and path it answers."""

UPLOADS: Final = defect("upload-examples-are-curl-notation").examples
# What curl's ``type=`` stands for in Meta's upload examples, as a MIME type.
_CURL_TYPES: Final = {"ogg": "audio/ogg", "image/jpeg": "image/jpeg", "webp": "image/webp"}


def _counts(template: Mapping[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for component in template.get("components", []):
        kind = component["type"]
        counts[kind] = counts.get(kind, 0) + len(component.get("parameters", []))
    return counts


def business_for(body: Mapping[str, Any]) -> tuple[Starlette, MediaStore]:
    """A fake Graph API for a business that has what ``body`` names."""
    clock = VirtualClock()
    media = MediaStore(clock)
    templates = TemplateRegistry.default()
    template = body.get("template")
    if body.get("type") == "template" and isinstance(template, Mapping):
        counts = _counts(template)
        templates.add(
            TemplateSpec(
                template["name"],
                template["language"]["code"],
                body_params=counts.get("body", 0),
                header_params=counts.get("header", 0),
            )
        )
    app = create_graph_app(
        access_tokens={TOKEN},
        phone_numbers={PHONE: "15550001111"},
        on_send=AcceptAll(),
        media=media,
        clock=clock,
        templates=templates,
        payments=True,
    )
    return app, media


def with_stored_media(body: dict[str, Any], media: MediaStore) -> dict[str, Any]:
    """``body`` with its media id placeholder replaced by the id of a stored sample."""
    kind = body.get("type")
    content = body.get(kind) if isinstance(kind, str) else None
    if kind in MEDIA_SAMPLES and isinstance(content, dict) and "id" in content:
        data, mime_type = MEDIA_SAMPLES[kind]
        body = {**body, kind: {**content, "id": media.add(data, mime_type)}}
    return body


async def post(app: Starlette, path: str, **kwargs: Any) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://graph.local") as client:
        return await client.request(kwargs.pop("method", "POST"), path, headers=AUTH, **kwargs)


def fits(pointer: str, answer: Any) -> list[str]:
    return spec.problems(spec.corrected_validator(pointer), answer)


def taken_examples() -> list[str]:
    return sorted(set(meta_examples()) - set(REFUSED))


@pytest.mark.parametrize("name", taken_examples())
async def test_every_request_example_meta_would_take_is_taken_over_http(name: str) -> None:
    body = filled(meta_examples()[name])
    app, media = business_for(body)
    response = await post(app, f"/v23.0/{PHONE}/messages", json=with_stored_media(body, media))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert fits(READ_ANSWER if "status" in body else SEND_ANSWER, answer) == []


@pytest.mark.parametrize("name", sorted(REFUSED))
async def test_the_request_examples_listed_as_defects_are_refused_over_http(name: str) -> None:
    body = filled(meta_examples()[name])
    app, media = business_for(body)
    response = await post(app, f"/v23.0/{PHONE}/messages", json=with_stored_media(body, media))
    error = response.json()["error"]
    assert (error["code"], error["error_data"]["details"].split(":")[0]) == REFUSED[name]
    assert fits("/components/schemas/GraphAPIError", response.json()) == []


def test_every_request_example_is_taken_or_listed() -> None:
    assert len(taken_examples()) + len(REFUSED) == len(meta_examples()) == 50
    assert len(taken_examples()) == 48


def _upload_examples() -> dict[str, Any]:
    operation = spec.as_written()["paths"]["/{Version}/{Phone-Number-ID}/media"]["post"]
    examples = operation["requestBody"]["content"]["application/json"]["examples"]
    return {name: example["value"] for name, example in examples.items()}


def test_the_upload_examples_are_all_in_curls_notation() -> None:
    examples = _upload_examples()
    assert sorted(examples) == sorted(UPLOADS)
    assert all(value["file"].startswith("@/") for value in examples.values())


@pytest.mark.parametrize("name", UPLOADS)
async def test_metas_upload_examples_are_taken_as_the_forms_they_stand_for(name: str) -> None:
    example = _upload_examples()[name]
    path, _, curl_type = example["file"][1:].partition(";type=")
    mime_type = _CURL_TYPES[curl_type]
    kind = {"audio": "audio", "image": "sticker" if curl_type == "webp" else "image"}
    data = MEDIA_SAMPLES[kind[mime_type.split("/")[0]]][0]
    app, _media = business_for({})
    # As written: the product as a field, the type on the file's part (curl's ;type=).
    form = {"messaging_product": example["messaging_product"]}
    files = {"file": (path.rsplit("/", 1)[-1], data, mime_type)}
    uploaded = await post(app, f"/v23.0/{PHONE}/media", data=form, files=files)
    assert uploaded.status_code == 200, uploaded.text
    assert fits(f"{UPLOAD}/{_OK}", uploaded.json()) == []
    media_id = uploaded.json()["id"]
    owner = {"phone_number_id": PHONE}
    for method in ("GET", "DELETE"):
        answer = await post(app, f"/v23.0/{media_id}", method=method, params=owner)
        assert answer.status_code == 200, answer.text
        assert fits(f"{MEDIA}/{method.lower()}/{_OK}", answer.json()) == [], json.dumps(
            answer.json()
        )
