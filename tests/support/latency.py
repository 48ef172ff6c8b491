"""A TCP proxy on loopback that adds real latency, so a local server behaves like a far one.

It runs on a thread of its own with its own event loop, as a server in
another process would, so the delays it adds are invisible to the event loop
under test: only real time passes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["latency_proxy"]


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    try:
        while chunk := await reader.read(65536):
            await asyncio.sleep(delay)
            writer.write(chunk)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


@contextmanager
def latency_proxy(host: str, port: int, delay: float) -> Iterator[tuple[str, int]]:
    """Serve a proxy to ``host:port`` that delays every chunk ``delay`` seconds each way."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    bound: list[tuple[str, int]] = []
    stop: list[asyncio.Event] = []

    pumps: set[asyncio.Task[None]] = set()

    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(host, port)
        for task in (
            asyncio.create_task(_pump(client_r, server_w, delay)),
            asyncio.create_task(_pump(server_r, client_w, delay)),
        ):
            pumps.add(task)
            task.add_done_callback(pumps.discard)

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        bound.append(server.sockets[0].getsockname()[:2])
        stop.append(asyncio.Event())
        ready.set()
        async with server:
            await stop[0].wait()
            for task in list(pumps):
                task.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(5)
    try:
        yield bound[0]
    finally:
        loop.call_soon_threadsafe(stop[0].set)
        thread.join(5)
        loop.close()
