"""HTTP inside one process: a request handed to an ASGI app as a server would hand it.

:func:`call_asgi` is the one place that plays the server's side of an ASGI
exchange (the body in one message, the client's disconnect only once the
answer is out). Two callers share it: webhooks to an in-process agent
(:class:`~channels.whatsapp.asgi_target.AsgiTarget`) and
:class:`InProcessClient`, the ``httpx.AsyncClient`` an in-process agent gets
for the fake Graph API (:meth:`WhatsAppSimulator.graph_client
<channels.whatsapp.simulator.WhatsAppSimulator.graph_client>`).

The client builds each request with httpx itself (the URL, the headers in
their order, the body's bytes), then skips what only a network needs: the
auth and redirect loops, the cookie jar and the transport's response stream.
Whatever would make those matter (auth, event hooks, cookies, redirects to
follow, a streamed request or response, another transport) sends the request
the ordinary httpx way instead.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta
from typing import Any

import httpx

__all__ = ["InProcessClient", "call_asgi"]

_log = logging.getLogger("httpx")  # the logger httpx reports each request to
# URLs parsed, by their text: a bot sends to the same few again and again.
_URLS_KEPT = 256

Headers = list[tuple[bytes, bytes]]


async def call_asgi(app: Any, scope: dict[str, Any], body: bytes) -> tuple[int, Headers, bytes]:
    """Run ``app`` on one HTTP request (``scope``, whole ``body``); its status, headers, body.

    An exception the app raises propagates, as from ``httpx.ASGITransport``.
    """
    sent = False
    done = asyncio.Event()
    status = 500
    headers: Headers = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()  # the app listens for the client going away: only once answered
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = int(message["status"])
            headers = list(message.get("headers", ()))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    try:
        await app(scope, receive, send)
    finally:
        done.set()
    return status, headers, b"".join(chunks)


class InProcessClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` whose requests reach an ASGI app in this process directly.

    It is a complete httpx client (any keyword ``httpx.AsyncClient`` takes,
    except ``transport``, which is the app's); a plain request (no auth, no
    event hooks, no cookies, no redirect to follow, not streamed) goes to the
    app without the client's network machinery, carrying the same method,
    URL, headers and bytes.
    """

    def __init__(self, app: Any, **kwargs: Any) -> None:
        self._app = app
        self._own = httpx.ASGITransport(app=app)
        self._urls: dict[str, httpx.URL] = {}
        super().__init__(transport=self._own, **kwargs)

    def build_request(self, method: str, url: httpx.URL | str, **kwargs: Any) -> httpx.Request:
        """httpx's request, from a URL given as text parsed once (a URL never changes)."""
        if isinstance(url, str):
            parsed = self._urls.get(url)
            if parsed is None:
                if len(self._urls) >= _URLS_KEPT:
                    self._urls.clear()
                parsed = self._urls[url] = httpx.URL(url)
            url = parsed
        return super().build_request(method, url, **kwargs)

    async def send(
        self,
        request: httpx.Request,
        *,
        stream: bool = False,
        auth: Any = httpx.USE_CLIENT_DEFAULT,
        follow_redirects: Any = httpx.USE_CLIENT_DEFAULT,
    ) -> httpx.Response:
        """Send ``request``: straight to the app when nothing needs the client's machinery."""
        body = self._direct_body(request, stream, auth, follow_redirects)
        if body is None:
            return await super().send(
                request, stream=stream, auth=auth, follow_redirects=follow_redirects
            )
        url = request.url
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "scheme": url.scheme,
            "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "server": (url.host, url.port),
            "client": self._own.client,
            "root_path": self._own.root_path,
        }
        started = time.perf_counter()
        status, headers, answer = await call_asgi(self._app, scope, body)
        if request.method == "HEAD":
            answer = b""
        response = httpx.Response(
            status, headers=headers, stream=httpx.ByteStream(answer), request=request
        )
        await response.aread()
        response.elapsed = timedelta(seconds=time.perf_counter() - started)
        if "set-cookie" in response.headers:
            self.cookies.extract_cookies(response)
        response.default_encoding = self._default_encoding
        if _log.isEnabledFor(logging.INFO):
            _log.info(
                'HTTP Request: %s %s "%s %d %s"',
                request.method,
                url,
                response.http_version,
                status,
                response.reason_phrase,
            )
        return response

    def _direct_body(
        self, request: httpx.Request, stream: bool, auth: Any, follow_redirects: Any
    ) -> bytes | None:
        """The request's bytes when it can go straight to the app; None when it can't."""
        if stream or self.is_closed or self._transport is not self._own or self._mounts:
            return None
        if auth is not httpx.USE_CLIENT_DEFAULT or self.auth is not None:
            return None
        follow = (
            self.follow_redirects
            if follow_redirects is httpx.USE_CLIENT_DEFAULT
            else follow_redirects
        )
        if follow or len(self.cookies.jar):
            return None
        hooks = self.event_hooks
        if hooks["request"] or hooks["response"]:
            return None
        try:
            return request.content
        except httpx.RequestNotRead:  # a streamed body: the transport reads it
            return None
