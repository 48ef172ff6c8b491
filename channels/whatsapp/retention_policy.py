"""How much a long-running simulator keeps: the policy alone, light enough for ``--help``.

:mod:`channels.whatsapp.retention` applies it; the command line reads its
defaults without loading the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from harness.exceptions import ConfigError

__all__ = ["SERVE_RETENTION", "RetentionPolicy"]


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """How much the simulator keeps: counts and ages (the clock as it runs, not its jumps).

    ``None`` keeps all.
    """

    #: Events in the log.
    events: int | None = None
    events_for: timedelta | None = None
    #: Sends in the outbox.
    outbox: int | None = None
    outbox_for: timedelta | None = None
    #: Messages remembered, each way (the users' and the agent's).
    messages: int | None = None
    messages_for: timedelta | None = None
    #: Media files (beyond Meta's own lifetimes).
    media: int | None = None
    #: A conversation whose user did something this recently keeps its current turn whole.
    active: timedelta = timedelta(minutes=10)

    def __post_init__(self) -> None:
        for name in ("events", "outbox", "messages", "media"):
            count = getattr(self, name)
            if count is not None and count < 1:
                raise ConfigError(f"retention: {name} must keep at least 1, got {count}")
        for name in ("events_for", "outbox_for", "messages_for", "active"):
            age = getattr(self, name)
            if age is not None and age <= timedelta(0):
                raise ConfigError(f"retention: {name} must be a positive duration, got {age}")

    @property
    def keeps_all(self) -> bool:
        """Whether nothing is ever forgotten (no count and no age is set)."""
        counts = (self.events, self.outbox, self.messages, self.media)
        ages = (self.events_for, self.outbox_for, self.messages_for)
        return all(limit is None for limit in (*counts, *ages))


SERVE_RETENTION: Final = RetentionPolicy(
    events=5_000,
    events_for=timedelta(days=1),
    outbox=1_000,
    outbox_for=timedelta(days=1),
    messages=1_000,
    messages_for=timedelta(days=7),
    media=100,
)
"""What ``harness serve`` keeps by default: its last few hundred turns, a day at most."""
