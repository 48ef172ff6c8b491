"""Needs a customer states once and the agent must keep honouring: access and diet.

"I use a wheelchair" or "I'm vegan" said in the first message must still
shape the booking three turns later. The agent reads them from every message
with :func:`extract_constraints`, keeps them in the user's state, tells the
model about them in the system prompt, and passes them to ``book_appointment``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["Constraint", "extract_constraints", "merge_constraints", "needs_step_free"]


class Constraint(BaseModel):
    """One stated need: its kind and a short label for staff (``wheelchair user``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: Literal["accessibility", "dietary"]
    label: str

    @property
    def step_free(self) -> bool:
        """True for an access need that only a step-free table meets."""
        return self.kind == "accessibility"


# (pattern, kind, label); the first pattern of a label that matches wins.
_RULES: Final[tuple[tuple[re.Pattern[str], Literal["accessibility", "dietary"], str], ...]] = (
    (re.compile(r"\bwheel\s?chair"), "accessibility", "wheelchair user"),
    (re.compile(r"\bstep[- ]?free\b|\bno (stairs|steps)\b|\bcan'?t (do|manage|climb) stairs"),
     "accessibility", "step-free access"),
    (re.compile(r"\b(walker|crutches|mobility (scooter|aid|issues?)|zimmer frame)\b"),
     "accessibility", "limited mobility"),
    (re.compile(r"\bvegan\b"), "dietary", "vegan"),
    (re.compile(r"\bvegetarian\b"), "dietary", "vegetarian"),
    (re.compile(r"\b(gluten[- ]?free|coeliac|celiac)\b"), "dietary", "gluten-free"),
    (re.compile(r"\b(nut|peanut)s? allerg|\ballergic to (pea)?nuts\b"), "dietary", "nut allergy"),
    (re.compile(r"\b(lactose|dairy)[- ]?(free|intolerant|intolerance)\b"), "dietary", "dairy-free"),
    (re.compile(r"\bhalal\b"), "dietary", "halal"),
    (re.compile(r"\bkosher\b"), "dietary", "kosher"),
    (re.compile(r"\bshellfish allerg|\ballergic to shellfish\b"), "dietary", "shellfish allergy"),
)  # fmt: skip


def extract_constraints(text: str) -> list[Constraint]:
    """The needs ``text`` states, in the order of the rules, each once."""
    clean = " ".join(text.lower().replace("’", "'").split())
    found: list[Constraint] = []
    for pattern, kind, label in _RULES:
        if pattern.search(clean):
            constraint = Constraint(kind=kind, label=label)
            if constraint not in found:
                found.append(constraint)
    return found


def merge_constraints(known: Iterable[Constraint], new: Iterable[Constraint]) -> list[Constraint]:
    """``known`` followed by whatever of ``new`` is not already in it."""
    merged = list(known)
    for constraint in new:
        if constraint not in merged:
            merged.append(constraint)
    return merged


def needs_step_free(constraints: Iterable[Constraint]) -> bool:
    """True when any of ``constraints`` calls for a step-free table."""
    return any(constraint.step_free for constraint in constraints)
