"""The judge's gate: whether a run's verdicts let it pass, and the exit code that says so.

:func:`gate_outcome` counts a missing verdict as a refusal, never a pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, TypeAlias

from harness.exceptions import ConfigError
from harness.replay.judge._base import Frozen
from harness.replay.judge.verdict import Verdict, check_threshold

__all__ = [
    "EXIT_BELOW_THRESHOLD",
    "EXIT_NO_VERDICT",
    "GateFailure",
    "GateOutcome",
    "GateStatus",
    "JudgeMode",
    "gate_outcome",
]

#: Exit codes of a gated run: a verdict below the threshold, and no verdict at all
#: (bad input, like any other run that can't be judged).
EXIT_BELOW_THRESHOLD: Final = 4
EXIT_NO_VERDICT: Final = 2

#: ``advisory`` (``--judge``) only reports; ``gate`` (``--judge-gate``) sets the exit code.
JudgeMode: TypeAlias = Literal["advisory", "gate"]
#: How a gate went: every verdict at or above the threshold, one below, or one missing.
GateStatus: TypeAlias = Literal["pass", "below", "missing"]

_MODES: Final = ("advisory", "gate")


class GateFailure(Frozen):
    """A scenario that kept the gate shut: its verdict's ``overall``, or None for no verdict."""

    index: int
    scenario: str
    overall: float | None = None


class GateOutcome(Frozen):
    """What the judge gate decided over a run's verdicts.

    ``missing`` (a scenario without a verdict, or no verdicts at all) wins
    over ``below``: a gate refuses to pass what it could not judge.
    """

    status: GateStatus
    threshold: float
    judged: int
    failing: tuple[GateFailure, ...] = ()

    def exit_code(self, mode: JudgeMode = "gate") -> int:
        """The run's exit code for this outcome: always 0 when ``advisory``."""
        if mode not in _MODES:
            raise ConfigError(f"invalid judge mode {mode!r}; valid modes: {', '.join(_MODES)}")
        if mode == "advisory" or self.status == "pass":
            return 0
        return EXIT_BELOW_THRESHOLD if self.status == "below" else EXIT_NO_VERDICT

    @property
    def message(self) -> str:
        """One line saying what the gate decided, naming the scenarios that failed it."""
        at = f"{self.threshold:g}"
        if self.status == "pass":
            return f"judge gate passed: {self.judged} verdict(s) at or above {at}"
        below = [f"{f.scenario} ({f.overall:.3f})" for f in self.failing if f.overall is not None]
        below_text = f"below {at}: {', '.join(below)}" if below else ""
        if self.status == "below":
            return f"judge gate failed: {len(below)} of {self.judged} {below_text}"
        missing = [f.scenario for f in self.failing if f.overall is None]
        what = f"no verdict for {', '.join(missing)}" if missing else "no verdicts to gate on"
        return f"judge gate refused: {what}" + (f"; {below_text}" if below else "")


def gate_outcome(
    verdicts: Sequence[Verdict | None],
    threshold: float,
    *,
    scenarios: Sequence[str] | None = None,
) -> GateOutcome:
    """Gate a run on its verdicts, one per scenario (None where none was recorded).

    ``scenarios`` names the entries, for the ones with no verdict to name them.
    """
    limit = check_threshold(threshold)
    if scenarios is not None and len(scenarios) != len(verdicts):
        raise ConfigError(f"{len(scenarios)} scenario names for {len(verdicts)} verdicts")
    failing: list[GateFailure] = []
    for index, verdict in enumerate(verdicts):
        named = scenarios[index] if scenarios is not None else ""
        name = named or (verdict.scenario if verdict is not None else "") or f"#{index + 1}"
        if verdict is None:
            failing.append(GateFailure(index=index, scenario=name))
        elif not verdict.gate(limit):
            failing.append(GateFailure(index=index, scenario=name, overall=verdict.overall))
    status: GateStatus = "pass"
    if not verdicts or any(f.overall is None for f in failing):
        status = "missing"
    elif failing:
        status = "below"
    judged = sum(1 for v in verdicts if v is not None)
    return GateOutcome(status=status, threshold=limit, judged=judged, failing=tuple(failing))
