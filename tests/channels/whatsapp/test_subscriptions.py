"""Where webhooks go, as a bot registers it: for the app, the account or the number."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
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
from tests.channels.whatsapp.conformance import spec
from tests.support.graph_clients import simulator_graph
from tests.support.graph_errors import graph_error, no_such_object

CONFIG: Final = SimulatorConfig()
APP_ID: Final = "4242424242"
APP_TOKEN: Final = f"{APP_ID}|{CONFIG.app_secret}"
AUTH: Final = {"Authorization": f"Bearer {CONFIG.access_token}"}
WA_ID: Final = "5511987654321"
#: The app as the account lists it: Meta's example of getAllSubscriptionsForAWaba gives these.
LISTED_APP: Final = {
    "id": CONFIG.app_id,
    "name": "WhatsApp bot",
    "link": f"https://www.facebook.com/games/?app_id={CONFIG.app_id}",
}


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with simulator_graph(CONFIG) as graph:
        yield graph


# -- the endpoints, as Meta answers them ------------------------------------------------


async def test_the_app_token_is_given_for_the_apps_secret(client: httpx.AsyncClient) -> None:
    query = {"grant_type": "client_credentials", "client_id": APP_ID}
    for path in ("/oauth/access_token", "/v25.0/oauth/access_token"):
        answer = await client.get(path, params={**query, "client_secret": CONFIG.app_secret})
        assert answer.json() == {"access_token": APP_TOKEN, "token_type": "bearer"}
    wrong = await client.get(path, params={**query, "client_secret": "guess"})
    graph_error(wrong, 400, 1)
    no_grant = await client.get(path, params={"client_id": APP_ID})
    assert graph_error(no_grant).startswith("grant_type:")


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
    graph_error(await client.post(path, data=form, headers=AUTH), 401, 190)
    other_app = await client.post(
        "/v25.0/99/subscriptions", data=form, headers={"Authorization": f"Bearer {APP_TOKEN}"}
    )
    graph_error(other_app, 401, 190)


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
    assert graph_error(response).startswith(problem)


async def test_the_account_lists_its_subscribed_app(client: httpx.AsyncClient) -> None:
    path = f"/v25.0/{CONFIG.waba_id}/subscribed_apps"
    assert (await client.get(path, headers=AUTH)).json() == {"data": []}
    assert (await client.post(path, headers=AUTH)).json() == {"success": True}
    [app] = (await client.get(path, headers=AUTH)).json()["data"]
    assert app == {"whatsapp_business_api_data": LISTED_APP}
    override = {"override_callback_uri": "https://bot.example.com/wa", "verify_token": "mine"}
    assert (await client.post(path, json=override, headers=AUTH)).json() == {"success": True}
    [app] = (await client.get(path, headers=AUTH)).json()["data"]
    assert app["override_callback_uri"] == "https://bot.example.com/wa"
    assert (await client.delete(path, headers=AUTH)).json() == {"success": True}
    assert (await client.get(path, headers=AUTH)).json() == {"data": []}
    lacking = await client.post(path, json={"override_callback_uri": "https://x"}, headers=AUTH)
    assert graph_error(lacking) == "verify_token: required"
    no_such_object(await client.get("/v25.0/1/subscribed_apps", headers=AUTH), "1")


def test_the_listed_app_has_what_metas_example_gives() -> None:
    operation = spec.as_written()["paths"]["/{Version}/{WABA-ID}/subscribed_apps"]["get"]
    examples = operation["responses"]["200"]["content"]["application/json"]["examples"]
    [example, *_] = examples["multiple_subscriptions"]["value"]["data"]
    listed = example["whatsapp_business_api_data"]
    assert set(listed) == set(LISTED_APP)
    assert listed["link"] == f"https://www.facebook.com/games/?app_id={listed['id']}"


@pytest.mark.parametrize("target", ["switch", "url"])
async def test_an_app_that_receives_the_webhooks_at_a_url_is_subscribed(target: str) -> None:
    # harness serve --webhook-url (a SwitchTarget), or a run against a URL: on Meta, an app
    # receives the account's webhooks only if it is subscribed to the account.
    sim = WhatsAppSimulator(CONFIG, clock=VirtualClock())
    url = "http://127.0.0.1:9/webhook"
    sim.connect(SwitchTarget(UrlTarget(url)) if target == "switch" else url)
    path = f"/v25.0/{CONFIG.waba_id}/subscribed_apps"
    async with sim.graph_client() as graph:
        listed = (await graph.get(path, headers=AUTH)).json()
        assert listed == {"data": [{"whatsapp_business_api_data": LISTED_APP}]}
        assert (await graph.delete(path, headers=AUTH)).json() == {"success": True}
        assert (await graph.get(path, headers=AUTH)).json() == {"data": []}
        assert (await graph.post(path, headers=AUTH)).json() == {"success": True}
        assert (await graph.get(path, headers=AUTH)).json() == listed
    await sim.aclose()


async def test_the_number_takes_a_url_of_its_own(client: httpx.AsyncClient) -> None:
    body = {"webhook_configuration": {"override_callback_uri": "https://x/wa", "verify_token": "t"}}
    path = f"/v25.0/{CONFIG.phone_number_id}/"  # pywa writes the trailing slash
    assert (await client.post(path, json=body, headers=AUTH)).json() == {"success": True}
    assert graph_error(await client.post(path, json={}, headers=AUTH)).startswith(
        "nothing to change: give at least one of pin,"
    )
    lacking = {"webhook_configuration": {"override_callback_uri": "https://x/wa"}}
    assert graph_error(await client.post(path, json=lacking, headers=AUTH)) == (
        "webhook_configuration.verify_token: required"
    )
    no_such_object(await client.post("/v25.0/123456", json=body, headers=AUTH), "123456", "post")


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


@dataclass
class Served:
    """A simulator on real time, its Graph API at a URL, and two echo bots."""

    sim: WhatsAppSimulator
    graph: str
    bots_graph: httpx.AsyncClient
    urls: tuple[str, str]
    seen: tuple[list[str], list[str]]

    async def say(self, text: str) -> None:
        """The user writes ``text``; back once the conversation is quiet."""
        await self.sim.say(WA_ID, text)
        await self.sim.settle_user(self.sim.user(WA_ID).key)


@asynccontextmanager
async def _served(*tokens: str) -> AsyncIterator[Served]:
    """As under ``harness serve``: time follows real time; bots verify with ``tokens``."""
    port = free_port()
    config = SimulatorConfig(public_url=f"http://127.0.0.1:{port}")
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    sim.add_user(WA_ID, "Ana")
    pacer = asyncio.get_running_loop().create_task(sim.run_paced())
    seen: tuple[list[str], list[str]] = ([], [])
    try:
        async with (
            BackgroundServer(sim.graph_app, port=port) as graph,
            httpx.AsyncClient(base_url=graph.url) as bots,
            BackgroundServer(_echo_bot(tokens[0], seen[0], bots), port=free_port()) as one,
            BackgroundServer(_echo_bot(tokens[1], seen[1], bots), port=free_port()) as two,
        ):
            yield Served(sim, graph.url, bots, (f"{one.url}/webhook", f"{two.url}/webhook"), seen)
    finally:
        pacer.cancel()
        await sim.aclose()


@pytest.mark.network
async def test_on_serve_webhooks_go_where_the_bot_registered_them() -> None:
    async with _served("one", "two") as served:
        sim, (url1, url2) = served.sim, served.urls
        session = httpx.Client(transport=GraphRedirectSync(served.graph))
        wa = WhatsApp(phone_id=CONFIG.phone_number_id, token=CONFIG.access_token, session=session)

        def register_app(url: str, token: str) -> None:  # pywa's own calls, as it makes them
            app_token = wa.api.get_app_access_token(
                client_id=int(APP_ID), client_secret=CONFIG.app_secret
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
                override_callback_uri=url, verify_token=token, phone_id=CONFIG.phone_number_id
            )

        # A URL that fails the verification GET is refused with 2200, and changes nothing.
        with pytest.raises(WhatsAppError) as refused:
            await asyncio.to_thread(register_app, url1, "two")
        assert refused.value.code == 2200
        assert sim.deliverer is None

        await asyncio.to_thread(register_app, url1, "one")
        await served.say("hello")
        # The number's own URL comes before the app's, whichever was registered last.
        await asyncio.to_thread(register_phone, url2, "two")
        await asyncio.to_thread(register_app, url1, "one")
        await served.say("again")
        await asyncio.to_thread(session.close)
    assert served.seen == (["hello"], ["again"])
    assert [reply.text for reply in sim.conversation().replies()] == ["echo: hello", "echo: again"]
    verifications = [event for event in sim.events if event.kind == "verification"]
    assert [v.passed for v in verifications] == [False, True, True, True]
    assert isinstance(sim.deliverer.target if sim.deliverer else None, SwitchTarget)


@pytest.mark.network
async def test_a_registration_takes_over_from_the_url_serve_was_given() -> None:
    # harness serve --webhook-url: the bot's own registration moves the webhooks, and what was
    # already on its way (the statuses of the first answer) goes to the URL registered by then.
    async with _served(CONFIG.verify_token, "two") as served:
        given = SwitchTarget(UrlTarget(served.urls[0]))
        served.sim.connect(given)
        await served.say("hello")
        override = {"override_callback_uri": served.urls[1], "verify_token": "two"}
        path = f"/v25.0/{CONFIG.waba_id}/subscribed_apps"
        registered = await served.bots_graph.post(path, json=override, headers=AUTH)
        assert registered.json() == {"success": True}
        await served.say("again")
    assert served.seen == (["hello"], ["again"])
    assert served.sim.deliverer is not None
    assert served.sim.deliverer.target is given
    assert given.description == served.urls[1]
    # The given URL verified before its first delivery, the registered one when registered.
    verifications = [e for e in served.sim.events if e.kind == "verification"]
    assert [v.passed for v in verifications] == [True, True]


@pytest.mark.network
async def test_a_url_registered_before_the_first_delivery_is_verified_once() -> None:
    async with _served(CONFIG.verify_token, "two") as served:
        served.sim.connect(SwitchTarget(UrlTarget(served.urls[0])))
        override = {"override_callback_uri": served.urls[1], "verify_token": "two"}
        path = f"/v25.0/{CONFIG.waba_id}/subscribed_apps"
        registered = await served.bots_graph.post(path, json=override, headers=AUTH)
        assert registered.json() == {"success": True}
        await served.say("hello")
    assert served.seen == ([], ["hello"])
    # Meta verifies a URL when it is registered, not again before it delivers.
    verifications = [e for e in served.sim.events if e.kind == "verification"]
    assert [v.passed for v in verifications] == [True]
