"""Fixture directories: layout, append-only logs that survive crashes, strict loading."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, TypeAdapter

import harness
import harness.fixture
from harness.exceptions import (
    ConfigError,
    FixtureError,
    FixtureFormatError,
    FixtureNotFound,
    SchemaVersionError,
)
from harness.fixture import (
    LOG_FILES,
    SCHEMA_VERSION,
    FixtureMeta,
    FixtureWarning,
    FixtureWriter,
    JsonlWriter,
    load_fixture,
    make_span,
    read_jsonl,
)
from harness.redaction import REDACTED
from harness.trace import (
    ClockJump,
    Conversation,
    InboundMessage,
    LLMExchange,
    OutboundSend,
    ToolCall,
)

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"


def make_meta(**extra: Any) -> FixtureMeta:
    return FixtureMeta(
        scenario="booking-happy-path",
        channel="whatsapp",
        recorded_at=T0,
        agent_version="1.2.3",
        model="claude-sonnet-4-5",
        **extra,
    )


def sample_events() -> list[InboundMessage | OutboundSend | ToolCall | LLMExchange | ClockJump]:
    return [
        InboundMessage(
            at=T0, user="15550001", wamid="wamid.1", type="text", text="Olá, table for 2"
        ),
        LLMExchange(at=T0, user="15550001", key="ab" * 32, model="m", input_tokens=10),
        ToolCall(at=T0, user="15550001", name="book", args={"party": 2}, side_effect=True),
        OutboundSend(at=T0, user="15550001", type="text", text="Booked!", wamid="wamid.2"),
        ClockJump(at=T0 + timedelta(hours=25), previous=T0, reason="skew"),
    ]


class LLMRecord(BaseModel):
    """Stands in for the recorder's model: the fixture module must not need to know it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    response: dict[str, Any]


def test_all_is_sorted() -> None:
    # isort order, as ruff keeps it: CONSTANTS, then Classes, then functions.
    names = harness.fixture.__all__
    assert names == sorted(names, key=lambda n: (not n.isupper(), not n[0].isupper(), n))


# -- layout and round trip ---------------------------------------------------------------


def test_round_trip_of_every_part(tmp_path: Path) -> None:
    path = tmp_path / "fx"
    events = sample_events()
    conversation = Conversation.from_events(events, id="c1", scenario="booking", channel="wa")
    span = make_span(
        "chat claude",
        trace_id=TRACE_ID,
        span_id=SPAN_ID,
        start_time_unix_nano=1,
        end_time_unix_nano=2,
        attributes={"gen_ai.system": "anthropic", "gen_ai.usage.input_tokens": 10},
        kind="CLIENT",
    )
    with FixtureWriter(path, make_meta(region="eu")) as writer:
        for event in events:
            writer.append("events", event)
        writer.append("llm", LLMRecord(key="k1", response={"stop_reason": "end_turn"}))
        writer.append("tools", {"name": "book", "args": {"party": 2}, "result": "ok"})
        writer.append("spans", span)
        writer.write_conversation(conversation)

    assert sorted(p.name for p in path.iterdir()) == [
        "conversation.json",
        "events.jsonl",
        "llm.jsonl",
        "meta.json",
        "spans.jsonl",
        "tools.jsonl",
    ]
    fixture = load_fixture(path)
    assert fixture.path == path
    assert fixture.meta == make_meta(region="eu")
    assert fixture.meta.model_extra == {"region": "eu"}
    assert fixture.meta.schema_version == SCHEMA_VERSION == 1
    assert list(fixture.events) == events
    assert fixture.conversation == conversation
    assert fixture.records("llm", LLMRecord) == [
        LLMRecord(key="k1", response={"stop_reason": "end_turn"})
    ]
    assert fixture.raw("tools") == [{"name": "book", "args": {"party": 2}, "result": "ok"}]
    assert fixture.raw("spans") == [span]


