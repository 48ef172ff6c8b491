"""``harness diff``: loading its inputs, the command and its terminal view."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from harness.cli.diff import diff_command
from harness.cli.diffing import load_conversation, print_diff
from harness.exceptions import ConfigError, FixtureFormatError, FixtureNotFound, SchemaVersionError
from harness.fixture import FixtureMeta, FixtureWriter
from harness.replay.diff import diff_conversations
from harness.report import write_json
from harness.results import RunResult, ScenarioResult
from harness.trace import Conversation
from tests.harness.replay.diff.bookings import DANGEROUS, START, booking
from tests.harness.report.dom import parse

# -- loading ------------------------------------------------------------------------------


def _fixture(path: Path, conversation: Conversation, *, assembled: bool = True) -> Path:
    meta = FixtureMeta(scenario="booking", channel="whatsapp", recorded_at=START)
    with FixtureWriter(path, meta) as writer:
        for event in conversation.events:
            writer.append("events", event)
        if assembled:
            writer.write_conversation(conversation)
    return path


def _report(path: Path, *scenarios: ScenarioResult) -> Path:
    return write_json(RunResult(scenarios=scenarios), path)


def _scenario(name: str, conversation: Conversation | None, **extra: Any) -> ScenarioResult:
    return ScenarioResult(
        name=name,
        path=f"scenarios/{name}.yaml",
        status="passed",
        conversation=conversation,
        **extra,
    )


def test_loading_a_fixture_directory(tmp_path: Path) -> None:
    conversation = booking()
    path = _fixture(tmp_path / "fx", conversation)
    assert load_conversation(path) == conversation
    assert load_conversation(str(path)) == conversation


def test_a_fixture_without_its_conversation_is_rebuilt_from_events(tmp_path: Path) -> None:
    conversation = booking()
    path = _fixture(tmp_path / "fx", conversation, assembled=False)
    loaded = load_conversation(path)
    assert (loaded.scenario, loaded.channel) == ("booking", "whatsapp")
    assert loaded.events == conversation.events
    assert diff_conversations(loaded, conversation).same


def test_loading_a_conversation_file(tmp_path: Path) -> None:
    conversation = booking()
    path = tmp_path / "conversation.json"
    path.write_text(conversation.model_dump_json(), encoding="utf-8")
    assert load_conversation(path) == conversation
    assert load_conversation(tmp_path) == conversation  # a folder holding just that file


def test_loading_from_a_report(tmp_path: Path) -> None:
    happy, changed = booking(), booking(slot="21:00")
    path = _report(tmp_path / "report.json", _scenario("happy", happy), _scenario("late", changed))
    assert load_conversation(path, "happy") == happy
    assert load_conversation(path, "late") == changed
    assert load_conversation(path, "scenarios/late.yaml") == changed
    single = _report(tmp_path / "one.json", _scenario("happy", happy))
    assert load_conversation(single) == happy


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        (
            None,
            "report.json: the report holds 2 scenarios; pick one with --scenario: 'happy', 'crash'",
        ),
        ("nope", "report.json: no scenario named 'nope'; it has 'happy', 'crash'"),
        ("crash", "report.json: scenario 'crash' recorded no conversation (agent answered 500)"),
    ],
)
def test_a_report_needs_the_right_scenario(
    tmp_path: Path, scenario: str | None, message: str
) -> None:
    crash = _scenario("crash", None, error="agent answered 500\nTraceback...")
    path = _report(tmp_path / "report.json", _scenario("happy", booking()), crash)
    with pytest.raises(ConfigError) as caught:
        load_conversation(path, scenario)
    assert str(caught.value) == f"{tmp_path}/{message}"


def test_an_empty_report(tmp_path: Path) -> None:
    path = _report(tmp_path / "report.json")
    with pytest.raises(ConfigError, match=r"report\.json: the report holds no scenarios$"):
        load_conversation(path)


@pytest.mark.parametrize(
    ("content", "error", "message"),
    [
        ("{not json", FixtureFormatError, r"bad\.json:1: invalid JSON: .* \(column 2\)$"),
        ("[1, 2]", ConfigError, r"bad\.json: neither a conversation nor a harness report"),
        ('{"hello": 1}', ConfigError, r"bad\.json: neither a conversation nor a harness report"),
        (
            '{"events": [{"kind": "inbound"}]}',
            FixtureFormatError,
            r"bad\.json: invalid conversation: events\.0\.inbound\.at: Field required \(and ",
        ),
        (
            '{"scenarios": [{"name": 3}]}',
            ConfigError,
            r"bad\.json: not a harness report: scenarios\.0\.name: ",
        ),
    ],
)
def test_bad_files_are_one_line_errors_naming_the_file(
    tmp_path: Path, content: str, error: type[Exception], message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(error, match=message) as caught:
        load_conversation(path)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(str(path))


def test_missing_and_unreadable_inputs(tmp_path: Path) -> None:
    with pytest.raises(FixtureNotFound, match=r"nowhere: not found$"):
        load_conversation(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FixtureNotFound, match=r"empty: not a fixture \(no meta\.json or "):
        load_conversation(empty)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(FixtureFormatError, match=r"binary\.json: not UTF-8 text$"):
        load_conversation(binary)
    old = _fixture(tmp_path / "old", booking())
    meta = json.loads((old / "meta.json").read_text())
    (old / "meta.json").write_text(json.dumps({**meta, "schema_version": 99}))
    with pytest.raises(SchemaVersionError, match="schema version 99 is not supported"):
        load_conversation(old)


# -- the command line ---------------------------------------------------------------------


def _files(tmp_path: Path, a: Conversation, b: Conversation) -> tuple[str, str]:
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(a.model_dump_json(), encoding="utf-8")
    pb.write_text(b.model_dump_json(), encoding="utf-8")
    return str(pa), str(pb)


def test_the_command_exits_0_when_the_conversations_match(tmp_path: Path) -> None:
    a, b = _files(tmp_path, booking(ids="X"), booking(ids="Y", shift=3))
    result = CliRunner().invoke(diff_command, [a, b])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"A: {a} (3 turns)"
    assert lines[1] == f"B: {b} (3 turns)"
    assert "Turn 1  SAME  user 'A table for 2 tomorrow at 8pm' · 1 reply · 1 tool call" in lines
    assert lines[-1] == "SAME: no differences in 3 turns (times not compared)"


def test_the_command_exits_1_and_lists_what_differs(tmp_path: Path) -> None:
    a, b = _files(tmp_path, booking(), booking(booked="Booked for 9pm", thanks=False))
    result = CliRunner().invoke(diff_command, [a, b])
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "Turn 2  CHANGED" in out
    assert "  - reply 1 text differs: 'Booked for 8pm' -> 'Booked for 9pm'" in out
    assert "Turn 3  ONLY IN A" in out
    assert "(no turn here in B)" in out
    assert "Turn 1  SAME" in out
    assert out.splitlines()[-1].startswith(
        "DIFFERENT: 2 of 3 turns differ (1 changed, 1 only in a)"
    )
    quiet = CliRunner().invoke(diff_command, [a, b, "--changed-only"])
    assert quiet.exit_code == 1
    assert "Turn 1" not in quiet.stdout
    assert "1 unchanged turn not shown" in quiet.stdout


def test_the_command_compares_times_with_a_flag(tmp_path: Path) -> None:
    a, b = _files(tmp_path, booking(), booking(shift=2))
    assert CliRunner().invoke(diff_command, [a, b]).exit_code == 0
    result = CliRunner().invoke(diff_command, [a, b, "--times"])
    assert result.exit_code == 1
    assert "user message 1 time differs: 10:00:00 -> 10:00:02" in result.stdout


def test_the_command_reads_reports_and_fixtures(tmp_path: Path) -> None:
    report = _report(
        tmp_path / "report.json",
        _scenario("happy", booking()),
        _scenario("late", booking(slot="21:00")),
    )
    fixture = _fixture(tmp_path / "fx", booking(ids="REC"))
    same = CliRunner().invoke(diff_command, [str(fixture), str(report), "--scenario", "happy"])
    assert same.exit_code == 0, same.output
    assert f"B: {report} [happy] (3 turns)" in same.stdout
    late = CliRunner().invoke(diff_command, [str(fixture), str(report), "--scenario", "late"])
    assert late.exit_code == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{tmp}/nowhere", "{a}"], "error: {tmp}/nowhere: not found"),
        (
            ["{a}", "{b}", "--scenario", "x"],
            "error: --scenario picks a scenario from a report.json",
        ),
        (["{a}", "{report}"], "error: {report}: the report holds 2 scenarios"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    a, b = _files(tmp_path, booking(), booking())
    report = _report(
        tmp_path / "report.json", _scenario("one", booking()), _scenario("two", booking())
    )
    names = {"tmp": str(tmp_path), "a": a, "b": b, "report": str(report)}
    result = CliRunner().invoke(diff_command, [arg.format(**names) for arg in args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(message.format(**names))
    assert len(result.stderr.splitlines()) == 1
    assert result.stdout == ""


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(diff_command, ["only-one"])
    assert result.exit_code == 2
    assert "Missing argument 'B'" in result.stderr


def test_the_command_writes_the_page(tmp_path: Path) -> None:
    a, b = _files(tmp_path, booking(), booking(slot="21:00"))
    out = tmp_path / "pages" / "diff.html"
    result = CliRunner().invoke(diff_command, [a, b, "--html", str(out)])
    assert result.exit_code == 1, result.output
    assert f"wrote {out}" in result.stdout
    page = parse(out.read_text(encoding="utf-8"))
    assert [r.attrs["data-status"] for r in page.find("div", "pane-a").find_all("section")] == [
        "changed",
        "changed",
        "same",
    ]
    assert page.find("div", "pane-head").text == f"A {a}"


def test_a_page_that_can_not_be_written_exits_2(tmp_path: Path) -> None:
    a, b = _files(tmp_path, booking(), booking())
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(diff_command, [a, b, "--html", str(blocker / "diff.html")])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {blocker / 'diff.html'}: can't be written")


# -- the terminal view ---------------------------------------------------------------------


def _printed(a: Conversation, b: Conversation, **options: Any) -> str:
    console = Console(file=StringIO(), record=True, color_system=None, width=160)
    diff = diff_conversations(a, b)
    print_diff(diff, a, b, console=console, title_a="recorded", title_b="replayed", **options)
    return console.export_text()


def test_the_terminal_view_puts_a_and_b_side_by_side() -> None:
    text = _printed(booking(), booking(booked="Booked for 9pm", extra_reply="Anything else?"))
    lines = text.splitlines()
    assert lines[:2] == ["A: recorded (3 turns)", "B: replayed (3 turns)"]
    header = next(line for line in lines if "A  recorded" in line)
    assert header.index("A  recorded") < header.index("B  replayed")
    row = next(line for line in lines if "agent: Booked for 8pm" in line)
    assert row.index("agent: Booked for 8pm") < row.index("agent: Booked for 9pm")
    assert "✓✓ delivered" in row
    assert any("agent: Anything else?" in line for line in lines)
    assert "  - a: 1 reply, b: 2" in lines
    assert any(line.startswith("Turn 3  SAME  user 'thanks!' · 1 reply") for line in lines)
    assert any(line.startswith("│ ⚙ book_appointment {") for line in lines)
    assert "(side effect)" in text
    assert "user: (tapped a button · reply) Confirm" in text


def test_the_terminal_view_draws_buttons_and_ticks() -> None:
    lines = _printed(booking(), booking(last_status="delivered", slot="21:00")).splitlines()
    taps = next(line for line in lines if "[Confirm] [Change time]" in line)
    assert taps.count("[Confirm] [Change time]") == 2  # both sides drew the buttons
    at = next(i for i, line in enumerate(lines) if "Confirm?" in line)
    assert lines[at].count("Confirm?  ✓✓") == 2
    assert lines[at + 1].split() == ["│", "read", "│", "delivered", "│"]  # wrapped at width 160
    assert "  - reply 1 status differs: read -> delivered" in lines


def test_the_terminal_view_prints_markup_as_text() -> None:
    text = _printed(booking(), booking(first="[bold]x[/bold] " + DANGEROUS))
    assert "user: [bold]x[/bold] <script>" in text
    assert "'[bold]x[/bold] <script>" in text


def test_the_terminal_view_can_hide_matching_turns() -> None:
    text = _printed(booking(), booking(slot="21:00"), changed_only=True)
    assert "Turn 3" not in text
    assert "1 unchanged turn not shown" in text
    assert text.splitlines()[-1].startswith("DIFFERENT: 2 of 3 turns differ")


def test_the_terminal_view_keeps_long_results_and_redeliveries_short() -> None:
    a = booking(redelivered=True)
    assert "Turn 2  SAME  user 'Confirm' · 1 reply · 1 tool call" in _printed(a, a)
    b = booking(booked="Booked for 9pm")
    book = b.tool_calls("book_appointment")[0]
    long = book.model_copy(update={"result": {"slots": ["12:00"] * 40}})
    b = Conversation.from_events([long if e is book else e for e in b.events])
    text = _printed(booking(), b)
    assert '{"slots": ["12:00"' in text
    assert 5 <= text.count('"12:00"') < 20  # results are shown cut short, not all forty
