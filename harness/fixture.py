"""The fixture directory: one recorded conversation, written safely and read strictly.

Layout (schema version :data:`SCHEMA_VERSION`)::

    meta.json          FixtureMeta: schema version, scenario, agent, model, channel ...
    events.jsonl       channel events (harness.trace.Event), one a line, in order
    llm.jsonl          the LLM recorder's records
    tools.jsonl        the tool recorder's records
    spans.jsonl        OpenTelemetry-shaped spans with GenAI attributes (see make_span)
    users.jsonl        the simulated users' model exchanges (a stream apart from the agent's)
    conversation.json  the assembled trace (harness.trace.Conversation)
    media/             inbound media files, referred to as "media/<name>"

Logs are append-only, a compact JSON object a line, flushed as written: a
crash loses at most the line in flight, and the loader drops a torn last line
with a :class:`FixtureWarning`. JSON files are written to a temporary file and
renamed. Paths are relative, with forward slashes. All goes through
:class:`~harness.redaction.Redactor`, so secrets never land in a fixture.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import MappingProxyType, TracebackType
from typing import IO, Any, Final, Literal, TypeAlias, TypeVar, get_args

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from harness.canonical import parse_json
from harness.exceptions import (
    ConfigError,
    FixtureError,
    FixtureExists,
    FixtureFormatError,
    FixtureNotFound,
    SchemaVersionError,
)
from harness.files import write_atomic
from harness.redaction import Redactor
from harness.trace import EVENT_ADAPTER, Conversation, Event
from harness.version import VERSION

__all__ = [
    "CALL_LATENCY_ATTRIBUTE",
    "CONVERSATION_FILE",
    "LOG_FILES",
    "MEDIA_DIR",
    "META_FILE",
    "SCHEMA_VERSION",
    "VERDICTS_FILE",
    "Fixture",
    "FixtureMeta",
    "FixtureWarning",
    "FixtureWriter",
    "JsonlLine",
    "JsonlWriter",
    "LogName",
    "SpanKind",
    "SpanStatus",
    "load_fixture",
    "load_fixture_meta",
    "make_span",
    "read_jsonl",
]

#: The fixture schema this harness writes and reads.
SCHEMA_VERSION: Final = 1

META_FILE: Final = "meta.json"
CONVERSATION_FILE: Final = "conversation.json"
#: The judge's verdicts on the conversation, when it was judged (see ``harness.replay.judge``).
VERDICTS_FILE: Final = "verdicts.json"
MEDIA_DIR: Final = "media"

LogName: TypeAlias = Literal["events", "llm", "tools", "spans", "users"]
#: The file each log lives in.
LOG_FILES: Final[Mapping[LogName, str]] = MappingProxyType(
    {n: f"{n}.jsonl" for n in get_args(LogName)}
)

_T = TypeVar("_T")


class FixtureWarning(UserWarning):
    """Something in a fixture was skipped or repaired (a torn last line), but it still loads."""


def _harness_version() -> str:
    return VERSION


class FixtureMeta(BaseModel):
    """What ``meta.json`` holds: how and when the conversation was recorded.

    Unknown fields are kept (``extra="allow"``), so fields added without a
    schema bump survive a read-and-write; ``schema_version`` is checked
    before anything else is validated.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    schema_version: Literal[1] = SCHEMA_VERSION
    scenario: str
    channel: str
    recorded_at: AwareDatetime
    agent_version: str | None = None
    model: str | None = None
    harness_version: str = Field(default_factory=_harness_version)


# -- JSON lines ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JsonlLine:
    """One record of a JSONL log, with its 1-based line number for error messages."""

    number: int
    value: dict[str, Any]


def _parse_line(raw: bytes) -> dict[str, Any] | str:
    """The JSON object on one line, or why there is none."""
    try:
        value = parse_json(raw)
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start + 1}"
    except json.JSONDecodeError as exc:
        return f"invalid JSON: {exc.msg} (column {exc.colno})"
    if not isinstance(value, dict):
        return f"expected a JSON object, found {type(value).__name__}"
    return value


