"""The webhooks of a load run: a user's message as Meta sends it, POSTed with aiohttp.

Each message is a Cloud API webhook built as plain data in the shape the
simulator's models dump to (:func:`~channels.whatsapp.envelope.message_item`:
a load run sends many thousands a second, and the models only to be dumped
again would cost more than the POST), serialized and signed as Meta does
(:mod:`channels.whatsapp.signing`). They go
out through one aiohttp session with a bounded pool: on this machine aiohttp
kept up many times the requests per second of httpx's pool with 50
connections open to one server (``benchmarks/load.py`` measures both), and a
load run is all connections at once.

A message's reply latency runs from the moment a connection was free for its
request (:meth:`WebhookPoster.post` tells the user), not from when the user
asked for one: with more users than connections, the wait for one is the
harness's own queue, not the agent's slowness. The poster keeps that queue
itself, one permit per connection of the pool, so the pool never makes a
request wait, and the moment a permit is given is the moment the request
goes out.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import aiohttp
import orjson

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.envelope import message_item, profile_contact_item, webhook_body
from channels.whatsapp.ids import bulk_wamid
from channels.whatsapp.load.users import Choice, LoadUser
from channels.whatsapp.signing import SIGNATURE_HEADER, serialize, sign

__all__ = ["WebhookPoster"]


class WebhookPoster:
    """Builds, signs and POSTs users' messages to the agent's webhook."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        url: str,
        config: SimulatorConfig,
        *,
        timeout: float,
        rng: random.Random | None = None,
        connections: int = 100,
    ) -> None:
        """``connections``: the most requests at once, as many as the session's pool holds."""
        self.session = session
        self._free = asyncio.Semaphore(connections)
        self.url = url
        self.config = config
        # Connecting and each read are bounded, not the wait for a free connection of the
        # pool: that is the harness's own queue, and the run's end bounds it.
        self.timeout = aiohttp.ClientTimeout(
            total=None, connect=None, sock_connect=timeout, sock_read=timeout
        )
        self.rng = rng or random.Random()

    def body(self, wa_id: str, text: str, choice: Choice | None = None) -> bytes:
        """The webhook for ``wa_id`` saying ``text`` (or tapping ``choice``), as sent."""
        wamid = bulk_wamid(self.rng, wa_id)
        stamp = int(time.time())
        config = self.config
        if choice is None:
            message = message_item(wamid, wa_id, stamp, text)
        else:
            kind = "button_reply" if choice.kind == "button" else "list_reply"
            message = message_item(
                wamid,
                wa_id,
                stamp,
                "",
                context=(config.display_phone_number, choice.message_id),
                reply=(kind, choice.id, choice.title),
            )
        payload = webhook_body(
            waba_id=config.waba_id,
            phone_number_id=config.phone_number_id,
            display_phone_number=config.display_phone_number,
            messages=[message],
            contacts=[profile_contact_item(wa_id, f"Load user {wa_id}")],
        )
        return _serialized(payload)

    async def post(self, body: bytes, user: LoadUser | None = None) -> str | None:
        """POST one webhook; ``None`` when the agent answered 2xx, else why it failed.

        ``user`` is told when a connection is free for it and the request goes out.
        """
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: sign(body, self.config.app_secret),
        }
        async with self._free:
            if user is not None:
                user.posting(asyncio.get_running_loop().time())
            try:
                async with self.session.post(
                    self.url, data=body, headers=headers, timeout=self.timeout
                ) as response:
                    await response.read()
                    if 200 <= response.status < 300:
                        return None
                    return f"HTTP {response.status}"
            except TimeoutError:
                return "timeout"
            except aiohttp.ClientError as exc:
                return f"connection: {type(exc).__name__}"


def _serialized(payload: dict[str, Any]) -> bytes:
    """``serialize(payload)``, by orjson when that writes the same bytes.

    It does when what it wrote is printable ASCII with no escape in it: Meta's
    encoding escapes exactly the characters that orjson writes as an escape or
    as a byte above 0x7E. A load run's webhooks hold strings, never floats,
    which the two write differently.
    """
    raw = orjson.dumps(payload)
    if raw.isascii() and b"\\" not in raw and b"\x7f" not in raw:
        return raw
    return serialize(payload)
