"""A private redis-server on a loopback port, to kill, restart and pause under a running harness.

Used by the store's reconnection tests, the Redis fault tests and the Redis
probe of ``reliability/``. It keeps nothing on disk (``--save ""``), so a
restarted server has lost every key, as a restarted cache would.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import time
from pathlib import Path

__all__ = ["REDIS_BINARY", "RedisServer", "redis_binary"]

#: Where Debian's package puts the server.
REDIS_BINARY = "/usr/bin/redis-server"


def redis_binary() -> str | None:
    """The redis-server program, or None when it is not installed."""
    found = shutil.which("redis-server")
    if found is None and os.access(REDIS_BINARY, os.X_OK):
        found = REDIS_BINARY
    return found


class RedisServer:
    """A redis-server on ``port`` of 127.0.0.1, started, killed and paused on demand."""

    def __init__(
        self, binary: str, port: int, directory: Path, *, unix_socket: Path | None = None
    ) -> None:
        """``unix_socket``: also listen there (for clients in a network namespace of their own)."""
        self.binary = binary
        self.port = port
        self.directory = directory
        self.unix_socket = unix_socket
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        """The server's ``redis://`` URL (database 0)."""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def socket_url(self) -> str:
        """The server's ``unix://`` URL (database 0), when it listens on a socket too."""
        assert self.unix_socket is not None, "the server listens on no socket"
        return f"unix://{self.unix_socket}?db=0"

    async def start(self) -> None:
        """Start the server and wait until it answers PING (10 s at most)."""
        self.process = await asyncio.create_subprocess_exec(
            *(self.binary, "--port", str(self.port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no", "--dir", str(self.directory)),
            *("--logfile", str(self.directory / "redis.log")),
            *(("--unixsocket", str(self.unix_socket)) if self.unix_socket is not None else ()),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        try:
            while not await self._answers():
                if self.process.returncode is not None or time.monotonic() > deadline:
                    log = self.directory / "redis.log"
                    text = log.read_text(errors="replace") if log.exists() else ""
                    raise RuntimeError(f"redis-server did not start on port {self.port}:\n{text}")
                await asyncio.sleep(0.02)
        except BaseException:
            await self.kill()  # a server that never answered is not left running
            raise

    async def kill(self) -> None:
        """Kill the server (SIGKILL): whatever it held is gone."""
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        self.process = None

    async def restart(self) -> None:
        """Kill the server and start an empty one on the same port."""
        await self.kill()
        await self.start()

    def pause(self) -> None:
        """Stop the server (SIGSTOP): connections stay open, nothing is answered."""
        assert self.process is not None, "the server is not running"
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server go on (SIGCONT)."""
        assert self.process is not None, "the server is not running"
        self.process.send_signal(signal.SIGCONT)

    async def _answers(self) -> bool:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        except OSError:
            return False
        try:
            writer.write(b"PING\r\n")
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), 1)
            return line.startswith(b"+PONG")
        except (OSError, TimeoutError):
            return False
        finally:
            writer.close()