def test_meta_is_written_first_and_defaults_the_harness_version(tmp_path: Path) -> None:
    with FixtureWriter(tmp_path / "fx", make_meta()):
        meta = json.loads((tmp_path / "fx" / "meta.json").read_text())
    assert meta["schema_version"] == 1
    assert meta["harness_version"] == harness.__version__
    assert meta["recorded_at"] == "2026-01-01T09:00:00Z"


def test_logs_are_compact_one_line_per_record(tmp_path: Path) -> None:
    with FixtureWriter(tmp_path / "fx", make_meta()) as writer:
        writer.append("tools", {"text": "a\nb\u2028c", "name": "Olá 👋", "n": 1})
        writer.append("tools", {"n": 2})
    text = (tmp_path / "fx" / "tools.jsonl").read_text(encoding="utf-8")
    assert text == '{"text":"a\\nb\\u2028c","name":"Olá 👋","n":1}\n{"n":2}\n'
    assert len(text.splitlines()) == 2


def test_records_are_on_disk_as_soon_as_appended(tmp_path: Path) -> None:
    writer = FixtureWriter(tmp_path / "fx", make_meta())
    writer.append("events", sample_events()[0])
    # Not closed: another process reading now must see the line.
    assert [line.value["wamid"] for line in read_jsonl(tmp_path / "fx" / "events.jsonl")] == [
        "wamid.1"
    ]
    writer.close()
    writer.close()


def test_a_log_replaced_at_once_keeps_taking_appends(tmp_path: Path) -> None:
    with FixtureWriter(tmp_path / "fx", make_meta(), secrets=["a-token-long-enough-1"]) as writer:
        writer.append("tools", {"n": 1})
        writer.append("tools", {"n": 2})
        writer.replace_log("tools", [{"n": 3, "t": "a-token-long-enough-1"}])
        writer.append("tools", {"n": 4})
        with pytest.raises(ConfigError, match="unknown log"):
            writer.replace_log("nope", [])  # type: ignore[arg-type]  # the error is the point
    lines = [line.value for line in read_jsonl(tmp_path / "fx" / "tools.jsonl")]
    assert lines == [{"n": 3, "t": REDACTED}, {"n": 4}]


def test_fsync_forces_every_line_to_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)  # the only way to observe a real fsync
    with JsonlWriter(tmp_path / "lazy.jsonl") as lazy:
        lazy.append({"n": 1})
    assert synced == []
    with JsonlWriter(tmp_path / "safe.jsonl", fsync=True) as safe:
        safe.append({"n": 1})
        safe.append({"n": 2})
    assert len(synced) == 2
    assert [r.value for r in read_jsonl(tmp_path / "safe.jsonl")] == [{"n": 1}, {"n": 2}]


def test_json_files_are_replaced_atomically(tmp_path: Path) -> None:
    path = tmp_path / "fx"
    with FixtureWriter(path, make_meta()) as writer:
        writer.write_conversation(Conversation(id="first"))
        writer.write_conversation(Conversation(id="second"))
    assert [p.name for p in path.iterdir() if p.name.startswith(".")] == []  # no temp files left
    assert json.loads((path / "conversation.json").read_text())["id"] == "second"
    assert (path / "meta.json").read_text().endswith("}\n")


def test_unknown_log_names_the_valid_ones(tmp_path: Path) -> None:
    writer = FixtureWriter(tmp_path / "fx", make_meta())
    with pytest.raises(ConfigError, match="'evnets'; expected one of: events, llm, tools, spans"):
        writer.append("evnets", {"n": 1})  # type: ignore[arg-type]  # the mistake under test
    writer.close()


def test_a_line_that_is_not_an_object_writes_nothing(tmp_path: Path) -> None:
    with JsonlWriter(tmp_path / "log.jsonl") as writer:
        with pytest.raises(FixtureFormatError, match="must be a JSON object, not list"):
            writer.append([1, 2])  # type: ignore[arg-type]  # the mistake under test
        with pytest.raises(ValueError, match="Out of range float"):
            writer.append({"x": float("nan")})
    assert (tmp_path / "log.jsonl").read_bytes() == b""


