"""Transports that send a bot's requests for Meta's Graph API host to the simulator.

A bot that hard-codes ``https://graph.facebook.com`` can still be tested
unchanged, as long as it lets you pass the ``httpx`` client it uses::

    client = httpx.AsyncClient(transport=GraphRedirect(simulator.graph_transport()))
    client = httpx.AsyncClient(transport=GraphRedirect("http://127.0.0.1:8000"))

Requests to any other host go to ``passthrough`` (the network by default).
"""

from __future__ import annotations

from collections.abc import Iterable

import httpx

__all__ = ["GRAPH_HOSTS", "GraphRedirect", "GraphRedirectSync"]

#: Hosts whose requests are sent to the simulator.
GRAPH_HOSTS = frozenset({"graph.facebook.com", "graph.fb.com"})


def _rewrite(request: httpx.Request, base: httpx.URL | None) -> httpx.Request:
    url = request.url
    if base is not None:
        path = base.raw_path.rstrip(b"/") + url.raw_path
        url = url.copy_with(scheme=base.scheme, host=base.host, port=base.port, raw_path=path)
    else:
        url = url.copy_with(scheme="http", port=None)
    headers = httpx.Headers(request.headers)
    headers["host"] = url.netloc.decode("ascii")
    return httpx.Request(
        request.method,
        url,
        headers=headers,
        content=request.content,
        extensions=request.extensions,
    )


class GraphRedirect(httpx.AsyncBaseTransport):
    """An async transport that answers Graph API requests from the simulator.

    ``target`` is the simulator: a transport (``simulator.graph_transport()``
    for one in this process) or the base URL it is served at.
    """

    def __init__(
        self,
        target: httpx.AsyncBaseTransport | str,
        *,
        hosts: Iterable[str] = GRAPH_HOSTS,
        passthrough: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._base = httpx.URL(target) if isinstance(target, str) else None
        self._target = httpx.AsyncHTTPTransport() if isinstance(target, str) else target
        self._hosts = frozenset(h.lower() for h in hosts)
        self._passthrough = passthrough or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send Graph API requests to the simulator, everything else on."""
        if request.url.host.lower() in self._hosts:
            await request.aread()
            return await self._target.handle_async_request(_rewrite(request, self._base))
        return await self._passthrough.handle_async_request(request)

    async def aclose(self) -> None:
        """Close both underlying transports."""
        await self._target.aclose()
        await self._passthrough.aclose()


class GraphRedirectSync(httpx.BaseTransport):
    """The same redirect for a synchronous ``httpx.Client``; the simulator must be at a URL."""

    def __init__(
        self,
        target: str,
        *,
        hosts: Iterable[str] = GRAPH_HOSTS,
        passthrough: httpx.BaseTransport | None = None,
    ) -> None:
        self._base = httpx.URL(target)
        self._target = httpx.HTTPTransport()
        self._hosts = frozenset(h.lower() for h in hosts)
        self._passthrough = passthrough or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send Graph API requests to the simulator, everything else on."""
        if request.url.host.lower() in self._hosts:
            request.read()
            return self._target.handle_request(_rewrite(request, self._base))
        return self._passthrough.handle_request(request)

    def close(self) -> None:
        """Close both underlying transports."""
        self._target.close()
        self._passthrough.close()
