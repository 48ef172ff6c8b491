"""How two conversations differ, turn by turn: a recording against its replay, or two runs.

:func:`diff_conversations` pairs the turns of conversation A with those of B
and compares what matters in each pair: the user's messages (type, text,
tapped reply id), the agent's tool calls (name, arguments, failures), the
agent's messages (type, text, header and footer, interactive options,
template name, language and parameters) and how far each got (refused,
sent, delivered, read, failed with which codes). What changes from run to
run without meaning anything is ignored: message ids (wamids), delivery ids
and attempts, latency, model-call keys and token counts, and virtual times
unless ``compare_times=True``.

Turns are paired by their index; when both conversations have the same
users, by each user's own turn count, so two users' turns that swapped
places in time still pair up. The result is a frozen :class:`ConversationDiff`
of :class:`TurnDiff` rows whose ``changes`` are ready-to-print lines such as
``reply 2 text differs: 'Booked for 8pm' -> 'Booked for 9pm'``. The
comparison is pure and deterministic: the same pair gives the same lines.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, JsonValue, model_validator

from harness.trace import (
    Conversation,
    OutboundSend,
    StatusUpdate,
    ToolCall,
    Turn,
    build_turns,
)

__all__ = ["ConversationDiff", "TurnDiff", "TurnStatus", "diff_conversations"]

TurnStatus: TypeAlias = Literal["same", "changed", "only_a", "only_b"]

_STATUS_WORDS: Mapping[TurnStatus, str] = {
    "same": "same",
    "changed": "changed",
    "only_a": "only in a",
    "only_b": "only in b",
}
# How far a message got, from its status webhooks.
_PROGRESS = {"sent": 1, "delivered": 2, "read": 3, "played": 3}
# Request keys that point at other messages by id: which id is noise.
_VOLATILE_REQUEST_KEYS = frozenset({"context"})
# Webhook message keys that identify the copy, not the content.
_VOLATILE_BODY_KEYS = frozenset({"id", "timestamp", "context", "from"})
_WAMID = "wamid."
_CLIP = 70
_CONTEXT = 20


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TurnDiff(_Model):
    """One row of a diff: a turn of A, of B, or of both, and what differs between them.

    ``index`` is the turn's index in A, or in B for a turn only B has;
    ``index_a`` and ``index_b`` are its index in each conversation (None on
    the side that lacks it). ``changes`` holds one readable line per
    difference, empty when ``status`` is ``same``.
    """

    index: int
    status: TurnStatus
    user_a: str | None = None
    user_b: str | None = None
    index_a: int | None = None
    index_b: int | None = None
    changes: tuple[str, ...] = ()

    @property
    def number(self) -> int:
        """The turn's number as people count it (from 1)."""
        return self.index + 1

    @property
    def same(self) -> bool:
        """True when nothing compared differs in this turn."""
        return self.status == "same"

    @property
    def status_word(self) -> str:
        """The status in words: ``same``, ``changed``, ``only in a``, ``only in b``."""
        return _STATUS_WORDS[self.status]

    def label(self) -> str:
        """``turn 2``, or ``turn 2 (turn 3 in b)`` when the two sides number it differently."""
        text = f"turn {self.number}"
        if self.index_a is not None and self.index_b is not None and self.index_a != self.index_b:
            text += f" (turn {self.index_b + 1} in b)"
        return text


class ConversationDiff(_Model):
    """Every turn of two conversations side by side, and whether anything differs.

    ``same`` is True exactly when every turn's status is ``same``;
    ``compare_times`` records whether virtual times were compared.
    """

    turns: tuple[TurnDiff, ...] = ()
    same: bool = True
    compare_times: bool = False

    @model_validator(mode="after")
    def _same_matches_turns(self) -> ConversationDiff:
        expected = all(t.same for t in self.turns)
        if self.same != expected:
            raise ValueError(f"same={self.same} but the turns say {expected}")
        return self

    @property
    def differences(self) -> tuple[TurnDiff, ...]:
        """The turns that are not the same, in order."""
        return tuple(t for t in self.turns if not t.same)

    @property
    def first_difference(self) -> TurnDiff | None:
        """The first turn that differs, or None when the conversations match."""
        return next((t for t in self.turns if not t.same), None)

    def summary(self) -> str:
        """One line: how many turns differ, how, and the first difference."""
        total = _plural(len(self.turns), "turn")
        first = self.first_difference
        if first is None:
            times = "" if self.compare_times else " (times not compared)"
            return f"no differences in {total}{times}"
        counts: dict[str, int] = {}
        for turn in self.differences:
            counts[turn.status_word] = counts.get(turn.status_word, 0) + 1
        kinds = ", ".join(f"{n} {word}" for word, n in counts.items())
        head = f"{len(self.differences)} of {total} differ ({kinds})"
        what = first.changes[0] if first.changes else first.status_word
        return f"{head}; first at {first.label()}: {what}"

    def lines(self) -> list[str]:
        """Every difference on its own line, prefixed by its turn (``turn 2: ...``)."""
        return [f"{t.label()}: {change}" for t in self.differences for change in t.changes]