def _torn(path: Path, number: int, reason: str) -> None:
    message = f"{path}:{number}: torn last line dropped (no newline at end; {reason})"
    warnings.warn(message, FixtureWarning, stacklevel=3)


def read_jsonl(path: Path | str) -> list[JsonlLine]:
    """Every record of a JSONL log; a missing file is an empty log.

    A last line with no newline that does not parse was torn by a crash: it
    is dropped with a :class:`FixtureWarning` naming ``file:line``. Any other
    bad line raises :class:`FixtureFormatError` naming ``file:line``. Blank
    lines are skipped.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    *complete, tail = data.split(b"\n")  # tail: whatever follows the last newline
    records: list[JsonlLine] = []
    for number, raw in enumerate(complete, start=1):
        if not raw.strip():
            continue
        parsed = _parse_line(raw)
        if isinstance(parsed, str):
            raise FixtureFormatError(f"{path}:{number}: {parsed}", path=path, line=number)
        records.append(JsonlLine(number, parsed))
    if tail.strip():
        parsed = _parse_line(tail)
        if isinstance(parsed, str):
            _torn(path, len(complete) + 1, parsed)
        else:  # complete, only its newline was lost
            records.append(JsonlLine(len(complete) + 1, parsed))
    return records


def _jsonable(obj: BaseModel | Mapping[str, Any], redactor: Redactor | None) -> Any:
    value = to_jsonable_python(obj, by_alias=True)  # aliases, so the dump validates back
    return value if redactor is None else redactor(value)


def _dump_line(value: Any) -> bytes:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # Characters that str.splitlines() breaks on but json.dumps leaves raw.
    for char in ("\x85", "\u2028", "\u2029"):
        text = text.replace(char, f"\\u{ord(char):04x}")
    return (text + "\n").encode("utf-8")


def _repair_tail(path: Path) -> None:
    """Before appending to an existing log, end it with a newline, dropping a torn line."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    if not data or data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1
    with path.open("r+b") as f:
        parsed = _parse_line(data[cut:])
        if isinstance(parsed, str):
            f.truncate(cut)
            _torn(path, data.count(b"\n") + 1, parsed)
        else:
            f.seek(0, os.SEEK_END)
            f.write(b"\n")


