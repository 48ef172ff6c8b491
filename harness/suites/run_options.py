"""How to run a suite: against what, through which channel, how many at once, with which users.

Apart from the runner (:mod:`harness.suites.runner`) so that what reads the
options (the command line, the simulated users' model) needs no runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harness.clock import DEFAULT_REAL_WORK_LIMIT

__all__ = ["RunOptions"]


@dataclass(frozen=True)
class RunOptions:
    """How to run a suite: against what, through which channel, how many at once."""

    channel: str = "whatsapp"
    target: str | None = None
    target_url: str | None = None
    concurrency: int = 4
    seed: int = 0
    store_url: str | None = None
    agent_settings: Mapping[str, str] = field(default_factory=dict)
    channel_options: Mapping[str, Any] = field(default_factory=dict)
    #: Against an agent on real time: how long an ``expect`` waits to hold (seconds).
    expect_timeout: float = 10.0
    #: Against an agent on real time: how long with nothing from it counts as done (seconds).
    quiet: float = 3.0
    #: Against an agent at a URL: the users write from the numbers their scenarios give them,
    #: not from numbers of the run's own (for a bot that answers a number it is configured
    #: with); the scenarios then run one at a time.
    keep_numbers: bool = False
    #: Real seconds the agent's real work (a model call ...) may take before its scenario
    #: ends with an error naming it.
    real_work_limit: float = DEFAULT_REAL_WORK_LIMIT
    #: Folders the target's module may be imported from, besides the current directory
    #: (a project's root); worker processes look there too.
    import_paths: tuple[str, ...] = ()
    #: When in-process conversations start (default: :data:`harness.clock.DEFAULT_START`).
    start: datetime | None = None
    #: Start no scenario after one has failed or errored (those already running finish).
    fail_fast: bool = False
    #: Who plays the users of ``simulate`` steps: ``stand-in`` (offline, seeded rules) or
    #: ``anthropic`` (the real model, with ``user_model_key``).
    user_model: str = "stand-in"
    user_model_key: str | None = field(default=None, repr=False)