# -- formatting values ------------------------------------------------------------------


def _plural(n: int, noun: str) -> str:
    if n == 1:
        return f"1 {noun}"
    return f"{n} {noun[:-1]}ies" if noun.endswith("y") else f"{n} {noun}s"


def _count_line(noun: str, a: int, b: int) -> str:
    """``a: 2 replies, b: 1``."""
    return f"a: {_plural(a, noun)}, b: {b}"


def _clip(text: str, limit: int = _CLIP) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _show(value: JsonValue) -> str:
    if isinstance(value, str):
        return repr(_clip(value))
    return _clip(json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")))


def _quote_window(text: str, start: int, end: int) -> str:
    inner = repr(text[start:end])
    return ("…" if start > 0 else "") + inner + ("…" if end < len(text) else "")


def _pair(a: str, b: str) -> str:
    """``'x' -> 'y'``; long texts shrink to the part that differs, with some context."""
    if len(a) <= _CLIP and len(b) <= _CLIP:
        return f"{a!r} -> {b!r}"
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    start = max(prefix - _CONTEXT, 0)
    end_a = min(len(a) - suffix + _CONTEXT, len(a), start + _CLIP)
    end_b = min(len(b) - suffix + _CONTEXT, len(b), start + _CLIP)
    return f"{_quote_window(a, start, end_a)} -> {_quote_window(b, start, end_b)}"


def _optional(value: str | None) -> str:
    return "(none)" if value is None else repr(_clip(value))


def _text_pair(a: str | None, b: str | None) -> str:
    if a is None or b is None:
        return f"{_optional(a)} -> {_optional(b)}"
    return _pair(a, b)


def _canonical(value: JsonValue) -> str:
    # json, not ==: True == 1 and 1 == 1.0 in Python, but they are different JSON
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _json_changes(a: JsonValue, b: JsonValue, path: str = "") -> list[str]:
    """What differs between two JSON values, one entry per leaf: ``slot '20:00' -> '21:00'``."""
    if _canonical(a) == _canonical(b):
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b)):
            where = f"{path}.{key}" if path else key
            if key not in b:
                out.append(f"{where} only in a ({_show(a[key])})")
            elif key not in a:
                out.append(f"{where} only in b ({_show(b[key])})")
            else:
                out.extend(_json_changes(a[key], b[key], where))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            c
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for c in _json_changes(x, y, f"{path}[{i}]")
        ]
    where = f"{path} " if path else ""
    if isinstance(a, str) and isinstance(b, str):
        return [f"{where}{_pair(a, b)}"]
    return [f"{where}{_show(a)} -> {_show(b)}"]


def _scrub(value: JsonValue, drop: frozenset[str] = frozenset()) -> JsonValue:
    """A JSON value with message ids masked and, at the top level, ``drop`` keys removed."""
    if isinstance(value, str):
        return "<wamid>" if value.startswith(_WAMID) else value
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def _time(at: datetime, other: datetime) -> str:
    fmt = "%H:%M:%S" if at.date() == other.date() else "%Y-%m-%d %H:%M:%S"
    if at.microsecond or other.microsecond:
        fmt += ".%f"
    return at.strftime(fmt)


def _time_line(what: str, a: datetime, b: datetime) -> list[str]:
    if a == b:
        return []
    return [f"{what} time differs: {_time(a, b)} -> {_time(b, a)}"]


# -- reading messages -------------------------------------------------------------------


def _get(value: JsonValue, *keys: str) -> JsonValue:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _string(value: JsonValue) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _canonical(value)


def _list(value: JsonValue) -> list[JsonValue]:
    return list(value) if isinstance(value, list) else []


@dataclass(frozen=True)
class _Reply:
    """What a user sees of one message the agent sent, and how far it got."""

    type: str
    text: str
    header: str
    footer: str
    options: tuple[str, ...]
    template: str
    parameters: tuple[str, ...]
    request: JsonValue
    state: str


def _option(reply: JsonValue) -> str:
    title, ident = _string(_get(reply, "title")), _string(_get(reply, "id"))
    return f"{title} [{ident}]" if ident else title


