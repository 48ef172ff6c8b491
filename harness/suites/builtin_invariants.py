"""The built-in invariants: the cross-turn and channel regressions WhatsApp agents ship.

Each is registered by name (see :mod:`harness.suites.invariants`) and documents its
parameters and defaults. They read the trace only: turns, tool calls, sends
and statuses. Conversations with several users are checked per user. A
text match is case-insensitive throughout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Annotated, Final, TypeAlias

from pydantic import BeforeValidator, JsonValue, PositiveInt

from harness.durations import format_duration
from harness.results import Violation
from harness.suites._reading import first_copy as _first_copy
from harness.suites._reading import is_message as _message
from harness.suites._reading import misnamed_tool
from harness.suites._reading import turn_no as _turn_no
from harness.suites.registry import DurationParam, Regex, invariant
from harness.suites.transcript import Transcript
from harness.trace import Conversation, InboundMessage, OutboundSend, StatusUpdate, ToolCall

__all__ = [
    "DEFAULT_PHRASES",
    "REPLY_TYPES",
    "action_only_after_confirmation",
    "constraint_honored",
    "every_inbound_answered",
    "never_reasks",
    "no_freeform_outside_window",
    "one_reply_per_burst",
    "sends_valid",
]

#: What a user says to confirm, matched as whole words.
DEFAULT_PHRASES: Final[tuple[str, ...]] = (
    "yes",
    "yeah",
    "yep",
    "yup",
    "sure",
    "ok",
    "okay",
    "confirm",
    "confirmed",
    "correct",
    "perfect",
    "book it",
    "please do",
    "go ahead",
    "do it",
    "sounds good",
    "that works",
    "👍",
)
#: The send types that count as a reply to a burst.
REPLY_TYPES: Final = frozenset({"text", "interactive", "template"})
#: Meta's code for a free-form message sent outside the 24-hour window.
_RE_ENGAGEMENT: Final = 131047


def _as_tuple(value: object) -> object:
    return (value,) if isinstance(value, str) else value


_Texts: TypeAlias = Annotated[tuple[str, ...], BeforeValidator(_as_tuple)]


def _search(pattern: str | None) -> re.Pattern[str] | None:
    return re.compile(pattern, re.IGNORECASE) if pattern is not None else None


def _words(phrases: tuple[str, ...]) -> re.Pattern[str] | None:
    """A pattern matching any phrase as whole words."""
    cleaned = sorted({p.strip() for p in phrases if p.strip()}, key=len, reverse=True)
    if not cleaned:
        return None
    alternatives = "|".join(re.escape(p) for p in cleaned)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def _a(word: str) -> str:
    vowel = word[:1].lower() in ("a", "e", "i", "o", "u")
    return f"{'an' if vowel else 'a'} {word}"


# -- action only after confirmation ------------------------------------------------


def _confirms(event: InboundMessage, phrases: re.Pattern[str] | None, button: str | None) -> bool:
    if button is not None and event.reply_id == button:
        return True
    return phrases is not None and event.text is not None and bool(phrases.search(event.text))


@invariant("action_only_after_confirmation", needs=("tool",))
def action_only_after_confirmation(
    conversation: Conversation,
    *,
    tool: str = "book_appointment",
    phrases: _Texts = DEFAULT_PHRASES,
    button: str | None = "confirm",
    proposal: Regex | None = None,
) -> Iterator[Violation]:
    """Every call of ``tool`` comes after the user confirmed the agent's proposal.

    A confirmation is a user message (first copies only: a redelivered "yes"
    confirms nothing new) whose text holds one of ``phrases`` as whole
    words, or a button reply whose id is ``button``. It counts only after an
    agent message sent since the previous call of ``tool`` (the proposal; with
    ``proposal``, only agent messages matching that regex propose, and a new
    proposal voids a confirmation given to an earlier one), and one
    confirmation allows one call (a second one is reported as a call again, with
    the earlier call). Reported at the turn of the unconfirmed call. A ``tool``
    the agent never called, while it called one whose name is near it, is
    reported too: a misspelled name would let the rule hold.
    """
    rule = "action_only_after_confirmation"
    t = Transcript(conversation)
    confirm = _words(phrases)
    proposes = _search(proposal)
    proposed: dict[str | None, int] = {}
    confirmed: dict[str | None, int] = {}
    said: dict[str | None, list[int]] = {}
    called: dict[str | None, int] = {}  # each user's previous call of the tool
    for i, event in enumerate(t.events):
        user = t.user(i)
        if isinstance(event, OutboundSend) and event.is_message:
            if proposes is None or proposes.search(event.text or ""):
                proposed[user] = i
                said[user] = []
                if proposes is not None:
                    # A new proposal needs a new yes: the old one was for something else.
                    confirmed.pop(user, None)
        elif isinstance(event, InboundMessage) and not event.duplicate:
            said.setdefault(user, []).append(i)
            if user in proposed and _confirms(event, confirm, button):
                confirmed[user] = i
        elif isinstance(event, ToolCall) and event.name == tool:
            if user not in confirmed:
                if user in proposed:
                    message = f"{tool} was called before the user confirmed the agent's proposal"
                    shown = [proposed[user], *said.get(user, [])[-3:], i]
                elif user in called:  # a proposal there was, but an earlier call used it up
                    earlier = _turn_no(t, called[user])
                    message = (
                        f"{tool} was called again with no new proposal since its call in {earlier}"
                    )
                    shown = [called[user], *said.get(user, [])[-3:], i]
                else:
                    message = f"{tool} was called before the agent proposed anything to confirm"
                    shown = [*said.get(user, [])[-3:], i]
                yield t.violation(rule, message, shown, turn=t.turn(i))
            proposed.pop(user, None)
            confirmed.pop(user, None)
            said[user] = []
            called[user] = i
    yield from _misnamed(t, rule, tool)


def _misnamed(t: Transcript, rule: str, tool: str) -> Iterator[Violation]:
    """A violation when ``tool`` was never called but a tool with a near name was."""
    calls = [i for i, e in enumerate(t.events) if isinstance(e, ToolCall)]
    names = {e.name for e in t.events if isinstance(e, ToolCall)}
    if near := misnamed_tool(tool, names):
        shown = [i for i in calls if getattr(t.events[i], "name", None) == near]
        message = (
            f"the rule names tool {tool!r}, which the agent never called; it called "
            f"{near!r}: is the name misspelled?"
        )
        yield t.violation(rule, message, shown[:3], turn=t.turn(shown[0]))


# -- never re-ask ------------------------------------------------------------------


@invariant("never_reasks")
def never_reasks(
    conversation: Conversation, *, pattern: Regex, fact: Regex | None = None
) -> Iterator[Violation]:
    """The agent never asks again for something the user already told it.

    ``pattern`` matches the agent's question (``"which (day|date)"``). With
    ``fact``, a regex that spots the user giving it (a weekday, a date), any
    question after the user's first message matching ``fact`` is a
    violation. Without it, asking again after the user answered (sent a
    message since the previous time the agent asked) is one. Reported at
    the turn of the repeated question.
    """
    rule = "never_reasks"
    t = Transcript(conversation)
    asks = re.compile(pattern, re.IGNORECASE)
    gives = _search(fact)
    given: dict[str | None, int] = {}
    asked: dict[str | None, int] = {}
    answers: dict[str | None, list[int]] = {}
    for i, event in enumerate(t.events):
        user = t.user(i)
        if isinstance(event, InboundMessage) and not event.duplicate:
            if gives is not None and user not in given and gives.search(event.text or ""):
                given[user] = i
            answers.setdefault(user, []).append(i)
        elif isinstance(event, OutboundSend) and event.is_message and asks.search(event.text or ""):
            if gives is not None and user in given:
                where = _turn_no(t, given[user])
                message = f"the agent asked for something the user already gave in {where}"
                yield t.violation(rule, message, [given[user], i], turn=t.turn(i))
            elif gives is None and user in asked and answers.get(user):
                where = _turn_no(t, answers[user][0])
                message = f"the agent asked again what the user already answered in {where}"
                shown = [asked[user], *answers[user][-3:], i]
                yield t.violation(rule, message, shown, turn=t.turn(i))
            asked[user] = i
            answers[user] = []


# -- a constraint stays honored ----------------------------------------------------


def _text(value: JsonValue) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@invariant("constraint_honored", needs=("tool",))
def constraint_honored(
    conversation: Conversation,
    *,
    mention: Regex,
    require: Regex | None = None,
    tool: str = "book_appointment",
    arg: str | None = None,
    reply_require: Regex | None = None,
    proposal: Regex | None = None,
) -> Iterator[Violation]:
    """Once the user states a need, every later call of ``tool`` carries it.

    The need is stated by a user message matching ``mention``
    (``"wheelchair|step-free"``). Each later call of ``tool`` must have
    argument ``arg`` matching ``require`` (default: ``mention``), or with no
    ``arg``, any argument value matching it (non-text values as JSON, so
    ``true`` matches a boolean). With ``reply_require``, the agent's proposals
    after the need must match it too: the messages matching ``proposal``, or
    without it, the last agent message before each call of ``tool``.
    Reported at the turn of the call or message that dropped it; a misspelled
    ``tool`` as for :func:`action_only_after_confirmation`.
    """
    rule = "constraint_honored"
    t = Transcript(conversation)
    stated_by = re.compile(mention, re.IGNORECASE)
    carries = re.compile(require if require is not None else mention, re.IGNORECASE)
    replies_must = _search(reply_require)
    proposes = _search(proposal)
    stated: dict[str | None, int] = {}
    last_reply: dict[str | None, int] = {}
    for i, event in enumerate(t.events):
        user = t.user(i)
        if isinstance(event, InboundMessage) and not event.duplicate:
            if user not in stated and stated_by.search(event.text or ""):
                stated[user] = i
        elif user not in stated:
            continue
        elif isinstance(event, OutboundSend) and event.is_message:
            last_reply[user] = i
            text = event.text or ""
            if (
                replies_must is not None
                and proposes is not None
                and proposes.search(text)
                and not replies_must.search(text)
            ):
                where = _turn_no(t, stated[user])
                message = f"the agent's proposal dropped the need the user stated in {where}"
                yield t.violation(rule, message, [stated[user], i], turn=t.turn(i))
        elif isinstance(event, ToolCall) and event.name == tool:
            where = _turn_no(t, stated[user])
            if arg is not None:
                values: list[JsonValue] = [event.args.get(arg)]
                what = f"its {arg!r} argument does not match {carries.pattern!r}"
            else:
                values = list(event.args.values())
                what = f"no argument matches {carries.pattern!r}"
            if not any(carries.search(_text(v)) for v in values):
                message = f"{tool} dropped the need the user stated in {where}: {what}"
                yield t.violation(rule, message, [stated[user], i], turn=t.turn(i))
            before = last_reply.pop(user, None)
            if replies_must is not None and proposes is None and before is not None:
                text = getattr(t.events[before], "text", None) or ""
                if not replies_must.search(text):
                    message = f"the proposal before {tool} dropped the need stated in {where}"
                    yield t.violation(rule, message, [stated[user], before, i], turn=t.turn(i))
    yield from _misnamed(t, rule, tool)


# -- one reply per burst -----------------------------------------------------------


def _bursts(conversation: Conversation, gap: timedelta) -> list[list[int]]:
    """Turn indexes grouped into bursts: a user's turns typed as one burst.

    Where the channel marked its messages' bursts, those marks decide; where
    it did not (a recorded live chat), turns whose messages came at most
    ``gap`` apart are one burst.
    """
    bursts: list[list[int]] = []
    open_burst: dict[str, int] = {}
    for turn in conversation.turns:
        messages = turn.messages
        if not messages:
            continue
        current = open_burst.get(turn.user)
        if current is not None:
            previous = conversation.turns[bursts[current][-1]].messages[-1]
            marked = previous.burst is not None and messages[0].burst is not None
            if marked and previous.burst == messages[0].burst:
                bursts[current].append(turn.index)
                continue
            if not marked and gap > timedelta(0) and messages[0].at - previous.at <= gap:
                bursts[current].append(turn.index)
                continue
        bursts.append([turn.index])
        open_burst[turn.user] = len(bursts) - 1
    return bursts


@invariant("one_reply_per_burst")
def one_reply_per_burst(
    conversation: Conversation,
    *,
    max_replies: PositiveInt = 1,
    gap: DurationParam = timedelta(seconds=1.5),
    chunk_min: PositiveInt = 2000,
    within: DurationParam = timedelta(hours=1),
) -> Iterator[Violation]:
    """A burst of several user messages gets at most ``max_replies`` agent messages.

    A burst is a turn's messages, joined with the same user's next turns
    whose first message came at most ``gap`` after the previous one: an
    agent that answers each fragment at once splits the burst into turns,
    and this still sees it (``gap: 0`` uses the turns alone). Only text,
    interactive and template messages count; a text of ``chunk_min``
    characters or more followed by another text is one long reply split to
    fit Meta's 4096-character limit, so the chunks count once. A message
    sent over ``within`` after the burst (a follow-up a day later) is not a
    reply to it. Reported at the turn of the first reply over the limit.
    """
    rule = "one_reply_per_burst"
    t = Transcript(conversation)
    for burst in _bursts(conversation, gap):
        indexes = sorted(i for turn in burst for i in t.turn_events(turn))
        messages = [i for i in indexes if _first_copy(t.events[i])]
        if len(messages) < 2:
            continue
        last = t.events[messages[-1]].at
        replies = [
            i
            for i in indexes
            if isinstance(e := t.events[i], OutboundSend)
            and e.is_message
            and e.type in REPLY_TYPES
            and e.at - last <= within
        ]
        groups = t.reply_groups(replies, chunk_min)
        if len(groups) > max_replies:
            excess = groups[max_replies][0]
            message = (
                f"a burst of {len(messages)} messages got {len(groups)} separate replies, "
                f"more than {max_replies}"
            )
            yield t.violation(rule, message, [*messages, *replies], turn=t.turn(excess))


# -- the 24-hour window ------------------------------------------------------------


def _send_of(t: Transcript) -> dict[str, int]:
    """Each outbound message id, mapped to the index of the send that produced it."""
    return {e.wamid: i for i, e in enumerate(t.events) if isinstance(e, OutboundSend) and e.wamid}


def _codes(event: StatusUpdate) -> set[int]:
    return {error.code for error in event.errors}


@invariant("no_freeform_outside_window")
def no_freeform_outside_window(conversation: Conversation) -> Iterator[Violation]:
    """No free-form message goes out while the user's 24-hour window is closed.

    Flags every non-template message sent with the window closed (as the
    channel saw it, or as Meta answered it: error 131047), and every failed
    status carrying 131047, shown with the send it belongs to. Reported at
    the turn of the send.
    """
    rule = "no_freeform_outside_window"
    t = Transcript(conversation)
    sends = _send_of(t)
    flagged: dict[int, list[int]] = {}
    orphans: list[int] = []
    for i, event in enumerate(t.events):
        if isinstance(event, OutboundSend) and event.is_message and not event.is_template:
            refused = event.error is not None and event.error.code == _RE_ENGAGEMENT
            if event.in_window is False or refused:
                flagged.setdefault(i, [])
        elif isinstance(event, StatusUpdate) and _RE_ENGAGEMENT in _codes(event):
            send = sends.get(event.wamid)
            if send is None:
                orphans.append(i)
            else:
                flagged.setdefault(send, []).append(i)
    for send, statuses in sorted(flagged.items()):
        sent = t.events[send]
        kind = sent.type if isinstance(sent, OutboundSend) else "message"
        failed = f", and it failed with {_RE_ENGAGEMENT}" if statuses else ""
        message = f"a free-form {kind} message went out with the 24-hour window closed{failed}"
        yield t.violation(rule, message, [send, *statuses], turn=t.turn(send))
    for status in orphans:
        message = f"a message failed with {_RE_ENGAGEMENT}: the 24-hour window was closed"
        yield t.violation(rule, message, [status])


# -- every send valid --------------------------------------------------------------


@invariant("sends_valid")
def sends_valid(conversation: Conversation) -> Iterator[Violation]:
    """Every send is accepted by the Graph API and never fails on a status.

    Flags each send Meta refused (its error code and details) and each
    ``failed`` status (its code and title), shown with the send it belongs
    to. Reported at the turn of the send.
    """
    rule = "sends_valid"
    t = Transcript(conversation)
    sends = _send_of(t)
    for i, event in enumerate(t.events):
        if isinstance(event, OutboundSend) and event.error is not None:
            error = event.error
            detail = ": ".join(part for part in (error.title, error.details) if part)
            about = f" ({detail})" if detail else ""
            message = f"the Graph API refused {_a(event.type)} send with {error.code}{about}"
            yield t.violation(rule, message, [i], turn=t.turn(i))
        elif isinstance(event, StatusUpdate) and event.status == "failed":
            send = sends.get(event.wamid)
            codes = ", ".join(
                f"{e.code} ({e.title})" if e.title else str(e.code) for e in event.errors
            )
            kind = "message"
            if send is not None and isinstance(sent := t.events[send], OutboundSend):
                kind = f"{sent.type} message"
            message = f"{_a(kind)} failed to deliver" + (f": {codes}" if codes else "")
            shown = [i] if send is None else [send, i]
            yield t.violation(rule, message, shown, turn=t.turn(send if send is not None else i))


# -- every inbound answered --------------------------------------------------------


def _ago(delta: timedelta) -> str:
    return format_duration(delta) if delta > timedelta(0) else "0s"


@invariant("every_inbound_answered")
def every_inbound_answered(
    conversation: Conversation,
    *,
    within: DurationParam | None = None,
    ignore: _Texts = ("reaction",),
) -> Iterator[Violation]:
    """Every burst of user messages gets at least one agent message before the next.

    A burst is a turn, or the turns of messages the channel played as one
    burst (a ``say`` of several messages), however the agent's own work
    split them. Any message the user would see counts (whether Meta delivered it is
    :func:`sends_valid`'s business). With ``within`` (seconds, or text such as
    ``"30s"``), the first answer must come at most that long after the
    burst's last message. A burst made only of message types in ``ignore``
    (reactions, by default) needs no answer. Reported at the burst's turn.
    """
    rule = "every_inbound_answered"
    t = Transcript(conversation)
    for burst in _bursts(conversation, timedelta(0)):
        indexes = sorted(i for turn in burst for i in t.turn_events(turn))
        messages = [i for i in indexes if _first_copy(t.events[i])]
        if all(getattr(t.events[i], "type", "") in ignore for i in messages):
            continue  # no messages, or only reactions: nothing to answer
        answers = [i for i in indexes if _message(t.events[i])]
        if not answers:
            many = f"the burst of {len(messages)} messages" if len(messages) > 1 else "the message"
            message = f"{many} got no answer from the agent"
            yield t.violation(rule, message, messages, turn=burst[0])
            continue
        waited = t.events[answers[0]].at - t.events[messages[-1]].at
        if within is not None and waited > within:
            message = (
                f"the first answer came {_ago(waited)} after the user's last message, "
                f"more than {format_duration(within)}"
            )
            yield t.violation(rule, message, [*messages, answers[0]], turn=burst[0])