def test_appending_after_close_fails(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path / "log.jsonl")
    writer.close()
    assert writer.closed
    with pytest.raises(FixtureError, match="log is closed"):
        writer.append({"n": 1})


def test_existing_fixture_is_kept_unless_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "fx"
    with FixtureWriter(path, make_meta()) as writer:
        writer.append("events", sample_events()[0])
        writer.add_media("a.jpg", b"jpg")
    (path / "NOTES.md").write_text("mine")
    with pytest.raises(FixtureError, match=r"already holds a fixture .*overwrite=True"):
        FixtureWriter(path, make_meta())
    assert len(load_fixture(path).events) == 1

    with FixtureWriter(path, make_meta(), overwrite=True):
        pass
    assert load_fixture(path).events == ()
    assert not (path / "media").exists()
    assert (path / "NOTES.md").read_text() == "mine"


def test_an_empty_existing_directory_is_fine(tmp_path: Path) -> None:
    with FixtureWriter(tmp_path, make_meta()):
        pass
    assert load_fixture(tmp_path).meta.scenario == "booking-happy-path"


def test_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    with JsonlWriter(tmp_path / "log.jsonl") as writer:

        def work(thread: int) -> None:
            for i in range(200):
                writer.append({"thread": thread, "i": i, "pad": "x" * 500})

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    lines = read_jsonl(tmp_path / "log.jsonl")
    assert len(lines) == 800
    for thread in range(4):
        assert [r.value["i"] for r in lines if r.value["thread"] == thread] == list(range(200))


# -- redaction at write time -------------------------------------------------------------


def test_secrets_never_land_in_a_fixture(tmp_path: Path) -> None:
    path = tmp_path / "fx"
    app_secret, token = "appsecret0123456789", "EAAGtoken987654321"
    send = OutboundSend(
        at=T0,
        user="15550001",
        type="text",
        text=f"debug: {token}",
        request={
            "headers": {"Authorization": f"Bearer {token}"},
            "url": f"https://graph.facebook.com/v21.0/1/messages?access_token={token}",
        },
    )
    with FixtureWriter(path, make_meta(app_secret=app_secret), secrets=[app_secret, token]) as w:
        w.append("events", send)
        w.append(
            "llm",
            {
                "headers": {"x-api-key": "sk-ant-1"},
                "usage": {"input_tokens": 7, "output_tokens": 9},
            },
        )
        w.append(
            "spans",
            make_span(
                "chat",
                trace_id=TRACE_ID,
                span_id=SPAN_ID,
                start_time_unix_nano=0,
                end_time_unix_nano=5,
                attributes={"gen_ai.usage.input_tokens": 7, "gen_ai.request.max_tokens": 512},
            ),
        )
        w.write_conversation(Conversation.from_events([send], id="c"))

    for file in path.iterdir():
        text = file.read_text(encoding="utf-8")
        for secret in (app_secret, token, "sk-ant-1"):
            assert secret not in text, f"{secret} leaked into {file.name}"
    fixture = load_fixture(path)
    assert fixture.meta.model_extra == {"app_secret": REDACTED}
    event = fixture.events[0]
    assert isinstance(event, OutboundSend)
    assert event.request["headers"] == {"Authorization": REDACTED}
    assert event.text == f"debug: {REDACTED}"
    assert fixture.raw("llm")[0]["usage"] == {"input_tokens": 7, "output_tokens": 9}
    assert fixture.raw("spans")[0]["attributes"] == {
        "gen_ai.usage.input_tokens": 7,
        "gen_ai.request.max_tokens": 512,
    }


# -- media and relative paths ------------------------------------------------------------


