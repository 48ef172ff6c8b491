"""What a load run plays: how many users, how fast, for how long, saying what.

A :class:`LoadPlan` is checked once, when it is made: every bound is there so
that a run always ends (``duration`` and ``max_messages``) and so that a typo
(``--users 0``, ``--rate -5``) is one clear line, not a run that does
nothing. The users' words come from scenario files: each scenario's ``say``
and ``tap`` steps, in order, make a :class:`Template`; the other steps
(expectations, waits, redeliveries, media) are left out, since a load run
measures the agent's answers, not their content.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from harness.exceptions import ConfigError
from harness.suites.scenario import Scenario
from harness.suites.steps import SayStep, TapStep

__all__ = [
    "MAX_DURATION",
    "MAX_MESSAGES",
    "MAX_USERS",
    "LoadPlan",
    "Template",
    "TurnSpec",
    "templates_from",
]

#: The longest run a plan accepts, in seconds (a day).
MAX_DURATION: Final = 86_400.0
#: The most user messages a plan may send; every latency is kept, 8 bytes each.
MAX_MESSAGES: Final = 10_000_000
#: The most simulated users at once.
MAX_USERS: Final = 100_000
# The longest gap a burst's fragments are sent apart in a load run, in seconds.
_LONGEST_GAP: Final = 10.0


@dataclass(frozen=True, slots=True)
class TurnSpec:
    """One turn of a user: a message, or a burst sent ``gap`` seconds apart, or a tap."""

    kind: Literal["say", "tap"]
    texts: tuple[str, ...]
    gap: float = 0.0


@dataclass(frozen=True, slots=True)
class Template:
    """A conversation users replay: the turns of one scenario, named after it."""

    name: str
    turns: tuple[TurnSpec, ...]


def templates_from(scenarios: Sequence[Scenario]) -> list[Template]:
    """The say and tap steps of each scenario, as templates (in the scenarios' order).

    A scenario with no say or tap step gives no template; when none gives one,
    :class:`ConfigError` names the files.
    """
    templates: list[Template] = []
    for scenario in scenarios:
        turns: list[TurnSpec] = []
        for step in scenario.steps:
            if isinstance(step, SayStep):
                gap = min(step.gap.total_seconds(), _LONGEST_GAP)
                turns.append(TurnSpec("say", tuple(step.say), gap))
            elif isinstance(step, TapStep):
                turns.append(TurnSpec("tap", (step.tap,)))
        if turns:
            templates.append(Template(scenario.name, tuple(turns)))
    if not templates:
        where = ", ".join(str(s.path or s.name) for s in scenarios) or "no scenario"
        raise ConfigError(f"{where}: steps: no say or tap step to play (a load run needs one)")
    return templates


@dataclass(frozen=True)
class LoadPlan:
    """A load run's settings, checked when made (:class:`ConfigError` names the option).

    ``rate`` is user messages per second over all users; ``think`` is how long
    a user waits after a reply before its next turn (replies and duplicates
    that come later than that count against the next turn); ``reply_timeout``
    is how long a turn waits before its reply counts as lost. The users'
    WhatsApp ids are ``first_wa_id`` and the numbers after it (one each).
    ``statuses`` says whether each accepted send gets its sent, delivered and
    read status webhooks.
    """

    target_url: str
    templates: tuple[Template, ...]
    users: int = 10
    rate: float = 10.0
    duration: float = 10.0
    max_messages: int = 100_000
    reply_timeout: float = 10.0
    think: float = 1.0
    connections: int = 100
    webhook_timeout: float = 10.0
    first_wa_id: int = 15550000000
    statuses: bool = True

    def __post_init__(self) -> None:
        if not self.target_url.startswith(("http://", "https://")):
            raise ConfigError(f"--target-url {self.target_url!r}: expected an http(s):// URL")
        _within("--users", self.users, 1, MAX_USERS)
        _within("--max-messages", self.max_messages, 1, MAX_MESSAGES)
        _within("--connections", self.connections, 1, 10_000)
        _positive("--rate", self.rate)
        _positive("--duration", self.duration)
        if self.duration > MAX_DURATION:
            raise ConfigError(f"--duration: {self.duration:g}s is over the limit of 24h")
        _positive("--reply-timeout", self.reply_timeout)
        _positive("--webhook-timeout", self.webhook_timeout)
        if self.think < 0:
            raise ConfigError(f"--think: {self.think:g}s is negative")
        if not self.templates:
            raise ConfigError("--scenario: no template to play")
        last = self.first_wa_id + self.users - 1
        if self.first_wa_id < 10_000_000 or last > 999_999_999_999_999:
            numbers = f"{self.first_wa_id} to {last}"
            raise ConfigError(f"--first-wa-id: {numbers} are not phone numbers (8 to 15 digits)")

    def wa_id(self, user: int) -> str:
        """The WhatsApp id of user number ``user`` (0-based): one number each."""
        return str(self.first_wa_id + user)

    def template(self, user: int) -> Template:
        """The template user number ``user`` plays: the templates are dealt in turn."""
        return self.templates[user % len(self.templates)]


def _within(option: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ConfigError(f"{option}: {value} is outside {low}..{high:,}")


def _positive(option: str, value: float) -> None:
    if not value > 0:
        raise ConfigError(f"{option}: {value:g} must be more than 0")
