"""Replaying a recorded conversation through the channel, with its timing, offline.

A replay reads a fixture's event log back into the user's actions: each
message the user sent, at the virtual instant it reached the agent, and each
time the channel delivered one again (Meta's duplicates; retries after a
refused delivery are left to happen by themselves). It plays those actions
through the channel at their recorded instants (or at skewed ones: shifted
from a turn on, gaps scaled, the agent's clock offset), each webhook's
timestamp as far ahead of the replay's clock as the recorded one was ahead
of its arrival (:mod:`harness.replay.clock_moves`), with the agent's
model and tools answering from the recording, then compares the new
conversation with the recorded one, turn by turn, and checks the scenario's
invariants again.

Policies: ``pinned`` (a request the recording can't answer is a divergence)
and ``live`` (it goes to the agent's own model or tool, and is recorded).

A fixture may hold less than its conversation: a recording cut short (its
process was killed before it wrote ``conversation.json``), or a chat recorded
by ``harness proxy`` with none of the agent's model or tool calls. A replay
that has served every answer such a fixture holds and is asked for more has
reached what was never recorded, not a change of the agent: it is
``incomplete``, one line saying why, and nothing after that point is judged.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from harness.agent_contract import loop_errors
from harness.channel import ChannelSession, ChannelSetup, RecordedCall, UserSpec
from harness.exceptions import ConfigError, Divergence, HandshakeError, HarnessError
from harness.failures import collecting_failures, failure_line
from harness.fixture import CALL_LATENCY_ATTRIBUTE, Fixture
from harness.inflight import running_on
from harness.prompts import override
from harness.recording import Recording
from harness.records import LLMRecord, ToolRecord
from harness.replay import _fixture_parts as parts
from harness.replay._result_lines import numbered, once_each, turn_at, with_turn
from harness.replay.clock_moves import moved_ahead, webhook_time
from harness.replay.diff import ConversationDiff, diff_conversations
from harness.replay.renaming import (
    rename_in_records,
    renamed_ids,
    renumbered,
    swap_strings,
    with_numbers,
)
from harness.replay.replay_result import Policy as Policy
from harness.replay.replay_result import ReplayResult as ReplayResult
from harness.replay.replay_result import ReplayStatus as ReplayStatus
from harness.results import Violation
from harness.skew import Skew
from harness.suites.invariants import bind
from harness.suites.repeats import is_simulated
from harness.suites.runner import Runner
from harness.suites.scenario import Scenario, parse_scenario
from harness.tape import RecordMode
from harness.trace import (
    Conversation,
    Event,
    InboundMessage,
    OutboundSend,
    Participant,
    StatusUpdate,
)

__all__ = [
    "Policy",
    "ReplayAction",
    "ReplayResult",
    "ReplayStatus",
    "plan_from_fixture",
    "recorded_calls",
    "replay_fixture",
    "settings_differences",
]

_CHANNEL_FIELDS = ("id", "from", "from_user_id", "timestamp", "context", "errors")
_MEDIA = {"image", "audio", "video", "document", "sticker"}


@dataclass(frozen=True)
class ReplayAction:
    """One thing the user (or Meta) did, at its recorded instant."""

    at: datetime
    user: str
    kind: Literal["say", "tap", "send", "redeliver", "recorded"]
    text: str = ""
    choice: str = ""
    message: Mapping[str, Any] | None = None
    index: int = 0
    wamid: str = ""
    starts_turn: bool = False
    #: For ``recorded``: what the channel sent around the message (see ``InboundMessage``).
    envelope: Mapping[str, Any] | None = None
    #: For ``recorded``: how far its webhook's timestamp is to run ahead of the replay's clock,
    #: as the recorded one ran ahead of its arrival (see :mod:`harness.replay.clock_moves`).
    ahead: timedelta = timedelta(0)


def plan_from_fixture(fixture: Fixture) -> list[ReplayAction]:
    """The user's actions in a recorded conversation, in the order they reached the agent."""
    conversation = fixture.conversation
    events = fixture.events or (conversation.events if conversation else ())
    if not events:
        raise ConfigError(f"{fixture.path}: the fixture records no events to replay")
    deliveries_of: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    order: dict[str, int] = {}
    turn_firsts = {
        t.messages[0].wamid for t in (conversation.turns if conversation else ()) if t.messages
    }
    actions: list[ReplayAction] = []
    stamps: list[datetime | None] = []  # what each message's webhook said, None for a redelivery
    for event in events:
        if not isinstance(event, InboundMessage):
            continue
        user = event.user or ""
        seen = deliveries_of.setdefault(event.wamid, set())
        if event.duplicate:
            if event.delivery is not None and event.delivery in seen:
                continue  # a retry of a delivery the agent refused: it will happen again
            actions.append(
                ReplayAction(
                    event.at, user, "redeliver", index=order[event.wamid], wamid=event.wamid
                )
            )
            stamps.append(None)  # it carries the timestamp of the message it repeats
        else:
            counts[user] = counts.get(user, 0) + 1
            order[event.wamid] = counts[user]
            actions.append(_action(event, user, event.wamid in turn_firsts))
            stamps.append(webhook_time(event.body))
        if event.delivery is not None:
            seen.add(event.delivery)
    if not actions:
        raise ConfigError(f"{fixture.path}: the fixture records no user message to replay")
    aheads = moved_ahead([a.at for a in actions], stamps)
    return [dataclasses.replace(a, ahead=d) for a, d in zip(actions, aheads, strict=True)]