def _interactive_options(inter: JsonValue) -> tuple[str, ...]:
    action = _get(inter, "action")
    kind = _string(_get(inter, "type"))
    if kind == "button":
        return tuple(_option(_get(b, "reply")) for b in _list(_get(action, "buttons")))
    if kind == "list":
        options = [f"menu {_string(_get(action, 'button'))!r}"]
        for section in _list(_get(action, "sections")):
            prefix = _string(_get(section, "title"))
            for row in _list(_get(section, "rows")):
                options.append(f"{prefix}: {_option(row)}" if prefix else _option(row))
        return tuple(options)
    parameters = _get(action, "parameters")
    title = _string(_get(parameters, "display_text")) or _string(_get(parameters, "flow_cta"))
    url = _string(_get(parameters, "url"))
    return (f"{title} <{url}>" if url else title,) if title else ()


def _template_parameters(template: JsonValue) -> tuple[str, ...]:
    values: list[str] = []
    for component in _list(_get(template, "components")):
        for parameter in _list(_get(component, "parameters")):
            kind = _string(_get(parameter, "type"))
            value = _get(parameter, kind) if kind and kind != "text" else _get(parameter, "text")
            values.append(_string(value))
    return tuple(values)


def _state(send: OutboundSend, statuses: Sequence[StatusUpdate]) -> str:
    if send.error is not None:
        return f"refused {send.error.code}"
    failed = [s for s in statuses if s.status == "failed"]
    if failed:
        codes = ", ".join(str(e.code) for e in failed[-1].errors)
        return f"failed {codes}" if codes else "failed"
    reached = max((_PROGRESS.get(s.status, 0) for s in statuses), default=0)
    words = {rank: word for word, rank in _PROGRESS.items() if word != "played"}
    return words.get(reached, "no status")


def _reply(send: OutboundSend, statuses: Sequence[StatusUpdate]) -> _Reply:
    request: JsonValue = send.request
    inter = _get(request, "interactive")
    template = _get(request, "template")
    text = send.text
    if text is None:
        text = _string(_get(request, "text", "body")) or _string(_get(inter, "body", "text"))
        text = text or _string(_get(request, send.type, "caption"))
    name = _string(_get(template, "name"))
    language = _string(_get(template, "language", "code"))
    return _Reply(
        type=send.type,
        text=text,
        header=_string(_get(inter, "header", "text")),
        footer=_string(_get(inter, "footer", "text")),
        options=_interactive_options(inter) if inter is not None else (),
        template=f"{name} ({language})" if language else name,
        parameters=_template_parameters(template),
        request=_scrub(request, _VOLATILE_REQUEST_KEYS),
        state=_state(send, statuses),
    )


# -- comparing the parts of a turn ----------------------------------------------------------


def _compare_messages(ta: Turn, tb: Turn, compare_times: bool) -> list[str]:
    a, b = ta.messages, tb.messages
    out: list[str] = []
    for n, (x, y) in enumerate(zip(a, b, strict=False), start=1):
        what = f"user message {n}"
        if x.type != y.type:
            out.append(f"{what} type differs: {x.type!r} -> {y.type!r}")
        if x.text != y.text:
            out.append(f"{what} text differs: {_text_pair(x.text, y.text)}")
        if x.reply_id != y.reply_id:
            out.append(f"{what} reply id differs: {_text_pair(x.reply_id, y.reply_id)}")
        if x.type == y.type and x.text == y.text and x.reply_id == y.reply_id:
            body = _json_changes(
                _scrub(x.body, _VOLATILE_BODY_KEYS), _scrub(y.body, _VOLATILE_BODY_KEYS)
            )
            if body:
                out.append(f"{what} content differs: {'; '.join(body)}")
        if compare_times:
            out.extend(_time_line(what, x.at, y.at))
    if len(a) != len(b):
        out.append(_count_line("user message", len(a), len(b)))
    for side, extra in (("a", a[len(b) :]), ("b", b[len(a) :])):
        for n, message in enumerate(extra, start=min(len(a), len(b)) + 1):
            shown = _show(message.text) if message.text is not None else f"({message.type})"
            out.append(f"user message {n} only in {side}: {shown}")
    redelivered_a = sum(1 for m in ta.inbound if m.duplicate)
    redelivered_b = sum(1 for m in tb.inbound if m.duplicate)
    if redelivered_a != redelivered_b:
        out.append(_count_line("redelivered copy", redelivered_a, redelivered_b))
    return out


