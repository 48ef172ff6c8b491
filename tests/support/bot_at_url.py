"""A bot of a third party's, at a URL, configured with its own secrets: the echo bot on a thread.

The echo bot (:mod:`tests.channels.whatsapp.echo_bot`) checks every POST's
X-Hub-Signature-256 with the app secret it is configured with and answers
403 when it does not match, as bots built to Meta's documentation do. Here it
is served with uvicorn on a thread of its own, with its own event loop, so
that a test can run the ``harness`` command line (which runs its own loop)
against it, as against a bot in another process. A second bot asks its model
(through the harness, as the OpenAI SDK does with ``OPENAI_BASE_URL``) what to
answer.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from channels.whatsapp.config import SimulatorConfig
from tests.bots.loopback import free_port
from tests.channels.whatsapp.echo_bot import BotConfig, EchoBot

__all__ = ["BotAtUrl", "echo_bot_at_url", "model_bot_at_url", "served_on_thread"]


@dataclass(frozen=True)
class BotAtUrl:
    """The bot served: its webhook URL, the port its Graph API is expected on, and the bot."""

    webhook: str
    graph_port: int
    bot: EchoBot


@contextmanager
def echo_bot_at_url(
    *,
    app_secret: str | None = None,
    verify_token: str | None = None,
    access_token: str | None = None,
    phone_number_id: str | None = None,
) -> Iterator[BotAtUrl]:
    """Serve the echo bot on loopback, with the simulator's number unless told otherwise.

    Its Graph API is a free port on loopback, where the harness's fake one is
    to listen (``--graph-port``).
    """
    defaults = SimulatorConfig()
    graph_port = free_port()
    config = BotConfig(
        app_secret=app_secret or defaults.app_secret,
        verify_token=verify_token or defaults.verify_token,
        access_token=access_token or defaults.access_token,
        phone_number_id=phone_number_id or defaults.phone_number_id,
        graph_url=f"http://127.0.0.1:{graph_port}",
    )
    loop = asyncio.new_event_loop()
    bot = EchoBot(config, loop.run_until_complete(_client()))
    try:
        with served_on_thread(bot.app(), loop) as url:
            yield BotAtUrl(f"{url}/webhook", graph_port, bot)
    finally:
        loop.run_until_complete(bot.client.aclose())
        loop.close()


@contextmanager
def served_on_thread(app: Any, loop: asyncio.AbstractEventLoop | None = None) -> Iterator[str]:
    """Serve ``app`` with uvicorn on loopback, on a thread running ``loop``; yields its base URL."""
    own = loop is None
    loop = loop or asyncio.new_event_loop()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start listening")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        if own:
            loop.close()


async def _client() -> httpx.AsyncClient:
    """The bot's HTTP client, made on the bot's loop."""
    return httpx.AsyncClient(timeout=5)


@contextmanager
def model_bot_at_url() -> Iterator[tuple[str, int]]:
    """Serve a bot that answers each text with its model's answer; yields its webhook, Graph port.

    The tools its model calls run (each answers an order id), and their
    results go back to the model, until it answers in text.

    Its model is the OpenAI SDK's ``OPENAI_BASE_URL`` aimed at the harness
    (its fake Graph API, at ``/v1``), and its Graph API the harness's fake one,
    on the port yielded; its number is the simulator's own.
    """
    defaults = SimulatorConfig()
    graph_port = free_port()
    graph = f"http://127.0.0.1:{graph_port}"
    tasks: set[asyncio.Task[None]] = set()

    async def answer(user: str, text: str) -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
        async with httpx.AsyncClient(timeout=10) as client:
            while True:  # the model's tool calls run, and their results go back to it
                asked = await client.post(
                    f"{graph}/v1/chat/completions",
                    json={"model": "gpt-test", "messages": messages},
                    headers={"Authorization": "Bearer sk-test"},
                )
                message = asked.json()["choices"][0]["message"]
                calls = message.get("tool_calls") or []
                if not calls:
                    break
                messages.append({"role": "assistant", "content": None, "tool_calls": calls})
                for call in calls:
                    result = {"order": f"ORD-{len(messages)}"}
                    messages.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
                    )
            await client.post(
                f"{graph}/v25.0/{defaults.phone_number_id}/messages",
                json={
                    "messaging_product": "whatsapp",
                    "to": user,
                    "text": {"body": message["content"]},
                },
                headers={"Authorization": f"Bearer {defaults.access_token}"},
            )

    async def webhook(request: Request) -> Response:
        if request.method == "GET":
            return PlainTextResponse(request.query_params.get("hub.challenge", ""))
        for entry in (await request.json())["entry"]:
            for change in entry["changes"]:
                for message in change["value"].get("messages", []):
                    if message["type"] == "text":
                        task = asyncio.create_task(answer(message["from"], message["text"]["body"]))
                        tasks.add(task)
                        task.add_done_callback(tasks.discard)
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])])
    with served_on_thread(app) as url:
        yield f"{url}/webhook", graph_port