class JsonlWriter:
    """Appends JSON objects to a JSONL log, one compact line each.

    Every line is written whole and flushed to the operating system before
    :meth:`append` returns, so a crashed process loses at most the line in
    flight. ``fsync=True`` also forces each line to disk, which survives a
    power cut too at the cost of speed. Appends are serialised by a lock, so
    threads and tasks of one event loop may share a writer. Reopening a log
    a crash left with a torn last line drops that line first.
    """

    def __init__(
        self, path: Path | str, *, fsync: bool = False, redactor: Redactor | None = None
    ) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._redactor = redactor
        self._lock = threading.Lock()
        _repair_tail(self.path)
        self._file: IO[bytes] | None = self.path.open("ab")

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has been called."""
        return self._file is None

    def append(self, obj: BaseModel | Mapping[str, Any]) -> None:
        """Write one record (a model, or a dict of JSON-able values) as one line, redacted."""
        value = _jsonable(obj, self._redactor)
        if not isinstance(value, dict):
            raise FixtureFormatError(
                f"{self.path}: a log line must be a JSON object, not {type(value).__name__}",
                path=self.path,
            )
        line = _dump_line(value)  # before taking the lock: a bad value writes nothing
        with self._lock:
            if self._file is None:
                raise FixtureError(f"{self.path}: the log is closed", path=self.path)
            self._file.write(line)
            self._file.flush()
            if self.fsync:
                os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file; closing twice is harmless."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# -- JSON files and paths ------------------------------------------------------------


def _write_json(target: Path, value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    write_atomic(target, text.encode("utf-8"))


def _read_json(path: Path) -> Any:
    try:
        return parse_json(path.read_bytes())
    except UnicodeDecodeError as exc:
        raise FixtureFormatError(
            f"{path}: invalid UTF-8 at byte {exc.start + 1}", path=path
        ) from None
    except json.JSONDecodeError as exc:
        raise FixtureFormatError(
            f"{path}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})",
            path=path,
            line=exc.lineno,
        ) from None


def _media_path(name: str) -> PurePosixPath:
    """``media/<name>``, refusing any name that could point outside the media folder."""
    rel = PurePosixPath(name)
    bad = (
        not rel.parts
        or rel.is_absolute()
        or ".." in rel.parts
        or any(c in name for c in "\\:")
        or any(ord(c) < 32 for c in name)
    )
    if bad:
        raise FixtureError(f"media name {name!r} must be a relative path inside {MEDIA_DIR}/")
    return PurePosixPath(MEDIA_DIR) / rel


def _describe(exc: ValidationError, limit: int = 3) -> str:
    """A validation error on one line: ``field: problem; field: problem``."""
    errors = exc.errors(include_url=False)
    parts = [f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in errors[:limit]]
    more = f" (and {len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more


# -- writing -------------------------------------------------------------------------


class FixtureWriter:
    """Records a conversation into a fixture directory.

    Creates the directory, writes ``meta.json`` at once and opens the logs
    (``users.jsonl`` on its first record). A directory holding a fixture is
    an error unless ``overwrite=True``, which removes that fixture's files
    (and nothing else). ``secrets`` (the run's app secret, tokens) are
    masked wherever they occur; ``fsync`` is passed to each
    :class:`JsonlWriter`. Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        path: Path | str,
        meta: FixtureMeta,
        *,
        overwrite: bool = False,
        fsync: bool = False,
        secrets: Iterable[str] = (),
    ) -> None:
        self.path = Path(path)
        self.meta = meta
        self._redactor = Redactor(secrets)
        if self.path.exists() and not self.path.is_dir():
            raise FixtureError(f"{self.path}: exists and is not a directory", path=self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        entries = [META_FILE, *LOG_FILES.values(), CONVERSATION_FILE, VERDICTS_FILE]
        present = [self.path / e for e in entries if (self.path / e).exists()]
        if (self.path / MEDIA_DIR).exists():
            present.append(self.path / MEDIA_DIR)
        if present and not overwrite:
            raise FixtureExists(self.path, present[0].name)
        for old in present:
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)
            else:
                old.unlink()
        _write_json(self.path / META_FILE, _jsonable(meta, self._redactor))
        self._fsync = fsync
        self._logs: dict[LogName, JsonlWriter] = {
            name: JsonlWriter(self.path / file, fsync=fsync, redactor=self._redactor)
            for name, file in LOG_FILES.items()
            if name != "users"
        }

    def append(self, log: LogName, obj: BaseModel | Mapping[str, Any]) -> None:
        """Append one record to a log (``events``, ``llm``, ``tools``, ``spans`` or ``users``)."""
        if log == "users" and log not in self._logs:
            path, fsync = self.path / LOG_FILES[log], self._fsync
            self._logs[log] = JsonlWriter(path, fsync=fsync, redactor=self._redactor)
        writer = self._logs.get(log)
        if writer is None:
            raise ConfigError(f"unknown log {log!r}; expected one of: {', '.join(LOG_FILES)}")
        writer.append(obj)

    def replace_log(self, log: LogName, records: Iterable[BaseModel | Mapping[str, Any]]) -> None:
        """Replace a log's lines with ``records`` at once (the old file stays until then)."""
        writer = self._logs.get(log)
        if writer is None:
            raise ConfigError(f"unknown log {log!r}; expected one of: {', '.join(LOG_FILES)}")
        lines = b"".join(_dump_line(_jsonable(r, self._redactor)) for r in records)
        writer.close()
        write_atomic(writer.path, lines)
        self._logs[log] = JsonlWriter(writer.path, fsync=writer.fsync, redactor=self._redactor)

    def write_conversation(self, conversation: Conversation | Mapping[str, Any]) -> None:
        """Write (or replace) ``conversation.json`` atomically."""
        _write_json(self.path / CONVERSATION_FILE, _jsonable(conversation, self._redactor))

    def add_media(self, name: str, data: bytes) -> str:
        """Store an inbound media file; returns its path to put in events (``media/<name>``).

        ``name`` may hold forward slashes for sub-folders, but must stay
        inside ``media/``. Adding the same bytes twice is harmless; other
        bytes under a name already used are an error.
        """
        rel = _media_path(name)
        target = self.path.joinpath(*rel.parts)
        if target.exists():
            if target.read_bytes() != data:
                raise FixtureError(f"{target}: already holds different media", path=target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, data)
        return rel.as_posix()

    def close(self) -> None:
        """Close the logs; closing twice is harmless."""
        for writer in self._logs.values():
            writer.close()

    def __enter__(self) -> FixtureWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# -- reading -------------------------------------------------------------------------


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


