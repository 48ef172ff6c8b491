"""A bot of a third party's, at a URL, configured with its own secrets: the echo bot on a thread.

The echo bot (:mod:`tests.channels.whatsapp.echo_bot`) checks every POST's
X-Hub-Signature-256 with the app secret it is configured with and answers
403 when it does not match, as bots built to Meta's documentation do. Here it
is served with uvicorn on a thread of its own, with its own event loop, so
that a test can run the ``harness`` command line (which runs its own loop)
against it, as against a bot in another process.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import uvicorn

from channels.whatsapp.config import SimulatorConfig
from tests.bots.loopback import free_port
from tests.channels.whatsapp.echo_bot import BotConfig, EchoBot

__all__ = ["BotAtUrl", "echo_bot_at_url"]


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
    server = uvicorn.Server(
        uvicorn.Config(bot.app(), host="127.0.0.1", port=0, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the echo bot did not start listening")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield BotAtUrl(f"http://127.0.0.1:{port}/webhook", graph_port, bot)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        loop.run_until_complete(bot.client.aclose())
        loop.close()


async def _client() -> httpx.AsyncClient:
    """The bot's HTTP client, made on the bot's loop."""
    return httpx.AsyncClient(timeout=5)
