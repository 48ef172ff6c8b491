"""What a scenario asks of the judge: its own criteria, the pass mark, and when it is too close.

::

    judge:
      criteria:                      # name: question, or name: {question, weight}
        remembered_the_wheelchair: Did the agent keep the wheelchair need in mind?
      threshold: 0.7                 # the weighted score needed to pass (default 0.7)
      margin: 0.1                    # this close to the threshold: inconclusive (default 0.1)

The judge (``harness run --judge``) scores the conversation against the
default rubric plus these criteria, with the simulated users' goals as the
goal. The scenario's invariants still decide on their own: a violated one
fails the scenario whatever the judge says.
"""

from __future__ import annotations

from typing import Annotated, Final, TypeAlias

from pydantic import Field, JsonValue

from harness.suites.steps import ScenarioPart

__all__ = ["CRITERION_NAME", "Criterion", "JudgeSpec"]

#: What a criterion's name may be (a tool schema's property name).
CRITERION_NAME: Final = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
_Question: TypeAlias = Annotated[str, Field(min_length=1)]


class Criterion(ScenarioPart):
    """A question for the judge, and how much it counts."""

    question: _Question
    weight: Annotated[float, Field(ge=0.0)] = 1.0


class JudgeSpec(ScenarioPart):
    """The judge's criteria for one scenario, its pass mark and its margin of doubt."""

    criteria: dict[Annotated[str, Field(pattern=CRITERION_NAME)], _Question | Criterion] = Field(
        default_factory=dict, description="name: question, or name: {question, weight}."
    )
    threshold: Annotated[float, Field(ge=0.0, le=1.0)] = Field(
        default=0.7, description="The weighted score needed to pass."
    )
    margin: Annotated[float, Field(ge=0.0, le=0.5)] = Field(
        default=0.1, description="A score this close to the threshold is inconclusive."
    )

    def questions(self) -> list[tuple[str, str, float]]:
        """Each criterion as (name, question, weight)."""
        out: list[tuple[str, str, float]] = []
        for name, spec in self.criteria.items():
            if isinstance(spec, Criterion):
                out.append((name, spec.question, spec.weight))
            else:
                out.append((name, spec, 1.0))
        return out

    def to_data(self) -> dict[str, JsonValue]:
        """The spec as the file writes it, defaults left out."""
        data: dict[str, JsonValue] = {}
        if self.criteria:
            data["criteria"] = {
                name: spec.model_dump() if isinstance(spec, Criterion) else spec
                for name, spec in self.criteria.items()
            }
        if self.threshold != 0.7:
            data["threshold"] = self.threshold
        if self.margin != 0.1:
            data["margin"] = self.margin
        return data
