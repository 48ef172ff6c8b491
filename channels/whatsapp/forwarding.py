"""One Meta for many Graph APIs: each request goes to whoever plays its recipient.

Meta routes a send by the number it goes to. Several fake Graph APIs can
stand in for one Meta the same way: a run against an agent at a URL (a local
``harness run --target-url``, or each ``harness worker`` of a distributed
run) plays its scenarios' users with a Graph API of its own, and writes in
the run's store, for each user (wa_id and BSUID) and each message id its
users sent, the address that Graph API is reached at (:class:`RouteBook`).
An agent has one Graph API base URL; whichever of them it points at, be it
``harness serve`` or another run's, a send it does not play itself but that
names a registered user (``to``, ``recipient``) or message (the
``message_id`` of a read receipt or typing indicator) is passed on byte for
byte (method, path, query, headers with ``Authorization``, body) to the
owner, and the owner's answer is the agent's (:class:`Forwarder`). What
belongs to nobody is answered where it landed, as before.

A user's entry lives :data:`ROUTE_TTL` seconds and is renewed while its run
lives, so a run that died without cleaning up stops owning its users soon
after; until then a send for them gets Meta's answer for a temporary failure
(131016, HTTP 503) rather than a hang. A forwarded request carries
:data:`FORWARDED_HEADER` and is never passed on again.

Media: an upload names no recipient, so it is stored where it lands; a
media message that names an uploaded id is forwarded to its recipient's
Graph API, which knows only its own uploads. Agents that send media by id
should point at the run's own Graph API (or send by ``link``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Final

from starlette.types import ASGIApp, Receive, Scope, Send

from channels.whatsapp.errors import ServiceUnavailable
from channels.whatsapp.ids import id_source, new_fbtrace_id
from channels.whatsapp.validation import normalize_wa_id
from harness.store import Store

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "FORWARDED_HEADER",
    "ROUTE_TTL",
    "Forwarder",
    "RouteBook",
    "read_body",
    "recipients",
    "replaying",
    "route_key",
]

#: Seconds a user's or a message's entry outlives the last renewal by its run.
ROUTE_TTL: Final = 60.0
#: Marks a request one Graph API passed on to another: it is answered there, never passed on.
FORWARDED_HEADER: Final = "X-Harness-Forwarded"
# How often a live run renews its users' entries.
_RENEW: Final = ROUTE_TTL / 3
# Seconds to reach the owner, and for its whole answer (a send is answered at once).
_CONNECT: Final = 3.0
_ANSWER: Final = 30.0
# Request headers that describe one hop, not the request.
_HOP: Final = frozenset({"host", "content-length", "connection", "transfer-encoding"})

Message = MutableMapping[str, Any]
# Trace ids of the errors answered here: new in every process, as Meta's are.
_RNG = id_source()


def route_key(kind: str, value: str) -> str:
    """The store key that says which Graph API owns a user (``user``) or a message (``wamid``)."""
    return f"harness:graph-route:{kind}:{value}"


def recipients(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What a send body names that an owner could be found by: ``(kind, value)`` pairs."""
    found: list[tuple[str, str]] = []
    to = data.get("to")
    if isinstance(to, str):
        user = normalize_wa_id(to)
        found.append(("user", user or to))
    recipient = data.get("recipient")
    if isinstance(recipient, str):
        found.append(("user", recipient))
    marked = data.get("message_id")
    if isinstance(marked, str):
        found.append(("wamid", marked))
    return found


