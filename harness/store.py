"""Shared state: values with expiry, counters and append-only logs, in memory or in Redis.

The simulator keeps window state, sent messages and outboxes in a
:class:`Store`; agents keep dedupe keys and history in one; out-of-process
agents read recordings from one. :class:`MemoryStore` is the default and
lives in one process; :class:`RedisStore` is used when a ``redis://`` URL is
given, so several harness processes sharing a Redis see one world.
:func:`open_store` picks between them from a URL.

Keys live under a namespace (``"scenario-1"`` turns ``"window:alice"`` into
``"scenario-1:window:alice"``), so scenarios sharing a Redis never collide.
Values are bytes; a ``str`` is stored as UTF-8. A key holds either a value
(``set``, ``incr``) or a log (``append``); using it as the other raises
:class:`~harness.exceptions.StoreError`.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Final, Protocol, Self, TypeVar, runtime_checkable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from harness.clock import Clock, SystemClock
from harness.exceptions import ConfigError, StoreError, StoreUnavailable
from harness.inflight import busy
from harness.outages import had_outage, note_outage

if TYPE_CHECKING:
    # Redis's client is imported by the Redis store alone: a run on the memory store,
    # and every command that needs no store, never pay for it.
    import redis.asyncio as aioredis

__all__ = ["REDIS_SCHEMES", "MemoryStore", "RedisStore", "Store", "check_store", "open_store"]

#: URL schemes :class:`RedisStore` accepts.
REDIS_SCHEMES: Final = ("redis", "rediss", "unix")

_T = TypeVar("_T")
_INT64: Final = range(-(2**63), 2**63)
_INTEGER: Final = re.compile(rb"-?[0-9]+")


def _backoff(failures: int) -> float:
    """Seconds between tries of a Redis command: 0.1 s, 0.2 s, 0.4 s ... up to a second."""
    return min(1.0, 0.05 * float(2 ** min(failures, 10)))


@runtime_checkable
class Store(Protocol):
    """The storage every part of the harness shares; all methods are coroutines."""

    @property
    def namespace(self) -> str:
        """The prefix put before every key (empty for none)."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None when it is missing or expired."""
        ...

    async def set(self, key: str, value: bytes | str, *, ttl: float | None = None) -> None:
        """Store ``value`` under ``key``, expiring after ``ttl`` seconds if given."""
        ...

    async def set_if_absent(
        self, key: str, value: bytes | str, *, ttl: float | None = None
    ) -> bool:
        """Store ``value`` only if ``key`` holds nothing; True if it did (atomically)."""
        ...

    async def delete(self, key: str) -> None:
        """Remove ``key``, value or log; a missing key is fine."""
        ...

    async def append(self, key: str, value: bytes | str) -> int:
        """Add ``value`` to the end of the log at ``key``; returns the log's new length."""
        ...

    async def read_log(self, key: str, start: int = 0, end: int | None = None) -> list[bytes]:
        """The log's entries ``start`` up to ``end`` (excluded), as a list slice would give."""
        ...

    async def incr(self, key: str, amount: int = 1) -> int:
        """Add ``amount`` to the integer at ``key`` (missing counts as 0); returns the result."""
        ...

    async def close(self) -> None:
        """Release the store's resources; views made by :meth:`with_namespace` share them."""
        ...

    def with_namespace(self, namespace: str) -> Store:
        """A view of the same data with ``namespace`` added under this store's own."""
        ...


def _join(*parts: str) -> str:
    return ":".join(part for part in parts if part)


def _bytes(value: bytes | str) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _ttl(ttl: float | None) -> float | None:
    if ttl is not None and not (math.isfinite(ttl) and ttl > 0):
        raise ConfigError(f"a ttl must be a positive number of seconds, not {ttl!r}")
    return ttl


# -- memory --------------------------------------------------------------------


@dataclass
class _Entry:
    value: bytes | list[bytes]
    expires: datetime | None = None


@dataclass
class _MemoryData:
    clock: Clock
    entries: dict[str, _Entry] = field(default_factory=dict)
    # (expiry, order, key), for dropping expired keys nobody reads again
    expiries: list[tuple[datetime, int, str]] = field(default_factory=list)
    order: itertools.count[int] = field(default_factory=itertools.count)
    closed: bool = False


