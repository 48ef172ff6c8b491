"""What ``harness replay`` prints of one result, a line each."""

from __future__ import annotations

import io

from rich.console import Console

from harness.cli.replaying import print_result, print_worth_a_look
from harness.replay import ReplayResult


def printed(result: ReplayResult) -> list[str]:
    out = io.StringIO()
    print_result(result, Console(file=out, width=60, color_system=None))
    return out.getvalue().splitlines()


def test_a_tool_that_answered_differently_is_a_note_under_its_result() -> None:
    note = (
        'turn 1: book_appointment answered {"booking": "B-4"} where the recording has '
        '{"booking": "B-1"}: it ran for real (the recording holds no answer for it), and the '
        "model calls were matched without its result"
    )
    result = ReplayResult(fixture="fixtures/chat-2", status="same", tool_notes=(note,))
    lines = printed(result)
    assert lines[0].startswith("SAME      fixtures/chat-2")
    assert lines[1:] == [f"  note: {note}"]  # one line, however narrow the terminal


def test_regress_shows_a_same_replay_whose_tools_answered_otherwise() -> None:
    note = "turn 1: create_order answered ORD-1001 where the recording has ORD-1000"
    results = [
        ReplayResult(fixture="fixtures/quiet", status="same"),
        ReplayResult(fixture="fixtures/chat-1", status="same", tool_notes=(note,)),
        ReplayResult(fixture="fixtures/chat-2", status="diverged", divergences=("system prompt",)),
    ]
    out = io.StringIO()
    print_worth_a_look(results, Console(file=out, width=60, color_system=None))
    lines = out.getvalue().splitlines()
    assert [line.split()[1] for line in lines if not line.startswith(" ")] == [
        "fixtures/chat-1",
        "fixtures/chat-2",
    ]
    assert f"  note: {note}" in lines
