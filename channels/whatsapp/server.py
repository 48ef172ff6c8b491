"""Serving an ASGI app over real HTTP inside the running event loop.

Used to put the fake Graph API (or an agent, in tests) on a loopback port
while the simulator drives it from the same loop.
"""

from __future__ import annotations

import asyncio
import socket
from types import TracebackType
from typing import Any, Self

import uvicorn

from harness.exceptions import ChannelError

__all__ = ["BackgroundServer"]

# Seconds requests in progress get to finish when the server stops.
_GRACE = 3


class BackgroundServer:
    """Uvicorn serving ``app`` on ``host:port`` (0 picks a free port) as an asyncio task.

    ``proxy_headers``: whether the client's address and scheme are read from a
    trusted proxy's ``X-Forwarded-*`` headers (uvicorn's default); an app that
    reads neither can turn it off and skip that work on every request.
    """

    def __init__(
        self, app: Any, host: str = "127.0.0.1", port: int = 0, *, proxy_headers: bool = True
    ) -> None:
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="auto",
            access_log=False,
            proxy_headers=proxy_headers,
            # A client still in a request when the server stops gets this long, not forever.
            timeout_graceful_shutdown=_GRACE,
        )
        self._server = uvicorn.Server(config)
        self._task: asyncio.Task[None] | None = None
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        """The base URL the app is served at."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Start serving and wait until the socket is listening.

        A port already in use (or an address not of this machine) raises
        :class:`~harness.exceptions.ChannelError` saying so.
        """
        # The socket is bound here, not by uvicorn: it ends the process (SystemExit) when
        # it can't bind, which a caller can't tell from a request to stop.
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # IPPROTO_TCP named, as getaddrinfo names it: asyncio turns Nagle's algorithm off
        # (TCP_NODELAY) only on connections of a socket that says it is TCP; without it,
        # each answer waits out the client's delayed ACK (about 40 ms).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise ChannelError(f"could not serve on {self.url}: {exc.strerror or exc}") from None
        self._task = asyncio.get_running_loop().create_task(self._server.serve(sockets=[sock]))
        for _ in range(500):
            if self._server.started:
                break
            if self._task.done():
                error = self._task.exception()
                raise ChannelError(f"could not serve on {self.url}: {error or 'server exited'}")
            await asyncio.sleep(0.01)
        else:
            raise ChannelError(f"could not serve on {self.url}: not listening after 5 s")
        sockets = [s for server in self._server.servers for s in server.sockets]
        if sockets:
            self.port = int(sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop serving and wait for the server task to end."""
        if self._task is None:
            return
        self._server.should_exit = True
        await self._task
        self._task = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