@dataclass(frozen=True)
class Fixture:
    """A loaded fixture: its metadata, validated events, raw logs and conversation.

    ``conversation`` is None when the recording never got that far. The
    recorders' logs stay raw until :meth:`records` validates them with the
    caller's model, so this module needs no knowledge of their shape.
    """

    path: Path
    meta: FixtureMeta
    events: tuple[Event, ...]
    conversation: Conversation | None
    lines: Mapping[LogName, tuple[JsonlLine, ...]]

    def raw(self, log: LogName) -> list[dict[str, Any]]:
        """The records of one log as plain dicts, in order."""
        return [line.value for line in self._lines(log)]

    def records(self, log: LogName, schema: type[_T] | TypeAdapter[_T]) -> list[_T]:
        """The records of one log validated as ``schema`` (a model class or a TypeAdapter).

        A record that does not validate raises :class:`FixtureFormatError`
        naming ``file:line`` and the field.
        """
        if isinstance(schema, TypeAdapter):
            adapter: TypeAdapter[Any] = schema
        else:  # one adapter per model, kept: building one costs more than the reads
            adapter = _ADAPTERS.get(schema) or _ADAPTERS.setdefault(schema, TypeAdapter(schema))
        return _validate_lines(self.path / LOG_FILES[log], self._lines(log), adapter)

    def media_path(self, relative: str) -> Path:
        """The file behind a stored media path such as ``media/123.jpg``."""
        rel = PurePosixPath(relative)
        if not rel.parts or rel.parts[0] != MEDIA_DIR:
            raise FixtureError(f"{relative!r} is not a path inside {MEDIA_DIR}/", path=self.path)
        return self.path.joinpath(*_media_path("/".join(rel.parts[1:])).parts)

    def _lines(self, log: LogName) -> tuple[JsonlLine, ...]:
        if log not in self.lines:
            raise ConfigError(f"unknown log {log!r}; expected one of: {', '.join(LOG_FILES)}")
        return self.lines[log]


def _validate_lines(path: Path, lines: Iterable[JsonlLine], adapter: TypeAdapter[_T]) -> list[_T]:
    out: list[_T] = []
    for line in lines:
        try:
            out.append(adapter.validate_python(line.value))
        except ValidationError as exc:
            message = f"{path}:{line.number}: invalid record: {_describe(exc)}"
            raise FixtureFormatError(message, path=path, line=line.number) from None
    return out


def load_fixture_meta(path: Path | str) -> FixtureMeta:
    """Read only a fixture's ``meta.json`` (errors as :func:`load_fixture` gives them)."""
    root = Path(path)
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "not found"
        raise FixtureNotFound(f"fixture directory {what}: {root}", path=root)
    path = root / META_FILE
    if not path.is_file():
        raise FixtureNotFound(f"{path}: not found (is {root} a fixture?)", path=path)
    data = _read_json(path)
    if not isinstance(data, dict):
        raise FixtureFormatError(f"{path}: expected a JSON object", path=path)
    found = data.get("schema_version")
    if type(found) is not int or found != SCHEMA_VERSION:
        what = (
            "no schema_version"
            if found is None
            else f"schema version {found if type(found) is int else repr(found)} is not supported"
        )
        raise SchemaVersionError(
            f"{path}: {what} (this harness reads version {SCHEMA_VERSION})",
            path=path,
            found=found,
            supported=SCHEMA_VERSION,
        )
    try:
        return FixtureMeta.model_validate(data)
    except ValidationError as exc:
        raise FixtureFormatError(f"{path}: invalid meta: {_describe(exc)}", path=path) from None


