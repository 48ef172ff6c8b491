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
    "JudgeOutcome",
    "Judgement",
    "PassRate",
    "RunResult",
    "ScenarioResult",
    "ScenarioStatus",
    "Skip",
    "StraySend",
    "Violation",
    "ViolationKind",
]

#: ``inconclusive``: the invariants held, and the judge's score came too close to its
#: threshold to call (see :class:`Judgement`); neither a pass nor a failure.
ScenarioStatus = Literal["passed", "failed", "error", "skipped", "inconclusive"]
ViolationKind = Literal["invariant", "expectation", "divergence", "judge"]
JudgeOutcome = Literal["passed", "failed", "inconclusive", "not judged"]


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


class StraySend(_Model):
    """A message the agent sent to a number that is none of this scenario's users.

    Against an agent at a URL one fake Graph API serves the whole run and
    hands each send to the scenario whose user it addresses; a send to a
    number no scenario plays belongs to none. The run answers it as Meta
    would (accepted, then a ``failed`` status with 131047: the number never
    wrote) and lists it on the scenario that was running when it came, or on
    each of them when ``running`` says several were (0: none was, and it is
    listed on the one that ended last). It is shown beside the verdict and
    does not change it: the scenario's own checks say what its user missed.
    ``outcome`` is what became of the send (``accepted, then failed: 131047
    (Re-engagement message)``). ``written_for``: the user whose number this is
    as the scenario writes it (the run gave that user another), if any.
    """

    to: str
    type: str
    text: str | None = None
    at: AwareDatetime | None = None
    wamid: str | None = None
    outcome: str = ""
    running: int = 1
    written_for: str | None = None

    def headline(self) -> str:
        """One line: what was sent to which number, while what ran, and what became of it."""
        what = f"{self.type} {self.text!r}" if self.text else f"a {self.type} message"
        line = f"the agent sent {what} to {self.to}, "
        if self.running == 1:
            line += "a number that is none of this scenario's users"
        elif self.running > 1:
            line += (
                f"a number that matched no scenario's user (sent while {self.running} "
                "scenarios ran: listed on each)"
            )
        else:
            line += "a number that matched no scenario's user (sent after this scenario ended)"
        if self.written_for is not None:
            line += (
                f" (it is {self.written_for}'s number as the scenario writes it; the run gave"
                f" {self.written_for} one of its own: --keep-numbers keeps the scenario's)"
            )
        return line + (f"; {self.outcome}" if self.outcome else "")


class Judgement(_Model):
    """What the judge made of a scenario's conversation, beside what the invariants found.

    ``outcome`` is ``not judged`` when no judge model was configured (or it
    could not answer): ``note`` says so, and the invariants alone decided.
    ``score`` is the verdict's weighted score, ``threshold`` the pass mark,
    ``margin`` how close to it counts as inconclusive.
    """

    outcome: JudgeOutcome
    note: str = ""
    score: float | None = None
    threshold: float | None = None
    margin: float | None = None
    goal: str = ""
    #: One line per criterion: ``name: 0.80 passed: reason``.
    criteria: tuple[str, ...] = ()

    def headline(self) -> str:
        """One line: the outcome, the score against the threshold, and the note."""
        if self.score is None or self.threshold is None:
            return f"judge: {self.outcome}" + (f" ({self.note})" if self.note else "")
        line = f"judge: {self.outcome}, {self.score:.2f} against {self.threshold:.2f}"
        return line + (f": {self.note}" if self.note else "")


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
    ``stray_sends`` are the messages the agent sent, while the scenario ran,
    to numbers that are none of its users (:class:`StraySend`), shown beside
    its status. ``numbers``: in a run against an agent at a URL, the number
    each user wrote from (name to wa_id; the scenario's own are replaced so
    that no two scenarios, nor two runs, share a conversation): what to look
    for in the agent's own logs.
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
    stray_sends: tuple[StraySend, ...] = ()
    numbers: dict[str, str] = Field(default_factory=dict)
    judgement: Judgement | None = None
    #: What the simulated users did, a line each (``say: hi``, ``tap: Confirm``, ``wait: 1d``).
    simulated: tuple[str, ...] = ()

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
    def inconclusive(self) -> int:
        """How many scenarios the judge could not call either way (neither pass nor failure)."""
        return sum(1 for s in self.scenarios if s.status == "inconclusive")

    @property
    def ok(self) -> bool:
        """True when no scenario failed or errored (passed, skipped or inconclusive)."""
        return all(s.status in ("passed", "skipped", "inconclusive") for s in self.scenarios)

    def pass_rates(self) -> list[PassRate]:
        """For each scenario run more than once (``--repeat``), how often it passed."""
        groups: dict[tuple[str, str], list[ScenarioResult]] = {}
        for result in self.scenarios:
            groups.setdefault((result.path, result.name), []).append(result)
        return [
            PassRate(
                name=name,
                path=path,
                runs=len(results),
                passed=sum(1 for r in results if r.status == "passed"),
                inconclusive=sum(1 for r in results if r.status == "inconclusive"),
                failed_seeds=tuple(r.seed for r in results if r.status in ("failed", "error")),
            )
            for (path, name), results in groups.items()
            if len(results) > 1
        ]


class PassRate(_Model):
    """How often one scenario passed over repeated runs with different seeds."""

    name: str
    path: str
    runs: int
    passed: int
    inconclusive: int = 0
    failed_seeds: tuple[int, ...] = ()

    @property
    def rate(self) -> float:
        """The share of runs that passed, 0..1."""
        return self.passed / self.runs if self.runs else 0.0

    def headline(self) -> str:
        """One line: ``name: 4/5 passed (80%); failed with seeds 3``."""
        line = f"{self.name}: {self.passed}/{self.runs} passed ({self.rate:.0%})"
        if self.inconclusive:
            line += f", {self.inconclusive} inconclusive"
        if self.failed_seeds:
            line += f"; failed with seed{'s' if len(self.failed_seeds) > 1 else ''} "
            line += ", ".join(map(str, self.failed_seeds))
        return line