def _action(event: InboundMessage, user: str, starts_turn: bool) -> ReplayAction:
    body = event.body
    if event.envelope is not None:
        # Sent again as it was received: every field of the message and of its webhook.
        return ReplayAction(
            event.at,
            user,
            "recorded",
            text=event.text or "",
            message=dict(body),
            wamid=event.wamid,
            starts_turn=starts_turn,
            envelope=dict(event.envelope),
        )
    if event.type == "text":
        return ReplayAction(
            event.at, user, "say", text=event.text or "", wamid=event.wamid, starts_turn=starts_turn
        )
    if event.type == "interactive" and event.reply_id is not None:
        return ReplayAction(
            event.at, user, "tap", choice=event.reply_id, wamid=event.wamid, starts_turn=starts_turn
        )
    message = {k: v for k, v in body.items() if k not in _CHANNEL_FIELDS}
    if event.type in _MEDIA and isinstance(message.get(event.type), dict):
        media = dict(message[event.type])  # type: ignore[arg-type]  # checked just above
        for key in ("id", "sha256", "url"):
            media.pop(key, None)
        message[event.type] = media
    return ReplayAction(
        event.at, user, "send", message=message, wamid=event.wamid, starts_turn=starts_turn
    )


def _users(fixture: Fixture, actions: Sequence[ReplayAction]) -> list[UserSpec]:
    conversation = fixture.conversation
    specs: dict[str, UserSpec] = {}
    participants: tuple[Participant, ...] = conversation.participants if conversation else ()
    if not participants:
        # A recording cut short has no conversation.json; a proxy lists who took part in meta.
        listed = getattr(fixture.meta, "participants", None)
        if isinstance(listed, list):
            participants = tuple(Participant.model_validate(p) for p in listed)
    for participant in participants:
        specs[participant.id] = UserSpec(
            name=participant.name or participant.id,
            wa_id=participant.wa_id,
            bsuid=participant.user_id,
        )
    scenario = None if participants else _scenario(fixture)
    if scenario is not None:
        # A scenario's recording cut short: its users are in the scenario it keeps in meta.
        for user in scenario.users:
            spec = UserSpec(user.name, user.wa_id, user.bsuid)
            specs[spec.key] = spec
    for action in actions:
        if action.user not in specs:
            wa_id = action.user if action.user.isdigit() else None
            bsuid = None if wa_id else action.user
            specs[action.user] = UserSpec(name=action.user, wa_id=wa_id, bsuid=bsuid)
    return list(specs.values())


def _scenario(fixture: Fixture) -> Scenario | None:
    text = getattr(fixture.meta, "scenario_yaml", None)
    if not isinstance(text, str) or not text.strip():
        return None
    return _parsed(text, fixture.path / "meta.json")


@functools.lru_cache(maxsize=256)
def _parsed(text: str, path: Path) -> Scenario:
    """The scenario a fixture keeps, read once per text and file (scenarios are frozen).

    Reading YAML with the line of every value costs more than the rest of a
    short replay's set-up; a fixture replayed again (a benchmark, a watch
    loop, pytest's runs) reads it from here.
    """
    return parse_scenario(text, path=path)


