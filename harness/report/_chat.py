"""A scenario's conversation laid out as a chat, ready for the HTML template.

The template only draws; every decision lives here: which events become
bubbles, cards, chips or dividers, in what order, which delivery ticks a
send has, which channel faults touched which bubble, and at which turn each
violation is shown. Turns come from ``conversation.turns``; events in no
turn (deliveries, clock jumps, anything before the first message) are placed
by their position in the event log, which is the order they happened in.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from harness.providers import STAND_IN, exchange_label
from harness.report._content import inbound_content, send_content
from harness.report._items import (
    Bubble,
    Chip,
    Divider,
    Item,
    Note,
    ScenarioView,
    Ticks,
    ToolCard,
    TurnBlock,
)
from harness.report.causes import Cause, scenario_causes
from harness.results import ScenarioResult, Violation
from harness.trace import (
    BlockChange,
    ClockJump,
    Conversation,
    DeliveryAttempt,
    DroppedMessage,
    ErrorInfo,
    Event,
    InboundMessage,
    LLMExchange,
    OutboundSend,
    StatusUpdate,
    ToolCall,
)

__all__ = ["scenario_view"]

# How a fault reads on a user's message, and on the ticks of an agent's message.
_INBOUND_FAULTS = {
    "duplicate": "duplicate delivery",
    "redelivery": "redelivered",
    "reordered": "reordered",
    "batched": "batched",
}
_STATUS_FAULTS = {
    "duplicate": "duplicate status",
    "redelivery": "status redelivered",
    "reordered": "status reordered",
    "batched": "statuses batched",
    "late_status": "late status",
    "out_of_order": "status out of order",
}
_READ = ("read", "played")
_RECEIPTS = {"mark_read": "✓✓ marked as read", "typing": "typing…"}


def _time(at: datetime) -> str:
    return at.strftime("%H:%M:%S")


def _date(at: datetime) -> str:
    return f"{at:%a} {at.day} {at:%b %Y}"


def _gap(delta: timedelta) -> str:
    seconds = max(int(delta.total_seconds()), 0)
    minutes, secs = divmod(seconds, 60)
    hours, mins = divmod(minutes, 60)
    if hours >= 48:
        days, hours = divmod(hours, 24)
        return f"{days}d {hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h {mins}m" if mins else f"{hours}h"
    if mins:
        return f"{mins}m {secs}s" if secs else f"{mins}m"
    return f"{secs}s"


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _error_text(error: ErrorInfo) -> str:
    return f"{error.code} {error.title}".strip()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "scenario"


def _attempts_title(attempts: Sequence[DeliveryAttempt]) -> str:
    parts = []
    for a in attempts:
        answer = str(a.status_code) if a.status_code is not None else (a.error or "no answer")
        parts.append(f"{a.delivery} attempt {a.attempt}: {answer}")
    return "; ".join(parts)


def _fault_chips(
    attempts: Sequence[DeliveryAttempt], labels: dict[str, str], retry_label: str
) -> list[Chip]:
    title = _attempts_title(attempts)
    faults = dict.fromkeys(f for a in attempts for f in a.faults if f != "retry")
    chips = [Chip(labels.get(f, f.replace("_", " ")), "fault", f, title) for f in faults]
    retries = max((a.attempt for a in attempts), default=1) - 1
    if retries:
        chips.append(Chip(f"{retry_label} ×{retries}", "fault", "retry", title))
    return chips


class _Layout:
    """Builds the items of one conversation; see the module docstring."""

    def __init__(self, conversation: Conversation, violations: Sequence[Violation]) -> None:
        self.conversation = conversation
        self.log: list[Event] = list(conversation.events)
        self.flagged = {i for v in violations for i in v.events}
        names = {p.id: p.name or p.id for p in conversation.participants}
        users = {e.user for e in conversation.inbound(duplicates=True)}
        self.show_sender = len(names) > 1 or len(users) > 1
        self.names = names
        self.deliveries: dict[str, list[DeliveryAttempt]] = defaultdict(list)
        self.statuses: dict[str, list[StatusUpdate]] = defaultdict(list)
        self.sent: set[str] = set()
        self.received: set[str] = set()
        for event in self.log:
            if isinstance(event, DeliveryAttempt):
                self.deliveries[event.delivery].append(event)
            elif isinstance(event, StatusUpdate):
                self.statuses[event.wamid].append(event)
            elif isinstance(event, OutboundSend) and event.wamid:
                self.sent.add(event.wamid)
            elif isinstance(event, InboundMessage):
                self.received.add(event.wamid)
        # chips for deliveries that no event points at (a duplicate status, a
        # message that never got through), keyed by the wamid they carried
        self.extra: dict[str, list[Chip]] = defaultdict(list)
        self.loose_notes: dict[int, Note] = {}
        self._place_unclaimed_deliveries()

    # -- deliveries ---------------------------------------------------------------

    def _place_unclaimed_deliveries(self) -> None:
        claimed = {
            e.delivery
            for e in self.log
            if isinstance(e, InboundMessage | StatusUpdate) and e.delivery is not None
        }
        first_index: dict[str, int] = {}
        for i, event in enumerate(self.log):
            if isinstance(event, DeliveryAttempt):
                first_index.setdefault(event.delivery, i)
        for delivery, attempts in self.deliveries.items():
            if delivery in claimed:
                continue
            reached = any(a.ok for a in attempts)
            if reached and not any(a.faults for a in attempts):
                continue
            wamids = list(dict.fromkeys(item.split(":", 1)[0] for item in attempts[0].items))
            if reached and all(w in self.sent or w in self.received for w in wamids):
                for wamid in wamids:
                    labels, retry = (
                        (_STATUS_FAULTS, "status retried")
                        if wamid in self.sent
                        else (_INBOUND_FAULTS, "retried")
                    )
                    self.extra[wamid].extend(_fault_chips(attempts, labels, retry))
                continue
            last = attempts[-1]
            outcome = "delivered" if reached else "never acknowledged"
            answer = last.status_code if last.status_code is not None else last.error
            text = f"webhook {delivery} ({len(attempts)} attempt"
            text += "s" if len(attempts) > 1 else ""
            text += f") {outcome}" + (f": {answer}" if answer and not reached else "")
            faults = list(dict.fromkeys(f for a in attempts for f in a.faults))
            if faults:
                text += " · " + ", ".join(f.replace("_", " ") for f in faults)
            kind = "fault" if reached else "failure"
            title = _attempts_title(attempts) + (f"; items: {', '.join(wamids)}" if wamids else "")
            index = first_index[delivery]
            self.loose_notes[index] = Note(
                at=attempts[0].at, event=index, chip=Chip(text, kind, "delivery", title)
            )

    # -- single events ------------------------------------------------------------

    def _ticks(self, send: OutboundSend) -> Ticks:
        if send.error is not None:
            return Ticks("failed", "✗", _error_text(send.error), "refused by the Graph API")
        statuses = self.statuses.get(send.wamid or "", [])
        history = " · ".join(f"{s.status} {_time(s.at)}" for s in statuses) or "no status yet"
        seen = {s.status for s in statuses}
        failed = [s for s in statuses if s.status == "failed"]
        if failed:
            errors = failed[-1].errors
            return Ticks("failed", "✗", _error_text(errors[0]) if errors else "failed", history)
        if seen.intersection(_READ):
            return Ticks("read", "✓✓", "", history)
        if "delivered" in seen:
            return Ticks("delivered", "✓✓", "", history)
        if "sent" in seen:
            return Ticks("sent", "✓", "", history)
        return Ticks("pending", "◷", "", history)

    def _status_chips(self, wamid: str) -> list[Chip]:
        chips: list[Chip] = []
        for status in self.statuses.get(wamid, []):
            if status.delivery is not None:
                attempts = self.deliveries.get(status.delivery, [])
                chips.extend(_fault_chips(attempts, _STATUS_FAULTS, "status retried"))
        for chip in self.extra.get(wamid, []):
            chips.append(chip)
        unique: dict[tuple[str, str], Chip] = {}
        for chip in chips:
            unique.setdefault((chip.text, chip.fault), chip)
        return list(unique.values())

    def _send(self, send: OutboundSend, index: int) -> Item:
        if not send.is_message:
            text = _RECEIPTS.get(send.type, send.type)
            return Note(at=send.at, event=index, chip=Chip(text, "receipt"))
        content = send_content(send)
        bubble = Bubble(
            direction="out",
            at=send.at,
            event=index,
            text=content.text,
            label=content.label,
            header=content.header,
            footer=content.footer,
            buttons=content.buttons,
            list_button=content.list_button,
            sections=content.sections,
            ticks=self._ticks(send),
            template=send.is_template,
            flagged=index in self.flagged,
        )
        errors = [send.error] if send.error else []
        errors += [e for s in self.statuses.get(send.wamid or "", []) for e in s.errors]
        # the ticks already say code and title; the bubble adds Meta's explanation
        bubble.error = "; ".join(
            f"{e.code}: {e.details or e.message}" for e in errors if e.details or e.message
        )
        if send.in_window is False and not send.is_template:
            bubble.chips.append(Chip("outside the 24h window", "warning", "window"))
        if send.wamid:
            bubble.chips.extend(self._status_chips(send.wamid))
        return bubble

    def _inbound(self, message: InboundMessage, index: int) -> Bubble:
        content = inbound_content(message)
        label = content.label
        if message.context_id:
            label = f"{label} · reply" if label else "reply"
        bubble = Bubble(
            direction="in",
            at=message.at,
            event=index,
            text=content.text,
            label=label,
            sender=self.names.get(message.user or "", message.user or "")
            if self.show_sender
            else "",
            duplicate=message.duplicate,
            flagged=index in self.flagged,
        )
        chips: list[Chip] = []
        if message.duplicate:
            chips.append(Chip("duplicate delivery", "fault", "duplicate", message.wamid))
        if message.delivery is not None:
            attempts = self.deliveries.get(message.delivery, [])
            chips.extend(_fault_chips(attempts, _INBOUND_FAULTS, "retried"))
        if not message.duplicate:
            chips.extend(self.extra.get(message.wamid, []))
        unique: dict[str, Chip] = {}
        for chip in chips:
            unique.setdefault(chip.text, chip)
        bubble.chips = list(unique.values())
        return bubble

    def item(self, event: Event, index: int) -> Item | None:
        """The item for one event, or None when it is drawn elsewhere (statuses, deliveries)."""
        flagged = index in self.flagged
        if isinstance(event, InboundMessage):
            return self._inbound(event, index)
        if isinstance(event, OutboundSend):
            return self._send(event, index)
        if isinstance(event, ToolCall):
            return ToolCard(
                at=event.at,
                event=index,
                name=event.name,
                args=_json(event.args),
                result=_json(event.result),
                error=event.error or "",
                side_effect=event.side_effect,
                source=event.source,
                flagged=flagged,
            )
        if isinstance(event, LLMExchange):
            tokens = f"{event.input_tokens}→{event.output_tokens} tokens"
            if event.provider == STAND_IN:
                tokens += " (estimated)"  # a stand-in counts characters, not tokens
            text = f"model call · {exchange_label(event)} · {tokens}"
            chip = Chip(text, "llm", title=f"stop: {event.stop_reason or '?'} · key {event.key}")
            return Note(at=event.at, event=index, chip=chip, flagged=flagged)
        if isinstance(event, ClockJump):
            reason = f" · {event.reason}" if event.reason else ""
            return Divider(
                style="jump",
                text=f"⏩ {_gap(event.at - event.previous)} later{reason}",
                title=f"{event.previous.isoformat()} → {event.at.isoformat()}",
                at=event.at,
            )
        if isinstance(event, BlockChange | DroppedMessage):
            return Note(at=event.at, event=index, chip=_moderation_chip(event), flagged=flagged)
        if isinstance(event, StatusUpdate):
            if event.wamid in self.sent:
                return None
            chip = Chip(f"status {event.status} for {event.wamid}", "status", title=event.wamid)
            return Note(at=event.at, event=index, chip=chip, flagged=flagged)
        return self.loose_notes.get(index)

    # -- order ------------------------------------------------------------------

    def _turn_positions(self) -> dict[int, list[int]]:
        """Each turn's events as indexes into the log, matched by value.

        Turns hold copies of the log's events (a report loaded from JSON
        shares no objects), so events are matched by their JSON; identical
        events are matched in order. An event missing from the log is
        appended to it, so it is still drawn.
        """
        queues: dict[str, deque[int]] = defaultdict(deque)
        for i, event in enumerate(self.log):
            queues[event.model_dump_json()].append(i)
        positions: dict[int, list[int]] = {}
        for turn in self.conversation.turns:
            indexes = []
            for event in (*turn.inbound, *turn.actions):
                queue = queues.get(event.model_dump_json())
                if queue:
                    indexes.append(queue.popleft())
                else:
                    self.log.append(event)
                    indexes.append(len(self.log) - 1)
            positions[turn.index] = sorted(indexes)
        return positions

    def layout(self, by_turn: dict[int, list[Cause]]) -> list[Item]:
        """Turns and loose events in log order, with date dividers where the day changes."""
        positions = self._turn_positions()
        owner: dict[int, int] = {i: t for t, indexes in positions.items() for i in indexes}
        blocks: dict[int, TurnBlock] = {}
        spans = sorted((indexes[0], indexes[-1], t) for t, indexes in positions.items() if indexes)
        users = {t.index: t.user for t in self.conversation.turns}
        top: list[tuple[int, Item]] = []
        for index in range(len(self.log)):
            turn = owner.get(index)
            if turn is None:
                # a loose event inside a turn's span is drawn in that turn
                turn = next((t for lo, hi, t in spans if lo <= index <= hi), None)
            item = self.item(self.log[index], index)
            if turn is None:
                if item is not None:
                    top.append((index, item))
                continue
            if turn not in blocks:
                blocks[turn] = TurnBlock(turn, users.get(turn, ""))
                top.append((positions[turn][0], blocks[turn]))
            if item is not None:
                blocks[turn].items.append(item)
        for turn, found in by_turn.items():
            if turn not in blocks:
                blocks[turn] = TurnBlock(turn, users.get(turn, ""))
                top.append((len(self.log), blocks[turn]))
            blocks[turn].causes.extend(found)
        ordered = [item for _, item in sorted(top, key=lambda pair: pair[0])]
        _add_dates(ordered, None)
        return ordered


def _add_dates(items: list[Item], last: str | None) -> str | None:
    """Insert a date divider before the first item of each day, turns included."""
    out: list[Item] = []
    for item in items:
        if isinstance(item, TurnBlock):
            last = _add_dates(item.items, last)
            if item.items and isinstance(item.items[0], Divider) and item.items[0].style == "date":
                out.append(item.items.pop(0))  # a turn that opens a day goes under its date
        elif item.at is not None:
            day = _date(item.at)
            if day != last and not (isinstance(item, Divider) and item.style == "jump"):
                out.append(Divider(style="date", text=day, at=item.at))
                last = day
        out.append(item)
    items[:] = out
    return last


def _fault_profile(result: ScenarioResult) -> list[str]:
    return [
        f"{key}={value if isinstance(value, str) else _json(value)}"
        for key, value in sorted(result.faults.items())
    ]


def scenario_view(result: ScenarioResult, position: int, taken: Iterable[str] = ()) -> ScenarioView:
    """Lay out one scenario; ``position`` (from 1) and ``taken`` keep its anchor unique."""
    anchor = f"scenario-{position}-{_slug(result.name)}"
    used = set(taken)
    while anchor in used:
        anchor += "-x"
    conversation = result.conversation
    turns = {t.index for t in conversation.turns} if conversation is not None else set()
    found = scenario_causes(result)
    by_turn: dict[int, list[Cause]] = defaultdict(list)
    top: list[Cause] = []
    for cause in found:
        turn = cause.lead.turn
        if turn is not None and turn in turns:
            by_turn[turn].append(cause)
        else:
            top.append(cause)
    items: list[Item] = []
    if conversation is not None:
        items = _Layout(conversation, result.violations).layout(dict(by_turn))
    return ScenarioView(anchor, result, items, found, top, _fault_profile(result))


def _moderation_chip(event: BlockChange | DroppedMessage) -> Chip:
    """A block, an unblock or a message the channel dropped, as a chip in the chat."""
    who = event.user or "?"
    if isinstance(event, DroppedMessage):
        said = event.text if event.text is not None else f"<{event.type}>"
        return Chip(f"⛔ not delivered ({event.reason}): {said}", "warning", title=event.wamid)
    if event.error is not None:
        verb = "block" if event.blocked else "unblock"
        return Chip(
            f"{verb} of {who} refused ({event.error.code})", "failure", title=event.error.details
        )
    if event.blocked:
        return Chip(f"⛔ agent blocked {who}", "warning", title=event.input)
    return Chip(f"agent unblocked {who}", "info", title=event.input)
