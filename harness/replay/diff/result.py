"""What a diff says: a row per turn (:class:`TurnDiff`) and the whole (:class:`ConversationDiff`).

Frozen models, so a diff can be saved, sent to a report and compared as data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, model_validator

from harness.replay.diff._text import plural

__all__ = ["ConversationDiff", "TurnDiff", "TurnStatus"]

TurnStatus: TypeAlias = Literal["same", "changed", "only_a", "only_b"]

_STATUS_WORDS: Mapping[TurnStatus, str] = {
    "same": "same",
    "changed": "changed",
    "only_a": "only in a",
    "only_b": "only in b",
}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TurnDiff(_Model):
    """One row of a diff: a turn of A, of B, or of both, and what differs between them.

    ``index`` is the turn's index in A, or in B for a turn only B has;
    ``index_a`` and ``index_b`` are its index in each conversation (None on
    the side that lacks it). ``changes`` holds one readable line per
    difference, empty when ``status`` is ``same``.
    """

    index: int
    status: TurnStatus
    user_a: str | None = None
    user_b: str | None = None
    index_a: int | None = None
    index_b: int | None = None
    changes: tuple[str, ...] = ()

    @property
    def number(self) -> int:
        """The turn's number as people count it (from 1)."""
        return self.index + 1

    @property
    def same(self) -> bool:
        """True when nothing compared differs in this turn."""
        return self.status == "same"

    @property
    def status_word(self) -> str:
        """The status in words: ``same``, ``changed``, ``only in a``, ``only in b``."""
        return _STATUS_WORDS[self.status]

    def label(self) -> str:
        """``turn 2``, or ``turn 2 (turn 3 in b)`` when the two sides number it differently."""
        text = f"turn {self.number}"
        if self.index_a is not None and self.index_b is not None and self.index_a != self.index_b:
            text += f" (turn {self.index_b + 1} in b)"
        return text


class ConversationDiff(_Model):
    """Every turn of two conversations side by side, and whether anything differs.

    ``same`` is True exactly when every turn's status is ``same``;
    ``compare_times`` records whether virtual times were compared.
    """

    turns: tuple[TurnDiff, ...] = ()
    same: bool = True
    compare_times: bool = False

    @model_validator(mode="after")
    def _same_matches_turns(self) -> ConversationDiff:
        expected = all(t.same for t in self.turns)
        if self.same != expected:
            raise ValueError(f"same={self.same} but the turns say {expected}")
        return self

    @property
    def differences(self) -> tuple[TurnDiff, ...]:
        """The turns that are not the same, in order."""
        return tuple(t for t in self.turns if not t.same)

    @property
    def first_difference(self) -> TurnDiff | None:
        """The first turn that differs, or None when the conversations match."""
        return next((t for t in self.turns if not t.same), None)

    def summary(self) -> str:
        """One line: how many turns differ, how, and the first difference."""
        total = plural(len(self.turns), "turn")
        first = self.first_difference
        if first is None:
            times = "" if self.compare_times else " (times not compared)"
            return f"no differences in {total}{times}"
        counts: dict[str, int] = {}
        for turn in self.differences:
            counts[turn.status_word] = counts.get(turn.status_word, 0) + 1
        kinds = ", ".join(f"{n} {word}" for word, n in counts.items())
        head = f"{len(self.differences)} of {total} differ ({kinds})"
        what = first.changes[0] if first.changes else first.status_word
        return f"{head}; first at {first.label()}: {what}"

    def lines(self) -> list[str]:
        """Every difference on its own line, prefixed by its turn (``turn 2: ...``)."""
        return [f"{t.label()}: {change}" for t in self.differences for change in t.changes]