async def _play(
    session: ChannelSession,
    actions: Sequence[ReplayAction],
    times: Sequence[datetime],
    fixture: Fixture,
    end: datetime,
    ids: Mapping[str, str],
    numbers: Mapping[str, str],
    *,
    quiet: tuple[float, float],
) -> None:
    """Play the recorded user's actions at their instants.

    An agent at a URL lives on real time: as in a run, the user writes again
    (a new turn) only once it has gone quiet (``quiet``: the window, and the
    longest wait), or its answer to the last turn would come after the next
    message; the fragments of a burst still go out together.
    """
    media_index = parts.media_index(fixture)
    recorded_out = {
        numbers.get(user, user): sent
        for user, sent in _agent_messages(fixture.events or ()).items()
    }
    real = session.real_time
    for index, (action, when) in enumerate(zip(actions, times, strict=True)):
        if real and index and action.starts_turn:
            await session.quiet(*quiet)
        await session.run_until(when)
        if action.kind == "recorded":
            assert action.message is not None  # a recorded action carries its message
            assert action.envelope is not None  # and its envelope
            data = None
            relative = media_index.get(action.wamid)
            if relative is not None:
                data = fixture.media_path(relative).read_bytes()
            now_out = _agent_messages(session.conversation().events)
            item = _pointing_at_replay(action.message, action.user, ids, recorded_out, now_out)
            await session.send_recorded(
                action.user,
                item,
                action.envelope,
                message_id=ids[action.wamid],
                data=data,
                ahead=action.ahead,
            )
        elif action.kind == "say":
            await session.say(action.user, [action.text])
        elif action.kind == "tap":
            await session.tap(action.user, action.choice)
        elif action.kind == "redeliver":
            await session.redeliver(action.user, action.index)
        else:
            assert action.message is not None  # a send always carries its message
            data = None
            relative = media_index.get(action.wamid)
            if relative is not None:
                data = fixture.media_path(relative).read_bytes()
            await session.send(action.user, action.message, data=data)
    await session.settle()
    if real:
        await session.quiet(*quiet)
    # The recording may go on after the user's last message (a follow-up 25 hours later).
    await session.run_until(end)
    await session.settle()


def settings_differences(fixture: Fixture, given: Mapping[str, str]) -> list[str]:
    """How ``given`` agent settings differ from those the fixture was recorded with, a line each."""
    recorded = parts.str_map(getattr(fixture.meta, "agent_settings", {}))
    return [
        f"{key}={value} (recorded with {key}={recorded[key]})"
        for key, value in sorted(given.items())
        if key in recorded and recorded[key] != value
    ]


def _agents_part(conversation: Conversation) -> Conversation:
    """The conversation without the statuses that tell of Meta and the user's phone.

    A live chat's ``sent``, ``delivered`` and ``read`` came when Meta got round
    to them and the person's phone was online and they looked; a replay's
    simulator has its own timing, so they are left out of the comparison.
    ``failed`` stays: a failure (131047 outside the window, say) answers the
    agent's send.
    """
    kept = [
        e for e in conversation.events if not (isinstance(e, StatusUpdate) and e.status != "failed")
    ]
    fields = conversation.model_dump(exclude={"events", "turns"})
    return Conversation.from_events(kept, **{k: getattr(conversation, k) for k in fields})


def _agent_messages(events: Sequence[Event]) -> dict[str, list[str]]:
    """The ids of the messages the agent sent each user, in order."""
    found: dict[str, list[str]] = {}
    for event in events:
        if isinstance(event, OutboundSend) and event.is_message and event.ok and event.wamid:
            found.setdefault(event.user or "", []).append(event.wamid)
    return found


def _renumbered(action: ReplayAction, numbers: Mapping[str, str]) -> ReplayAction:
    """``action`` played by the user's replay numbers (see :func:`renumbered`)."""
    return dataclasses.replace(
        action,
        user=numbers.get(action.user, action.user),
        message=swap_strings(action.message, numbers),
        envelope=swap_strings(action.envelope, numbers),
    )