def _compare_reply(n: int, x: _Reply, y: _Reply) -> list[str]:
    what = f"reply {n}"
    out: list[str] = []
    if x.type != y.type:  # the parts of different kinds of message don't compare
        out.append(f"{what} type differs: {_reply_outline(x)} -> {_reply_outline(y)}")
    else:
        if x.template != y.template:
            out.append(f"{what} template differs: {_show(x.template)} -> {_show(y.template)}")
        if x.parameters != y.parameters:
            before, after = _show(list(x.parameters)), _show(list(y.parameters))
            out.append(f"{what} template parameters differ: {before} -> {after}")
        for part in ("header", "text", "footer"):
            mine, theirs = getattr(x, part), getattr(y, part)
            if mine != theirs:
                out.append(f"{what} {part} differs: {_pair(mine, theirs)}")
        if x.options != y.options:
            before, after = _show(list(x.options)), _show(list(y.options))
            out.append(f"{what} options differ: {before} -> {after}")
        if not out:  # nothing above explains it: name the request fields that differ
            fields = _json_changes(x.request, y.request)
            if fields:
                out.append(f"{what} request differs: {'; '.join(fields)}")
    if x.state != y.state:
        out.append(f"{what} status differs: {x.state} -> {y.state}")
    return out


def _reply_outline(reply: _Reply) -> str:
    """``text 'Booked'``, ``template booking_reminder (en_US)``, ``image``."""
    if reply.type == "template":
        return f"template {reply.template}"
    return f"{reply.type} {_show(reply.text)}" if reply.text else reply.type


def _compare_replies(
    a: Sequence[OutboundSend],
    b: Sequence[OutboundSend],
    statuses_a: Mapping[str, list[StatusUpdate]],
    statuses_b: Mapping[str, list[StatusUpdate]],
    compare_times: bool,
) -> list[str]:
    replies_a = [_reply(s, statuses_a.get(s.wamid or "", [])) for s in a]
    replies_b = [_reply(s, statuses_b.get(s.wamid or "", [])) for s in b]
    out: list[str] = []
    for n, (x, y) in enumerate(zip(replies_a, replies_b, strict=False), start=1):
        out.extend(_compare_reply(n, x, y))
        if compare_times:
            out.extend(_time_line(f"reply {n}", a[n - 1].at, b[n - 1].at))
    if len(a) != len(b):
        out.append(_count_line("reply", len(a), len(b)))
    shared = min(len(a), len(b))
    for side, extra in (("a", replies_a[shared:]), ("b", replies_b[shared:])):
        for n, reply in enumerate(extra, start=shared + 1):
            out.append(f"reply {n} only in {side}: {_reply_outline(reply)}")
    return out


def _tool_labels(calls: Sequence[ToolCall], other: Sequence[ToolCall]) -> list[str]:
    """Each call's name, numbered (``book_table #2``) when a side calls that tool twice."""
    repeated = {
        name
        for side in (calls, other)
        for name in {c.name for c in side}
        if sum(1 for c in side if c.name == name) > 1
    }
    seen: dict[str, int] = defaultdict(int)
    labels = []
    for call in calls:
        seen[call.name] += 1
        labels.append(f"{call.name} #{seen[call.name]}" if call.name in repeated else call.name)
    return labels


def _compare_tool(what: str, x: ToolCall, y: ToolCall, compare_times: bool) -> list[str]:
    out: list[str] = []
    args = _json_changes(_scrub(x.args), _scrub(y.args))
    if args:
        out.append(f"{what} args differ: {'; '.join(args)}")
    if x.error != y.error:
        if x.error is None:
            out.append(f"{what} failed in b: {_show(y.error)}")
        elif y.error is None:
            out.append(f"{what} failed in a: {_show(x.error)}")
        else:
            out.append(f"{what} error differs: {_pair(x.error, y.error)}")
    if compare_times:
        out.extend(_time_line(what, x.at, y.at))
    return out


def _compare_tools(a: Sequence[ToolCall], b: Sequence[ToolCall], compare_times: bool) -> list[str]:
    labels_a, labels_b = _tool_labels(a, b), _tool_labels(b, a)
    # the k-th call of a tool in A pairs with the k-th call of that tool in B
    pending: dict[str, deque[int]] = defaultdict(deque)
    for j, call in enumerate(b):
        pending[call.name].append(j)
    out: list[str] = []
    unpaired_a: list[int] = []
    for i, x in enumerate(a):
        queue = pending[x.name]
        if queue:
            out.extend(_compare_tool(f"tool {labels_a[i]}", x, b[queue.popleft()], compare_times))
        else:
            unpaired_a.append(i)
    if len(a) != len(b):
        out.append(_count_line("tool call", len(a), len(b)))
    for i in unpaired_a:
        out.append(f"tool {labels_a[i]} only in a: args {_show(a[i].args)}")
    for j in sorted(j for queue in pending.values() for j in queue):
        out.append(f"tool {labels_b[j]} only in b: args {_show(b[j].args)}")
    return out


