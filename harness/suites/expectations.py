"""Checking a scenario's ``expect`` steps against what the agent just did.

An ``expect`` step looks at the agent's messages and tool calls since the
last step a user took (the current turn, seen from the user's side), plus,
for statuses, everything the channel reported about the agent's last reply;
``blocked`` reads the whole conversation: whether the agent's last accepted
block or unblock of the step's user blocked them.
Each unmet expectation becomes a :class:`~harness.results.Violation` of
kind ``expectation`` that names the step's line.

Dates written as expressions (``${friday}``, see :mod:`harness.suites.dates`)
are resolved against the day the scenario started before anything is
compared (:func:`with_dates`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from pydantic import JsonValue

from harness.results import Violation
from harness.suites._reading import misnamed_tool
from harness.suites.dates import resolve_dates
from harness.suites.invariants import unobserved
from harness.suites.steps import Expectation, ExpectStep, ToolExpectation
from harness.suites.transcript import render_event
from harness.trace import (
    BlockChange,
    ClockJump,
    Conversation,
    Event,
    InboundMessage,
    OutboundSend,
    ToolCall,
)

__all__ = [
    "EVENTUAL",
    "check_expectation",
    "eventual_part",
    "needs_quiet",
    "replies_since",
    "reply_text",
    "started_on",
    "with_dates",
]

#: What eventually holds and then stays true, so waiting until it holds is enough.
EVENTUAL = frozenset({"reply_contains", "reply_matches", "tool_called", "status"})


def reply_text(send: OutboundSend) -> str:
    """What the user reads of a send: its text, the buttons or rows it offers, a template."""
    parts = [send.text or ""]
    request: Any = send.request  # Graph API JSON, walked defensively below
    interactive = request.get("interactive")
    if isinstance(interactive, dict):
        action = interactive.get("action")
        if isinstance(action, dict):
            for button in action.get("buttons") or []:
                if isinstance(button, dict) and isinstance(button.get("reply"), dict):
                    parts.append(str(button["reply"].get("title", "")))
            for section in action.get("sections") or []:
                if isinstance(section, dict):
                    for row in section.get("rows") or []:
                        if isinstance(row, dict):
                            parts.append(str(row.get("title", "")))
    options = request.get("options")
    if isinstance(options, list):
        parts.extend(str(o.get("title", "")) for o in options if isinstance(o, dict))
    template = request.get("template")
    if isinstance(template, dict):
        parts.append(f"[template {template.get('name', '')}]")
        for component in template.get("components") or []:
            if isinstance(component, dict):
                for parameter in component.get("parameters") or []:
                    if isinstance(parameter, dict) and "text" in parameter:
                        parts.append(str(parameter["text"]))
    elif isinstance(template, str):
        parts.append(f"[template {template}]")
    return " ".join(p for p in parts if p)


def eventual_part(step: ExpectStep) -> ExpectStep | None:
    """The step with only its :data:`EVENTUAL` expectations, or None when it has none."""
    fields = {name: getattr(step.expect, name) for name in EVENTUAL}
    kept = {name: value for name, value in fields.items() if value is not None}
    if not kept:
        return None
    return step.model_copy(update={"expect": Expectation.model_construct(**kept)})


def replies_since(conversation: Conversation, *, since: int, user: str) -> int:
    """How many messages the agent sent ``user`` that Meta took, from event ``since`` on.

    The count ``replies: N`` is checked against.
    """
    return sum(
        1
        for e in conversation.events[since:]
        if isinstance(e, OutboundSend) and e.is_message and e.ok and e.user in (user, None)
    )


def needs_quiet(step: ExpectStep) -> bool:
    """True when the step says what must not happen (or how often): judged once all is quiet."""
    return any(
        getattr(step.expect, name) is not None
        for name in type(step.expect).model_fields
        if name not in EVENTUAL
    )


def _dated(value: JsonValue, start: date) -> JsonValue:
    if isinstance(value, str):
        return resolve_dates(value, start)
    if isinstance(value, dict):
        return {key: _dated(item, start) for key, item in value.items()}
    if isinstance(value, list):
        return [_dated(item, start) for item in value]
    return value


def _dated_tools(
    tools: tuple[ToolExpectation, ...] | None, start: date
) -> tuple[ToolExpectation, ...] | None:
    if tools is None:
        return None
    return tuple(
        t if t.args is None else t.model_copy(update={"args": _dated(t.args, start)}) for t in tools
    )


def _dated_texts(texts: tuple[str, ...] | None, start: date) -> tuple[str, ...] | None:
    return None if texts is None else tuple(resolve_dates(t, start) for t in texts)


def with_dates(step: ExpectStep, start: date) -> ExpectStep:
    """The step with every date expression written in, for a scenario that started on ``start``."""
    expect = step.expect
    update: dict[str, Any] = {
        "reply_contains": _dated_texts(expect.reply_contains, start),
        "reply_not_contains": _dated_texts(expect.reply_not_contains, start),
        "tool_called": _dated_tools(expect.tool_called, start),
        "tool_not_called": _dated_tools(expect.tool_not_called, start),
    }
    if expect.reply_matches is not None:
        update["reply_matches"] = resolve_dates(expect.reply_matches, start, escape=re.escape)
    return step.model_copy(update={"expect": expect.model_copy(update=update)})


def started_on(conversation: Conversation) -> date | None:
    """The day (UTC) of a conversation's first instant, when it has any event."""
    if not conversation.events:
        return None
    first = conversation.events[0]
    at = first.previous if isinstance(first, ClockJump) else first.at
    return at.astimezone(UTC).date()


