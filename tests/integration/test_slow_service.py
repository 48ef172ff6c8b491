"""An in-process agent that calls a slow service: virtual time waits for the answer.

The agent (written for this test as a user would write one) looks the customer
up in a CRM that takes 0.3 s of real time, in another process, before it
answers. With its client on :class:`harness.inflight.BusyTransport` the
virtual clock stays where it is while the request is out, so the reply comes
at the instant the message arrived; a client the harness was not told about
leaves the run to move on without the answer.
"""

from __future__ import annotations

import asyncio
from typing import Any

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


def _agent(env: AgentEnvironment, crm: httpx.AsyncClient) -> Starlette:
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
    def __init__(self, client: httpx.AsyncClient, tasks: set[asyncio.Task[None]]) -> None:
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


def untold(env: AgentEnvironment) -> Starlette:
    """The same agent with a plain client (and no timeout: no timer to see either)."""
    return _agent(env, httpx.AsyncClient(timeout=None))


@pytest.mark.network
async def test_a_slow_service_call_keeps_virtual_time_still_until_it_answers() -> None:
    async with started_process(
        "tests.bots.slow_service", "--delay", "0.3", ready_path="/_fake/requests"
    ) as (url, _process):
        CRM["url"] = url
        told_run = await Runner(RunOptions(target=f"{HERE}:told", concurrency=1)).run([SCENARIO])
        untold_run = await Runner(RunOptions(target=f"{HERE}:untold", concurrency=1)).run(
            [SCENARIO]
        )
    result = told_run.scenarios[0]
    assert result.status == "passed", [v.headline() for v in result.violations] or result.error
    assert result.conversation is not None
    [message] = result.conversation.inbound()
    [reply] = result.conversation.replies()
    assert reply.at == message.at  # the 0.3 s of real waiting took no virtual time
    # Without telling the harness, the run went on before the answer came.
    assert untold_run.scenarios[0].status != "passed"
