"""What ``harness diff A B`` does: two conversations side by side in the terminal, and as a page.

A and B are each a fixture directory, a ``conversation.json`` or a
``report.json`` (``--scenario`` names the scenario to take from a report).
Each turn prints as two columns, A on the left and B on the right; turns
that match print as one line (or not at all with ``--changed-only``), turns
that differ print in full with their differences listed under them.
``--html`` also writes the side-by-side page. Exit codes follow ``diff(1)``:
0 the conversations match, 1 they differ, 2 bad input. The command itself is
declared in :mod:`harness.cli.diff`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import click
from pydantic import ValidationError
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.exceptions import (
    ConfigError,
    FixtureFormatError,
    FixtureNotFound,
    HarnessError,
)
from harness.fixture import CONVERSATION_FILE, META_FILE, load_fixture
from harness.replay.diff import ConversationDiff, diff_conversations
from harness.report import load_json
from harness.report._items import Bubble, Divider, Item, Note, ToolCard
from harness.report.diff_html import DiffRow, diff_rows, write_diff_html
from harness.trace import Conversation

__all__ = ["compare", "load_conversation", "print_diff"]

_SAME, _DIFFERENT, _BAD_INPUT = 0, 1, 2
_STATUS = {"same": "SAME", "changed": "CHANGED", "only_a": "ONLY IN A", "only_b": "ONLY IN B"}
_STYLE = {"same": "dim", "changed": "bold yellow", "only_a": "bold red", "only_b": "bold green"}
_QUIET_NOTES = frozenset({"llm", "receipt"})  # model calls and read receipts: noise here
_GIST = 50
_RESULT = 100
_LISTED = 8


# -- loading -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Loaded:
    conversation: Conversation
    title: str
    from_report: bool


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise FixtureFormatError(f"{path}: not UTF-8 text", path=path) from None
    except json.JSONDecodeError as exc:
        message = f"{path}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})"
        raise FixtureFormatError(message, path=path, line=exc.lineno) from None
    except OSError as exc:
        raise FixtureFormatError(f"{path}: can't be read: {exc.strerror}", path=path) from None


def _conversation_file(path: Path, data: object) -> Conversation:
    try:
        return Conversation.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        message = f"{path}: invalid conversation: {where}: {first['msg']}{more}"
        raise FixtureFormatError(message, path=path) from None


def _names(names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:_LISTED])
    return shown + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "")


def _from_report(path: Path, scenario: str | None) -> _Loaded:
    run = load_json(path)
    names = [s.name for s in run.scenarios]
    if not run.scenarios:
        raise ConfigError(f"{path}: the report holds no scenarios")
    if scenario is None:
        if len(run.scenarios) > 1:
            raise ConfigError(
                f"{path}: the report holds {len(names)} scenarios; "
                f"pick one with --scenario: {_names(names)}"
            )
        chosen = run.scenarios[0]
    else:
        found = [s for s in run.scenarios if scenario in (s.name, s.path)]
        if not found:
            raise ConfigError(f"{path}: no scenario named {scenario!r}; it has {_names(names)}")
        chosen = found[0]
    if chosen.conversation is None:
        why = f" ({chosen.error.splitlines()[0]})" if chosen.error else ""
        raise ConfigError(f"{path}: scenario {chosen.name!r} recorded no conversation{why}")
    return _Loaded(chosen.conversation, f"{path} [{chosen.name}]", True)


def _load(path: Path, scenario: str | None) -> _Loaded:
    if path.is_dir():
        if (path / META_FILE).is_file():
            fixture = load_fixture(path)
            conversation = fixture.conversation
            if conversation is None:  # the recording stopped early: its event log remains
                conversation = Conversation.from_events(
                    fixture.events, scenario=fixture.meta.scenario, channel=fixture.meta.channel
                )
            return _Loaded(conversation, str(path), False)
        if (path / CONVERSATION_FILE).is_file():
            return _load(path / CONVERSATION_FILE, scenario)
        raise FixtureNotFound(
            f"{path}: not a fixture (no {META_FILE} or {CONVERSATION_FILE} in it)", path=path
        )
    if not path.exists():
        raise FixtureNotFound(f"{path}: not found", path=path)
    data = _read_json(path)
    if isinstance(data, dict) and "scenarios" in data:
        return _from_report(path, scenario)
    if isinstance(data, dict) and ("events" in data or "turns" in data):
        return _Loaded(_conversation_file(path, data), str(path), False)
    raise ConfigError(
        f"{path}: neither a conversation nor a harness report "
        "(expected a fixture directory, a conversation.json or a report.json)"
    )


def load_conversation(path: Path | str, scenario: str | None = None) -> Conversation:
    """The conversation in a fixture directory, a ``conversation.json`` or a ``report.json``.

    ``scenario`` (a name or a scenario file path) picks one scenario of a
    report, and may be left out when the report holds only one; other
    inputs ignore it. Anything else raises a one-line :class:`ConfigError`
    or :class:`~harness.exceptions.FixtureError` naming the file.
    """
    return _load(Path(path), scenario).conversation


# -- the terminal view ---------------------------------------------------------------------


def _bubble_lines(bubble: Bubble) -> Text:
    who = bubble.sender or ("user" if bubble.direction == "in" else "agent")
    text = Text(f"{who}: ", style="bold")
    if bubble.duplicate:
        text.append("(again) ", style="dim")
    if bubble.label:
        text.append(f"({bubble.label}) ", style="italic")
    body = "\n".join(part for part in (bubble.header, bubble.text, bubble.footer) if part)
    text.append(body)
    if bubble.ticks is not None:
        ticks = f"  {bubble.ticks.symbol} {bubble.ticks.state}"
        if bubble.ticks.label and bubble.ticks.label != bubble.ticks.state:
            ticks += f" {bubble.ticks.label}"
        text.append(ticks, style="red" if bubble.ticks.state == "failed" else "dim")
    if bubble.buttons:
        text.append("\n  " + " ".join(f"[{b.title}]" for b in bubble.buttons), style="cyan")
    if bubble.sections:
        rows = [row.title for section in bubble.sections for row in section.rows]
        text.append(f"\n  ☰ {bubble.list_button}: " + ", ".join(rows), style="cyan")
    if bubble.error:
        text.append(f"\n  ✗ {bubble.error}", style="red")
    if bubble.chips:
        text.append("  " + " ".join(f"[{c.text}]" for c in bubble.chips), style="yellow")
    return text


def _item_text(item: Item) -> Text | None:
    if isinstance(item, Bubble):
        return _bubble_lines(item)
    if isinstance(item, ToolCard):
        text = Text(f"⚙ {item.name} ", style="magenta")
        text.append(item.args)
        # results are not compared, only shown: a long one is cut short
        text.append(
            f" → error: {item.error}" if item.error else f" → {_clip(item.result, _RESULT)}"
        )
        if item.side_effect:
            text.append(" (side effect)", style="dim")
        return text
    if isinstance(item, Note):
        return None if item.chip.kind in _QUIET_NOTES else Text(f"· {item.chip.text}", "dim")
    if isinstance(item, Divider):
        return Text(f"── {item.text} ──", style="dim")
    return None


def _side_text(items: list[Item] | None, side: str) -> Text:
    if items is None:
        return Text(f"(no turn here in {side})", style="dim italic")
    lines = [t for t in (_item_text(item) for item in items) if t is not None]
    return Text("\n").join(lines) if lines else Text("(nothing)", style="dim")


def _clip(text: str, limit: int = _GIST) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _gist(items: list[Item]) -> str:
    """One line for a turn that did not change: what the user said, how the agent answered."""
    said = [
        i.text for i in items if isinstance(i, Bubble) and i.direction == "in" and not i.duplicate
    ]
    said = [t for t in said if t]
    replies = sum(1 for i in items if isinstance(i, Bubble) and i.direction == "out")
    tools = sum(1 for i in items if isinstance(i, ToolCard))
    parts = [f"user {_clip(' / '.join(said))!r}" if said else "user (no text)"]
    parts.append(f"{replies} repl{'y' if replies == 1 else 'ies'}")
    if tools:
        parts.append(f"{tools} tool call{'' if tools == 1 else 's'}")
    return " · ".join(parts)


def _heading(row: DiffRow) -> Text:
    turn = row.turn
    text = Text(f"Turn {turn.number}", style="bold")
    if turn.index_a is not None and turn.index_b is not None and turn.index_a != turn.index_b:
        text.append(f" (B: turn {turn.index_b + 1})")
    text.append("  ")
    text.append(_STATUS[turn.status], style=_STYLE[turn.status])
    return text


def _print_row(console: Console, row: DiffRow, title_a: str, title_b: str) -> None:
    if row.turn.same:
        line = _heading(row)
        line.append("  " + _gist(row.a or []), style="dim")
        console.print(line, soft_wrap=True)
        return
    console.print(_heading(row), soft_wrap=True)
    table = Table(box=box.SQUARE, expand=True, show_lines=False, padding=(0, 1))
    table.add_column(Text(f"A  {title_a}"), ratio=1, overflow="fold")
    table.add_column(Text(f"B  {title_b}"), ratio=1, overflow="fold")
    table.add_row(_side_text(row.a, "A"), _side_text(row.b, "B"))
    console.print(table)
    for change in row.turn.changes:
        console.print(Text(f"  - {change}"), soft_wrap=True)  # one line each, for grep
    console.print()


def print_diff(
    diff: ConversationDiff,
    a: Conversation,
    b: Conversation,
    *,
    console: Console,
    title_a: str = "A",
    title_b: str = "B",
    changed_only: bool = False,
) -> None:
    """Print the diff: a header naming A and B, each turn side by side, then the summary.

    Every status is written as a word (SAME, CHANGED, ONLY IN A, ONLY IN B),
    so the output reads the same without colour.
    """
    turns_a = sum(1 for t in diff.turns if t.index_a is not None)
    turns_b = sum(1 for t in diff.turns if t.index_b is not None)
    for side, title, count in (("A", title_a, turns_a), ("B", title_b, turns_b)):
        console.print(
            Text(f"{side}: {title} ({count} turn{'s' if count != 1 else ''})"), soft_wrap=True
        )
    hidden = 0
    console.print()
    for row in diff_rows(diff, a, b):
        if changed_only and row.turn.same:
            hidden += 1
            continue
        _print_row(console, row, title_a, title_b)
    if diff.turns and diff.turns[-1].same:
        console.print()
    if hidden:
        note = f"{hidden} unchanged turn{'s' if hidden != 1 else ''} not shown"
        console.print(Text(note), soft_wrap=True)
    verdict = Text(
        "SAME" if diff.same else "DIFFERENT", style="bold green" if diff.same else "bold red"
    )
    console.print(verdict + Text(f": {diff.summary()}"), soft_wrap=True)


def compare(
    a: Path,
    b: Path,
    *,
    scenario: str | None = None,
    html_path: Path | None = None,
    times: bool = False,
    changed_only: bool = False,
) -> int:
    """What ``harness diff`` does: print how A and B differ (and write the page); the exit code.

    0 when they match, 1 when they differ, 2 on bad input (said in one line).
    """
    try:
        left, right = _load(a, scenario), _load(b, scenario)
        if scenario is not None and not (left.from_report or right.from_report):
            raise ConfigError(
                "--scenario picks a scenario from a report.json; neither A nor B is one"
            )
    except HarnessError as exc:
        click.echo(f"error: {exc}", err=True)
        return _BAD_INPUT
    diff = diff_conversations(left.conversation, right.conversation, compare_times=times)
    console = Console(highlight=False)
    print_diff(
        diff,
        left.conversation,
        right.conversation,
        console=console,
        title_a=left.title,
        title_b=right.title,
        changed_only=changed_only,
    )
    if html_path is not None:
        try:
            written = write_diff_html(
                diff,
                left.conversation,
                right.conversation,
                html_path,
                title_a=left.title,
                title_b=right.title,
            )
        except OSError as exc:
            click.echo(f"error: {html_path}: can't be written: {exc.strerror}", err=True)
            return _BAD_INPUT
        click.echo(f"wrote {written}")
    return _SAME if diff.same else _DIFFERENT
