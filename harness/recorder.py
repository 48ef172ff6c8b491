"""Record an agent's LLM and tool calls once; replay them offline, in order.

:class:`RecordingLLMClient` wraps an :class:`~harness.llm.LLMClient` and
:class:`ToolRecorder` wraps the agent's tools. Each runs in one of three
modes (:class:`RecordMode`): ``record`` calls through and keeps every answer,
``replay`` serves the kept answers without calling anything, ``passthrough``
calls through and keeps nothing.

A call is keyed by the sha256 of its canonical JSON (sorted keys, volatile
fields removed), and the answers to one key are served in the order they
were recorded, so a request asked twice gets its two answers. A replayed call
that was never recorded either raises :class:`~harness.exceptions.Divergence`
naming what differs from the nearest recorded call (``on_miss="raise"``) or
goes live and is recorded (``on_miss="live"``).

This module gathers the recorders' names where users have always imported
them; each lives in a module of its own: the records (:mod:`harness.records`),
the tape and modes both recorders share (:mod:`harness.tape`), the two
recorders (:mod:`harness.llm_recorder`, :mod:`harness.tool_recorder`) and
the acting user (:mod:`harness.acting`).
"""

from __future__ import annotations

from harness.acting import acting_for, current_user
from harness.llm_recorder import VOLATILE_PARAMS, RecordingLLMClient
from harness.records import LLMRecord, ToolRecord
from harness.tape import OnMiss, RecordMode, Sink
from harness.tool_recorder import RecordedToolError, ToolRecorder

__all__ = [
    "VOLATILE_PARAMS",
    "LLMRecord",
    "OnMiss",
    "RecordMode",
    "RecordedToolError",
    "RecordingLLMClient",
    "Sink",
    "ToolRecord",
    "ToolRecorder",
    "acting_for",
    "current_user",
]
