"""Where webhooks go, as a bot registers it: for the app, the account or the number."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Final

import httpx
import pytest
from pywa.client import WhatsApp
from pywa.errors import WhatsAppError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.subscriptions import SwitchTarget
from channels.whatsapp.transport import GraphRedirectSync
from channels.whatsapp.url_target import UrlTarget
from harness.clock import VirtualClock
from tests.bots.loopback import free_port

CONFIG: Final = SimulatorConfig()
APP_ID: Final = "4242424242"
APP_TOKEN: Final = f"{APP_ID}|{CONFIG.app_secret}"
AUTH: Final = {"Authorization": f"Bearer {CONFIG.access_token}"}
WA_ID: Final = "5511987654321"


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    sim = WhatsAppSimulator(CONFIG, clock=VirtualClock())
    async with sim.graph_client() as graph:
        yield graph
    await sim.aclose()


def _error(response: httpx.Response, status: int = 400, code: int = 100) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code, error
    details: str = error["error_data"]["details"]
    return details


# -- the endpoints, as Meta answers them ------------------------------------------------


async def test_the_app_token_is_given_for_the_apps_secret(client: httpx.AsyncClient) -> None:
    query = {"grant_type": "client_credentials", "client_id": APP_ID}
    for path in ("/oauth/access_token", "/v25.0/oauth/access_token"):
        answer = await client.get(path, params={**query, "client_secret": CONFIG.app_secret})
        assert answer.json() == {"access_token": APP_TOKEN, "token_type": "bearer"}
    wrong = await client.get(path, params={**query, "client_secret": "guess"})
    _error(wrong, 400, 1)
    no_grant = await client.get(path, params={"client_id": APP_ID})
    assert _error(no_grant).startswith("grant_type:")


async def test_the_app_subscribes_with_its_own_token(client: httpx.AsyncClient) -> None:
    form = {
        "object": "whatsapp_business_account",
        "callback_url": "https://bot.example.com/webhook",
        "verify_token": "mine",
        "fields": "messages",
    }
    path = f"/v25.0/{APP_ID}/subscriptions"
    ok = await client.post(path, data=form, headers={"Authorization": f"Bearer {APP_TOKEN}"})
    assert ok.json() == {"success": True}
    as_query = await client.post(path, params={**form, "access_token": APP_TOKEN})
    assert as_query.json() == {"success": True}
    in_the_form = await client.post(path, data={**form, "access_token": APP_TOKEN})
    assert in_the_form.json() == {"success": True}
    # The business's token is not the app's.
    _error(await client.post(path, data=form, headers=AUTH), 401, 190)
    other_app = await client.post(
        "/v25.0/99/subscriptions", data=form, headers={"Authorization": f"Bearer {APP_TOKEN}"}
    )
    _error(other_app, 401, 190)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"object": "page"}, "object:"),
        ({"callback_url": None}, "callback_url: required"),
        ({"verify_token": ""}, "verify_token: must be a non-empty string"),
        ({"callback_url": "ftp://bot"}, "callback_url: must be an http:// or https:// URL"),
    ],
)
async def test_a_bad_subscription_is_refused(
    client: httpx.AsyncClient, change: dict[str, Any], problem: str
) -> None:
    body = {
        "object": "whatsapp_business_account",
        "callback_url": "https://bot.example.com/webhook",
        "verify_token": "mine",
    }
    body = {k: v for k, v in {**body, **change}.items() if v is not None}
    path = f"/v25.0/{APP_ID}/subscriptions"
    response = await client.post(path, json=body, headers={"Authorization": f"Bearer {APP_TOKEN}"})
    assert _error(response).startswith(problem)


async def test_the_account_lists_its_subscribed_app(client: httpx.AsyncClient) -> None:
    path = f"/v25.0/{CONFIG.waba_id}/subscribed_apps"
    assert (await client.get(path, headers=AUTH)).json() == {"data": []}
    assert (await client.post(path, headers=AUTH)).json() == {"success": True}
    [app] = (await client.get(path, headers=AUTH)).json()["data"]
    assert "override_callback_uri" not in app
    override = {"override_callback_uri": "https://bot.example.com/wa", "verify_token": "mine"}
    assert (await client.post(path, json=override, headers=AUTH)).json() == {"success": True}
    [app] = (await client.get(path, headers=AUTH)).json()["data"]
    assert app["override_callback_uri"] == "https://bot.example.com/wa"
    assert (await client.delete(path, headers=AUTH)).json() == {"success": True}
    assert (await client.get(path, headers=AUTH)).json() == {"data": []}
    lacking = await client.post(path, json={"override_callback_uri": "https://x"}, headers=AUTH)
    assert _error(lacking) == "verify_token: required"
    assert "no object with ID '1'" in _error(
        await client.get("/v25.0/1/subscribed_apps", headers=AUTH)
    )


async def test_the_number_takes_a_url_of_its_own(client: httpx.AsyncClient) -> None:
    body = {"webhook_configuration": {"override_callback_uri": "https://x/wa", "verify_token": "t"}}
    path = f"/v25.0/{CONFIG.phone_number_id}/"  # pywa writes the trailing slash
    assert (await client.post(path, json=body, headers=AUTH)).json() == {"success": True}
    assert _error(await client.post(path, json={}, headers=AUTH)).startswith(
        "webhook_configuration: required"
    )
    media = await client.post("/v25.0/123456", json=body, headers=AUTH)
    assert "no object with ID '123456'" in _error(media)


async def test_in_a_run_a_registration_moves_nothing() -> None:
    # The harness delivers to the agent it runs; a bot's registration is answered, not followed.
    sim = WhatsAppSimulator(CONFIG, clock=VirtualClock())
    sim.connect("http://127.0.0.1:9/webhook")
    before = sim.deliverer
    async with sim.graph_client() as graph:
        form = {
            "object": "whatsapp_business_account",
            "callback_url": "https://bot.example.com/webhook",
            "verify_token": "mine",
        }
        headers = {"Authorization": f"Bearer {APP_TOKEN}"}
        answer = await graph.post(f"/v25.0/{APP_ID}/subscriptions", data=form, headers=headers)
    assert answer.json() == {"success": True}
    assert sim.deliverer is before
    assert sim.deliverer is not None
    assert sim.deliverer.target.description == "http://127.0.0.1:9/webhook"
    await sim.aclose()


# -- on a serve: pywa's own registration calls, then webhooks go where they said ----------


def _echo_bot(verify_token: str, seen: list[str], graph: httpx.AsyncClient) -> Starlette:
    """A bot that answers the verification GET for ``verify_token`` and echoes text."""

    async def verify(request: Request) -> Response:
        query = request.query_params
        if query.get("hub.verify_token") != verify_token:
            return PlainTextResponse("wrong token", status_code=403)
        return PlainTextResponse(query.get("hub.challenge", ""))

    async def receive(request: Request) -> Response:
        value = (await request.json())["entry"][0]["changes"][0]["value"]
        for message in value.get("messages", []):
            seen.append(message["text"]["body"])
            body = {
                "messaging_product": "whatsapp",
                "to": message["from"],
                "type": "text",
                "text": {"body": f"echo: {message['text']['body']}"},
            }
            path = f"/v25.0/{CONFIG.phone_number_id}/messages"
            sent = await graph.post(path, json=body, headers=AUTH)
            assert sent.status_code == 200, sent.text
        return Response(status_code=200)

    return Starlette(
        routes=[
            Route("/webhook", verify, methods=["GET"]),
            Route("/webhook", receive, methods=["POST"]),
        ]
    )


@pytest.mark.network
async def test_on_serve_webhooks_go_where_the_bot_registered_them() -> None:
    port = free_port()
    config = SimulatorConfig(public_url=f"http://127.0.0.1:{port}")
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    sim.add_user(WA_ID, "Ana")
    pacer = asyncio.get_running_loop().create_task(sim.run_paced())
    first: list[str] = []
    second: list[str] = []
    try:
        async with (
            BackgroundServer(sim.graph_app, port=port) as graph,
            httpx.AsyncClient(base_url=graph.url) as bots_graph,
            BackgroundServer(_echo_bot("one", first, bots_graph), port=free_port()) as bot1,
            BackgroundServer(_echo_bot("two", second, bots_graph), port=free_port()) as bot2,
        ):
            session = httpx.Client(transport=GraphRedirectSync(graph.url))
            wa = WhatsApp(
                phone_id=config.phone_number_id, token=config.access_token, session=session
            )

            def register_app(url: str, token: str) -> None:  # pywa's own calls, as it makes them
                app_token = wa.api.get_app_access_token(
                    client_id=int(APP_ID), client_secret=config.app_secret
                )
                wa.api.set_app_callback_url(
                    app_id=int(APP_ID),
                    access_token=app_token["access_token"],
                    callback_url=url,
                    verify_token=token,
                    fields=("messages",),
                )

            def register_phone(url: str, token: str) -> None:
                wa.api.set_phone_alternate_callback_url(
                    override_callback_uri=url, verify_token=token, phone_id=config.phone_number_id
                )

            # A URL that fails the verification GET is refused with 2200, and changes nothing.
            with pytest.raises(WhatsAppError) as refused:
                await asyncio.to_thread(register_app, f"{bot1.url}/webhook", "two")
            assert refused.value.code == 2200
            assert sim.deliverer is None

            await asyncio.to_thread(register_app, f"{bot1.url}/webhook", "one")
            await sim.say(WA_ID, "hello")
            await sim.settle_user(sim.user(WA_ID).key)
            # The number's own URL comes before the app's, whichever was registered last.
            await asyncio.to_thread(register_phone, f"{bot2.url}/webhook", "two")
            await asyncio.to_thread(register_app, f"{bot1.url}/webhook", "one")
            await sim.say(WA_ID, "again")
            await sim.settle_user(sim.user(WA_ID).key)
            await asyncio.to_thread(session.close)
    finally:
        pacer.cancel()
        await sim.aclose()
    assert (first, second) == (["hello"], ["again"])
    assert [reply.text for reply in sim.conversation().replies()] == ["echo: hello", "echo: again"]
    verifications = [event for event in sim.events if event.kind == "verification"]
    assert [v.passed for v in verifications] == [False, True, True, True]
    assert isinstance(sim.deliverer.target if sim.deliverer else None, SwitchTarget)


@pytest.mark.network
async def test_a_registration_takes_over_from_the_url_serve_was_given() -> None:
    # harness serve --webhook-url: the bot's own registration moves the webhooks, and what was
    # already on its way (the statuses of the first answer) goes to the URL registered by then.
    port = free_port()
    config = SimulatorConfig(public_url=f"http://127.0.0.1:{port}")
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    sim.add_user(WA_ID, "Ana")
    pacer = asyncio.get_running_loop().create_task(sim.run_paced())
    first: list[str] = []
    second: list[str] = []
    try:
        async with (
            BackgroundServer(sim.graph_app, port=port) as graph,
            httpx.AsyncClient(base_url=graph.url) as bots_graph,
            BackgroundServer(
                _echo_bot(config.verify_token, first, bots_graph), port=free_port()
            ) as bot1,
            BackgroundServer(_echo_bot("two", second, bots_graph), port=free_port()) as bot2,
        ):
            given = SwitchTarget(UrlTarget(f"{bot1.url}/webhook"))
            sim.connect(given)
            await sim.say(WA_ID, "hello")
            await sim.settle_user(sim.user(WA_ID).key)
            override = {"override_callback_uri": f"{bot2.url}/webhook", "verify_token": "two"}
            path = f"/v25.0/{config.waba_id}/subscribed_apps"
            registered = await bots_graph.post(path, json=override, headers=AUTH)
            assert registered.json() == {"success": True}
            await sim.say(WA_ID, "again")
            await sim.settle_user(sim.user(WA_ID).key)
    finally:
        pacer.cancel()
        await sim.aclose()
    assert (first, second) == (["hello"], ["again"])
    assert sim.deliverer is not None
    assert sim.deliverer.target is given
    assert given.description == f"{bot2.url}/webhook"
