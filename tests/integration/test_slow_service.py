"""An in-process agent that calls a slow service: virtual time waits for the answer.

The agent (written for this test as a user would write one) looks the customer
up in a CRM that takes 0.3 s of real time, in another process, before it
answers. With its client on :class:`harness.inflight.BusyTransport`, or a
plain ``httpx.AsyncClient`` or an aiohttp session (whose requests hold the
run's clock during a run), the virtual clock stays where it is while the
request is out, so the reply comes at the instant the message arrived. A
client the harness can't see (a socket of the agent's own, here) and was not
told about leaves the run to move on without the answer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from harness.channel import AgentEnvironment
from harness.inflight import BusyTransport
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from tests.bots.loopback import started_process

HERE = "tests.integration.test_slow_service"
CRM: dict[str, str] = {}

SCENARIO = parse_scenario(
    """
name: the agent looks the customer up first
users: [{name: Ana, wa_id: "5511987654321"}]
steps:
  - say: hello
  - expect: {reply_contains: Ana Souza}
"""
)


class _AiohttpCRM:
    """The CRM through an aiohttp session, answering as httpx's client does (``.json()``)."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    async def get(self, url: str) -> Any:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        async with self._session.get(url) as response:
            return _Answer(await response.json())

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class _SocketCRM:
    """The CRM over a socket of the agent's own: an HTTP/1.0 GET written by hand."""

    async def get(self, url: str) -> Any:
        address = urlsplit(url)
        reader, writer = await asyncio.open_connection(address.hostname, address.port)
        request = f"GET {address.path} HTTP/1.0\r\nHost: {address.netloc}\r\n\r\n"
        writer.write(request.encode())
        answer = await reader.read()  # HTTP/1.0: the server closes when done
        writer.close()
        await writer.wait_closed()
        return _Answer(json.loads(answer.partition(b"\r\n\r\n")[2]))

    async def aclose(self) -> None:
        """Nothing is kept open between calls."""


class _Answer:
    def __init__(self, body: Any) -> None:
        self._body = body

    def json(self) -> Any:
        return self._body


def _agent(env: AgentEnvironment, crm: httpx.AsyncClient | _AiohttpCRM | _SocketCRM) -> Starlette:
    settings = env.settings
    graph = env.http_client
    assert graph is not None
    url = f"/{settings['WHATSAPP_API_VERSION']}/{settings['WHATSAPP_PHONE_NUMBER_ID']}/messages"
    tasks: set[asyncio.Task[None]] = set()
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}

    async def answer(message: dict[str, Any]) -> None:
        customer = (await crm.get(f"{CRM['url']}/customers/c-100")).json()
        body = {"type": "text", "text": {"body": f"Hello {customer['name']}!"}}
        send = {"messaging_product": "whatsapp", "to": message["from"], **body}
        await graph.post(url, headers=auth, json=send)

    async def webhook(request: Request) -> PlainTextResponse:
        if request.method == "GET":
            return PlainTextResponse(request.query_params.get("hub.challenge", ""))
        update: Any = await request.json()
        for message in update["entry"][0]["changes"][0]["value"].get("messages", []):
            # 200 at once, the work after: the usual shape of a webhook.
            task = asyncio.get_running_loop().create_task(answer(message))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])])
    app.state.agent = _Closes(crm, tasks)  # the harness closes what the agent opened
    return app


class _Closes:
    def __init__(
        self,
        client: httpx.AsyncClient | _AiohttpCRM | _SocketCRM,
        tasks: set[asyncio.Task[None]],
    ) -> None:
        self.client = client
        self.tasks = tasks

    async def aclose(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.client.aclose()


def told(env: AgentEnvironment) -> Starlette:
    """The agent with its CRM client on the harness's transport."""
    return _agent(env, httpx.AsyncClient(transport=BusyTransport(), timeout=None))


def plain(env: AgentEnvironment) -> Starlette:
    """The same agent with a plain httpx client (and no timeout: no timer to see either)."""
    return _agent(env, httpx.AsyncClient(timeout=None))


def unseen(env: AgentEnvironment) -> Starlette:
    """The same agent on a socket of its own, which nothing tells the harness about."""
    return _agent(env, _SocketCRM())


def aiohttp_agent(env: AgentEnvironment) -> Starlette:
    """The same agent with an aiohttp session."""
    return _agent(env, _AiohttpCRM())


@pytest.mark.network
@pytest.mark.parametrize("target", ["told", "plain", "aiohttp_agent"])
async def test_a_slow_service_call_keeps_virtual_time_still_until_it_answers(target: str) -> None:
    async with started_process(
        "tests.bots.slow_service", "--delay", "0.3", ready_path="/_fake/requests"
    ) as (url, _process):
        CRM["url"] = url
        run = await Runner(RunOptions(target=f"{HERE}:{target}", concurrency=1)).run([SCENARIO])
    result = run.scenarios[0]
    assert result.status == "passed", [v.headline() for v in result.violations] or result.error
    assert result.conversation is not None
    [message] = result.conversation.inbound()
    [reply] = result.conversation.replies()
    assert reply.at == message.at  # the 0.3 s of real waiting took no virtual time


@pytest.mark.network
async def test_a_client_the_harness_cant_see_and_was_not_told_of_lets_time_move_on() -> None:
    async with started_process(
        "tests.bots.slow_service", "--delay", "0.3", ready_path="/_fake/requests"
    ) as (url, _process):
        CRM["url"] = url
        run = await Runner(RunOptions(target=f"{HERE}:unseen", concurrency=1)).run([SCENARIO])
    # The run went on before the answer came.
    assert run.scenarios[0].status != "passed"
