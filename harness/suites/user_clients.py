"""Which model plays the simulated users, and how a run's recording wraps it.

``stand-in`` (the default) is :class:`~harness.suites.user_model.StandInUser`:
offline, seeded, no key. ``anthropic`` is Anthropic's Messages API through
:class:`~harness.llm.AnthropicClient`, with the usual ``ANTHROPIC_API_KEY``
(the command line reads it and hands it in). When a run records or replays,
the users' model sits behind the recording's own users' stream
(:meth:`harness.recording.Recording.user_llm`), apart from the agent's.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final, Protocol

from harness.exceptions import ConfigError
from harness.llm import AnthropicClient, LLMClient
from harness.recording import Recording
from harness.suites.scenario import Scenario
from harness.suites.simulate import check_media
from harness.suites.simulate_step import SimulateStep
from harness.suites.user_model import StandInUser

__all__ = ["USER_MODELS", "check_user_models", "inner_user_model", "user_client"]

#: The names ``--user-model`` takes.
USER_MODELS: Final = ("stand-in", "anthropic")


class _Options(Protocol):
    @property
    def user_model(self) -> str: ...

    @property
    def user_model_key(self) -> str | None: ...


def inner_user_model(kind: str, key: str | None) -> LLMClient:
    """The model named ``kind``; a :class:`ConfigError` for an unknown one or a missing key."""
    if kind == "stand-in":
        return StandInUser()
    if kind == "anthropic":
        if not key:
            raise ConfigError(
                "the anthropic user model needs ANTHROPIC_API_KEY in the environment "
                "(or use --user-model stand-in, offline)"
            )
        return AnthropicClient(api_key=key)
    raise ConfigError(f"unknown user model {kind!r}; expected one of: {', '.join(USER_MODELS)}")


class _Stamps:
    """The conversation's clock for stamping records, without its sleep.

    A replayed agent's model call takes as long as it took when recorded, on
    the virtual clock; the simulated user's call is made by the scenario's
    driver, which is what moves that clock, so it must not wait on it.
    """

    def __init__(self, clock: Any) -> None:
        self._clock = clock

    def now(self) -> datetime:
        """The conversation's time."""
        moment: datetime = self._clock.now()
        return moment


def user_client(options: _Options, recording: Recording | None, clock: Any) -> LLMClient:
    """The client a simulated stretch talks to: the user model, behind the recording if any."""
    needed = recording is None or recording.mode.value != "replay" or recording.on_miss == "live"
    inner = inner_user_model(options.user_model, options.user_model_key) if needed else None
    if recording is None:
        assert inner is not None  # built above whenever there is no recording
        return inner
    return recording.user_llm(inner, clock=_Stamps(clock))


def check_user_models(scenarios: Sequence[Scenario], kind: str, key: str | None) -> None:
    """Before a run: the user model can be built, and every file a simulated user sends exists."""
    steps = [
        (scenario, step)
        for scenario in scenarios
        for step in scenario.steps
        if isinstance(step, SimulateStep)
    ]
    if not steps:
        return
    if kind not in USER_MODELS or (kind == "anthropic" and not key):
        inner_user_model(kind, key)  # raises the error that says what is wrong
    for scenario, step in steps:
        check_media(step, scenario.path)
