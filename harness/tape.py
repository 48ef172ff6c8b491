"""The tape both recorders play: recorded answers by key, served once each, in recorded order.

Also what else both recorders share: the mode they run in (:class:`RecordMode`, from
:mod:`harness.record_mode`),
what a replay does on a miss (:data:`OnMiss`), the log of this run's records
in call order, and the :class:`~harness.exceptions.Divergence` that names
the nearest recorded call when a replayed one was never recorded.
"""

from __future__ import annotations

import bisect
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable
from datetime import UTC, datetime
from operator import itemgetter
from typing import Generic, Literal, Protocol, TypeAlias, TypeVar

from harness.divergence import Parts
from harness.exceptions import ConfigError, Divergence
from harness.record_mode import RecordMode as RecordMode  # where the recorders' users look
from harness.records import LLMRecord, ToolRecord
from harness.trace import Event

__all__ = ["OnMiss", "Sink"]

#: What a replay does with a call it has no recording for.
OnMiss: TypeAlias = Literal["raise", "live"]
_ON_MISS: tuple[OnMiss, ...] = ("raise", "live")

#: Receives one trace event per call (an LLM exchange or a tool call).
Sink: TypeAlias = Callable[[Event], None]

_MAX_LISTED = 4


def _parse_on_miss(value: str) -> OnMiss:
    for choice in _ON_MISS:
        if value == choice:
            return choice
    raise ConfigError(f"invalid on_miss {value!r}; valid values: {', '.join(_ON_MISS)}")


class _Clock(Protocol):
    def now(self) -> datetime: ...


class _UTCClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


_R = TypeVar("_R", LLMRecord, ToolRecord)
_T = TypeVar("_T")
_A = TypeVar("_A")


class _Tape(Generic[_R, _A]):
    """Recorded answers by key, each served once, in recorded order.

    A replay asks one key after another of a recording that may hold a hundred
    thousand, spread over a large heap: each lookup touches the key's slot in
    one dict and the small tuple waiting there, which holds what the recorder
    serves (``answer`` of the record, worked out when it is added), and nothing
    else: no list indexed by position, no play count, not even the record. So
    its cost stays flat as the recording grows. Which records were served is
    worked out from what is still waiting, when a report or a miss asks. The
    index used to find the nearest record on a miss is built on the first miss.
    """

    def __init__(
        self,
        records: Iterable[_R],
        parts: Callable[[_R], Parts],
        answer: Callable[[_R], _A],
    ) -> None:
        self._parts: Callable[[_R], Parts] = parts
        self._answer: Callable[[_R], _A] = answer
        self.records: list[_R] = []
        # A key recorded once maps to its (position, answer); only a key asked several
        # times needs a queue. Most keys are asked once, and a plain tuple keeps a large
        # recording small and the lookup flat.
        self._queues: dict[str, tuple[int, _A] | deque[tuple[int, _A]]] = {}
        self._counts: Counter[str] = Counter()
        self._index: dict[Hashable, list[int]] | None = None
        for record in records:
            self.add(record, played=False)

    def add(self, record: _R, *, played: bool) -> None:
        position = len(self.records)
        self.records.append(record)
        self._counts[record.key] += 1
        if not played:
            entry = (position, self._answer(record))
            waiting = self._queues.get(record.key)
            if waiting is None:
                self._queues[record.key] = entry
            elif isinstance(waiting, tuple):
                self._queues[record.key] = deque((waiting, entry))
            else:
                waiting.append(entry)
        if self._index is not None:
            for part in self._parts(record):
                self._index.setdefault(part, []).append(position)

    def take(self, key: str) -> _A | None:
        """The answer of the next record waiting under ``key``, now served; None if none."""
        waiting = self._queues.get(key)
        if waiting is None:
            return None
        if isinstance(waiting, tuple):
            del self._queues[key]
            return waiting[1]
        _, answer = waiting.popleft()
        if not waiting:
            del self._queues[key]
        return answer

    def take_first(self, matches: Callable[[int, _R], bool]) -> tuple[int, _A] | None:
        """The first waiting record, in recorded order, that ``matches``: its place and answer.

        The record is served. It walks every waiting record, so it is for the rare lookup a key
        could not answer, never the usual one.
        """
        for position in sorted(self.waiting()):
            record = self.records[position]
            if matches(position, record):
                # Records under one key wait in recorded order: the first is this one.
                answer = self.take(record.key)
                assert answer is not None  # it was waiting
                return position, answer
        return None

    def count(self, key: str) -> int:
        return self._counts[key]

    def waiting(self) -> set[int]:
        """The positions of the records not served yet."""
        found: set[int] = set()
        for waiting in self._queues.values():
            if isinstance(waiting, tuple):
                found.add(waiting[0])
            else:
                found.update(position for position, _ in waiting)
        return found

    def unused(self) -> list[tuple[int, _R]]:
        return [(i, self.records[i]) for i in sorted(self.waiting())]

    def nearest(self, parts: Parts) -> tuple[int, _R] | None:
        """The record sharing the most (weighted) parts; unused and earlier ones win ties."""
        if not self.records:
            return None
        if self._index is None:
            self._index = {}
            for position, record in enumerate(self.records):
                for part in self._parts(record):
                    self._index.setdefault(part, []).append(position)
        waiting = self.waiting()
        scores: Counter[int] = Counter()
        for part, weight in parts.items():
            for position in self._index.get(part, ()):
                scores[position] += weight
        if not scores:
            best = min(waiting, default=0)
        else:
            best = max(scores, key=lambda i: (scores[i], i in waiting, -i))
        return best, self.records[best]


