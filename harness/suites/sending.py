"""Playing the steps that hand the channel a message object, and locating what goes wrong.

A ``send`` step, and a ``say`` step that quotes (``reply_to``), reach the
channel as one message object (:func:`step_message`). Before the run, the
channel may check each one's shape (:func:`check_step_messages`); as the
step is played, its references become message ids (:class:`MessageLabels`)
and the channel completes and checks the rest (:func:`send_step`). What the
file got wrong is a :class:`~harness.exceptions.ScenarioError` naming the
file, the step's line and the field; a message the conversation can't
support yet (no reply to react to) is the agent's failure, a
:class:`~harness.exceptions.StepError`, as a tap on nothing is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.channel import ChannelSession, UserSpec
from harness.exceptions import HarnessError, ScenarioError, StepError
from harness.suites.messages import MessageLabels
from harness.suites.scenario import Scenario
from harness.suites.steps import BaseStep, SayStep, SendStep
from harness.suites.yamlpos import scenario_error

__all__ = ["change_faults", "check_step_messages", "send_step", "step_message"]


def step_message(step: BaseStep) -> dict[str, Any] | None:
    """The message object a step hands the channel, or None for a step that hands none."""
    if isinstance(step, SendStep):
        return step.message()
    if isinstance(step, SayStep) and step.reply_to is not None:
        return {"type": "text", "text": {"body": step.say[0]}, "context": {"id": step.reply_to}}
    return None


def check_step_messages(
    scenarios: Sequence[Scenario], check: Callable[[Mapping[str, Any]], None]
) -> None:
    """Have the channel ``check`` every step's message; the first refused is a ScenarioError."""
    for scenario in scenarios:
        for step in scenario.steps:
            message = step_message(step)
            if message is None:
                continue
            try:
                check(message)
            except ValueError as exc:
                raise _located(scenario, step, exc) from None


async def send_step(
    scenario: Scenario,
    step: SayStep | SendStep,
    session: ChannelSession,
    acting: UserSpec,
    labels: MessageLabels,
) -> None:
    """Hand the channel the step's message, its references resolved in ``acting``'s chat."""
    message = step_message(step)
    assert message is not None  # a send, or a say that quotes

    def field(name: str) -> str:
        if name == "context.id" and step.reply_to is not None:
            return f"steps[{step.index}].reply_to"
        return f"steps[{step.index}].send.{name}"

    resolved = labels.refer(message, session.conversation(), acting.key, field)
    try:
        await session.send(acting.name, resolved)
    except StepError as exc:
        raise StepError(f"{_field(step)}: {exc}") from None
    except ScenarioError:
        raise
    except HarnessError as exc:
        if not isinstance(exc, ValueError):
            raise
        raise _located(scenario, step, exc) from None


def _field(step: BaseStep) -> str:
    return f"steps[{step.index}]" + (".send" if isinstance(step, SendStep) else "")


def _located(scenario: Scenario, step: BaseStep, exc: Exception) -> ScenarioError:
    return scenario_error(str(exc), path=scenario.path, line=step.line, field=_field(step))


async def change_faults(session: ChannelSession, spec: object) -> None:
    """Play a ``faults:`` step: the channel's faults from now on.

    A channel session that can change its faults has ``set_faults(spec)``; on
    one without it the step fails, as a step the channel can't play does.
    """
    change = getattr(session, "set_faults", None)
    if not callable(change):
        raise StepError(f"the {session.name} channel can't change its faults mid-scenario")
    try:
        await change(spec)
    except HarnessError as exc:  # checked before the run; a channel that refuses it now
        raise StepError(str(exc)) from None
