"""The webhook of an agent at a URL, reached over real HTTP with aiohttp.

Meta's deliveries to an agent at a URL are many small POSTs at once (a
message, then its sent, delivered and read statuses, for every user in a
conversation), so the client on this path is the one that holds up under
concurrency: aiohttp's connection pool reuses keep-alive connections without
scanning them all for each request. Every exchange holds the run's virtual
clock (:func:`harness.inflight.busy`) from the request until the answer's
body has been read, so virtual time never jumps over a POST on the wire.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from channels.whatsapp.signing import SignedBody
from harness.exceptions import HandshakeError
from harness.inflight import busy

if TYPE_CHECKING:
    import aiohttp

__all__ = ["META_USER_AGENT", "PostResult", "UrlTarget", "elapsed_ms"]

# Seconds an idle connection to the agent is kept for the next POST.
_KEEP_ALIVE = 2.0

#: The ``User-Agent`` of Meta's webhook requests (the handshake's GET and every POST).
META_USER_AGENT = "facebookexternalua"


@dataclass(frozen=True, slots=True)
class PostResult:
    """How the agent answered one POST: a status code, or an error when none came."""

    status_code: int | None
    error: str | None
    latency_ms: float
    body: bytes = b""

    @property
    def reached(self) -> bool:
        """True when the bytes reached the agent (it answered, or timed out after reading)."""
        return self.status_code is not None or self.error == "timeout"


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a :func:`time.perf_counter` reading), to the microsecond."""
    return round((time.perf_counter() - started) * 1000.0, 3)


class UrlTarget:
    """An agent listening at a URL (a staging deployment, or a local server)."""

    def __init__(
        self, url: str, *, timeout: float = 10.0, headers: Mapping[str, str] | None = None
    ) -> None:
        self._url = url
        self._timeout = timeout
        self._headers = {"User-Agent": META_USER_AGENT, **(headers or {})}
        self._session: aiohttp.ClientSession | None = None
        self.description = url

    def _client(self) -> aiohttp.ClientSession:
        # Made on first use, inside the event loop that will use it.
        if self._session is None:
            import aiohttp

            # Idle connections are let go before a server's own keep-alive timeout
            # (uvicorn's is 5 s) could close one under the next request.
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=_KEEP_ALIVE)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=self._timeout)
            )
        return self._session

    async def post(self, body: SignedBody) -> PostResult:
        """POST the signed bytes; never raises for a network problem."""
        import aiohttp

        started = time.perf_counter()
        headers = {**self._headers, **body.headers()}
        try:
            with busy(f"HTTP POST {self._url}"):
                async with self._client().post(self._url, data=body.body, headers=headers) as got:
                    answer = await got.read()
        except TimeoutError:
            return PostResult(None, "timeout", elapsed_ms(started))
        except aiohttp.ClientError as exc:
            return PostResult(None, f"{type(exc).__name__}: {exc}", elapsed_ms(started))
        return PostResult(got.status, None, elapsed_ms(started), answer)

    async def get(self, params: dict[str, str]) -> tuple[int, str]:
        """GET with query parameters (the verification handshake)."""
        import aiohttp

        try:
            with busy(f"HTTP GET {self._url}"):
                async with self._client().get(
                    self._url, params=params, headers=self._headers
                ) as got:
                    text = await got.text(errors="replace")
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise HandshakeError(
                f"webhook {self.description} could not be reached for the verification "
                f"handshake: {type(exc).__name__}: {exc}"
            ) from exc
        return got.status, text

    async def aclose(self) -> None:
        """Release the connection pool."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