def _args_match(expected: dict[str, Any] | None, actual: dict[str, Any]) -> bool:
    if not expected:
        return True
    for key, want in expected.items():
        if key not in actual:
            return False
        got = actual[key]
        if got != want and str(got) != str(want):
            return False
    return True


def _calls(calls: Sequence[ToolCall], expected: ToolExpectation) -> list[ToolCall]:
    return [c for c in calls if c.name == expected.name and _args_match(expected.args, c.args)]


def _called_names(conversation: Conversation) -> set[str]:
    return {e.name for e in conversation.events if isinstance(e, ToolCall)}


def _describe_tool(expected: ToolExpectation) -> str:
    if not expected.args:
        return expected.name
    args = ", ".join(f"{k}={v!r}" for k, v in expected.args.items())
    return f"{expected.name}({args})"


def _blocking(
    conversation: Conversation, user: str, wanted: bool, names: dict[str, str]
) -> tuple[str, list[tuple[int, BlockChange]]] | None:
    """Why ``user`` is not blocked as ``wanted`` (with the changes that show it), or None.

    A user is blocked from the agent's last accepted block of them until an
    accepted unblock; a refused change changes nothing.
    """
    changes = [
        (i, e)
        for i, e in enumerate(conversation.events)
        if isinstance(e, BlockChange) and e.user == user
    ]
    accepted = [(i, e) for i, e in changes if e.error is None]
    blocked = accepted[-1][1].blocked if accepted else False
    if blocked == wanted:
        return None
    who = names.get(user, user)
    if not wanted:
        return f"the agent has blocked {who}", accepted[-1:]
    if not changes:
        return f"the agent has not blocked {who}", []
    last = changes[-1][1]
    if last.error is not None:
        verb = "block" if last.blocked else "unblock"
        return f"the agent's {verb} of {who} was refused ({last.error.code})", changes[-1:]
    return f"the agent unblocked {who}", changes[-1:]


def _redelivered(event: Event) -> bool:
    return isinstance(event, InboundMessage) and event.duplicate


