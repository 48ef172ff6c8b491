"""The built-in invariants of a redelivered message: nothing done twice, nothing said twice.

Meta delivers a message again when the agent's webhook failed or was slow,
and sometimes twice anyway; an agent that does not recognise the copy books
twice or answers twice. Registered by name beside the other built-ins
(:mod:`harness.suites.builtin_invariants`), which they follow in every
respect: they read the trace only, and check each user apart.
"""

from __future__ import annotations

from collections.abc import Iterator

from harness.results import Violation
from harness.suites._reading import first_copy as _first_copy
from harness.suites._reading import is_message as _message
from harness.suites._reading import quote as _quote
from harness.suites._reading import turn_no as _turn_no
from harness.suites.registry import invariant
from harness.suites.transcript import Transcript
from harness.trace import Conversation, InboundMessage, OutboundSend, ToolCall

__all__ = ["no_repeated_answer", "no_repeated_side_effects"]


# -- no repeated side effects ------------------------------------------------------


def _window(t: Transcript, start: int, user: str | None) -> range:
    """From ``start`` up to the user's next first-copy message (or the end)."""
    for i in range(start + 1, len(t.events)):
        if _first_copy(t.events[i]) and t.user(i) == user:
            return range(start, i)
    return range(start, len(t.events))


def _side_effects(t: Transcript, span: range, user: str | None) -> list[int]:
    return [
        i
        for i in span
        if isinstance(e := t.events[i], ToolCall) and e.side_effect and t.user(i) == user
    ]


@invariant("no_repeated_side_effects", needs=("tool",))
def no_repeated_side_effects(conversation: Conversation) -> Iterator[Violation]:
    """No side-effecting tool call is repeated, least of all for a redelivered message.

    A repeat is a side-effecting call with the same name and arguments as the
    user's previous side-effecting call, when that one did not fail; or, after
    Meta redelivered a message, a side-effecting call that repeats one made
    for the original (same name, and same arguments too if the user had
    written again before the copy came). Reported at the turn of the repeat,
    with the redelivered copy when there is one.
    """
    rule = "no_repeated_side_effects"
    t = Transcript(conversation)
    found: dict[int, Violation] = {}
    first_copy: dict[str, int] = {}
    previous: dict[str | None, int] = {}
    latest_copy: dict[str | None, int] = {}
    for i, event in enumerate(t.events):
        user = t.user(i)
        if isinstance(event, InboundMessage):
            if not event.duplicate:
                first_copy.setdefault(event.wamid, i)
                continue
            latest_copy[user] = i
            original = first_copy.get(event.wamid)
            if original is None:
                continue
            moved_on = any(
                _first_copy(t.events[k]) and t.user(k) == user for k in range(original + 1, i)
            )
            done = _side_effects(t, _window(t, original, user), user)
            for j in _side_effects(t, _window(t, i, user), user):
                repeat = t.events[j]
                assert isinstance(repeat, ToolCall)
                for k in done:
                    earlier = t.events[k]
                    assert isinstance(earlier, ToolCall)
                    if (
                        k < i < j
                        and earlier.name == repeat.name
                        and (not moved_on or earlier.args == repeat.args)
                    ):
                        message = (
                            f"the redelivered message {_quote(event.text)} made "
                            f"{repeat.name} run again (first in {_turn_no(t, k)})"
                        )
                        found.setdefault(
                            j, t.violation(rule, message, [original, k, i, j], turn=t.turn(j))
                        )
                        break
        elif isinstance(event, ToolCall) and event.side_effect:
            last = previous.get(user)
            before = t.events[last] if last is not None else None
            if (
                last is not None
                and isinstance(before, ToolCall)
                and before.error is None
                and before.name == event.name
                and before.args == event.args
                and i not in found
            ):
                shown = [last, i]
                copy = latest_copy.get(user)
                if copy is not None and last < copy < i:
                    shown.append(copy)
                first = _turn_no(t, last)
                message = f"{event.name} ran again with the same arguments (first in {first})"
                found[i] = t.violation(rule, message, shown, turn=t.turn(i))
            previous[user] = i
    for index in sorted(found):
        yield found[index]


@invariant("no_repeated_answer")
def no_repeated_answer(conversation: Conversation) -> Iterator[Violation]:
    """A message Meta delivers again is not answered again.

    Meta may deliver a message twice (a duplicate), and delivers it again
    when the agent's webhook failed or was slow. A copy that comes after the
    agent has already sent the user a message (so after it answered) must
    get no message of its own: any message the agent sends the user after
    the copy, before the user's next message, is reported at its turn, with
    the copy and the first answer. This needs no tool calls: it is the
    check of a redelivery for an agent whose only side effect is what it
    says. A copy that comes before any answer is not judged (a second answer
    then can't be told from an answer in two parts), nor is an earlier
    answer that Meta refused.
    """
    rule = "no_repeated_answer"
    t = Transcript(conversation)
    first_copy: dict[str, int] = {}
    for i, event in enumerate(t.events):
        if not isinstance(event, InboundMessage):
            continue
        if not event.duplicate:
            first_copy.setdefault(event.wamid, i)
            continue
        original = first_copy.get(event.wamid)
        user = t.user(i)
        if original is None:
            continue
        answered = [k for k in range(original + 1, i) if _delivered_message(t, k, user)]
        if not answered:
            continue
        again = next(
            (k for k in _window(t, i, user) if _message(t.events[k]) and t.user(k) == user), None
        )
        if again is not None:
            message = (
                f"the redelivered message {_quote(event.text)} was answered again "
                f"(first answered in {_turn_no(t, answered[0])})"
            )
            yield t.violation(rule, message, [original, answered[0], i, again], turn=t.turn(again))


def _delivered_message(t: Transcript, index: int, user: str | None) -> bool:
    """Whether event ``index`` is a message the agent sent ``user`` that Meta took."""
    event = t.events[index]
    return (
        isinstance(event, OutboundSend)
        and event.is_message
        and event.error is None
        and t.user(index) == user
    )
