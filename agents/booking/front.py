"""The WhatsApp side of the agent: webhooks in, Graph API sends out, done right.

:class:`WhatsAppFront` takes the updates of a webhook POST (already
verified) and does what a careful bot does with them: drops redeliveries by
wamid, gathers a user's quick messages into one burst (see
:mod:`agents.booking.bursts`), marks the burst read with a typing
indicator, asks the :class:`~agents.booking.core.BookingAgent` for its
replies and sends them: long text split at word boundaries, proposals with
Confirm/Change buttons, and an approved template instead of free text when
the 24-hour customer-service window is closed. A proposal left unconfirmed
gets one follow-up after ``followup_hours`` of silence. Failed statuses are
recorded with their error codes.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import date
from typing import Any

from agents.booking.bursts import BurstQueue
from agents.booking.chunking import split_message
from agents.booking.core import AgentTurn, BookingAgent, Reply
from agents.booking.gate import CONFIRM_BUTTONS
from agents.booking.graph import GraphClient, GraphError
from agents.booking.inbound import Inbound, StatusEvent, parse_webhook
from agents.booking.language import format_day
from agents.booking.regressions import Regression
from agents.booking.settings import BookingSettings
from agents.booking.state import FailedSend, Proposal, UserState
from harness.clock import Clock
from harness.store import Store

__all__ = ["SHORT_CONFIRM_TEXT", "WhatsAppFront"]

_log = logging.getLogger(__name__)

#: The button message's body when the proposal itself is too long for one (1024 characters).
SHORT_CONFIRM_TEXT = "Shall I book it?"
_BUTTON_BODY_MAX = 1024


class WhatsAppFront:
    """Turns webhook updates into agent turns and agent replies into Graph API sends."""

    def __init__(
        self,
        agent: BookingAgent,
        graph: GraphClient,
        *,
        settings: BookingSettings,
        store: Store,
        clock: Clock,
    ) -> None:
        self.agent = agent
        self.graph = graph
        self.settings = settings
        self.store = store
        self.clock = clock
        self.bursts = BurstQueue(store, clock, debounce=settings.debounce_seconds)
        self._followups: dict[str, asyncio.Task[Any]] = {}

    def _on(self, regression: Regression) -> bool:
        return regression in self.settings.regressions

    # -- inbound -------------------------------------------------------------

    async def handle_payload(self, payload: Any) -> None:
        """Handle every status and message of one webhook body."""
        updates = parse_webhook(payload, self.settings.phone_number_id)
        if updates.foreign:
            _log.info("ignored %d update(s) for another phone number", updates.foreign)
        for status in updates.statuses:
            await self.on_status(status)
        for message in updates.messages:
            await self.on_message(message)

    async def on_message(self, message: Inbound) -> None:
        """Take one message in: dedupe it, queue it, and start its flush in the background."""
        if message.wamid and not self._on(Regression.NO_DEDUPE):
            ttl = self.settings.dedupe_ttl_hours * 3600
            if not await self.store.set_if_absent(f"seen:{message.wamid}", "1", ttl=ttl):
                _log.info("dropped a redelivery of %s", message.wamid)
                return
        try:
            await self._cancel_followup(message.user)
            number = await self.bursts.add(message)
        except BaseException:
            if message.wamid and not self._on(Regression.NO_DEDUPE):
                # Not taken in: a redelivery must get another chance.
                await self.store.delete(f"seen:{message.wamid}")
            raise
        self.agent.spawn(self._flush(message.user, number))

    async def on_status(self, status: StatusEvent) -> None:
        """Record a failed status (once per message), with each error code it carries."""
        if status.status != "failed":
            return
        ttl = self.settings.dedupe_ttl_hours * 3600
        if not await self.store.set_if_absent(f"status:{status.wamid}:failed", "1", ttl=ttl):
            return
        errors = status.errors or ((None, "", ""),)
        for code, title, details in errors:
            _log.warning("message %s to %s failed: %s %s", status.wamid, status.user, code, title)
            await self.agent.states.record_failure(
                FailedSend(
                    wamid=status.wamid,
                    user=status.user,
                    code=code,
                    title=title,
                    details=details,
                    at=self.clock.now(),
                )
            )

    async def _flush(self, user: str, number: int) -> None:
        if self._on(Regression.REPLY_PER_FRAGMENT):
            async with self.bursts.lock(f"user:{user}"):
                messages = await self.bursts.take(user, upto=number)
                if messages:
                    await self._answer(user, messages)
            return
        if not await self.bursts.settled(user, number):
            return  # a newer message arrived; its flush answers the whole burst
        async with self.bursts.lock(f"user:{user}"):
            if await self.bursts.latest(user) != number:
                return
            messages = await self.bursts.take(user)
            if messages:
                await self._answer(user, messages)

    async def _answer(self, user: str, messages: list[Inbound]) -> None:
        last = messages[-1]
        if last.wamid:
            try:
                await self.graph.mark_read(last.wamid, typing=True)
            except GraphError as exc:
                _log.warning("could not mark %s read: %s", last.wamid, exc)
        turn, state = await self.agent.respond_with_state(user, messages, now=self.clock.now())
        await self._deliver(user, turn, state)

    # -- outbound --------------------------------------------------------------

    async def _deliver(self, user: str, turn: AgentTurn, state: UserState) -> None:
        # The state as the turn saved it: the user's store lock (held since the burst was
        # taken) keeps every other worker from changing it meanwhile.
        now = self.clock.now()
        window_open = state.window_open(now, self.settings.window_hours)
        params = _template_params(state.proposal)
        buttons_wamid: str | None = None
        for reply in turn.replies:
            wamid = await self.send(user, reply, window_open=window_open, params=params)
            if reply.kind == "buttons":
                buttons_wamid = wamid
        if turn.proposal is not None:
            await self._remember_proposal(user, turn.proposal.id, buttons_wamid)
            await self._schedule_followup(user, turn.proposal.id)

    async def send(
        self, user: str, reply: Reply, *, window_open: bool, params: tuple[str, ...] = ()
    ) -> str | None:
        """Send one reply the way WhatsApp allows; returns the wamid of its last message.

        Outside the window only a template may go out (unless the
        ``ignore_window`` regression is on): the configured template, filled
        with ``params`` (the day and the time), or nothing when there are none.
        Errors are logged and recorded, never raised.
        """
        try:
            if reply.kind == "template":
                return await self._template(user, reply.params or params)
            if not window_open and not self._on(Regression.IGNORE_WINDOW):
                if not params:
                    _log.warning("window closed for %s and no template fits; not sent", user)
                    return None
                return await self._template(user, params)
            if reply.kind == "buttons":
                return await self._buttons(user, reply)
            return await self._text(user, reply.text)
        except GraphError as exc:
            _log.error("sending to %s failed: %s", user, exc)
            await self.agent.states.record_failure(
                FailedSend(
                    wamid="",
                    user=user,
                    code=exc.code,
                    title=str(exc),
                    details=exc.details,
                    at=self.clock.now(),
                )
            )
            return None

    async def _template(self, user: str, params: tuple[str, ...]) -> str | None:
        result = await self.graph.send_template(
            user, self.settings.template_name, self.settings.template_language, params
        )
        return result.wamid

    async def _text(self, user: str, text: str) -> str | None:
        # The no_chunking bug: one message, however long.
        pieces = [text] if self._on(Regression.NO_CHUNKING) else split_message(text)
        wamid = None
        for piece in pieces:
            wamid = (await self.graph.send_text(user, piece)).wamid
        return wamid

    async def _buttons(self, user: str, reply: Reply) -> str | None:
        body = reply.text.strip()
        if len(body) > _BUTTON_BODY_MAX:
            await self._text(user, body)
            body = SHORT_CONFIRM_TEXT
        try:
            return (
                await self.graph.send_buttons(user, body or SHORT_CONFIRM_TEXT, reply.buttons)
            ).wamid
        except ValueError as exc:  # buttons outside Meta's limits: send the words without them
            _log.error("reply buttons refused locally (%s); sending text", exc)
            return await self._text(user, body)

    async def _remember_proposal(self, user: str, proposal_id: str, wamid: str | None) -> None:
        if wamid is None:
            return
        async with self.agent.user_lock(user):
            state = await self.agent.states.load(user)
            if state.proposal is not None and state.proposal.id == proposal_id:
                state.proposal.message_wamids.append(wamid)
                await self.agent.states.save(state)

    # -- follow-ups --------------------------------------------------------------

    async def _schedule_followup(self, user: str, proposal_id: str) -> None:
        if self.settings.followup_hours <= 0:
            return
        await self.store.set(f"followup:{user}", proposal_id)
        previous = self._followups.pop(user, None)
        if previous is not None:
            previous.cancel()
        self._followups[user] = self.agent.spawn(self._followup(user, proposal_id), timer=True)

    async def _cancel_followup(self, user: str) -> None:
        await self.store.delete(f"followup:{user}")
        task = self._followups.pop(user, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _followup(self, user: str, proposal_id: str) -> None:
        await self.clock.sleep(self.settings.followup_hours * 3600)
        if await self.store.get(f"followup:{user}") != proposal_id.encode():
            return  # the user wrote since, or another worker's follow-up replaced this one
        async with self.bursts.lock(f"user:{user}"):
            if not await self.store.set_if_absent(f"followup-sent:{user}:{proposal_id}", "1"):
                return
            await self.store.delete(f"followup:{user}")
            state = await self.agent.states.load(user)
            proposal = state.proposal
            if proposal is None or proposal.id != proposal_id or proposal.confirmed:
                return
            params = _template_params(proposal)
            text = f"Just checking: shall I book {params[0]} at {params[1]} for you?"
            window_open = state.window_open(self.clock.now(), self.settings.window_hours)
            wamid = await self.send(
                user,
                Reply(kind="buttons", text=text, buttons=CONFIRM_BUTTONS),
                window_open=window_open,
                params=params,
            )
            if window_open or self._on(Regression.IGNORE_WINDOW):
                await self._remember_proposal(user, proposal_id, wamid)
        self._followups.pop(user, None)


def _template_params(proposal: Proposal | None) -> tuple[str, ...]:
    """The reminder template's two body parameters: the day and the time."""
    if proposal is None:
        return ()
    try:
        day = format_day(date.fromisoformat(proposal.date))
    except ValueError:
        day = proposal.date
    return (day, proposal.slot)
