"""What a suite run found: violations, one result per scenario, the run as a whole.

Invariants and expectations produce :class:`Violation` objects; the runner
wraps each scenario's conversation and violations in a
:class:`ScenarioResult`; the reports (console, JSON, JUnit XML, HTML) read a
:class:`RunResult`. All frozen and JSON round-trippable, so ``report.json``
can be loaded back.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue

from harness.trace import Conversation

__all__ = [
    "RunResult",
    "ScenarioResult",
    "ScenarioStatus",
    "Skip",
    "Violation",
    "ViolationKind",
]

ScenarioStatus = Literal["passed", "failed", "error", "skipped"]
ViolationKind = Literal["invariant", "expectation", "divergence"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Violation(_Model):
    """A property of the conversation that did not hold, and where.

    ``rule`` is the invariant's registered name (or ``expect`` for a failed
    expectation, ``replay`` for a replay that diverged from its recording);
    ``turn`` is the index of the turn it happened in (0-based, ``None`` for
    the conversation as a whole); ``messages`` are the lines of the
    conversation that show it, ready to print; ``events`` are indexes into
    the conversation's event log, for reports that highlight them.
    """

    kind: ViolationKind = "invariant"
    rule: str
    message: str
    turn: int | None = None
    step: int | None = None
    line: int | None = None
    messages: tuple[str, ...] = ()
    events: tuple[int, ...] = ()

    def headline(self) -> str:
        """One line: which rule, where, what."""
        where = f" at turn {self.turn + 1}" if self.turn is not None else ""
        if self.line is not None:
            where += f" (line {self.line})"
        return f"{self.rule}{where}: {self.message}"


class Skip(_Model):
    """Something a run did not play or check, and why: never dropped silently.

    ``what`` is ``scenario`` for a whole scenario, a step's action
    (``redeliver``) for a step, or ``expect.KEY`` (``expect.status``) for one
    expectation of a step; ``step`` and ``line`` say where, as in a violation.
    """

    what: str
    reason: str
    step: int | None = None
    line: int | None = None

    def headline(self) -> str:
        """One line: what (named as in the file, ``steps[4].redeliver``), where, why."""
        field = self.what if self.step is None else f"steps[{self.step}].{self.what}"
        where = f" (line {self.line})" if self.line is not None else ""
        return f"{field}{where}: {self.reason}"


class ScenarioResult(_Model):
    """The outcome of one scenario: its conversation, and what failed in it.

    ``status`` is ``error`` when the scenario could not be run to its end
    (the agent crashed, the handshake failed): ``error`` then says why. It is
    ``skipped`` when the scenario was not played at all (it is meant for
    another channel); ``skipped`` lists that, or the steps and expectations
    a played scenario left out because its channel can't play them.
    ``agent_errors`` are the failures the agent reported from its own
    background work while the scenario ran (:mod:`harness.failures`), one
    line each. ``outage`` marks an error that is not the agent's: the store
    under the scenario failed or restarted (see :mod:`harness.outages`).
    """

    name: str
    path: str = ""
    channel: str = "whatsapp"
    seed: int = 0
    status: ScenarioStatus
    duration_s: float = 0.0
    violations: tuple[Violation, ...] = ()
    error: str | None = None
    outage: bool = False
    conversation: Conversation | None = None
    faults: dict[str, JsonValue] = Field(default_factory=dict)
    reproduce: str = ""
    skipped: tuple[Skip, ...] = ()
    agent_errors: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """True when the scenario ran and nothing was violated."""
        return self.status == "passed"


class RunResult(_Model):
    """A whole run: every scenario's result, and what was run against what."""

    scenarios: tuple[ScenarioResult, ...] = ()
    started_at: AwareDatetime | None = None
    duration_s: float = 0.0
    target: str = ""
    channel: str = "whatsapp"
    seed: int = 0

    @property
    def passed(self) -> int:
        """How many scenarios passed."""
        return sum(1 for s in self.scenarios if s.status == "passed")

    @property
    def failed(self) -> int:
        """How many scenarios had a violation."""
        return sum(1 for s in self.scenarios if s.status == "failed")

    @property
    def errors(self) -> int:
        """How many scenarios could not be run to their end."""
        return sum(1 for s in self.scenarios if s.status == "error")

    @property
    def skipped(self) -> int:
        """How many scenarios were not played (meant for another channel)."""
        return sum(1 for s in self.scenarios if s.status == "skipped")

    @property
    def outages(self) -> tuple[ScenarioResult, ...]:
        """The scenarios that ended in an error because their store failed under them."""
        return tuple(s for s in self.scenarios if s.outage)

    @property
    def ok(self) -> bool:
        """True when every scenario passed or was skipped (none failed, none errored)."""
        return all(s.status in ("passed", "skipped") for s in self.scenarios)
