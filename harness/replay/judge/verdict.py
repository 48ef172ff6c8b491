"""The judge's verdict: a score per criterion and their weighted mean, read strictly.

:func:`parse_verdict` takes the one ``record_verdict`` call out of a model's
answer and refuses anything that is not one well-formed score for each
criterion of the rubric; :meth:`Verdict.gate` compares the result with a threshold.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.exceptions import ConfigError, LLMError
from harness.llm import LLMResponse
from harness.replay.judge._base import Frozen, describe, shorten
from harness.replay.judge.rubric import Criterion, check_rubric

__all__ = ["VERDICT_TOOL", "CriterionScore", "Verdict", "check_threshold", "parse_verdict"]

#: The one tool the judge is offered, and forced to call.
VERDICT_TOOL: Final = "record_verdict"
# Weighted means are sums of floats: a verdict that scored exactly the threshold must not
# fail it by a rounding error in the last bit.
_TOLERANCE: Final = 1e-9


def check_threshold(threshold: float) -> float:
    """``threshold`` as a float, or a :class:`ConfigError` when it is outside 0..1."""
    if not 0.0 <= threshold <= 1.0:  # NaN fails this too
        raise ConfigError(f"a judge threshold must be between 0 and 1, not {threshold}")
    return float(threshold)


class CriterionScore(Frozen):
    """The judge's answer to one criterion: score 0..1, pass or fail, and why."""

    name: str
    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    reason: str
    weight: float = Field(default=1.0, ge=0.0)


def _weighted_mean(scores: Sequence[CriterionScore]) -> float:
    total = math.fsum(s.weight for s in scores)
    if not total > 0:
        raise ValueError("the scores' weights add up to 0")
    return math.fsum(s.score * s.weight for s in scores) / total


class Verdict(Frozen):
    """The judge's verdict on one conversation.

    ``overall`` is the mean of the scores weighted by their criteria's
    weights (checked on load). ``recorded`` is True when the verdict was
    served from a recording, False when a model gave it in this run.
    """

    scenario: str
    model: str
    scores: tuple[CriterionScore, ...] = Field(min_length=1)
    summary: str
    overall: float = Field(ge=0.0, le=1.0)
    recorded: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> Verdict:
        names = [s.name for s in self.scores]
        if len(set(names)) != len(names):
            raise ValueError("a criterion is scored twice")
        expected = _weighted_mean(self.scores)
        if abs(expected - self.overall) > _TOLERANCE:
            raise ValueError(f"overall {self.overall} is not the scores' weighted mean {expected}")
        return self

    @classmethod
    def from_scores(
        cls,
        *,
        scenario: str,
        model: str,
        scores: Sequence[CriterionScore],
        summary: str,
        recorded: bool = False,
    ) -> Verdict:
        """A verdict whose ``overall`` is computed from ``scores``."""
        overall = min(max(_weighted_mean(scores), 0.0), 1.0)
        return cls(
            scenario=scenario,
            model=model,
            scores=tuple(scores),
            summary=summary,
            overall=overall,
            recorded=recorded,
        )

    def gate(self, threshold: float) -> bool:
        """True when ``overall`` reaches ``threshold`` (equal passes)."""
        return self.overall + _TOLERANCE >= check_threshold(threshold)

    def headline(self) -> str:
        """One line: the overall score, then each criterion's (``goal_completion 1.00``)."""
        parts = [f"{s.name} {s.score:.2f}" + ("" if s.passed else " (failed)") for s in self.scores]
        source = "recorded" if self.recorded else "live"
        return f"judge {self.overall:.2f} ({source}, {self.model}): {', '.join(parts)}"


class _ScoreInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)

    reason: str = Field(min_length=1)
    score: float = Field(ge=0.0, le=1.0)
    passed: bool


class _VerdictInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)

    criteria: dict[str, _ScoreInput]
    summary: str = Field(min_length=1)


def parse_verdict(
    response: LLMResponse,
    rubric: Iterable[Criterion],
    *,
    scenario: str = "",
    recorded: bool = False,
) -> Verdict:
    """The verdict in a judge's answer: its one ``record_verdict`` call, validated strictly.

    Raises :class:`LLMError` when the call is missing or repeated, or its
    input is not one reason, score and pass flag for each criterion of
    ``rubric`` (no more, no fewer) plus a summary.
    """
    criteria = check_rubric(rubric)
    hint = (
        "; the answer was cut off at max_tokens: give the judge more"
        if response.stop_reason == "max_tokens"
        else ""
    )
    calls = [block for block in response.tool_uses if block.name == VERDICT_TOOL]
    if not calls:
        said = f", text {shorten(repr(response.text), 80)}" if response.text else ""
        other = ", ".join(block.name for block in response.tool_uses)
        called = f", called {other}" if other else ""
        raise LLMError(
            f"the judge's answer holds no {VERDICT_TOOL} call (stop_reason "
            f"{response.stop_reason}{called}{said}){hint}"
        )
    if len(calls) > 1:
        raise LLMError(f"the judge called {VERDICT_TOOL} {len(calls)} times; expected once")
    try:
        data = _VerdictInput.model_validate(calls[0].input)
    except ValidationError as exc:
        raise LLMError(f"the judge's verdict is malformed: {describe(exc)}{hint}") from None
    names = [c.name for c in criteria]
    missing = [name for name in names if name not in data.criteria]
    unknown = sorted(set(data.criteria) - set(names))
    if missing or unknown:
        problems = [
            f"{label}: {', '.join(found)}"
            for label, found in (("missing", missing), ("unknown", unknown))
            if found
        ]
        raise LLMError(f"the judge's verdict does not match the rubric ({'; '.join(problems)})")
    scores = [
        CriterionScore(
            name=c.name,
            score=data.criteria[c.name].score,
            passed=data.criteria[c.name].passed,
            reason=data.criteria[c.name].reason,
            weight=c.weight,
        )
        for c in criteria
    ]
    return Verdict.from_scores(
        scenario=scenario,
        model=response.model,
        scores=scores,
        summary=data.summary,
        recorded=recorded,
    )
