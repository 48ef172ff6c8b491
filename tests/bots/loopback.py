"""Serving the test doubles over real loopback HTTP, in-process or as a process.

The fake model server and the slow service share this; the bots do not (each
bot is a program of its own). It uses uvicorn and the standard library only,
not the harness's own server, so that the doubles stay independent of the code
they are used to test.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

__all__ = ["free_port", "serve_in_process", "started_command", "started_process"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, outside the ephemeral range.

    The port is closed again before the caller's server binds it. Taken from the
    system's ephemeral range, it could meanwhile be handed to any server started
    on port 0 (the fake model, a bot), which would then answer in its place; a
    port below that range is never handed out that way. A port is handed out at
    most once per process, so two servers a test starts one after the other never
    race for the same one; parallel test workers draw from disjoint slices.
    """
    low, _ = _ephemeral_range()
    start, stop = _slice(10_000, max(low, 10_001))
    for _ in range(200):
        port = _chooser.randrange(start, stop)
        if port in _handed_out:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free port in {start}-{stop} after 200 tries")


def _slice(low: int, high: int) -> tuple[int, int]:
    """This test worker's share of ``[low, high)``: all of it unless pytest-xdist runs several."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ...
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or count < 2:
        return low, high
    index = int(worker[2:]) % count
    width = (high - low) // count
    return low + index * width, low + (index + 1) * width


_handed_out: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


_chooser = random.Random()  # seeded by the system, not by a test's random seed


@asynccontextmanager
async def serve_in_process(app: Any, *, port: int = 0) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 inside the running loop; yields its base URL.

    ``port`` 0 lets the system pick a free one. A request still running when the
    block ends gets two seconds, then is cancelled.
    """
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    deadline = time.monotonic() + 5
    while not server.started:
        if task.done():
            raise RuntimeError(f"uvicorn did not start: {task.exception() or 'it exited'}")
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn was not listening after 5 s")
        await asyncio.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{bound}"
    finally:
        server.should_exit = True
        await task


@asynccontextmanager
async def started_process(
    module: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    ready_path: str = "/",
    start_within: float = 10,
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """Run ``python -m module --port N *args`` and wait until ``ready_path`` answers.

    Yields the base URL and the process; the process is terminated (then killed,
    if it lingers) when the block ends. ``env`` is added to this process's
    environment. A process that exits early fails with its stderr.
    """
    port = free_port()
    command = (sys.executable, "-m", module, "--port", str(port), *args)
    env = {"PYTHONUNBUFFERED": "1", **(env or {})}
    async with started_command(
        command, port, env=env, ready_path=ready_path, start_within=start_within, name=module
    ) as started:
        yield started


@asynccontextmanager
async def started_command(
    command: Sequence[str],
    port: int,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    ready_path: str = "/",
    start_within: float = 10,
    name: str | None = None,
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """Run ``command``, a server that listens on 127.0.0.1:``port``, as :func:`started_process`.

    Its stderr is kept for the caller (``process.stderr``), and read for the
    error if it exits early; ``name`` (default: the command) names it there.
    """
    name = name or " ".join(command)
    process = await asyncio.create_subprocess_exec(
        *command,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(timeout=1) as client:
            deadline = time.monotonic() + start_within
            while True:
                if process.returncode is not None:
                    assert process.stderr is not None
                    error = (await process.stderr.read()).decode()
                    raise RuntimeError(f"{name} exited with {process.returncode}: {error}")
                try:
                    await client.get(url + ready_path)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{name} did not answer in {start_within} s") from None
                    await asyncio.sleep(0.05)
        yield url, process
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.communicate(), timeout=5)
            except TimeoutError:
                process.kill()
                await process.communicate()