class _StoreBase:
    """What both stores share: a namespace, and closing when used as a context manager."""

    _namespace: str

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def namespace(self) -> str:
        """The prefix put before every key (empty for none)."""
        return self._namespace

    async def close(self) -> None:
        """Release the store's resources."""
        raise NotImplementedError


class MemoryStore(_StoreBase):
    """A :class:`Store` in this process's memory: the default, and what unit tests use.

    Expiry follows ``clock`` (a :class:`~harness.clock.VirtualClock` that
    jumps 25 hours expires a day's keys). No method awaits anything, so
    each is atomic under asyncio concurrency; it is not for use from
    several threads.
    """

    def __init__(self, *, namespace: str = "", clock: Clock | None = None) -> None:
        self._data = _MemoryData(SystemClock() if clock is None else clock)
        self._namespace = namespace

    @classmethod
    def _view(cls, data: _MemoryData, namespace: str) -> MemoryStore:
        view = cls.__new__(cls)
        view._data = data
        view._namespace = namespace
        return view

    def __repr__(self) -> str:
        return f"MemoryStore(namespace={self._namespace!r})"

    @property
    def clock(self) -> Clock:
        """The clock that decides when keys expire."""
        return self._data.clock

    def with_namespace(self, namespace: str) -> MemoryStore:
        """A view of the same data with ``namespace`` added under this store's own."""
        return self._view(self._data, _join(self._namespace, namespace))

    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None when it is missing or expired."""
        full = _join(self._namespace, key)
        entry = self._live(full)
        if entry is None:
            return None
        return self._value(full, entry)

    async def set(self, key: str, value: bytes | str, *, ttl: float | None = None) -> None:
        """Store ``value`` under ``key``, expiring after ``ttl`` seconds if given."""
        self._put(_join(self._namespace, key), _bytes(value), _ttl(ttl))

    async def set_if_absent(
        self, key: str, value: bytes | str, *, ttl: float | None = None
    ) -> bool:
        """Store ``value`` only if ``key`` holds nothing; True if it did."""
        full = _join(self._namespace, key)
        ttl = _ttl(ttl)
        if self._live(full) is not None:
            return False
        self._put(full, _bytes(value), ttl)
        return True

    async def delete(self, key: str) -> None:
        """Remove ``key``, value or log; a missing key is fine."""
        self._open()
        self._data.entries.pop(_join(self._namespace, key), None)

    async def append(self, key: str, value: bytes | str) -> int:
        """Add ``value`` to the end of the log at ``key``; returns the log's new length."""
        full = _join(self._namespace, key)
        entry = self._live(full)
        if entry is None:
            entry = self._data.entries[full] = _Entry([])
        log = self._log(full, entry)
        log.append(_bytes(value))
        return len(log)

    async def read_log(self, key: str, start: int = 0, end: int | None = None) -> list[bytes]:
        """The log's entries ``start`` up to ``end`` (excluded), as a list slice would give."""
        full = _join(self._namespace, key)
        entry = self._live(full)
        return [] if entry is None else self._log(full, entry)[start:end]

    async def incr(self, key: str, amount: int = 1) -> int:
        """Add ``amount`` to the integer at ``key`` (missing counts as 0); keeps its expiry."""
        full = _join(self._namespace, key)
        entry = self._live(full)
        if entry is None:
            entry = self._data.entries[full] = _Entry(b"0")
        current = self._value(full, entry)
        if not _INTEGER.fullmatch(current):
            raise StoreError(f"key {full!r} does not hold an integer")
        result = int(current) + amount
        if result not in _INT64:
            raise StoreError(f"incrementing key {full!r} by {amount} would overflow")
        entry.value = str(result).encode()
        return result

    async def close(self) -> None:
        """Drop the data; this store and its views refuse further use."""
        self._data.closed = True
        self._data.entries.clear()
        self._data.expiries.clear()

    # -- internals ---------------------------------------------------------

    def _open(self) -> _MemoryData:
        if self._data.closed:
            raise StoreError("the memory store is closed")
        return self._data

    def _live(self, full: str) -> _Entry | None:
        return self._purged().entries.get(full)

    def _purged(self) -> _MemoryData:
        """The open data, without the keys whose time is up."""
        data = self._open()
        now = data.clock.now()
        while data.expiries and data.expiries[0][0] <= now:
            _, _, due = heapq.heappop(data.expiries)
            entry = data.entries.get(due)
            if entry is not None and entry.expires is not None and entry.expires <= now:
                del data.entries[due]
        return data

    def _put(self, full: str, value: bytes, ttl: float | None) -> None:
        data = self._purged()
        expires = None
        if ttl is not None:
            expires = data.clock.now() + timedelta(seconds=ttl)
            heapq.heappush(data.expiries, (expires, next(data.order), full))
        data.entries[full] = _Entry(value, expires)
        if len(data.expiries) > 64 + 2 * len(data.entries):
            # Keys set again and again with TTLs leave stale reminders behind; rebuild.
            data.expiries = [
                (e.expires, next(data.order), k)
                for k, e in data.entries.items()
                if e.expires is not None
            ]
            heapq.heapify(data.expiries)

    @staticmethod
    def _value(full: str, entry: _Entry) -> bytes:
        if isinstance(entry.value, list):
            raise StoreError(f"key {full!r} holds a log, not a value")
        return entry.value

    @staticmethod
    def _log(full: str, entry: _Entry) -> list[bytes]:
        if not isinstance(entry.value, list):
            raise StoreError(f"key {full!r} holds a value, not a log")
        return entry.value


