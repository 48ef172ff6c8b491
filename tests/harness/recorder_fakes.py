"""What the recorders' tests share: a clock that moves a second each time it is read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

START = datetime(2025, 6, 13, 18, 0, tzinfo=UTC)


class StepClock:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.current = START

    def now(self) -> datetime:
        self.current += timedelta(seconds=1)
        return self.current