def test_media_is_stored_under_a_relative_forward_slash_path(tmp_path: Path) -> None:
    path = tmp_path / "fx"
    with FixtureWriter(path, make_meta()) as writer:
        rel = writer.add_media("photos/2026/123.jpg", b"\xff\xd8jpeg")
        assert writer.add_media("photos/2026/123.jpg", b"\xff\xd8jpeg") == rel  # idempotent
        with pytest.raises(FixtureError, match="already holds different media"):
            writer.add_media("photos/2026/123.jpg", b"other")
        writer.append(
            "events", {**sample_events()[0].model_dump(mode="json"), "body": {"path": rel}}
        )
    assert rel == "media/photos/2026/123.jpg"
    assert (path / "media" / "photos" / "2026" / "123.jpg").read_bytes() == b"\xff\xd8jpeg"
    fixture = load_fixture(path)
    event = fixture.events[0]
    assert isinstance(event, InboundMessage)
    assert event.body == {"path": "media/photos/2026/123.jpg"}
    assert fixture.media_path(str(event.body["path"])).read_bytes() == b"\xff\xd8jpeg"


@pytest.mark.parametrize(
    "name",
    ["", ".", "../escape.jpg", "a/../../b.jpg", "/etc/passwd", "a\\b.jpg", "C:x.jpg", "a\nb"],
)
def test_media_names_cannot_escape(tmp_path: Path, name: str) -> None:
    writer = FixtureWriter(tmp_path / "fx", make_meta())
    with pytest.raises(FixtureError, match="must be a relative path inside media/"):
        writer.add_media(name, b"x")
    writer.close()
    assert not (tmp_path / "escape.jpg").exists()


@pytest.mark.parametrize("stored", ["meta.json", "media/../meta.json", "/media/x", "media"])
def test_stored_media_paths_must_point_into_media(tmp_path: Path, stored: str) -> None:
    with FixtureWriter(tmp_path / "fx", make_meta()):
        pass
    with pytest.raises(FixtureError):
        load_fixture(tmp_path / "fx").media_path(stored)


# -- loading errors ----------------------------------------------------------------------


def write_fixture(path: Path, events: str = "", meta: dict[str, Any] | None = None) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if meta is None:
        meta = make_meta().model_dump(mode="json")
    (path / "meta.json").write_text(json.dumps(meta))
    (path / "events.jsonl").write_text(events)


def event_line(wamid: str) -> str:
    event = InboundMessage(at=T0, user="u", wamid=wamid, type="text", text="hi")
    return event.model_dump_json() + "\n"


def test_missing_directory(tmp_path: Path) -> None:
    path = tmp_path / "nope"
    with pytest.raises(FixtureNotFound) as info:
        load_fixture(path)
    assert str(info.value) == f"fixture directory not found: {path}"
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.path == path


def test_a_file_is_not_a_fixture_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(FixtureNotFound, match="fixture directory is not a directory"):
        load_fixture(tmp_path / "file")


def test_missing_meta(tmp_path: Path) -> None:
    with pytest.raises(FixtureNotFound, match=r"meta\.json: not found"):
        load_fixture(tmp_path)


def test_unknown_schema_version_is_checked_before_anything_else(tmp_path: Path) -> None:
    path = tmp_path / "fx"
    write_fixture(path, events="garbage\n", meta={"schema_version": 7, "whatever": []})
    with pytest.raises(SchemaVersionError) as info:
        load_fixture(path)
    assert str(info.value) == (
        f"{path}/meta.json: schema version 7 is not supported (this harness reads version 1)"
    )
    assert (info.value.found, info.value.supported) == (7, 1)
    assert info.value.path == path / "meta.json"


@pytest.mark.parametrize(
    ("meta", "said"),
    [
        ({"scenario": "x"}, "no schema_version"),
        ({"schema_version": "1"}, "schema version '1' is not supported"),
        ({"schema_version": True}, "schema version True is not supported"),
    ],
)
def test_missing_or_mistyped_schema_version(
    tmp_path: Path, meta: dict[str, Any], said: str
) -> None:
    write_fixture(tmp_path, meta=meta)
    with pytest.raises(SchemaVersionError, match=f"{said} \\(this harness reads version 1\\)"):
        load_fixture(tmp_path)


def test_invalid_meta_json_names_file_and_line(tmp_path: Path) -> None:
    write_fixture(tmp_path)
    (tmp_path / "meta.json").write_text('{\n  "schema_version": 1,\n  "scenario": oops\n}')
    with pytest.raises(FixtureFormatError) as info:
        load_fixture(tmp_path)
    assert str(info.value).startswith(f"{tmp_path}/meta.json:3: invalid JSON: Expecting value")
    assert info.value.line == 3