# -- redis -----------------------------------------------------------------------


def _safe_url(url: str) -> str:
    """The URL with any password masked, fit for an error message."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            user = parts.username or ""
            host = netloc.rpartition("@")[2]
            netloc = f"{user}:***@{host}"
        query = urlencode(
            [
                (name, "***" if name.lower() == "password" else value)
                for name, value in parse_qsl(parts.query, keep_blank_values=True)
            ],
            safe="*",
        )
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "<unparseable URL>"


@dataclass
class _RedisShared:
    client: aioredis.Redis
    where: str
    retries: int = 0
    closed: bool = False


class RedisStore(_StoreBase):
    """A :class:`Store` in Redis, shared by every process that opens the same URL.

    Expiry is Redis's own (``PX``), so TTLs run in real time even when the
    harness runs on a virtual clock; keys meant to outlive a virtual jump
    should not rely on them. The client reconnects on its own after Redis
    restarts: a command that meets a broken connection is retried with
    exponential backoff, and only when every retry fails does it raise
    :class:`~harness.exceptions.StoreUnavailable`, naming the server (never
    its password). A command that changes data (``set_if_absent``,
    ``append``, ``incr``) is not sent again once its reply is overdue: the
    server may have applied it, and applying it twice would answer wrongly
    (a dedupe key found set by our own first try), so it raises instead.
    Each such failure is also noted as an outage of the scenario in
    progress (:mod:`harness.outages`), whoever catches the error.
    """

    def __init__(
        self, client: aioredis.Redis, *, namespace: str = "", where: str = "", retries: int = 0
    ) -> None:
        """Use ``client``; a command meeting a broken connection is tried ``retries`` more times."""
        self._shared = _RedisShared(client, where or repr(client), retries)
        self._namespace = namespace

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        namespace: str = "",
        retries: int = 6,
        connect_timeout: float = 2.0,
        timeout: float = 5.0,
        health_check_interval: int = 10,
    ) -> RedisStore:
        """Connect (lazily) to the Redis at a ``redis://``, ``rediss://`` or ``unix://`` URL.

        A dead server is reported after about ``retries`` backoff steps of
        up to a second each, plus ``connect_timeout`` per attempt when the
        host does not answer at all.
        """
        import redis.asyncio as aioredis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        where = _safe_url(url)
        if retries < 0 or not connect_timeout > 0 or not timeout > 0:
            raise ConfigError("retries must be 0 or more, and timeouts positive")
        scheme = urlsplit(url).scheme.lower()
        if scheme not in REDIS_SCHEMES:
            raise ConfigError(
                f"unsupported Redis URL {where!r}: expected redis://, rediss:// or unix://"
            )
        try:
            client = aioredis.Redis.from_url(
                url,
                # The store retries by itself (see _call): the client only drops a broken
                # connection, so that the next try opens a new one.
                retry=Retry(NoBackoff(), 0),
                retry_on_error=[RedisConnectionError, RedisTimeoutError],
                socket_connect_timeout=connect_timeout,
                socket_timeout=timeout,
                health_check_interval=health_check_interval,
            )
        except ValueError as exc:
            raise ConfigError(f"bad Redis URL {where!r}: {exc}") from None
        return cls(client, namespace=namespace, where=where, retries=retries)

    @classmethod
    def _view(cls, shared: _RedisShared, namespace: str) -> RedisStore:
        view = cls.__new__(cls)
        view._shared = shared
        view._namespace = namespace
        return view

    def __repr__(self) -> str:
        return f"RedisStore({self._shared.where!r}, namespace={self._namespace!r})"

    def with_namespace(self, namespace: str) -> RedisStore:
        """A view of the same Redis with ``namespace`` added under this store's own."""
        return self._view(self._shared, _join(self._namespace, namespace))

    @property
    def where(self) -> str:
        """The server's URL, its password masked."""
        return self._shared.where

    async def server_id(self) -> str | None:
        """The id of the server's current run (``INFO`` run_id), new each time Redis starts.

        None when the server does not say (a proxy in front of Redis, say).
        """
        try:
            info = await self._call("", lambda client: client.info("server"))
        except StoreUnavailable:
            raise
        except StoreError:  # INFO refused or renamed: the server keeps its id to itself
            return None
        run_id = info.get("run_id") if isinstance(info, dict) else None
        return None if run_id is None else str(run_id)

    async def ping(self) -> None:
        """Check that the server answers; raises StoreUnavailable when it doesn't."""
        await self._call("", lambda client: client.ping())

    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or None when it is missing or expired."""
        full = _join(self._namespace, key)
        value = await self._call(full, lambda client: client.get(full))
        # A client built with decode_responses=True hands back str; give bytes anyway.
        return None if value is None else _bytes(value)

    async def set(self, key: str, value: bytes | str, *, ttl: float | None = None) -> None:
        """Store ``value`` under ``key``, expiring after ``ttl`` seconds if given."""
        full, data, px = _join(self._namespace, key), _bytes(value), _px(ttl)
        await self._call(full, lambda client: client.set(full, data, px=px))

    async def set_if_absent(
        self, key: str, value: bytes | str, *, ttl: float | None = None
    ) -> bool:
        """Store ``value`` only if ``key`` holds nothing; True if it did (``SET NX``)."""
        full, data, px = _join(self._namespace, key), _bytes(value), _px(ttl)
        done = await self._call(
            full, lambda client: client.set(full, data, px=px, nx=True), changes=True
        )
        return bool(done)

    async def delete(self, key: str) -> None:
        """Remove ``key``, value or log; a missing key is fine."""
        full = _join(self._namespace, key)
        await self._call(full, lambda client: client.delete(full))

    async def append(self, key: str, value: bytes | str) -> int:
        """Add ``value`` to the end of the log at ``key``; returns the log's new length."""
        full, data = _join(self._namespace, key), _bytes(value)
        length: int = await self._call(full, lambda client: client.rpush(full, data), changes=True)
        return length

    async def read_log(self, key: str, start: int = 0, end: int | None = None) -> list[bytes]:
        """The log's entries ``start`` up to ``end`` (excluded), as a list slice would give."""
        if end == 0:
            return []
        full = _join(self._namespace, key)
        # LRANGE's stop is inclusive and counts from the end when negative,
        # so end - 1 is the same position as the slice's exclusive end.
        stop = -1 if end is None else end - 1
        entries = await self._call(full, lambda client: client.lrange(full, start, stop))
        return [_bytes(entry) for entry in entries]

    async def incr(self, key: str, amount: int = 1) -> int:
        """Add ``amount`` to the integer at ``key`` (missing counts as 0); keeps its expiry."""
        full = _join(self._namespace, key)
        result: int = await self._call(
            full, lambda client: client.incrby(full, amount), changes=True
        )
        return result

    async def execute(
        self, key: str, command: Callable[[aioredis.Redis], Awaitable[_T]], *, changes: bool = False
    ) -> _T:
        """Run ``command`` on the client for ``key`` (namespaced), retried as the class says."""
        return await self._call(_join(self._namespace, key), command, changes=changes)

    @property
    def client(self) -> aioredis.Redis:
        """The Redis client (for what the store has no method for: scripts, pub/sub)."""
        return self._shared.client

    async def close(self) -> None:
        """Close the connections; this store and its views refuse further use."""
        if not self._shared.closed:
            self._shared.closed = True
            await self._shared.client.aclose()

    async def _call(
        self,
        key: str,
        command: Callable[[aioredis.Redis], Awaitable[_T]],
        *,
        changes: bool = False,
    ) -> _T:
        """Run ``command``, trying again after a broken connection (see the class docstring)."""
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import RedisError, ResponseError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        shared = self._shared
        if shared.closed:
            raise StoreError(f"the Redis store for {shared.where} is closed")
        failures = 0
        try:
            with busy(f"Redis command on {key or 'the server'!r} at {shared.where}"):
                while True:
                    try:
                        return await command(shared.client)
                    except (RedisConnectionError, RedisTimeoutError) as exc:
                        failures += 1
                        overdue = changes and isinstance(exc, RedisTimeoutError)
                        # A scenario that met an outage has no verdict left to save: fail fast.
                        if failures > shared.retries or overdue or had_outage():
                            raise
                        await asyncio.sleep(_backoff(failures))
        except (RedisConnectionError, RedisTimeoutError) as exc:
            message = f"Redis at {shared.where} is unavailable: {exc}"
            if changes and isinstance(exc, RedisTimeoutError):
                message = (
                    f"Redis at {shared.where} did not answer in time, and a change to "
                    f"{key!r} may or may not have been made: {exc}"
                )
            raise StoreUnavailable(message, noted=note_outage(message)) from exc
        except ResponseError as exc:
            if str(exc).startswith("WRONGTYPE"):
                raise StoreError(
                    f"key {key!r} holds another kind of data (a log versus a value)"
                ) from exc
            raise StoreError(
                f"Redis at {shared.where} refused a command on {key!r}: {exc}"
            ) from exc
        except RedisError as exc:
            raise StoreError(f"Redis at {shared.where} failed on {key!r}: {exc}") from exc


