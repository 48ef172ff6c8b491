"""The judge's rubric: the questions it answers about a conversation, and their weights.

A rubric comes from code (:class:`Criterion`) or from YAML (:func:`parse_rubric`);
either way :func:`check_rubric` refuses one the judge could not score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from harness.exceptions import ConfigError

__all__ = ["DEFAULT_RUBRIC", "Criterion", "Rubric", "check_rubric", "parse_rubric"]

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")  # what a tool schema takes as a property name


@dataclass(frozen=True, slots=True)
class Criterion:
    """One question the judge answers about a conversation, and how much it counts.

    ``name`` keys the criterion in the verdict (a letter, then letters,
    digits, ``_`` or ``-``: a tool schema's property names); ``weight`` is
    its share of the overall score, and 0 reports it without counting it.
    """

    name: str
    question: str
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ConfigError(
                f"criterion name {self.name!r} must be a letter followed by up to 63 letters, "
                "digits, '_' or '-'"
            )
        if not self.question.strip():
            raise ConfigError(f"criterion {self.name!r}: the question is empty")
        if not math.isfinite(self.weight) or self.weight < 0:
            raise ConfigError(f"criterion {self.name!r}: weight must be >= 0, not {self.weight}")


#: A judge's criteria, in the order the verdict lists them.
Rubric: TypeAlias = tuple[Criterion, ...]

DEFAULT_RUBRIC: Final[Rubric] = (
    Criterion(
        "goal_completion",
        "Did the agent complete what the user asked for (e.g. a confirmed booking) without errors?",
    ),
    Criterion("tone", "Was the agent polite, concise and suited to WhatsApp?"),
    Criterion("relevance", "Did every reply address what the user last said?"),
)


def check_rubric(criteria: Iterable[Criterion]) -> Rubric:
    """``criteria`` as a rubric: at least one, names unique, some weight above 0."""
    rubric = tuple(criteria)
    if not rubric:
        raise ConfigError("a rubric needs at least one criterion")
    seen: set[str] = set()
    for criterion in rubric:
        if criterion.name in seen:
            raise ConfigError(f"the rubric names criterion {criterion.name!r} twice")
        seen.add(criterion.name)
    if not math.fsum(c.weight for c in rubric) > 0:
        raise ConfigError("a rubric needs a criterion with a weight above 0")
    return rubric


def parse_rubric(data: Mapping[str, Any] | Sequence[Any]) -> Rubric:
    """A rubric from YAML-shaped data; :class:`ConfigError` naming the field otherwise.

    Either a mapping of name to question, or to ``{question, weight}``, or a
    list of ``{name, question, weight}`` mappings::

        goal_completion: {question: "Was the table booked?", weight: 2}
        tone: "Was the agent polite?"
    """
    entries: list[tuple[object, object, str]] = []
    if isinstance(data, Mapping):
        entries = [(name, spec, f"rubric.{name}") for name, spec in data.items()]
    elif isinstance(data, Sequence) and not isinstance(data, str | bytes):
        for i, item in enumerate(data):
            if not isinstance(item, Mapping) or "name" not in item:
                raise ConfigError(f"rubric[{i}]: expected a mapping with name and question")
            fields = {key: value for key, value in item.items() if key != "name"}
            entries.append((item["name"], fields, f"rubric[{i}]"))
    else:
        raise ConfigError(f"rubric: expected a mapping or a list, not {type(data).__name__}")
    criteria = []
    for name, spec, where in entries:
        if not isinstance(name, str):
            raise ConfigError(f"{where}: a criterion's name must be text, not {name!r}")
        question: object = spec
        weight: object = 1.0
        if isinstance(spec, Mapping):
            unknown = sorted(map(str, set(spec) - {"question", "weight"}))
            if unknown:
                raise ConfigError(
                    f"{where}: unknown field {unknown[0]!r}; expected question, weight"
                )
            question, weight = spec.get("question"), spec.get("weight", 1.0)
        if not isinstance(question, str):
            raise ConfigError(f"{where}.question: expected text, not {question!r}")
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise ConfigError(f"{where}.weight: expected a number, not {weight!r}")
        criteria.append(Criterion(name, question, float(weight)))
    return check_rubric(criteria)