def test_invalid_meta_fields_name_the_field(tmp_path: Path) -> None:
    write_fixture(tmp_path, meta={"schema_version": 1, "scenario": "s", "channel": "wa"})
    with pytest.raises(
        FixtureFormatError, match=r"meta\.json: invalid meta: recorded_at: Field required"
    ):
        load_fixture(tmp_path)


def test_invalid_json_in_the_middle_of_a_log_names_file_and_line(tmp_path: Path) -> None:
    write_fixture(tmp_path, events=event_line("w1") + '{"kind": "inbound",\n' + event_line("w3"))
    with pytest.raises(FixtureFormatError) as info:
        load_fixture(tmp_path)
    assert str(info.value).startswith(f"{tmp_path}/events.jsonl:2: invalid JSON: ")
    assert info.value.line == 2
    assert info.value.path == tmp_path / "events.jsonl"


def test_an_invalid_last_line_with_its_newline_is_an_error_not_a_tear(tmp_path: Path) -> None:
    write_fixture(tmp_path, events=event_line("w1") + "{not json}\n")
    with pytest.raises(FixtureFormatError, match=r"events\.jsonl:2: invalid JSON"):
        load_fixture(tmp_path)


def test_a_log_reads_every_value_as_the_standard_library_does(tmp_path: Path) -> None:
    # Past 64 bits, NaN, infinity and a lone surrogate: what orjson would read otherwise or refuse.
    lines = [
        '{"n": 123456789012345678901234567890, "m": -18446744073709551617}',
        '{"top": 18446744073709551615, "past": 18446744073709551616, "low": -9223372036854775809}',
        '{"x": NaN, "y": -Infinity, "z": 1e400}',
        '{"s": "a \\udfff b", "wamid": "wamid.1234567890123456789"}',
        '{"plain": [1, 2.5, true, null, "é"]}',
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read = [line.value for line in read_jsonl(path)]
    assert repr(read) == repr([json.loads(line) for line in lines])
    assert read[0]["n"] == 123456789012345678901234567890


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(st.lists(st.dictionaries(st.text(), _JSON, max_size=4), min_size=1, max_size=4))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_log_reads_back_what_was_written(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert repr([line.value for line in read_jsonl(path)]) == repr(records)


def test_a_line_must_hold_an_object(tmp_path: Path) -> None:
    write_fixture(tmp_path, events="[1, 2]\n")
    with pytest.raises(
        FixtureFormatError, match=r"events\.jsonl:1: expected a JSON object, found list"
    ):
        load_fixture(tmp_path)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    write_fixture(tmp_path)
    (tmp_path / "events.jsonl").write_bytes(event_line("w1").encode() + b'{"a": "\xff"}\n')
    with pytest.raises(FixtureFormatError, match=r"events\.jsonl:2: invalid UTF-8"):
        load_fixture(tmp_path)


def test_an_invalid_event_names_file_line_and_field(tmp_path: Path) -> None:
    bad = {"kind": "inbound", "at": "2026-01-01T00:00:00Z", "type": "text"}
    write_fixture(tmp_path, events=event_line("w1") + json.dumps(bad) + "\n")
    with pytest.raises(FixtureFormatError) as info:
        load_fixture(tmp_path)
    assert str(info.value) == (
        f"{tmp_path}/events.jsonl:2: invalid record: inbound.wamid: Field required"
    )
    assert info.value.line == 2


def test_a_recorder_log_validates_against_the_callers_model(tmp_path: Path) -> None:
    with FixtureWriter(tmp_path / "fx", make_meta()) as writer:
        writer.append("llm", {"key": "k", "response": {}})
        writer.append("llm", {"key": "k", "response": "not a dict"})
    fixture = load_fixture(tmp_path / "fx")
    with pytest.raises(FixtureFormatError, match=r"llm\.jsonl:2: invalid record: response: "):
        fixture.records("llm", LLMRecord)
    adapter = TypeAdapter(dict[str, Any])
    assert fixture.records("llm", adapter)[0] == {"key": "k", "response": {}}


def test_missing_logs_are_empty_and_conversation_is_optional(tmp_path: Path) -> None:
    path = tmp_path / "fx"
    path.mkdir()
    (path / "meta.json").write_text(make_meta().model_dump_json())
    fixture = load_fixture(path)
    assert fixture.events == ()
    assert all(fixture.raw(log) == [] for log in LOG_FILES)
    assert fixture.conversation is None


def test_an_invalid_conversation_names_the_field(tmp_path: Path) -> None:
    write_fixture(tmp_path)
    (tmp_path / "conversation.json").write_text('{"id": 5}')
    with pytest.raises(FixtureFormatError, match=r"conversation\.json: invalid conversation: id: "):
        load_fixture(tmp_path)


# -- crashes: torn last lines ------------------------------------------------------------


def test_a_torn_last_line_is_dropped_with_a_warning(tmp_path: Path) -> None:
    write_fixture(tmp_path, events=event_line("w1") + event_line("w2") + '{"kind": "inb')
    with pytest.warns(FixtureWarning) as caught:
        fixture = load_fixture(tmp_path)
    assert [e.wamid for e in fixture.events if isinstance(e, InboundMessage)] == ["w1", "w2"]
    assert len(caught) == 1
    assert str(caught[0].message).startswith(f"{tmp_path}/events.jsonl:3: torn last line dropped")


def test_a_log_truncated_mid_line_keeps_every_complete_line(tmp_path: Path) -> None:
    path = tmp_path / "fx"
    with FixtureWriter(path, make_meta()) as writer:
        for event in sample_events():
            writer.append("events", event)
    log = path / "events.jsonl"
    os.truncate(log, log.stat().st_size - 7)  # a crash in the middle of the last write
    with pytest.warns(FixtureWarning, match=r"events\.jsonl:5: torn last line"):
        fixture = load_fixture(path)
    assert list(fixture.events) == sample_events()[:4]


def test_a_last_line_missing_only_its_newline_is_kept(tmp_path: Path) -> None:
    write_fixture(tmp_path, events=event_line("w1") + event_line("w2").rstrip("\n"))
    fixture = load_fixture(tmp_path)  # warnings are errors: none may be raised
    assert len(fixture.events) == 2


def test_reopening_a_torn_log_drops_the_tear_before_appending(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"n": 1}\n{"n": 2}\n{"n": ')
    with pytest.warns(FixtureWarning, match=r"log\.jsonl:3: torn last line"):
        writer = JsonlWriter(log)
    with writer:
        writer.append({"n": 3})
    assert [r.value["n"] for r in read_jsonl(log)] == [1, 2, 3]


def test_reopening_a_log_missing_only_its_newline_keeps_that_line(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"n": 1}')
    with JsonlWriter(log) as writer:
        writer.append({"n": 2})
    assert [(r.number, r.value["n"]) for r in read_jsonl(log)] == [(1, 1), (2, 2)]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(
    records=st.lists(
        st.dictionaries(st.text(max_size=5), st.text(max_size=8) | st.integers(), max_size=3),
        min_size=1,
        max_size=6,
    ),
    data=st.data(),
)
def test_a_cut_at_any_byte_loses_at_most_the_line_in_flight(
    tmp_path: Path, records: list[dict[str, Any]], data: st.DataObject
) -> None:
    log = tmp_path / "cut.jsonl"
    log.unlink(missing_ok=True)
    with JsonlWriter(log) as writer:
        for record in records:
            writer.append(record)
    content = log.read_bytes()
    cut = data.draw(st.integers(min_value=0, max_value=len(content)), label="cut")
    log.write_bytes(content[:cut])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FixtureWarning)
        read = [r.value for r in read_jsonl(log)]
    whole_lines = content[:cut].count(b"\n")
    assert read[:whole_lines] == records[:whole_lines]
    # The line in flight is kept only when it was complete but for its newline.
    assert len(read) in (whole_lines, whole_lines + 1)
    assert read == records[: len(read)]
    assert all(issubclass(w.category, FixtureWarning) for w in caught)
    assert len(caught) <= 1


CRASHING_WRITER = textwrap.dedent(
    """
    import sys
    from datetime import UTC, datetime
    from harness.fixture import FixtureMeta, FixtureWriter

    at = datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    meta = FixtureMeta(scenario="crash", channel="direct", recorded_at=at)
    writer = FixtureWriter(sys.argv[1], meta)
    for i in range(20_000):
        event = {"kind": "clock", "at": at, "previous": at, "reason": str(i) + "x" * 2000}
        writer.append("events", event)
        if i == 100:
            print("ready", flush=True)
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_a_writer_killed_mid_append_leaves_a_loadable_fixture(tmp_path: Path) -> None:
    path = tmp_path / "fx"
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHING_WRITER, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        assert ready == "ready\n", proc.communicate(timeout=30)[1]
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()  # the writer goes with a test that fails before it is killed
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FixtureWarning)
        fixture = load_fixture(path)
    reasons = [e.reason for e in fixture.events if isinstance(e, ClockJump)]
    assert len(reasons) == len(fixture.events) > 100  # every line flushed before "ready"
    assert [int(r.rstrip("x")) for r in reasons] == list(range(len(reasons)))
    assert all(
        issubclass(w.category, FixtureWarning) and "events.jsonl:" in str(w.message) for w in caught
    )


# -- spans -------------------------------------------------------------------------------


def test_make_span_builds_an_otel_shaped_dict() -> None:
    span = make_span(
        "chat claude-sonnet-4-5",
        trace_id=TRACE_ID,
        span_id=SPAN_ID,
        parent_span_id="1111111111111111",
        start_time_unix_nano=1_000,
        end_time_unix_nano=2_500,
        attributes={
            "gen_ai.system": "anthropic",
            "gen_ai.request.model": "claude-sonnet-4-5",
            "gen_ai.usage.input_tokens": 12,
            "gen_ai.response.finish_reasons": ("end_turn",),
        },
        status="OK",
        kind="CLIENT",
    )
    assert span == {
        "name": "chat claude-sonnet-4-5",
        "trace_id": TRACE_ID,
        "span_id": SPAN_ID,
        "parent_span_id": "1111111111111111",
        "kind": "CLIENT",
        "start_time_unix_nano": 1_000,
        "end_time_unix_nano": 2_500,
        "attributes": {
            "gen_ai.system": "anthropic",
            "gen_ai.request.model": "claude-sonnet-4-5",
            "gen_ai.usage.input_tokens": 12,
            "gen_ai.response.finish_reasons": ["end_turn"],
        },
        "status": {"code": "OK", "message": ""},
    }
    assert json.loads(json.dumps(span)) == span


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"trace_id": "abc"}, "trace_id must be 32 lowercase hex"),
        ({"trace_id": "0" * 32}, "trace_id must be 32 lowercase hex digits, not all zero"),
        ({"span_id": SPAN_ID.upper()}, "span_id must be 16"),
        ({"parent_span_id": "xyz"}, "parent_span_id must be 16"),
        ({"end_time_unix_nano": 0}, "ends before it starts"),
        ({"attributes": {"a": None}}, "'a' is not an OpenTelemetry value"),
        ({"attributes": {"a": [1, "x"]}}, "'a' is not an OpenTelemetry value"),
        ({"attributes": {"a": {"nested": 1}}}, "'a' is not an OpenTelemetry value"),
    ],
)
def test_make_span_rejects_malformed_spans(changes: dict[str, Any], said: str) -> None:
    arguments: dict[str, Any] = {
        "trace_id": TRACE_ID,
        "span_id": SPAN_ID,
        "start_time_unix_nano": 5,
        "end_time_unix_nano": 6,
        **changes,
    }
    with pytest.raises(ConfigError, match=said):
        make_span("s", **arguments)
