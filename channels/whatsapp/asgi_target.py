"""An agent that is an ASGI app in this process, as the simulator's webhook target.

The app gets the request an HTTP client would send it (the same headers, in
the same order, with the same bytes and signature), without a client's URL
parsing, cookie jar and redirect handling in between. The call runs in the
delivering task itself, not a new one, so an app that waits on the run's
virtual clock is seen asleep there (see :mod:`channels.whatsapp.timekeeping`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import urlencode

from channels.whatsapp.inprocess import call_asgi
from channels.whatsapp.signing import SIGNATURE_HEADER, SignedBody
from channels.whatsapp.url_target import META_USER_AGENT, PostResult, elapsed_ms
from harness.exceptions import HandshakeError

__all__ = ["AsgiTarget"]


class AsgiTarget:
    """An agent that is an ASGI app in this process, called directly.

    An exception the app raises propagates, as from ``httpx.ASGITransport``.
    An app that has not answered after ``timeout`` real seconds is given up
    on, as Meta gives up on a webhook: its call is cancelled, and the POST
    counts as timed out.
    """

    def __init__(self, app: Any, path: str = "/webhook", *, timeout: float = 10.0) -> None:
        self._app = app
        self._path = path
        self._timeout = timeout
        self._raw_path = path.encode()
        self.description = f"in-process app {path}"
        self._headers = [
            (b"host", b"agent.local"),
            (b"accept", b"*/*"),
            (b"accept-encoding", b"gzip, deflate"),
            (b"connection", b"keep-alive"),
            (b"user-agent", META_USER_AGENT.encode()),
        ]

    async def post(self, body: SignedBody) -> PostResult:
        """Call the app with the signed POST; its status and body."""
        started = time.perf_counter()
        headers = [
            *self._headers,
            (b"content-type", b"application/json"),
            (SIGNATURE_HEADER.lower().encode(), body.signature.encode()),
            (b"content-length", str(len(body.body)).encode()),
        ]
        try:
            status, answer = await self._call("POST", headers, b"", body.body)
        except TimeoutError:
            return PostResult(None, "timeout", elapsed_ms(started))
        return PostResult(status, None, elapsed_ms(started), answer)

    async def get(self, params: dict[str, str]) -> tuple[int, str]:
        """Call the app with a GET and ``params`` (the verification handshake)."""
        try:
            status, answer = await self._call("GET", self._headers, urlencode(params).encode(), b"")
        except TimeoutError:
            raise HandshakeError(
                f"webhook {self.description} did not answer the verification GET within "
                f"{self._timeout:g} s"
            ) from None
        return status, answer.decode("utf-8", "replace")

    async def aclose(self) -> None:
        """Nothing to release: no connection is kept."""

    async def _call(
        self, method: str, headers: list[tuple[bytes, bytes]], query: bytes, body: bytes
    ) -> tuple[int, bytes]:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "headers": headers,
            "scheme": "http",
            "path": self._path,
            "raw_path": self._raw_path,
            "query_string": query,
            "server": ("agent.local", None),
            "client": ("127.0.0.1", 123),
            "root_path": "",
        }
        async with asyncio.timeout(self._timeout):
            status, _, answer = await call_asgi(self._app, scope, body)
        return status, answer
