"""Comparing the parts of two paired turns: the user's messages, the agent's tool calls and replies.

Each comparison returns ready-to-print lines, one per difference.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping, Sequence

from pydantic import JsonValue

from harness.replay.diff._replies import Reply, read_reply
from harness.replay.diff._text import (
    count_line,
    json_changes,
    pair,
    scrub,
    show,
    text_pair,
    time_line,
)
from harness.trace import OutboundSend, StatusUpdate, ToolCall, Turn

__all__ = ["compare_messages", "compare_replies", "compare_tools"]

# Webhook message keys that identify the copy, not the content.
_VOLATILE_BODY_KEYS = frozenset({"id", "timestamp", "context", "from"})
# Message types whose object carries a media id: handed out by the channel in each run, like
# a message id, so two runs of the same conversation never share one.
_MEDIA_TYPES = frozenset({"image", "audio", "video", "document", "sticker"})


def _content(body: dict[str, JsonValue]) -> JsonValue:
    """A user message's body without what identifies the copy (its ids and time)."""
    kind = body.get("type")
    media = body.get(kind) if isinstance(kind, str) and kind in _MEDIA_TYPES else None
    if isinstance(kind, str) and isinstance(media, dict):
        body = {**body, kind: {k: v for k, v in media.items() if k != "id"}}
    return scrub(body, _VOLATILE_BODY_KEYS)


def compare_messages(ta: Turn, tb: Turn, compare_times: bool) -> list[str]:
    """What differs between the user's messages of two paired turns, redeliveries included."""
    a, b = ta.messages, tb.messages
    out: list[str] = []
    for n, (x, y) in enumerate(zip(a, b, strict=False), start=1):
        what = f"user message {n}"
        if x.type != y.type:
            out.append(f"{what} type differs: {x.type!r} -> {y.type!r}")
        if x.text != y.text:
            out.append(f"{what} text differs: {text_pair(x.text, y.text)}")
        if x.reply_id != y.reply_id:
            out.append(f"{what} reply id differs: {text_pair(x.reply_id, y.reply_id)}")
        if x.type == y.type and x.text == y.text and x.reply_id == y.reply_id:
            body = json_changes(_content(x.body), _content(y.body))
            if body:
                out.append(f"{what} content differs: {'; '.join(body)}")
        if compare_times:
            out.extend(time_line(what, x.at, y.at))
    if len(a) != len(b):
        out.append(count_line("user message", len(a), len(b)))
    for side, extra in (("a", a[len(b) :]), ("b", b[len(a) :])):
        for n, message in enumerate(extra, start=min(len(a), len(b)) + 1):
            shown = show(message.text) if message.text is not None else f"({message.type})"
            out.append(f"user message {n} only in {side}: {shown}")
    redelivered_a = sum(1 for m in ta.inbound if m.duplicate)
    redelivered_b = sum(1 for m in tb.inbound if m.duplicate)
    if redelivered_a != redelivered_b:
        out.append(count_line("redelivered copy", redelivered_a, redelivered_b))
    return out


def _compare_reply(n: int, x: Reply, y: Reply) -> list[str]:
    what = f"reply {n}"
    out: list[str] = []
    if x.type != y.type:  # the parts of different kinds of message don't compare
        out.append(f"{what} type differs: {_reply_outline(x)} -> {_reply_outline(y)}")
    else:
        if x.template != y.template:
            out.append(f"{what} template differs: {show(x.template)} -> {show(y.template)}")
        if x.parameters != y.parameters:
            before, after = show(list(x.parameters)), show(list(y.parameters))
            out.append(f"{what} template parameters differ: {before} -> {after}")
        for part in ("header", "text", "footer"):
            mine, theirs = getattr(x, part), getattr(y, part)
            if mine != theirs:
                out.append(f"{what} {part} differs: {pair(mine, theirs)}")
        if x.options != y.options:
            before, after = show(list(x.options)), show(list(y.options))
            out.append(f"{what} options differ: {before} -> {after}")
        if not out:  # nothing above explains it: name the request fields that differ
            fields = json_changes(x.request, y.request)
            if fields:
                out.append(f"{what} request differs: {'; '.join(fields)}")
    if x.state != y.state:
        out.append(f"{what} status differs: {x.state} -> {y.state}")
    return out


def _reply_outline(reply: Reply) -> str:
    """``text 'Booked'``, ``template booking_reminder (en_US)``, ``image``."""
    if reply.type == "template":
        return f"template {reply.template}"
    return f"{reply.type} {show(reply.text)}" if reply.text else reply.type


def compare_replies(
    a: Sequence[OutboundSend],
    b: Sequence[OutboundSend],
    statuses_a: Mapping[str, list[StatusUpdate]],
    statuses_b: Mapping[str, list[StatusUpdate]],
    compare_times: bool,
) -> list[str]:
    """What differs between two turns' replies, paired in order; ``statuses_*`` by wamid."""
    replies_a = [read_reply(s, statuses_a.get(s.wamid or "", [])) for s in a]
    replies_b = [read_reply(s, statuses_b.get(s.wamid or "", [])) for s in b]
    out: list[str] = []
    for n, (x, y) in enumerate(zip(replies_a, replies_b, strict=False), start=1):
        out.extend(_compare_reply(n, x, y))
        if compare_times:
            out.extend(time_line(f"reply {n}", a[n - 1].at, b[n - 1].at))
    if len(a) != len(b):
        out.append(count_line("reply", len(a), len(b)))
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
    args = json_changes(scrub(x.args), scrub(y.args))
    if args:
        out.append(f"{what} args differ: {'; '.join(args)}")
    if x.error != y.error:
        if x.error is None:
            out.append(f"{what} failed in b: {show(y.error)}")
        elif y.error is None:
            out.append(f"{what} failed in a: {show(x.error)}")
        else:
            out.append(f"{what} error differs: {pair(x.error, y.error)}")
    if compare_times:
        out.extend(time_line(what, x.at, y.at))
    return out


def compare_tools(a: Sequence[ToolCall], b: Sequence[ToolCall], compare_times: bool) -> list[str]:
    """What differs between two turns' tool calls, the k-th call of a tool against its k-th."""
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
        out.append(count_line("tool call", len(a), len(b)))
    for i in unpaired_a:
        out.append(f"tool {labels_a[i]} only in a: args {show(a[i].args)}")
    for j in sorted(j for queue in pending.values() for j in queue):
        out.append(f"tool {labels_b[j]} only in b: args {show(b[j].args)}")
    return out
