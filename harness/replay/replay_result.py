"""How a replay went: its policy, its status and its result, apart from the replaying itself.

Both ways of replaying use them: from a fixture's event log
(:mod:`harness.replay.playback`) and by playing a simulated user's scenario
again (:mod:`harness.replay.simulated`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from harness.results import Violation
from harness.trace import Conversation

__all__ = ["Policy", "ReplayResult", "ReplayStatus"]

Policy = Literal["pinned", "live"]
#: ``changed``: the conversation changed as a skew or a live policy allows, without diverging;
#: ``incomplete``: the agent asked for more than a fixture that was never whole holds.
ReplayStatus = Literal["same", "changed", "failed", "diverged", "error", "incomplete"]


class ReplayResult(BaseModel):
    """How a replay went: same, an invariant failed, diverged (and why), or could not run."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    fixture: str
    status: ReplayStatus
    #: The recorded scenario's name (a live chat's fixture names its chat).
    scenario: str = ""
    divergences: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    violations: tuple[Violation, ...] = ()
    error: str | None = None
    unused: int = 0
    duration_s: float = 0.0
    conversation: Conversation | None = None
    #: Failures the agent reported from its own background work (:mod:`harness.failures`).
    agent_errors: tuple[str, ...] = ()
    #: Tools of the agent's own that ran for real and answered differently from the
    #: recording, a line each (:mod:`harness.tool_results`): the world changed, not the agent.
    tool_notes: tuple[str, ...] = ()
