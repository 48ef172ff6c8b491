"""One cause, one headline: a scenario's violations ranked for people to read.

One bug often breaks several rules at once. A redelivered "Confirm" that
books a second table breaks ``no_repeated_side_effects``, the expectation
that nothing was booked, the expectation that nothing was said, and
``action_only_after_confirmation``: four violations, one cause. Read in the
order they were found, the first may be the least telling.

:func:`causes` groups them. Each violation is about an agent action (the
last tool call or message among the events it shows, its *subject*), and
each action answers the user's message that came last before it, first copy
or redelivered one (its *trigger*). Violations whose subjects answer the
same message are one cause when one of them shows that message itself: it
names the cause (the redelivered copy, the unconfirmed request) and leads;
the others follow from it. When none shows it, only violations about the
very same action are grouped. A violation about no action stands alone.
Among candidates, an invariant leads before a replay divergence, and that
before an expectation (an expectation says what happened, a rule says
what went wrong); then the first found.

This is presentation only: every violation stays in ``report.json``, in the
order it was found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.results import ScenarioResult, Violation
from harness.trace import Conversation, Event, InboundMessage, OutboundSend, ToolCall

__all__ = ["Cause", "causes", "scenario_causes"]

_KIND_RANK = {"invariant": 0, "divergence": 1, "expectation": 2}


@dataclass(frozen=True)
class Cause:
    """One cause of a failure: the violation that names it, and those that follow from it."""

    lead: Violation
    follows: tuple[Violation, ...] = ()

    @property
    def violations(self) -> tuple[Violation, ...]:
        """The lead, then what follows from it."""
        return (self.lead, *self.follows)


def _action(event: Event) -> bool:
    return isinstance(event, ToolCall) or (isinstance(event, OutboundSend) and event.is_message)


def _subject(violation: Violation, events: Sequence[Event]) -> int | None:
    """The last agent action the violation shows, by its index in the log."""
    shown = [i for i in violation.events if 0 <= i < len(events) and _action(events[i])]
    return max(shown) if shown else None


def _trigger(subject: int, events: Sequence[Event]) -> int | None:
    """The user's last message (any copy) before the action at ``subject``."""
    user = events[subject].user
    for i in range(subject - 1, -1, -1):
        event = events[i]
        if isinstance(event, InboundMessage) and (user is None or event.user == user):
            return i
    return None


def _rank(position: int, violation: Violation) -> tuple[int, int]:
    return (_KIND_RANK.get(violation.kind, len(_KIND_RANK)), position)


def _group(
    members: list[tuple[int, Violation]], candidates: list[tuple[int, Violation]]
) -> tuple[int, Cause]:
    """The cause of ``members`` (position, violation) led by the best of ``candidates``.

    It is placed where its first member was found.
    """
    lead_at, lead = min(candidates, key=lambda pair: _rank(*pair))
    follows = tuple(v for position, v in members if position != lead_at)
    return min(position for position, _ in members), Cause(lead, follows)


def causes(violations: Sequence[Violation], conversation: Conversation | None) -> list[Cause]:
    """``violations`` grouped by cause (see the module docstring), in the order found.

    Without a conversation (a scenario that never ran), each violation is a cause.
    """
    events: Sequence[Event] = conversation.events if conversation is not None else ()
    by_trigger: dict[int, list[tuple[int, Violation]]] = {}
    alone: list[tuple[int, Cause]] = []
    subjects: dict[int, int] = {}
    for position, violation in enumerate(violations):
        subject = _subject(violation, events)
        trigger = _trigger(subject, events) if subject is not None else None
        if subject is None or trigger is None:
            alone.append((position, Cause(violation)))
            continue
        subjects[position] = subject
        by_trigger.setdefault(trigger, []).append((position, violation))
    placed = list(alone)
    for trigger, members in by_trigger.items():
        naming = [(p, v) for p, v in members if trigger in v.events]
        if naming:
            placed.append(_group(members, naming))
            continue
        by_subject: dict[int, list[tuple[int, Violation]]] = {}
        for position, violation in members:
            by_subject.setdefault(subjects[position], []).append((position, violation))
        placed.extend(_group(same, same) for same in by_subject.values())
    return [cause for _, cause in sorted(placed, key=lambda pair: pair[0])]


def scenario_causes(scenario: ScenarioResult) -> list[Cause]:
    """The causes of one scenario's violations."""
    return causes(scenario.violations, scenario.conversation)