def check_expectation(
    step: ExpectStep,
    conversation: Conversation,
    *,
    since: int,
    user: str,
    step_at: datetime,
    names: dict[str, str] | None = None,
    start: date | None = None,
) -> list[Violation]:
    """Check one ``expect`` step; ``since`` is the event index of the last user step.

    Date expressions still in the step are resolved against ``start`` (the
    day the scenario started), else against the conversation's first instant.
    """
    start = start or started_on(conversation)
    if start is not None:
        step = with_dates(step, start)
    expect = step.expect
    recent: list[Event] = list(conversation.events[since:])
    # Each problem names the events that show it, by their index in the log.
    where = {id(event): since + offset for offset, event in enumerate(recent)}

    def at(*shown: Event) -> tuple[int, ...]:
        return tuple(where[id(e)] for e in shown)

    # What the agent tried to say (refused sends included: they show why a reply is missing).
    tried = [
        e
        for e in recent
        if isinstance(e, OutboundSend) and e.is_message and (e.user in (user, None))
    ]
    replies = [e for e in tried if e.ok]
    calls = [e for e in recent if isinstance(e, ToolCall) and e.user in (user, None)]
    turn = conversation.turns[-1].index if conversation.turns else None
    texts = [reply_text(r) for r in replies]
    joined = "\n".join(texts)
    # A redelivered copy is shown too: it is why an agent that does not dedupe answers again.
    shown = tuple(
        render_event(e, turn, names=names)
        for e in recent
        if (isinstance(e, OutboundSend | ToolCall) or _redelivered(e)) and e.user in (user, None)
    )
    problems: list[tuple[str, tuple[int, ...]]] = []

    for needle in expect.reply_contains or ():
        if needle.lower() not in joined.lower():
            problems.append((f"no reply contains {needle!r}", at(*tried)))
    if expect.reply_matches is not None and not re.search(expect.reply_matches, joined):
        problems.append((f"no reply matches /{expect.reply_matches}/", at(*tried)))
    for needle in expect.reply_not_contains or ():
        containing = [
            r for r, text in zip(replies, texts, strict=True) if needle.lower() in text.lower()
        ]
        if containing:
            problems.append((f"a reply contains {needle!r}", at(*containing)))
    if (expect.tool_called or expect.tool_not_called) and not conversation.observes("tool"):
        problems.append((unobserved("expect", "tool", kind_of="expectation").message, ()))
    else:
        for expected in expect.tool_called or ():
            if not _calls(calls, expected):
                made = ", ".join(c.name for c in calls) or "none"
                problems.append(
                    (f"{_describe_tool(expected)} was not called (calls: {made})", at(*calls))
                )
        for expected in expect.tool_not_called or ():
            if found := _calls(calls, expected):
                problems.append((f"{_describe_tool(expected)} was called", at(*found)))
            elif near := misnamed_tool(expected.name, _called_names(conversation)):
                problems.append(
                    (
                        f"tool_not_called names {expected.name!r}, which the agent never "
                        f"called; it called {near!r}: is the name misspelled?",
                        (),
                    )
                )
    if expect.no_reply_within is not None:
        early = [r for r in replies if r.at - step_at <= expect.no_reply_within]
        if early:
            problems.append(
                (
                    f"the agent replied within {expect.no_reply_within.total_seconds():g}s"
                    f" ({len(early)} message{'s' if len(early) > 1 else ''})",
                    at(*early),
                )
            )
    if expect.replies is not None and len(replies) != expect.replies:
        noun = "reply" if expect.replies == 1 else "replies"
        problems.append((f"expected {expect.replies} {noun}, got {len(replies)}", at(*tried)))
    last = replies[-1] if replies else None
    if expect.template is not None:
        if last is None:
            problems.append(("no reply to check for a template", ()))
        elif last.is_template != expect.template:
            problems.append(
                (
                    "the last reply was a template"
                    if last.is_template
                    else "the last reply was not a template",
                    at(last),
                )
            )
    if expect.blocked is not None:
        problem = _blocking(conversation, user, expect.blocked, names or {})
        if problem is not None:
            message, shown_at = problem
            problems.append((message, tuple(i for i, _ in shown_at)))
    if expect.status is not None:
        if last is None or last.wamid is None:
            problems.append((f"no reply whose status could be {expect.status}", ()))
        else:
            reached = {s.status for s in conversation.statuses() if s.wamid == last.wamid}
            if expect.status not in reached:
                seen = ", ".join(sorted(reached)) or "none"
                problems.append(
                    (f"the last reply never reached {expect.status} (statuses: {seen})", at(last))
                )

    return [
        Violation(
            kind="expectation",
            rule="expect",
            message=problem,
            turn=turn,
            step=step.index,
            line=step.line,
            messages=shown,
            events=events,
        )
        for problem, events in problems
    ]
