"""The booking agent itself, independent of any channel.

:class:`BookingAgent` owns the brain, the tools, the per-user state and the
prompts. :meth:`BookingAgent.respond` answers a burst of messages from one
user with :class:`Reply` objects (text, a proposal with Confirm/Change
buttons); the WhatsApp webhook (:mod:`agents.booking.front`) sends them over
the Graph API, and :meth:`BookingAgent.handle_burst` returns them to the
harness's direct channel. Both run exactly the same code.

The agent also owns its background tasks (webhook processing, follow-up
timers), so a test can :meth:`~BookingAgent.drain` them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from string import Template
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from agents.booking.brain import Brain, BrainResult
from agents.booking.constraints import Constraint, extract_constraints, merge_constraints
from agents.booking.gate import CONFIRM_BUTTONS, ConfirmationGate, read_confirmation
from agents.booking.inbound import Inbound
from agents.booking.language import WEEKDAYS, format_day
from agents.booking.prompts import DEFAULT_PROMPTS, PromptRegistry
from agents.booking.regressions import Regression
from agents.booking.settings import BookingSettings
from agents.booking.state import Proposal, StateStore, UserState
from agents.booking.tools import Calendar, register_tools, room_of
from harness._tasks import cancel_until_done
from harness.acting import acting_for
from harness.agent import DirectMessage, DirectOption, DirectReply, DirectTurn
from harness.clock import Clock
from harness.exceptions import LLMError
from harness.failures import report_failure
from harness.llm import LLMClient
from harness.store import Store
from harness.tape import RecordMode
from harness.tool_recorder import ToolRecorder
from harness.trace import ToolCall

__all__ = ["APOLOGY_TEXT", "UNSUPPORTED_TEXT", "AgentTurn", "BookingAgent", "Reply"]

_log = logging.getLogger(__name__)
# How many background failures the agent keeps for its caller (the latest ones).
_KEPT_ERRORS: Final = 100
# The most messages of history the agent shows the model (and keeps), whatever the settings.
_MAX_HISTORY: Final = 400
# How long a cancelled background task may clean up before it is cancelled again.
_CLEAN_UP: Final = 1.0

#: The answer to a message the agent can't read (image, audio, location, sticker...).
UNSUPPORTED_TEXT = (
    "Thanks! I can only read text messages and button taps here, so I can't open that. "
    "Just type what you need, for example: a table for Friday at 8pm."
)
#: The answer when the model can't be reached.
APOLOGY_TEXT = (
    "Sorry, I'm having trouble right now and couldn't answer. Please try again in a few minutes."
)


class Reply(BaseModel):
    """One message the agent wants to send: text, text with reply buttons, or a template."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["text", "buttons", "template"] = "text"
    text: str = ""
    buttons: tuple[tuple[str, str], ...] = ()
    template: str | None = None
    params: tuple[str, ...] = ()

    def direct(self) -> DirectReply:
        """This reply in the direct channel's terms."""
        if self.kind == "buttons":
            options = tuple(DirectOption(id=i, title=t) for i, t in self.buttons)
            return DirectReply(type="interactive", text=self.text, options=options)
        if self.kind == "template":
            return DirectReply(
                type="template", text=" | ".join(self.params), template=self.template
            )
        return DirectReply(type="text", text=self.text)