class _Log(Generic[_T]):
    """What a recorder recorded this run, kept in the order the calls were made."""

    def __init__(self) -> None:
        self._next = 0
        self._items: list[tuple[int, _T]] = []

    def reserve(self) -> int:
        """A place in call order, taken before awaiting so concurrent calls stay ordered."""
        self._next += 1
        return self._next

    def put(self, seq: int, item: _T) -> None:
        bisect.insort(self._items, (seq, item), key=itemgetter(0))

    def items(self) -> list[_T]:
        return [item for _, item in self._items]


class _Recorder(Generic[_R, _T, _A]):
    """What both recorders share: mode, miss policy, tape, log, clock and sink."""

    _noun = "call"

    def __init__(
        self,
        mode: RecordMode | str,
        records: Iterable[_R],
        on_miss: str,
        sink: Sink | None,
        clock: _Clock | None,
        on_record: Callable[[_R], None] | None,
    ) -> None:
        self.mode = RecordMode.parse(mode)
        self.on_miss: OnMiss = _parse_on_miss(on_miss)
        self._tape: _Tape[_R, _A] = _Tape(records, self._parts, self._answer)
        self._loaded = len(self._tape.records)
        self._log: _Log[_T] = _Log()
        self._sink = sink
        self._clock: _Clock = _UTCClock() if clock is None else clock
        self._on_record: Callable[[_R], None] | None = on_record

    def load(self, records: Iterable[_R]) -> None:
        """Add recorded answers to serve (a replica of an agent fetching them from a store)."""
        for record in records:
            self._tape.add(record, played=False)
            self._loaded += 1

    def _parts(self, record: _R) -> Parts:
        raise NotImplementedError

    def _answer(self, record: _R) -> _A:
        """What a replay serves of ``record`` (kept in the tape, so serving reads nothing else)."""
        raise NotImplementedError

    def _materialize(self, item: _T) -> _R:
        raise NotImplementedError

    def _describe(self, record: _R) -> str:
        raise NotImplementedError

    @property
    def records(self) -> list[_R]:
        """Every record: those loaded for replay, then this run's, in call order."""
        return self._tape.records[: self._loaded] + self.new_records

    @property
    def new_records(self) -> list[_R]:
        """The records made in this run (live calls), in call order: what to append to a fixture."""
        return [self._materialize(item) for item in self._log.items()]

    def unused(self) -> list[_R]:
        """Loaded records that were never served."""
        return [record for _, record in self._tape.unused()]

    @property
    def all_played(self) -> bool:
        """True when every loaded record was served."""
        return not self._tape.unused()

    def report(self) -> str:
        """A few lines saying what was served, what went live, and what was never used."""
        unused = self._tape.unused()
        served = self._loaded - sum(1 for i, _ in unused if i < self._loaded)
        lines = [
            f"{type(self).__name__} ({self.mode.value}): {self._loaded} recorded {self._noun}s "
            f"loaded, {served} served, {len(unused)} unused; {len(self._log.items())} recorded "
            "this run"
        ]
        lines += [f"  unused #{i + 1}: {self._describe(record)}" for i, record in unused]
        return "\n".join(lines)

    def _keep(self, seq: int, item: _T) -> None:
        """File a record made this run; replay also marks it served, for the report."""
        self._log.put(seq, item)
        if self.mode is RecordMode.REPLAY or self._on_record is not None:
            record = self._materialize(item)
            if self.mode is RecordMode.REPLAY:
                self._tape.add(record, played=True)
            if self._on_record is not None:
                self._on_record(record)

    def _emit(self, event: Event) -> None:
        if self._sink is not None:
            self._sink(event)

    def _diverged(
        self,
        key: str,
        parts: Parts,
        differ: Callable[[_R], list[str]],
    ) -> Divergence:
        recorded = self._tape.count(key)
        if recorded:
            difference = f"asked {recorded + 1} times, recorded {recorded}"
            return Divergence(
                f"replay diverged: {self._noun} {difference} (key {key[:12]})",
                key=key,
                differences=(difference,),
            )
        found = self._tape.nearest(parts)
        if found is None:
            difference = f"nothing recorded: this recorder holds no {self._noun}s"
            return Divergence(
                f"replay diverged: {difference} (key {key[:12]})",
                key=key,
                differences=(difference,),
            )
        position, record = found
        differences = tuple(differ(record)) or ("differs in a way not itemised",)
        shown = "; ".join(differences[:_MAX_LISTED])
        if len(differences) > _MAX_LISTED:
            shown += f"; and {len(differences) - _MAX_LISTED} more"
        used = "unused" if position in self._tape.waiting() else "already served"
        return Divergence(
            f"replay diverged: {shown} (against recorded {self._noun} #{position + 1} of "
            f"{len(self._tape.records)}, {used}; key {key[:12]})",
            key=key,
            differences=differences,
        )
