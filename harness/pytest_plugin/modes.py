"""Record modes, as users of pytest-recording know them, over the harness's own fixtures.

A test's recording is a fixture directory (:mod:`harness.fixture`): the
agent's model and tool answers, the channel's events and the conversation.
A scenario file's recording is ``fixtures/<file's stem>/`` beside it (where
``harness record`` puts them and ``harness regress`` finds them); a test
function's is ``recordings/<module>/<test>/`` beside its module.

``--harness-record-mode``:

- ``none`` (the default): replay only. A recording that is missing fails
  the test with the command that makes it; a request the recording can't
  answer fails it too. Nothing reaches the agent's model or tools live.
- ``once``: replay what is recorded; record a test that has no recording.
- ``new``: replay what is recorded, send the requests it can't answer to
  the agent's model and tools, and add them to the recording.
- ``all``: record every test afresh, replacing its recording.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Final, Literal

from harness.exceptions import ConfigError

__all__ = ["Plan", "RecordingMode", "function_recording", "plan_for", "scenario_recording"]

#: What to do for one test: fail (no recording), replay, record afresh, or replay and add.
Plan = Literal["missing", "replay", "record", "extend"]

_UNSAFE: Final = re.compile(r"[^\w.-]+")


class RecordingMode(StrEnum):
    """How tests treat their recordings (``--harness-record-mode``)."""

    NONE = "none"
    ONCE = "once"
    NEW = "new"
    ALL = "all"

    @classmethod
    def parse(cls, value: str, *, where: str = "--harness-record-mode") -> RecordingMode:
        """The mode named ``value``; a :class:`ConfigError` listing the valid ones otherwise."""
        try:
            return cls(value.strip().lower())
        except ValueError:
            valid = ", ".join(mode.value for mode in cls)
            raise ConfigError(f"{where} {value!r}: expected one of {valid}") from None


def plan_for(mode: RecordingMode, recorded: bool) -> Plan:
    """What a test does in ``mode``, with or without a recording already made."""
    if mode is RecordingMode.ALL:
        return "record"
    if not recorded:
        return "missing" if mode is RecordingMode.NONE else "record"
    return "extend" if mode is RecordingMode.NEW else "replay"


def scenario_recording(scenario_file: Path) -> Path:
    """Where a scenario file's recording lives: ``fixtures/<stem>/`` beside it."""
    return scenario_file.parent / "fixtures" / scenario_file.stem


def function_recording(module_file: Path, test_name: str) -> Path:
    """Where a test function's recording lives: ``recordings/<module>/<test>/`` beside it.

    Characters a file name can't safely hold (a parametrized test's brackets,
    spaces) become ``_``.
    """
    safe = _UNSAFE.sub("_", test_name).strip("_") or "test"
    return module_file.parent / "recordings" / module_file.stem / safe