def _px(ttl: float | None) -> int | None:
    ttl = _ttl(ttl)
    return None if ttl is None else max(1, math.ceil(ttl * 1000))


async def check_store(url: str | None, *, wait: float = 1.0) -> None:
    """Make sure the store ``url`` names answers, within about ``wait`` seconds.

    Raises :class:`~harness.exceptions.StoreUnavailable` (one line, naming
    the URL without its password) when it doesn't, so a run with a wrong
    URL stops at once instead of failing every scenario after retries.
    """
    if url is None or url.strip() == "memory://":
        return
    probe = RedisStore.from_url(url, retries=0, connect_timeout=wait, timeout=wait)
    try:
        await probe.get("harness:probe")
    finally:
        await probe.close()


def open_store(url: str | None, *, namespace: str = "", clock: Clock | None = None) -> Store:
    """The store a URL names: None or ``memory://`` for memory, a Redis URL for Redis.

    ``clock`` drives expiry in memory; Redis expires keys on its own clock.
    """
    if url is None or url.strip() == "memory://":
        return MemoryStore(namespace=namespace, clock=clock)
    if urlsplit(url).scheme.lower() in REDIS_SCHEMES:
        return RedisStore.from_url(url, namespace=namespace)
    raise ConfigError(
        f"unsupported store URL {_safe_url(url)!r}: "
        "expected memory://, redis://, rediss:// or unix://"
    )
