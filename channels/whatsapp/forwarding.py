"""One Meta for many Graph APIs: each request goes to whoever plays its recipient.

Meta routes a send by the number it goes to. Several fake Graph APIs can
stand in for one Meta the same way: a run against an agent at a URL (a local
``harness run --target-url``, or each ``harness worker`` of a distributed
run) plays its scenarios' users with a Graph API of its own, and writes in
the run's store, for each user (wa_id and BSUID) and each message id its
users sent, the address that Graph API is reached at (:class:`RouteBook`);
so it does for the media its users send, whose ``GET /{media-id}`` the
agent makes next.
An agent has one Graph API base URL; whichever of them it points at, be it
``harness serve`` or another run's, a send it does not play itself but that
names a registered user (``to``, ``recipient``) or message (the
``message_id`` of a read receipt or typing indicator; the users of a block
or unblock, ``block_users``) is passed on byte for
byte (method, path, query, headers with ``Authorization``, body) to the
owner, and the owner's answer is the agent's (:class:`Forwarder`). What
belongs to nobody is answered where it landed, as before.

A user's entry lives :data:`ROUTE_TTL` seconds and is renewed while its run
lives, so a run that died without cleaning up stops owning its users soon
after; until then a send for them gets Meta's answer for a temporary failure
(131016, HTTP 503) rather than a hang. A forwarded request carries
:data:`FORWARDED_HEADER` and is never passed on again.

Media: what a user sends is registered by id, so the agent's ``GET
/{media-id}`` reaches the Graph API that holds it (the download URL it gets
back is that Graph API's own address). An upload by the agent names no
recipient, so it is stored where it lands; a media message that names an
uploaded id is forwarded to its recipient's Graph API, which knows only its
own uploads. Agents that send uploaded media by id should point at the
run's own Graph API (or send by ``link``).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import (
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    MutableMapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, Final

from starlette.types import ASGIApp, Receive, Scope, Send

from channels.whatsapp.errors import ServiceUnavailable
from channels.whatsapp.ids import id_source, new_fbtrace_id
from channels.whatsapp.validation import normalize_wa_id
from harness._tasks import cancel_until_done
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
    "routed_call",
]

#: Seconds a user's or a message's entry outlives the last renewal by its run.
ROUTE_TTL: Final = 60.0
#: Marks a request one Graph API passed on to another: it is answered there, never passed on.
FORWARDED_HEADER: Final = "X-Harness-Forwarded"
# How often a live run renews its users' entries.
_RENEW: Final = ROUTE_TTL / 3
# Seconds the entry of a file a user sent lives (not renewed: the agent fetches it soon).
_MEDIA_TTL: Final = 3600.0
# Seconds to reach the owner, and for its whole answer (a send is answered at once).
_CONNECT: Final = 3.0
_ANSWER: Final = 30.0
# Request headers that describe one hop, not the request.
_HOP: Final = frozenset({"host", "content-length", "connection", "transfer-encoding"})

Message = MutableMapping[str, Any]
_MEDIA_PATH: Final = re.compile(r"/v\d+\.\d+/(\d+)/?")
# Trace ids of the errors answered here: new in every process, as Meta's are.
_RNG = id_source()


def route_key(kind: str, value: str) -> str:
    """The store key that says which Graph API owns a user (``user``) or a message (``wamid``)."""
    return f"harness:graph-route:{kind}:{value}"


def routed_call(method: str, path: str) -> bool:
    """Whether a call is routed by the users its body names: a send, a block or an unblock."""
    path = path.rstrip("/")
    if path.endswith("/block_users"):
        return method in ("POST", "DELETE")
    return method == "POST" and path.endswith("/messages")


def recipients(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What a send (or block) body names that an owner could be found by: ``(kind, value)``."""
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
    blocked = data.get("block_users")
    for item in blocked if isinstance(blocked, list) else ():
        if isinstance(item, Mapping):
            user, bsuid = item.get("user"), item.get("user_id")
            if isinstance(user, str):
                found.append(("user", normalize_wa_id(user) or user))
            if isinstance(bsuid, str):
                found.append(("user", bsuid))
    return found


