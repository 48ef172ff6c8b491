"""Playing a ``simulate`` step: a model plays the user, turn by turn, through the channel.

Each turn the simulated user's model sees what is new on the user's phone
(:mod:`harness.suites.phone_view`), answers with one action
(:mod:`harness.suites.user_actions`), and the harness plays it through the
same session calls the scripted steps use: a say (or a burst of fragments),
a tap, a media file, a wait on the virtual clock. The stretch ends when its
``stop_when`` holds over what the agent did in it, when the user says they
are done, or after ``max_turns``; a stretch that ends without its
``stop_when`` holding, or with a user who gave up, is a violation.

The model's calls go through whatever client the runner hands in: the
offline stand-in, Anthropic's API, or a recorder around either (the
simulated user's own stream in a fixture, apart from the agent's).
The user's actions stay within the scenario's bounds: a tap names something
on the screen, a file is one the scenario lists, a wait is one of the
silences it allows; a model that steps outside them is an error of the run
(:class:`~harness.exceptions.LLMError`), not of the agent.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Final

from harness.channel import ChannelSession, UserSpec
from harness.durations import parse_duration
from harness.exceptions import ConfigError, LLMError
from harness.llm import LLMClient, LLMResponse
from harness.results import Violation
from harness.suites.expectations import check_expectation
from harness.suites.phone_view import phone_view
from harness.suites.simulate_step import SimulateStep
from harness.suites.steps import ExpectStep
from harness.suites.user_actions import (
    Done,
    SayAction,
    SendMedia,
    TapAction,
    WaitAction,
    parse_action,
)
from harness.suites.user_model import user_request
from harness.suites.yamlpos import scenario_error
from harness.trace import Event, InboundMessage

__all__ = [
    "FRAGMENT_GAP",
    "Stretch",
    "check_media",
    "media_message",
    "media_path",
    "play_simulation",
]

#: Seconds between the fragments of a simulated user's burst.
FRAGMENT_GAP: Final = 1.5
_TYPES: Final = {"image": "image", "video": "video", "audio": "audio", "application": "document"}


@dataclass
class Stretch:
    """How a simulated stretch went: its turns, how it ended, and what was violated."""

    turns: int = 0
    outcome: str = ""
    violations: list[Violation] = field(default_factory=list)
    #: The event index before the user's last action, and when it was taken (for an expect).
    since: int = 0
    step_at: datetime | None = None
    #: What the user did, a line each (``say: hi``), for reports.
    actions: list[str] = field(default_factory=list)


def media_message(path: Path, caption: str = "") -> dict[str, Any]:
    """The message object for sending the file at ``path`` (type from its extension)."""
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    kind = _TYPES.get(mime.split("/")[0], "document")
    if mime == "image/webp":
        kind = "sticker"
    content: dict[str, Any] = {}
    if caption and kind in ("image", "video", "document"):
        content["caption"] = caption
    if kind == "audio" and mime in ("audio/ogg", "audio/opus"):
        content["voice"] = True  # an .ogg from the phone's microphone is a voice note
    return {"type": kind, kind: content}


def _where(step: SimulateStep) -> str:
    return f"steps[{step.index}].simulate"


async def play_simulation(
    step: SimulateStep,
    *,
    session: ChannelSession,
    acting: UserSpec,
    client: LLMClient,
    seed: int,
    scenario_path: Path | None,
    names: Mapping[str, str],
    start: date,
    quiet: tuple[float, float] | None = None,
) -> Stretch:
    """Play one simulated stretch as ``acting``; the model answers through ``client``.

    ``quiet`` is, against an agent on real time, how long with nothing from
    it counts as done and how long to wait at most (seconds): the user looks
    at the phone once the agent has gone quiet.
    """

    async def settle() -> None:
        await session.settle()
        if quiet is not None:
            await session.quiet(*quiet)

    simulation = step.simulate
    silences = simulation.behaviour.silences
    stretch = Stretch(since=len(session.conversation().events), step_at=session.now())
    first, began = stretch.since, session.now()
    shown_from = _since_user_acted(session.conversation().events, acting.key)
    turns: list[tuple[dict[str, Any], LLMResponse]] = []
    waited = 0
    for turn in range(simulation.max_turns):
        phone = phone_view(session.conversation().events, acting.key, shown_from).as_data()
        phone["turn"] = turn + 1
        response = await client.create(**user_request(simulation, seed, turns, phone))
        try:
            action = parse_action(response)
        except LLMError as exc:
            raise LLMError(f"{_where(step)}: turn {turn + 1}: {exc}") from None
        turns.append((phone, response))
        stretch.turns = turn + 1
        if isinstance(action, Done):
            stretch.outcome = action.outcome
            stretch.actions.append(f"done: {action.outcome}")
            break
        stretch.since, stretch.step_at = len(session.conversation().events), session.now()
        if not isinstance(action, WaitAction):  # after a silence the user answers what was there
            shown_from = stretch.since
        if isinstance(action, SayAction):
            texts = list(action.messages)
            if simulation.behaviour.fragments == 0 and len(texts) > 1:
                texts = [" ".join(texts)]  # the scenario allows no fragments: one message
            stretch.actions.append(f"say: {' / '.join(texts)}")
            await session.say(acting.name, texts, gap=FRAGMENT_GAP)
            await settle()
        elif isinstance(action, TapAction):
            view = phone_view(session.conversation().events, acting.key, first)
            choice = view.choice(action.choice)
            if choice is None:
                offered = ", ".join(c.title for c in view.choices) or "nothing"
                raise LLMError(
                    f"{_where(step)}: turn {turn + 1}: the simulated user tapped "
                    f"{action.choice!r}, which its phone does not show (it can tap: {offered})"
                )
            stretch.actions.append(f"tap: {choice.title}")
            await session.tap(acting.name, choice.id)
            await settle()
        elif isinstance(action, SendMedia):
            await _send_file(step, action, session, acting, scenario_path, turn)
            stretch.actions.append(f"send: {action.file}")
            await settle()
        else:
            try:
                length = parse_duration(action.duration)
            except ConfigError as exc:
                raise LLMError(f"{_where(step)}: turn {turn + 1}: wait: {exc}") from None
            if waited >= silences.at_most or length > silences.length or not length:
                raise LLMError(
                    f"{_where(step)}: turn {turn + 1}: the simulated user waited "
                    f"{action.duration}, outside the scenario's silences "
                    f"(at most {silences.at_most}, each up to {silences.length})"
                )
            waited += 1
            stretch.actions.append(f"wait: {action.duration}")
            await session.wait(length.total_seconds())
            if quiet is not None:
                await session.quiet(*quiet)
        if simulation.stop_when is not None and _holds(
            step, session, acting, first, began, names, start
        ):
            stretch.outcome = "stop_when held"
            break
    else:
        stretch.outcome = stretch.outcome or "max_turns"
    _judge_end(step, stretch)
    return stretch


def _since_user_acted(events: Sequence[Event], user: str) -> int:
    """Where what is new to ``user`` begins: after their last message (a scripted step's)."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if isinstance(event, InboundMessage) and event.user == user:
            return index + 1
    return 0


def _holds(
    step: SimulateStep,
    session: ChannelSession,
    acting: UserSpec,
    first: int,
    began: datetime,
    names: Mapping[str, str],
    start: date,
) -> bool:
    assert step.simulate.stop_when is not None  # only asked when there is one
    check = ExpectStep(expect=step.simulate.stop_when, index=step.index, line=step.line)
    found = check_expectation(
        check,
        session.conversation(),
        since=first,
        user=acting.key,
        step_at=began,
        names=dict(names),
        start=start,
    )
    return not found


def _judge_end(step: SimulateStep, stretch: Stretch) -> None:
    """The violation a stretch's end makes, if any: a goal not reached, or a user who gave up."""
    stop_when = step.simulate.stop_when
    if stretch.outcome == "stop_when held":
        return
    why = ""
    if stretch.outcome == "gave_up":
        why = f"the simulated user gave up after {stretch.turns} turns"
    elif stop_when is not None:
        ended = (
            f"the simulated user was done after {stretch.turns} turns"
            if stretch.outcome == "goal_met"
            else f"the stretch ran out of turns ({stretch.turns})"
        )
        why = f"{ended} and stop_when never held ({_shown(stop_when.to_data())})"
    if why:
        stretch.violations.append(
            Violation(
                kind="expectation", rule="simulate", message=why, step=step.index, line=step.line
            )
        )


def _shown(data: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}: {value}" for key, value in data.items())


async def _send_file(
    step: SimulateStep,
    action: SendMedia,
    session: ChannelSession,
    acting: UserSpec,
    scenario_path: Path | None,
    turn: int,
) -> None:
    if action.file not in step.simulate.behaviour.media:
        listed = ", ".join(step.simulate.behaviour.media) or "none"
        raise LLMError(
            f"{_where(step)}: turn {turn + 1}: the simulated user sent {action.file!r}, "
            f"which is not among behaviour.media ({listed})"
        )
    path = media_path(step, action.file, scenario_path)
    await session.send(acting.name, media_message(path, action.caption), data=path.read_bytes())


def media_path(step: SimulateStep, name: str, scenario_path: Path | None) -> Path:
    """Where a listed media file is: beside the scenario file.

    A file that is not there is a :class:`~harness.exceptions.ScenarioError`
    naming the scenario, the line and the field.
    """
    base = scenario_path.parent if scenario_path is not None else Path.cwd()
    path = base / name
    if not path.is_file():
        index = step.simulate.behaviour.media.index(name)
        raise scenario_error(
            f"no such file: {path}",
            path=scenario_path,
            line=step.line,
            field=f"{_where(step)}.behaviour.media[{index}]",
        )
    return path


def check_media(step: SimulateStep, scenario_path: Path | None) -> None:
    """Every file the step lists exists (a :class:`ScenarioError` naming the first that doesn't)."""
    for name in step.simulate.behaviour.media:
        media_path(step, name, scenario_path)
