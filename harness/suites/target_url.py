"""An agent at a URL, checked before a run plays anything to it.

A run against ``--target-url`` plays every scenario to one agent; a URL that
is not one, or where nothing answers, would fail each scenario with the same
error. It is said once instead, naming the option, before the run starts (the
runner checks the URL's shape; a channel that delivers over HTTP, that
something answers there).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from urllib.parse import urlsplit

from harness.exceptions import ConfigError

__all__ = ["check_target_url", "reach_target_url"]

#: Seconds the run waits for the agent's host to take a connection.
_CONNECT_TIMEOUT = 5.0


def check_target_url(url: str) -> tuple[str, int]:
    """The host and port of an ``http``/``https`` URL; :class:`ConfigError` for anything else."""
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname or port == -1:
        raise ConfigError(
            f"--target-url {url!r}: not an http(s) URL with a host "
            "(e.g. http://127.0.0.1:8000/webhook)"
        )
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


async def reach_target_url(url: str) -> None:
    """Raise :class:`ConfigError` when nothing takes a connection at ``url``'s host and port."""
    host, port = check_target_url(url)
    try:
        async with asyncio.timeout(_CONNECT_TIMEOUT):
            _, writer = await asyncio.open_connection(host, port)
    except TimeoutError:
        problem = f"no connection within {_CONNECT_TIMEOUT:g} s"
    except OSError as exc:
        problem = (os.strerror(exc.errno) if exc.errno else str(exc)) or type(exc).__name__
        problem = problem[:1].lower() + problem[1:]
    else:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return
    raise ConfigError(
        f"--target-url {url}: nothing answers at {host}:{port} ({problem}); is the agent running?"
    )