def _pointing_at_replay(
    message: Mapping[str, Any],
    user: str,
    ids: Mapping[str, str],
    recorded_out: Mapping[str, list[str]],
    now_out: Mapping[str, list[str]],
) -> dict[str, Any]:
    """The recorded message, its references moved to the replay's ids.

    A reply quotes (``context.id``) or reacts to (``reaction.message_id``) a
    message: one of the user's, renamed like every recorded message, or one of
    the agent's, which in the replay is the agent's message in the same place.
    """

    def moved(old: object) -> object:
        if not isinstance(old, str):
            return old
        if old in ids:
            return ids[old]
        sent = recorded_out.get(user, [])
        if old in sent:
            index = sent.index(old)
            replayed = now_out.get(user, [])
            if index < len(replayed):
                return replayed[index]
        return old

    item = dict(message)
    context = item.get("context")
    if isinstance(context, Mapping) and "id" in context:
        item["context"] = {**context, "id": moved(context["id"])}
    reaction = item.get("reaction")
    if isinstance(reaction, Mapping) and "message_id" in reaction:
        item["reaction"] = {**reaction, "message_id": moved(reaction["message_id"])}
    return item


def recorded_calls(fixture: Fixture) -> list[RecordedCall]:
    """The agent's calls to the channel's API in a chat recorded live, in the order made."""
    calls: list[tuple[int, RecordedCall]] = []
    for span in fixture.raw("spans"):
        attributes = span.get("attributes") or {}
        latency = attributes.get(CALL_LATENCY_ATTRIBUTE)
        method, path = attributes.get("http.request.method"), attributes.get("url.path")
        if isinstance(latency, int | float) and isinstance(method, str) and isinstance(path, str):
            start = span.get("start_time_unix_nano")
            calls.append(
                (start if isinstance(start, int) else 0, RecordedCall(method, path, latency))
            )
    calls.sort(key=lambda pair: pair[0])
    return [call for _, call in calls]