# -- pairing turns ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Side:
    """One conversation, prepared for comparing: its turns and each sent message's statuses."""

    turns: tuple[Turn, ...]
    statuses: Mapping[str, list[StatusUpdate]]

    @classmethod
    def of(cls, conversation: Conversation) -> _Side:
        turns = conversation.turns
        if not turns and conversation.events:  # a trace saved without its turns
            turns = build_turns(conversation.events)
        statuses: dict[str, list[StatusUpdate]] = defaultdict(list)
        for event in conversation.events:
            if isinstance(event, StatusUpdate):
                statuses[event.wamid].append(event)
        return cls(turns, statuses)


_Pair: TypeAlias = tuple[Turn | None, Turn | None]


def _pair_turns(a: Sequence[Turn], b: Sequence[Turn]) -> list[_Pair]:
    """Turns paired by each user's turn count when both sides have the same users, else by index."""
    if {t.user for t in a} != {t.user for t in b}:
        return [
            (a[i] if i < len(a) else None, b[i] if i < len(b) else None)
            for i in range(max(len(a), len(b)))
        ]
    queues: dict[str, deque[Turn]] = defaultdict(deque)
    for turn in b:
        queues[turn.user].append(turn)
    pairs: list[_Pair] = []
    for turn in a:
        queue = queues[turn.user]
        pairs.append((turn, queue.popleft() if queue else None))
    leftovers = sorted((t for q in queues.values() for t in q), key=lambda t: t.index)
    for extra in leftovers:
        # after the last row holding an earlier turn of B, so B's order is kept
        at = 0
        for position, (_, other) in enumerate(pairs):
            if other is not None and other.index < extra.index:
                at = position + 1
        pairs.insert(at, (None, extra))
    return pairs


def _outline(turn: Turn) -> str:
    said = ", ".join(_show(text) for text in turn.texts) or f"{len(turn.messages)} message(s)"
    replies = [s for s in turn.sends if s.is_message]
    tools = _plural(len(turn.tool_calls), "tool call")
    return f"user {said}; {_plural(len(replies), 'reply')}; {tools}"


def _compare_pair(
    ta: Turn, tb: Turn, side_a: _Side, side_b: _Side, compare_times: bool
) -> list[str]:
    changes: list[str] = []
    if ta.user != tb.user:
        changes.append(f"user differs: {ta.user!r} -> {tb.user!r}")
    changes += _compare_messages(ta, tb, compare_times)
    changes += _compare_tools(ta.tool_calls, tb.tool_calls, compare_times)
    changes += _compare_replies(
        [s for s in ta.sends if s.is_message],
        [s for s in tb.sends if s.is_message],
        side_a.statuses,
        side_b.statuses,
        compare_times,
    )
    return changes


def diff_conversations(
    a: Conversation, b: Conversation, *, compare_times: bool = False
) -> ConversationDiff:
    """Compare two conversations turn by turn; see the module docstring for what counts."""
    side_a, side_b = _Side.of(a), _Side.of(b)
    rows: list[TurnDiff] = []
    for ta, tb in _pair_turns(side_a.turns, side_b.turns):
        if ta is not None and tb is not None:
            changes = _compare_pair(ta, tb, side_a, side_b, compare_times)
            rows.append(
                TurnDiff(
                    index=ta.index,
                    status="changed" if changes else "same",
                    user_a=ta.user,
                    user_b=tb.user,
                    index_a=ta.index,
                    index_b=tb.index,
                    changes=tuple(changes),
                )
            )
        elif ta is not None:
            rows.append(
                TurnDiff(
                    index=ta.index,
                    status="only_a",
                    user_a=ta.user,
                    index_a=ta.index,
                    changes=(f"only in a: {_outline(ta)}",),
                )
            )
        elif tb is not None:
            rows.append(
                TurnDiff(
                    index=tb.index,
                    status="only_b",
                    user_b=tb.user,
                    index_b=tb.index,
                    changes=(f"only in b: {_outline(tb)}",),
                )
            )
    turns = tuple(rows)
    return ConversationDiff(
        turns=turns, same=all(t.same for t in turns), compare_times=compare_times
    )
