"""An in-process agent on the official ``anthropic`` SDK alone: virtual time waits for its model.

The agent (written for this test as a user would write one) calls a model
that takes 0.3 s of real time, in another process, through
``anthropic.AsyncAnthropic`` and nothing of the harness: no recorder, no
``busy()``. The SDK sends through httpx's network transport, which holds the
scenario's clock while a request is out, so each reply comes at the instant
its message arrived and lands in its own turn, whether the answer comes whole
or streamed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from harness.channel import AgentEnvironment
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from tests.bots.loopback import started_process

HERE = "tests.integration.test_sdk_in_process"
MODEL: dict[str, str] = {}

SCENARIO = parse_scenario(
    """
name: each answer is the model's, in its own turn
users: [{name: Ana, wa_id: "5511987654321"}]
steps:
  - say: hello
  - expect: {reply_contains: first answer}
  - say: and again
  - expect: {reply_contains: second answer}
invariants: [every_inbound_answered]
"""
)


def _agent(env: AgentEnvironment, *, stream: bool) -> Starlette:
    settings = env.settings
    graph = env.http_client
    assert graph is not None
    url = f"/{settings['WHATSAPP_API_VERSION']}/{settings['WHATSAPP_PHONE_NUMBER_ID']}/messages"
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
    model = anthropic.AsyncAnthropic(base_url=MODEL["url"], api_key="test-key", max_retries=0)
    tasks: set[asyncio.Task[None]] = set()

    async def think(words: str) -> str:
        asked: dict[str, Any] = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 200,
            "messages": [{"role": "user", "content": words}],
        }
        if stream:
            async with model.messages.stream(**asked) as answer:
                return await answer.get_final_text()
        reply = await model.messages.create(**asked)
        return "".join(block.text for block in reply.content if block.type == "text")

    async def answer(message: dict[str, Any]) -> None:
        words = await think(message["text"]["body"])
        send = {"messaging_product": "whatsapp", "to": message["from"], "type": "text"}
        await graph.post(url, headers=auth, json={**send, "text": {"body": words}})

    async def webhook(request: Request) -> PlainTextResponse:
        if request.method == "GET":
            return PlainTextResponse(request.query_params.get("hub.challenge", ""))
        update: Any = await request.json()
        for message in update["entry"][0]["changes"][0]["value"].get("messages", []):
            task = asyncio.get_running_loop().create_task(answer(message))  # after the 200
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])])
    app.state.agent = _Closes(model, tasks)
    return app


class _Closes:
    def __init__(self, model: anthropic.AsyncAnthropic, tasks: set[asyncio.Task[None]]) -> None:
        self.model = model
        self.tasks = tasks

    async def aclose(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.model.close()


def whole(env: AgentEnvironment) -> Starlette:
    """The agent asking for the model's answer whole."""
    return _agent(env, stream=False)


def streamed(env: AgentEnvironment) -> Starlette:
    """The agent reading the model's answer as it streams in."""
    return _agent(env, stream=True)


@pytest.mark.network
@pytest.mark.parametrize("target", ["whole", "streamed"])
async def test_a_model_called_through_the_sdk_alone_keeps_virtual_time_still(
    target: str, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "the first answer"}, {"text": "the second answer"}]))
    async with started_process(
        "tests.bots.fake_anthropic",
        "--delay",
        "0.3",
        "--script",
        str(script),
        ready_path="/_fake/requests",
    ) as (url, _process):
        MODEL["url"] = url
        run = await Runner(RunOptions(target=f"{HERE}:{target}", concurrency=1)).run([SCENARIO])
    result = run.scenarios[0]
    assert result.status == "passed", [v.headline() for v in result.violations] or result.error
    assert result.conversation is not None
    turns = [
        ([m.text for m in t.messages], [r.text for r in t.replies])
        for t in result.conversation.turns
    ]
    assert turns == [(["hello"], ["the first answer"]), (["and again"], ["the second answer"])]
    for turn in result.conversation.turns:
        # The 0.3 s of real waiting for the model took no virtual time.
        assert [r.at for r in turn.replies] == [turn.messages[0].at]