class AgentTurn(BaseModel):
    """What the agent did about one burst: replies, tool calls, and any new proposal."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    replies: tuple[Reply, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    proposal: Proposal | None = None


class BookingAgent:
    """The channel-independent booking agent; implements :class:`~harness.agent.DirectAgent`.

    ``store`` should already be namespaced for the agent. ``tools`` is the
    recorder the tools run behind (a passthrough one by default); the
    calendar's tools are registered on it unless it already has them.
    """

    def __init__(
        self,
        settings: BookingSettings,
        *,
        store: Store,
        clock: Clock,
        llm: LLMClient,
        tools: ToolRecorder | None = None,
        prompts: PromptRegistry | None = None,
        working: Callable[[], AbstractAsyncContextManager[None]] | None = None,
    ) -> None:
        self.settings = settings
        #: Wraps each piece of background work (not timers): a harness run is told of it.
        self.working = working
        self.store = store
        self.clock = clock
        self.llm = llm
        self.calendar = Calendar(
            store, clock, tables=settings.tables_per_seating, zone=settings.zone
        )
        self.tools = (
            tools if tools is not None else ToolRecorder(RecordMode.PASSTHROUGH, clock=clock)
        )
        register_tools(self.tools, self.calendar)
        if prompts is None:
            prompts = (
                PromptRegistry(settings.prompt_dir, fallback=DEFAULT_PROMPTS)
                if settings.prompt_dir is not None
                else DEFAULT_PROMPTS
            )
        self.prompts = prompts
        self.states = StateStore(store)
        self.brain = Brain(
            llm,
            self.tools,
            clock,
            model=settings.model,
            max_tokens=settings.max_tokens,
            max_rounds=settings.max_tool_rounds,
        )
        self._locks: dict[str, asyncio.Lock] = {}
        #: How many messages of history the state keeps: what the model is shown.
        self._kept = min(settings.history_messages, _MAX_HISTORY)
        #: Exceptions that ended background tasks, oldest first (a replay divergence, say);
        #: the latest hundred.
        self.errors: list[BaseException] = []
        self._work: set[asyncio.Task[Any]] = set()
        self._timers: set[asyncio.Task[Any]] = set()

    def __repr__(self) -> str:
        return f"BookingAgent(model={self.settings.model!r}, llm={type(self.llm).__name__})"

    # -- answering ---------------------------------------------------------

    def user_lock(self, user: str) -> asyncio.Lock:
        """The in-process lock that serialises work on one user's state."""
        return self._locks.setdefault(user, asyncio.Lock())

    async def handle_burst(
        self, user: str, messages: Sequence[DirectMessage], *, now: datetime
    ) -> DirectTurn:
        """Answer a burst through the direct channel: same brain, tools and state, no HTTP."""
        inbound = [_from_direct(user, message) for message in messages]
        turn = await self.respond(user, inbound, now=now)
        return DirectTurn(
            replies=tuple(reply.direct() for reply in turn.replies), tool_calls=turn.tool_calls
        )

    async def respond(self, user: str, messages: Sequence[Inbound], *, now: datetime) -> AgentTurn:
        """Answer one burst of ``user``'s messages, received by ``now``, and save the state.

        A naive ``now`` is taken as UTC.
        """
        turn, _ = await self.respond_with_state(user, messages, now=now)
        return turn

    async def respond_with_state(
        self, user: str, messages: Sequence[Inbound], *, now: datetime
    ) -> tuple[AgentTurn, UserState]:
        """:meth:`respond`, also giving the user's state as it was saved.

        The WhatsApp front sends the replies from it (the window, the proposal)
        instead of reading the state back from the store.
        """
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        async with self.user_lock(user):
            with acting_for(user):  # the model and tool calls in the trace name the user
                state = await self.states.load(user)
                turn = await self._respond(state, messages, now)
                await self.states.save(state)
            return turn, state

    async def _respond(
        self, state: UserState, messages: Sequence[Inbound], now: datetime
    ) -> AgentTurn:
        today = now.astimezone(self.settings.zone).date()
        # The window opened when the user wrote, not when the debounce ended; a webhook
        # timestamp from the future (a skewed clock) counts as now.
        stamps = [m.timestamp for m in messages if m.timestamp is not None]
        wrote = min(max(stamps, default=now), now)
        if state.last_user_at is None or wrote > state.last_user_at:
            state.last_user_at = wrote
        for message in messages:
            state.name = message.name or state.name
            state.last_inbound_wamid = message.wamid or state.last_inbound_wamid
        understood = [m for m in messages if m.understood]
        texts = [m.text or m.reply_id or "" for m in understood]
        said: list[Constraint] = []
        for text in texts:
            said = merge_constraints(said, extract_constraints(text))
        if Regression.FORGET_CONSTRAINT in self.settings.regressions:
            state.constraints = said  # the bug: overwrite what was known with this turn's needs
        else:
            state.constraints = merge_constraints(state.constraints, said)
        read_confirmation(state, understood, today)
        replies: list[Reply] = []
        if len(understood) < len(messages):
            replies.append(Reply(text=UNSUPPORTED_TEXT))
        if not understood:
            return AgentTurn(replies=tuple(replies))
        gate = ConfirmationGate(state, self.store, now=now, regressions=self.settings.regressions)
        user_message = {"role": "user", "content": [{"type": "text", "text": "\n".join(texts)}]}
        history = _window(state.history, self.settings.history_messages)
        try:
            result = await self.brain.run(
                system=await self.system_prompt(state, now),
                messages=[*history, user_message],
                user=state.user,
                policy=gate,
            )
        except LLMError as exc:
            _log.error("the model could not answer user %s: %s", state.user, exc)
            apology = [{"type": "text", "text": APOLOGY_TEXT}]
            result = BrainResult(APOLOGY_TEXT, [{"role": "assistant", "content": apology}])
        # Only the window the model is shown next time is kept: windowing it again with
        # the new messages gives the window the whole conversation would (both start at
        # the same user message), so the state stays small however long the chat.
        state.history = _window([*state.history, user_message, *result.messages], self._kept)
        proposal = state.proposal if gate.proposed else None
        if proposal is not None and not proposal.confirmed:
            replies.append(Reply(kind="buttons", text=result.text, buttons=CONFIRM_BUTTONS))
        else:
            proposal = None
            replies.append(Reply(text=result.text))
        return AgentTurn(
            replies=tuple(replies), tool_calls=tuple(result.tool_calls), proposal=proposal
        )

    # -- the system prompt -------------------------------------------------------

    async def system_prompt(self, state: UserState, now: datetime) -> str:
        """The system prompt for ``state``'s user at ``now``: the template, filled in."""
        local = now.astimezone(self.settings.zone)
        return Template(self.prompts.get("system")).safe_substitute(
            business=self.settings.business_name,
            weekday=WEEKDAYS[local.weekday()].capitalize(),  # not strftime: locale-free
            today=local.date().isoformat(),
            time=local.strftime("%H:%M"),
            timezone=self.settings.timezone,
            profile=await self.describe_customer(state),
        )

    async def describe_customer(self, state: UserState) -> str:
        """What the agent knows about the user, as the ``## Customer`` section lists it."""
        lines = []
        if state.name:
            lines.append(f"- Name: {state.name}")
        access = [c.label for c in state.constraints if c.kind == "accessibility"]
        dietary = [c.label for c in state.constraints if c.kind == "dietary"]
        if access:
            lines.append(f"- Access needs: {', '.join(access)} (offer step-free seatings only)")
        if dietary:
            lines.append(f"- Dietary needs: {', '.join(dietary)}")
        for booking_id in state.bookings:
            booking: dict[str, Any] | None = state.booking_details.get(booking_id)
            if booking is None:  # a state saved before details were kept
                booking = await self.calendar.booking(booking_id)
                if booking is None or booking.get("status") != "booked":
                    continue
            day = datetime.fromisoformat(str(booking["date"])).date()
            lines.append(
                f"- Booking {booking_id}: {format_day(day)} ({booking['date']}) at "
                f"{booking['slot']}, {room_of(str(booking['slot']))[0]}"
            )
        return "\n".join(lines) if lines else "- Nothing known yet."

    # -- background tasks --------------------------------------------------------

    def spawn(self, work: Coroutine[Any, Any, Any], *, timer: bool = False) -> asyncio.Task[Any]:
        """Run ``work`` in the background, keeping a reference; ``timer`` for long waits.

        :meth:`drain` waits for work but not for timers (a follow-up due in
        25 hours), which :meth:`aclose` cancels.
        """
        if not timer and self.working is not None:
            work = self._held(work, self.working)
        task = asyncio.get_running_loop().create_task(work)
        bucket = self._timers if timer else self._work
        bucket.add(task)
        task.add_done_callback(bucket.discard)
        task.add_done_callback(self._task_done)
        return task

    @staticmethod
    async def _held(
        work: Coroutine[Any, Any, Any], working: Callable[[], AbstractAsyncContextManager[None]]
    ) -> Any:
        async with working():
            return await work

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            self.errors.append(error)
            del self.errors[:-_KEPT_ERRORS]  # the latest ones: a long-lived agent must not grow
            # In a harness run the failure is the scenario's to report; elsewhere it is logged.
            if not report_failure(error, "background task"):
                _log.error("background task failed", exc_info=error)

    @property
    def idle(self) -> bool:
        """True when no background work (timers aside) is running."""
        return not self._work

    @property
    def timers(self) -> int:
        """How many timers (follow-ups) are waiting."""
        return len(self._timers)

    async def drain(self) -> None:
        """Wait until all background work, including work it starts, has finished.

        Debounce waits are work: on a virtual clock, something must move the
        clock (the simulator does, or use ``VirtualClock(auto_advance=True)``).
        """
        while self._work:
            await asyncio.gather(*list(self._work), return_exceptions=True)

    async def aclose(self) -> None:
        """Cancel every background task and wait for them to end; what they failed with is dropped.

        A follow-up waiting on a clock that reads the store (a run's clock, over
        Redis) can lose its cancellation in a read on Python 3.11 and wait on for
        hours. A task still running a second after its cancellation is cancelled
        again: time enough for work to let go of its locks.
        """
        with contextlib.suppress(Exception):
            await cancel_until_done(*self._work, *self._timers, again_after=_CLEAN_UP)


def _from_direct(user: str, message: DirectMessage) -> Inbound:
    kind = message.type
    if kind == "reply" or (kind == "interactive" and message.reply_id):
        kind = "reply"
    return Inbound(
        user=user,
        kind=kind,
        text=message.text,
        reply_id=message.reply_id,
        timestamp=message.at,
    )


def _window(history: list[dict[str, Any]], size: int) -> list[dict[str, Any]]:
    """The last ``size`` messages or fewer, starting at a user message that is not a tool result."""
    if len(history) <= size:
        return list(history)
    start = len(history) - size
    while start < len(history) and not _opens_turn(history[start]):
        start += 1
    return history[start:]


def _opens_turn(message: dict[str, Any]) -> bool:
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, list):
        return all(isinstance(b, dict) and b.get("type") != "tool_result" for b in content)
    return True