class RouteBook:
    """Which Graph API plays which user, kept in a store every Graph API of one Meta reads.

    ``url`` is where this side's Graph API is reached by the others (None: it
    only reads the book, as ``harness serve`` does). Entries are claimed for
    a *group* (a scenario): renewed while it plays, let go when it ends.
    """

    def __init__(self, store: Store, url: str | None = None) -> None:
        self.store = store
        self.url = url.rstrip("/") if url else None
        self._groups: dict[str, set[tuple[str, str]]] = {}
        self._ended: dict[str, set[tuple[str, str]]] = {}
        self._renewer: asyncio.Task[None] | None = None
        self._pending: set[asyncio.Task[None]] = set()

    async def claim_users(self, group: str, users: Iterable[str]) -> None:
        """The users ``group`` plays from now on (renewed until :meth:`let_go`)."""
        if self.url is None:
            return
        fresh = [("user", u) for u in users if u]
        self._groups.setdefault(group, set()).update(fresh)
        await asyncio.gather(*(self._put(kind, value) for kind, value in fresh))
        if self._renewer is None:
            self._renewer = asyncio.get_running_loop().create_task(self._renew())

    def claim_wamid(self, group: str, wamid: str) -> None:
        """A message a user of ``group`` sent: read receipts for it come here."""
        if self.url is None:
            return
        self._groups.setdefault(group, set()).add(("wamid", wamid))
        self._later(self._put("wamid", wamid))

    def claim_media(self, media_id: str) -> None:
        """Media a user sent: the agent's ``GET /{media-id}`` comes here, for an hour."""
        if self.url is not None:
            self._later(self._put("media", media_id, _MEDIA_TTL))

    def let_go(self, group: str) -> None:
        """``group`` has ended: its entries are no longer renewed, and soon expire."""
        ended = self._groups.pop(group, None)
        if ended is not None:
            self._ended[group] = ended

    def drop(self, group: str) -> None:
        """Forget ``group`` altogether (its entries expire on their own)."""
        self._groups.pop(group, None)
        self._ended.pop(group, None)

    async def owner(self, named: Iterable[tuple[str, str]]) -> str | None:
        """The Graph API (another than this one) that plays what a request names, if any."""
        for kind, value in named:
            raw = await self.store.get(route_key(kind, value))
            if raw is not None:
                url = raw.decode()
                return None if url == self.url else url
        return None

    async def release(self) -> None:
        """This side stops: what it still plays belongs to nobody any more."""
        if self._renewer is not None:
            await cancel_until_done(self._renewer)
            self._renewer = None
        if self._pending:
            await asyncio.wait(self._pending, timeout=_CONNECT)
        held = {e for groups in (self._groups, self._ended) for g in groups.values() for e in g}
        self._groups.clear()
        self._ended.clear()
        for kind, value in held:
            await self.store.delete(route_key(kind, value))

    def _later(self, write: Coroutine[Any, Any, None]) -> None:
        # Written in the background: the id is claimed before the webhook naming it goes out.
        task = asyncio.get_running_loop().create_task(write)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _put(self, kind: str, value: str, ttl: float = ROUTE_TTL) -> None:
        assert self.url is not None
        await self.store.set(route_key(kind, value), self.url, ttl=ttl)

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(_RENEW)
            held = {entry for entries in list(self._groups.values()) for entry in entries}
            for kind, value in held:
                await self._put(kind, value)


class Forwarder:
    """ASGI: a send that belongs to another Graph API of the book goes there; see the module.

    ``plays(named)`` tells whether the wrapped app plays what a request names
    itself (``(kind, value)`` pairs, see :func:`recipients`): it is then never
    looked up.
    """

    def __init__(
        self,
        app: ASGIApp,
        book: RouteBook,
        *,
        plays: Callable[[Sequence[tuple[str, str]]], bool] = lambda named: False,
    ) -> None:
        self.app = app
        self.book = book
        self.plays = plays
        self._session: aiohttp.ClientSession | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        media = _media_id(scope)
        if not _is_send(scope) and media is None:
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        owner = await self._owner(scope, [("media", media)] if media else _named_in(body))
        if owner is None:
            await self.app(scope, replaying(body), send)
            return
        await self._forward(owner, scope, body, send)

    async def aclose(self) -> None:
        """Release the connections to the other Graph APIs."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def _owner(self, scope: Scope, named: Sequence[tuple[str, str]]) -> str | None:
        headers = {k.decode("latin-1").lower() for k, _ in scope.get("headers", [])}
        if FORWARDED_HEADER.lower() in headers or not named or self.plays(named):
            return None
        return await self.book.owner(named)

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp

            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=2.0),
                timeout=aiohttp.ClientTimeout(total=_ANSWER, connect=_CONNECT),
                auto_decompress=False,
                # The agent's own headers only: none of the client's defaults added.
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
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


def _named_in(body: bytes) -> list[tuple[str, str]]:
    try:
        data = json.loads(body)
    except ValueError:
        return []
    return recipients(data) if isinstance(data, dict) else []


def _media_id(scope: Scope) -> str | None:
    """The media id of ``GET`` or ``DELETE /{version}/{media-id}``, if that is the request."""
    if scope["type"] != "http" or scope["method"] not in ("GET", "DELETE"):
        return None
    found = _MEDIA_PATH.fullmatch(scope["path"])
    return found.group(1) if found else None


def _is_send(scope: Scope) -> bool:
    return scope["type"] == "http" and routed_call(scope["method"], scope["path"])


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