def load_fixture(path: Path | str) -> Fixture:
    """Read a fixture directory: meta first (and its schema version), then the logs.

    Errors are one line each: :class:`FixtureNotFound` for a missing
    directory, :class:`SchemaVersionError` for another schema, and
    :class:`FixtureFormatError` with ``file:line`` for bad content. Missing
    logs are empty; a missing ``conversation.json`` gives ``None``.
    """
    root = Path(path)
    meta = load_fixture_meta(root)
    lines = {name: tuple(read_jsonl(root / file)) for name, file in LOG_FILES.items()}
    events = _validate_lines(root / LOG_FILES["events"], lines["events"], EVENT_ADAPTER)
    conversation = None
    conversation_path = root / CONVERSATION_FILE
    if conversation_path.exists():
        try:
            conversation = Conversation.model_validate(_read_json(conversation_path))
        except ValidationError as exc:
            message = f"{conversation_path}: invalid conversation: {_describe(exc)}"
            raise FixtureFormatError(message, path=conversation_path) from None
    return Fixture(root, meta, tuple(events), conversation, MappingProxyType(lines))


# -- spans ---------------------------------------------------------------------------

#: The span attribute with how long a call the agent made through a recording proxy took,
#: in milliseconds (a replay makes the same call take as long).
CALL_LATENCY_ATTRIBUTE: Final = "harness.proxy.latency_ms"

SpanStatus: TypeAlias = Literal["UNSET", "OK", "ERROR"]
SpanKind: TypeAlias = Literal["INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"]
_ATTRIBUTE_TYPES = (str, bool, int, float)


def _check_id(what: str, value: str, digits: int) -> None:
    ok = len(value) == digits and all(c in "0123456789abcdef" for c in value)
    if not ok or value == "0" * digits:
        raise ConfigError(f"{what} must be {digits} lowercase hex digits, not all zero: {value!r}")


def make_span(
    name: str,
    *,
    trace_id: str,
    span_id: str,
    start_time_unix_nano: int,
    end_time_unix_nano: int,
    parent_span_id: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    status: SpanStatus = "UNSET",
    status_message: str = "",
    kind: SpanKind = "INTERNAL",
) -> dict[str, Any]:
    """One OpenTelemetry-shaped span, as a ``spans.jsonl`` line.

    Attribute names follow the GenAI semantic conventions where they apply
    (``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` ...); values are
    strings, booleans, numbers or lists of one of those, as OpenTelemetry
    allows. Raises :class:`ConfigError` for bad ids, times or attributes.
    """
    _check_id("trace_id", trace_id, 32)
    _check_id("span_id", span_id, 16)
    if parent_span_id is not None:
        _check_id("parent_span_id", parent_span_id, 16)
    if not 0 <= start_time_unix_nano <= end_time_unix_nano:
        raise ConfigError(f"span {name!r} ends before it starts, or starts before 1970")
    attrs: dict[str, Any] = {}
    for key, value in (attributes or {}).items():
        items = value if isinstance(value, list | tuple) else [value]
        kinds = {type(v) for v in items}
        if len(kinds) > 1 or not all(isinstance(v, _ATTRIBUTE_TYPES) for v in items):
            raise ConfigError(f"span attribute {key!r} is not an OpenTelemetry value: {value!r}")
        attrs[key] = list(value) if isinstance(value, list | tuple) else value
    return {
        "name": name,
        "trace_id": trace_id,
        "span_id": span_id,
        "parent_span_id": parent_span_id,
        "kind": kind,
        "start_time_unix_nano": start_time_unix_nano,
        "end_time_unix_nano": end_time_unix_nano,
        "attributes": attrs,
        "status": {"code": status, "message": status_message},
    }
