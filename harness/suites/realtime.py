"""Scenarios against an agent on real time: users of their own, waiting, and late sends.

An agent at a URL is one agent for a whole run and lives on real time, so
each scenario gets numbers of its own (:func:`distinct_user`), an ``expect``
waits as a person watching the phone would (:func:`expect_in_time`), and
what the agent sends after a scenario ended is reported on that scenario as
late (:func:`with_late`), and what it sends to a number no scenario plays is
listed beside the verdict of the scenario that was running (:func:`with_run_news`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from harness.channel import ChannelSession, RunShared, UserSpec
from harness.results import ScenarioResult, Violation
from harness.suites.expectations import (
    check_expectation,
    eventual_part,
    needs_quiet,
    replies_since,
)
from harness.suites.steps import ExpectStep
from harness.trace import Conversation, Event

if TYPE_CHECKING:
    from harness.suites.scenario import User

__all__ = [
    "distinct_user",
    "expect_in_time",
    "numbers_seen",
    "revisions",
    "with_late",
    "with_run_news",
]


async def expect_in_time(
    step: ExpectStep,
    session: ChannelSession,
    *,
    expect_timeout: float,
    quiet: float,
    since: int,
    user: str,
    step_at: datetime,
) -> None:
    """Against an agent on real time, wait as a person watching the phone would.

    What must come (a reply, a tool call, a status) is waited for until it
    holds or the step's ``within`` (else ``--expect-timeout``) passes; what
    must not come, or must come exactly so many times, is judged only once
    the agent has gone quiet. ``replies: N`` is both: its N replies are
    waited for, then it is judged at quiet (no more came).
    """
    within = step.within.total_seconds() if step.within is not None else expect_timeout
    eventual = eventual_part(step)
    count = step.expect.replies or 0
    if eventual is not None or count:

        def holds(conversation: Conversation) -> bool:
            if count and replies_since(conversation, since=since, user=user) < count:
                return False
            if eventual is None:
                return True
            found = check_expectation(
                eventual, conversation, since=since, user=user, step_at=step_at
            )
            return not found

        await session.wait_until(holds, within)
    if eventual is None or needs_quiet(step):
        await session.quiet(quiet, within)


def distinct_user(user: UserSpec, salt: str) -> UserSpec:
    """``user`` with numbers of its own for one scenario of one run (same shape, new digits).

    A wa_id keeps its first two digits (the country code, mostly) and its
    length; a BSUID keeps its country prefix. The same salt gives the same
    numbers, so a scenario's users stay stable within a run.
    """

    def digits(value: str, keep: int) -> str:
        if len(value) <= keep:
            return value
        seed = hashlib.sha256(f"{salt}:{user.name}:{value}".encode()).hexdigest()
        width = len(value) - keep
        return value[:keep] + str(int(seed, 16) % 10**width).zfill(width)

    wa_id = digits(user.wa_id, 2) if user.wa_id else None
    # Without a BSUID of its own a user would get one made up from the seed, the same
    # in every scenario: give one here instead.
    prefix, dot, rest = (user.bsuid or "US.00000000000000000000").partition(".")
    bsuid = f"{prefix}{dot}{digits(rest, 0)}" if dot else digits(prefix, 0)
    return UserSpec(user.name, wa_id, bsuid, user.on_whatsapp)


def with_late(result: ScenarioResult, late: Sequence[Event]) -> ScenarioResult:
    """A result with what the agent sent after its scenario ended, as violations of its own."""
    added = []
    for event in late:
        what = getattr(event, "text", None) or getattr(event, "type", event.kind)
        added.append(
            Violation(
                kind="expectation",
                rule="late",
                message=(
                    f"the agent sent {what!r} to {event.user} after the scenario had ended "
                    "(it went quiet for the whole --quiet window first)"
                ),
            )
        )
    return result.model_copy(
        update={
            "violations": (*result.violations, *added),
            "status": "error" if result.status == "error" else "failed",
        }
    )


def with_run_news(
    result: ScenarioResult,
    shared: RunShared,
    namespace: str,
    written: Mapping[str, str] | None = None,
) -> ScenarioResult:
    """A result with what the run's channel kept for its scenario (``namespace``) to the end.

    ``shared`` is the channel's run context (:class:`~harness.channel.RunShared`):
    the agent's late sends become violations (:func:`with_late`); its sends to
    numbers that are none of the scenario's users are listed beside the verdict,
    which they leave as it was (a channel plugin's run context written before
    ``strays`` has none).
    ``written`` maps each number as the scenario writes it to its user: a send to
    one of those says so (the bot answered a number it is configured with).
    """
    late = shared.late(namespace)
    if late:
        result = with_late(result, late)
    strays = getattr(shared, "strays", None)
    found = tuple(strays(namespace)) if strays is not None else ()
    written = written or {}
    found = tuple(
        s.model_copy(update={"written_for": written[s.to]}) if s.to in written else s for s in found
    )
    if found:
        result = result.model_copy(update={"stray_sends": (*result.stray_sends, *found)})
    return result


def numbers_seen(written: Sequence[User], users: Sequence[UserSpec]) -> dict[str, str]:
    """Each user's number where the run gave it one of its own (a run against a URL)."""
    wrote = {user.name: user.wa_id for user in written}
    return {u.name: u.wa_id for u in users if u.wa_id and u.wa_id != wrote.get(u.name)}


def revisions(
    reported: Sequence[ScenarioResult | None], final: Sequence[ScenarioResult | None]
) -> Iterator[tuple[ScenarioResult, ScenarioResult]]:
    """Each result whose verdict the run's news changed after it was reported: before, after."""
    for before, after in zip(reported, final, strict=True):
        if before is not None and after is not None and after.status != before.status:
            yield before, after