class RouteBook:
    """Which Graph API plays which user, kept in a store every Graph API of one Meta reads.

    ``url`` is where this side's Graph API is reached by the others (None: it
    only reads the book, as ``harness serve`` does).
    """

    def __init__(self, store: Store, url: str | None = None) -> None:
        self.store = store
        self.url = url.rstrip("/") if url else None
        self._users: set[str] = set()
        self._wamids: set[str] = set()
        self._renewer: asyncio.Task[None] | None = None
        self._pending: set[asyncio.Task[None]] = set()

    async def claim_users(self, users: Iterable[str]) -> None:
        """The users this side plays from now on (renewed until :meth:`release`)."""
        if self.url is None:
            return
        fresh = [u for u in users if u]
        self._users.update(fresh)
        await asyncio.gather(*(self._put("user", u) for u in fresh))
        if self._renewer is None:
            self._renewer = asyncio.get_running_loop().create_task(self._renew())

    def claim_wamid(self, wamid: str) -> None:
        """A message one of this side's users sent: read receipts for it come here."""
        if self.url is None:
            return
        self._wamids.add(wamid)
        task = asyncio.get_running_loop().create_task(self._put("wamid", wamid))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def owner(self, data: Mapping[str, Any]) -> str | None:
        """The Graph API (another than this one) that plays what ``data`` names, if any."""
        for kind, value in recipients(data):
            raw = await self.store.get(route_key(kind, value))
            if raw is not None:
                url = raw.decode()
                return None if url == self.url else url
        return None

    async def release(self) -> None:
        """This side stops: its users and messages belong to nobody any more."""
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
            self._renewer = None
        if self._pending:
            await asyncio.wait(self._pending, timeout=_CONNECT)
        keys = [route_key("user", u) for u in self._users]
        keys += [route_key("wamid", w) for w in self._wamids]
        self._users.clear()
        self._wamids.clear()
        for key in keys:
            await self.store.delete(key)

    async def _put(self, kind: str, value: str) -> None:
        assert self.url is not None
        await self.store.set(route_key(kind, value), self.url, ttl=ROUTE_TTL)

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(_RENEW)
            for kind, values in (("user", self._users), ("wamid", self._wamids)):
                for value in list(values):
                    await self._put(kind, value)


class Forwarder:
    """ASGI: a send that belongs to another Graph API of the book goes there; see the module.

    ``plays(data)`` tells whether the wrapped app plays the send itself (it
    is then never looked up).
    """

    def __init__(
        self,
        app: ASGIApp,
        book: RouteBook,
        *,
        plays: Callable[[Mapping[str, Any]], bool] = lambda data: False,
    ) -> None:
        self.app = app
        self.book = book
        self.plays = plays
        self._session: aiohttp.ClientSession | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _is_send(scope):
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        owner = await self._owner(scope, body)
        if owner is None:
            await self.app(scope, replaying(body), send)
            return
        await self._forward(owner, scope, body, send)

    async def aclose(self) -> None:
        """Release the connections to the other Graph APIs."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def _owner(self, scope: Scope, body: bytes) -> str | None:
        headers = {k.decode("latin-1").lower() for k, _ in scope.get("headers", [])}
        if FORWARDED_HEADER.lower() in headers:
            return None
        try:
            data = json.loads(body)
        except ValueError:
            return None
        if not isinstance(data, dict) or self.plays(data):
            return None
        return await self.book.owner(data)

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp

            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=2.0),
                timeout=aiohttp.ClientTimeout(total=_ANSWER, connect=_CONNECT),
                auto_decompress=False,
            )
        return self._session

    async def _forward(self, owner: str, scope: Scope, body: bytes, send: Send) -> None:
        import aiohttp

        path = scope.get("raw_path") or scope["path"].encode()
        query = scope.get("query_string", b"")
        url = owner + path.decode("latin-1") + (f"?{query.decode('latin-1')}" if query else "")
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope.get("headers", [])
            if k.decode("latin-1").lower() not in _HOP
        ]
        headers.append((FORWARDED_HEADER, "1"))
        try:
            async with self._client().request(
                scope["method"], url, data=body, headers=headers, allow_redirects=False
            ) as got:
                answer = await got.read()
                status = got.status
                kept = [
                    (k.encode("latin-1"), v.encode("latin-1"))
                    for k, v in got.headers.items()
                    if k.lower() not in _HOP and k.lower() != "date" and k.lower() != "server"
                ]
        except (TimeoutError, aiohttp.ClientError) as exc:
            await _unavailable(send, owner, exc)
            return
        await send({"type": "http.response.start", "status": status, "headers": kept})
        await send({"type": "http.response.body", "body": answer})


async def _unavailable(send: Send, owner: str, exc: BaseException) -> None:
    """Meta's answer for a temporary failure: the recipient's Graph API did not answer."""
    error = ServiceUnavailable(
        details=f"The service is temporarily unavailable; try again later "
        f"({owner} did not answer: {type(exc).__name__}).",
        fbtrace_id=new_fbtrace_id(_RNG),
    )
    payload = json.dumps(error.to_envelope()).encode()
    await send(
        {
            "type": "http.response.start",
            "status": error.http_status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"x-fb-trace-id", str(error.fbtrace_id).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _is_send(scope: Scope) -> bool:
    if scope["type"] != "http" or scope["method"] != "POST":
        return False
    path: str = scope["path"]
    return path.rstrip("/").endswith("/messages")


async def read_body(receive: Receive) -> bytes:
    """The whole body of an ASGI request."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replaying(body: bytes) -> Callable[[], Awaitable[Message]]:
    """An ASGI ``receive`` that hands on a body already read."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive
