"""The fixtures the prompt debugger was started on, each summed up for its list.

A :class:`FixtureEntry` says what the list shows (scenario, when it was
recorded, how many turns, whether the recorded conversation keeps its
scenario's invariants) and what the search matches. A fixture that can't be
loaded stays in the list with its error, rather than taking the app down.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from harness.exceptions import HarnessError
from harness.fixture import Fixture, load_fixture
from harness.results import RunResult, ScenarioResult, ScenarioStatus, Violation
from harness.suites.invariants import check
from harness.suites.scenario import Scenario, parse_scenario

__all__ = [
    "FixtureEntry",
    "InvariantStatus",
    "catalog",
    "recorded_invariants",
    "recorded_run",
    "scenario_of",
]

#: ``kept``: every invariant holds; ``broken``: one fails; ``none``: the fixture names none.
InvariantStatus = Literal["kept", "broken", "none", "error"]


@dataclass(frozen=True)
class FixtureEntry:
    """One fixture as the list shows it; ``error`` says why one could not be read."""

    id: int
    path: Path
    scenario: str
    recorded_at: datetime | None
    turns: int
    invariants: InvariantStatus
    violations: tuple[str, ...] = ()
    error: str | None = None

    @property
    def name(self) -> str:
        """The fixture's folder name."""
        return self.path.name

    @property
    def search_text(self) -> str:
        """What the search box matches, lower-cased: folder, scenario and date."""
        when = self.recorded_at.isoformat() if self.recorded_at else ""
        return f"{self.name} {self.scenario} {when}".lower()


def scenario_of(fixture: Fixture) -> Scenario | None:
    """The scenario a fixture was recorded from (kept in its meta), or None for a live chat."""
    text = getattr(fixture.meta, "scenario_yaml", None)
    if not isinstance(text, str) or not text.strip():
        return None
    return parse_scenario(text, path=fixture.path / "meta.json")


def recorded_invariants(fixture: Fixture) -> tuple[InvariantStatus, list[Violation]]:
    """Whether the recorded conversation keeps its scenario's invariants, and what breaks."""
    scenario = scenario_of(fixture)
    if scenario is None or not scenario.invariants or fixture.conversation is None:
        return "none", []
    violations = check(fixture.conversation, scenario.invariants)
    return ("broken" if violations else "kept"), violations


def recorded_run(fixture: Fixture) -> RunResult:
    """The recorded conversation as a one-scenario run, for the report's chat page."""
    invariants, violations = recorded_invariants(fixture)
    status: ScenarioStatus = "failed" if invariants == "broken" else "passed"
    conversation = fixture.conversation
    scenario = ScenarioResult(
        name=fixture.meta.scenario or fixture.path.name,
        path=str(fixture.path),
        channel=(conversation.channel if conversation else "") or fixture.meta.channel,
        status=status,
        violations=tuple(violations),
        conversation=conversation,
    )
    return RunResult(scenarios=(scenario,), started_at=fixture.meta.recorded_at)


def _entry(position: int, path: Path) -> FixtureEntry:
    try:
        fixture = load_fixture(path)
        invariants, violations = recorded_invariants(fixture)
    except HarnessError as exc:
        return FixtureEntry(position, path, "", None, 0, "error", error=str(exc))
    conversation = fixture.conversation
    return FixtureEntry(
        id=position,
        path=path,
        scenario=fixture.meta.scenario,
        recorded_at=fixture.meta.recorded_at,
        turns=len(conversation.turns) if conversation else 0,
        invariants=invariants,
        violations=tuple(v.headline() for v in violations),
    )


def catalog(paths: Sequence[Path]) -> list[FixtureEntry]:
    """An entry for each fixture directory, in the order given; ids are positions."""
    return [_entry(position, path) for position, path in enumerate(paths)]
