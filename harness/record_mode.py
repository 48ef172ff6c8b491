"""How a recorder treats calls: keep them, serve kept ones, or stay out of the way.

Apart from the recorders (:mod:`harness.tape`) so that a command offering
the modes as choices (``harness serve --model-mode``) declares its options
without importing them.
"""

from __future__ import annotations

from enum import StrEnum

from harness.exceptions import ConfigError

__all__ = ["RecordMode"]


class RecordMode(StrEnum):
    """How a recorder treats calls: keep them, serve kept ones, or stay out of the way."""

    RECORD = "record"
    REPLAY = "replay"
    PASSTHROUGH = "passthrough"

    @classmethod
    def parse(cls, value: RecordMode | str) -> RecordMode:
        """The mode named ``value``; a :class:`ConfigError` listing the valid ones otherwise."""
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(mode.value for mode in cls)
            raise ConfigError(f"invalid record mode {value!r}; valid modes: {valid}") from None