async def replay_fixture(
    runner: Runner,
    fixture: Fixture,
    *,
    policy: Policy = "pinned",
    skew: Skew | None = None,
    prompts: Mapping[str, str] | None = None,
    agent_settings: Mapping[str, str] | None = None,
) -> ReplayResult:
    """Replay one fixture through the runner's channel and agent, and compare.

    A fixture a simulated user took part in is replayed by playing its scenario
    again (see :mod:`harness.replay.simulated`). An agent at a URL that fails
    the verification handshake raises :class:`HandshakeError`: it was not
    reached as configured, so nothing of the replay can be judged.
    """
    from harness.replay import simulated  # it builds on this module

    if is_simulated(_scenario(fixture)):
        again = simulated.simulated_scenario(fixture)
        return await simulated.replay_simulated(runner, fixture, again, policy=policy, skew=skew)
    started = time.perf_counter()
    recorded = fixture.conversation
    actions = plan_from_fixture(fixture)
    skew = skew or Skew()
    turn_starts = [i for i, a in enumerate(actions) if a.starts_turn]
    times = skew.apply([a.at for a in actions], turn_starts)
    if runner.options.target_url:
        # An agent in another process lives on real time: the conversation starts now.
        moved = datetime.now(UTC).replace(microsecond=0) - times[0]
        times = [t + moved for t in times]
    events = fixture.events or (recorded.events if recorded else ())
    tail = max(e.at for e in events) - actions[-1].at
    end = times[-1] + tail * skew.scale
    scenario = _scenario(fixture)
    checks = [bind(ref) for ref in scenario.invariants] if scenario else []
    meta = fixture.meta
    settings = {
        **parts.str_map(getattr(meta, "agent_settings", {})),
        **runner.options.agent_settings,
        **(agent_settings or {}),
    }
    # Recorded messages go out under ids of the replay's own (unique per run at a URL,
    # where the agent remembers what it has seen), and the recording follows.
    salt = f"replay:{datetime.now(UTC).isoformat()}" if runner.options.target_url else "replay"
    ids = renamed_ids((a.wamid for a in actions if a.kind == "recorded"), salt)
    users = _users(fixture, actions)
    numbers: dict[str, str] = {}
    if runner.options.target_url and not runner.options.keep_numbers:
        # The agent remembers the users it met: each replay's users are new to it.
        users, numbers = renumbered(users, salt)
        actions = [_renumbered(action, numbers) for action in actions]
    llm_records, tool_records = rename_in_records(
        fixture.records("llm", LLMRecord), fixture.records("tools", ToolRecord), ids | numbers
    )
    recording = Recording(
        mode=RecordMode.REPLAY,
        on_miss="raise" if policy == "pinned" else "live",
        llm_records=llm_records,
        tool_records=tool_records,
    )
    setup = ChannelSetup(
        users=users,
        seed=int(getattr(meta, "seed", 0) or 0),
        faults=parts.replay_faults(getattr(meta, "faults", None)),
        agent_factory=runner.factory,
        target_url=runner.options.target_url,
        agent_settings=settings,
        options={
            **parts.any_map(getattr(meta, "channel_options", {})),
            **runner.options.channel_options,
        },
        recording=recording,
        start=times[0] - timedelta(seconds=1),
        agent_offset=skew.agent_offset,
        # At a URL the messages the user types get ids of this replay's own, too.
        namespace=salt if runner.options.target_url else "",
        real_work_limit=runner.options.real_work_limit,
        recorded_calls=recorded_calls(fixture),
    )
    session: ChannelSession | None = None
    conversation: Conversation | None = None
    error: str | None = None
    agent_errors: list[str] = []
    try:
        with override(prompts or {}):
            session = runner.plugin.factory(setup)
            # Real work the agent starts (model calls, store and HTTP requests) holds this clock;
            # what fails in its background work (reported, or raised and never looked at)
            # is this replay's to report, a line each, never a traceback on the terminal.
            crashes: AbstractAsyncContextManager[list[BaseException]] = (
                loop_errors() if runner.factory is not None else nullcontext([])
            )
            with running_on(session.clock), collecting_failures() as agent_errors:
                async with crashes as crashed:
                    try:
                        await session.start()
                        quiet = (runner.options.quiet, runner.options.expect_timeout)
                        await _play(
                            session, actions, times, fixture, end, ids, numbers, quiet=quiet
                        )
                        conversation = session.conversation(finished=True)
                    finally:
                        if conversation is None:
                            conversation = session.conversation(finished=True)
                        await session.close()
            agent_errors.extend(
                failure_line(e, "background task")
                for e in crashed
                if not isinstance(e, Divergence)  # reported as the replay's divergence
            )
    except HarnessError as exc:
        if isinstance(exc, HandshakeError) and runner.options.target_url:
            raise  # the agent at the URL was not reached as configured: nothing to judge
        error = str(exc)
    except Exception as exc:  # the agent crashed: a result, not a crash of ours
        error = f"{type(exc).__name__}: {exc}"
    back = {new: old for old, new in numbers.items()}
    if conversation is not None and numbers:  # compared and reported as recorded
        conversation = with_numbers(conversation, back)
    live = scenario is None  # a chat recorded live (through the proxy), not a scenario
    violations: list[Violation] = []
    if conversation is not None:
        for check in checks:
            violations.extend(check.run(conversation))
    divergences = once_each(
        with_turn(numbered(str(d), back), at, conversation)
        for d, at in zip(recording.divergences, recording.divergence_times, strict=True)
    )
    changes: tuple[str, ...] = ()
    if recorded is not None and conversation is not None:
        if live:
            recorded, compared = _agents_part(recorded), _agents_part(conversation)
        else:
            compared = conversation
        diff: ConversationDiff = diff_conversations(recorded, compared)
        changes = tuple(
            f"turn {t.index + 1}: {line}"
            for t in diff.turns
            if t.status != "same"
            for line in (t.changes or (t.status,))
        )
    gap = parts.gap(fixture)
    status: ReplayStatus
    if gap and recording.divergences and not recording.unused():
        # Past the end of what was recorded: nothing from here on can be judged.
        turn = turn_at(recording.divergence_times[0], conversation)
        where = f" in turn {turn + 1}" if turn is not None else ""
        error = f"{gap[0]}, and the agent asked for more than it holds{where}: {gap[1]}"
        status, divergences, changes, violations = "incomplete", (), (), []
    elif error and not divergences:
        status = "error"
    elif divergences or (policy == "pinned" and skew.is_identity and changes):
        status = "diverged"
    elif violations:
        status = "failed"
    elif changes:
        status = "changed"
    else:
        status = "same"
    return ReplayResult(
        fixture=str(fixture.path),
        status=status,
        scenario=fixture.meta.scenario,
        divergences=divergences,
        changes=changes,
        violations=tuple(violations),
        error=None if error is None else numbered(error, back),
        unused=len(recording.unused()),
        duration_s=round(time.perf_counter() - started, 4),
        conversation=conversation,
        agent_errors=tuple(numbered(line, back) for line in agent_errors),
        tool_notes=tuple(
            with_turn(numbered(line, back), at, conversation)
            for at, line in recording.set_aside_notes()
        ),
    )
