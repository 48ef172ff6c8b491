"""Searching a scenario's channel schedules for one that breaks the agent, with Hypothesis.

Hand-written faults find the bugs someone thought of. :func:`explore` plays
one scenario many times, each time under a :class:`~harness.suites.schedules.Schedule`
that Hypothesis draws: clock jumps between turns, a message split into a
burst or a burst spaced anew, a message delivered again after its turn, and
the channel's own faults for a turn (duplicated or reordered webhooks, a
500 and Meta's retry, latency, late, lost or shuffled statuses, the agent's
clock skewed). Every run checks the scenario's
expectations and invariants. The first run that fails stops the search, and
Hypothesis shrinks its schedule (its own shrinker, on its record of the
choices made) to one with as few and as small faults as still fail. The
result is the scenario with those faults written in as plain steps, which
``harness run`` plays the same way: the same steps, the same seed.

Hypothesis drives the choices through ``data()``; its example database is
off (a search is a command, not a test suite), and ``seed`` makes a search
repeatable.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from harness.results import ScenarioResult
from harness.suites.invariants import BoundInvariant
from harness.suites.preflight import bind_invariants
from harness.suites.runner import Runner
from harness.suites.scenario import Scenario
from harness.suites.schedules import (
    CHANNEL_FAULTS,
    IN_PROCESS_ONLY,
    Schedule,
    TurnFaults,
    TurnSteps,
    messages_sent,
    split_turns,
)
from harness.suites.steps import SayStep

__all__ = ["GAPS", "JUMPS", "Exploration", "ExploreStats", "Finding", "draw_schedule", "explore"]

#: The clock jumps a schedule may put between turns, shortest first (what shrinking prefers):
#: seconds, an hour, and just inside and just past the 24-hour window. No longer: a
#: scenario's own dates ("a table on Friday") would pass, and its expectations with them.
JUMPS: tuple[timedelta, ...] = (
    timedelta(seconds=3),
    timedelta(hours=1),
    timedelta(hours=23),
    timedelta(hours=25),
)
#: How far apart the parts of a split message come (a person typing fast).
GAPS: tuple[timedelta, ...] = (timedelta(seconds=1), timedelta(milliseconds=200))


def _split(data: st.DataObject, text: str) -> tuple[str, ...] | None:
    words = text.split()
    if len(words) < 2 or not data.draw(st.booleans(), label="split"):
        return None
    cuts = data.draw(
        st.lists(st.integers(1, len(words) - 1), min_size=1, max_size=2, unique=True).map(sorted),
        label="cuts",
    )
    bounds = [0, *cuts, len(words)]
    return tuple(" ".join(words[a:b]) for a, b in itertools.pairwise(bounds))


def draw_schedule(
    data: st.DataObject,
    scenario: Scenario,
    turns: Sequence[TurnSteps],
    channel_faults: Sequence[str] = tuple(CHANNEL_FAULTS),
) -> Schedule:
    """Draw one schedule for ``turns`` of ``scenario``; every choice shrinks to "no fault".

    ``channel_faults`` names the :data:`CHANNEL_FAULTS` a turn may be given.
    """
    sent: Counter[str] = Counter()
    first = scenario.users[0].name
    drawn: list[TurnFaults] = []
    for index, turn in enumerate(turns):
        opener = turn.opener
        if opener is None:
            drawn.append(TurnFaults())
            continue
        jump = None
        if index > 0 and data.draw(st.booleans(), label="jump"):
            jump = data.draw(st.sampled_from(JUMPS), label="jump by")
        split = None
        gap = timedelta(seconds=1)
        if isinstance(opener, SayStep) and opener.reply_to is None:
            if len(opener.say) == 1:
                split = _split(data, opener.say[0])
            elif data.draw(st.booleans(), label="respace"):
                split = opener.say
            if split is not None:
                gap = data.draw(st.sampled_from(GAPS), label="gap")
        channel = tuple(
            name for name in channel_faults if data.draw(st.booleans(), label=f"channel {name}")
        )
        who = opener.user or first
        count = len(split) if split is not None else messages_sent(opener)
        sent[who] += count
        redeliver: int | Literal["last"] | None = None
        if sent[who] and data.draw(st.booleans(), label="redeliver"):
            # The latest message first: shrinking prefers it.
            back = data.draw(st.integers(0, sent[who] - 1), label="redeliver which")
            redeliver = sent[who] - back if back else "last"
        faults = TurnFaults(jump=jump, split=split, gap=gap, channel=channel, redeliver=redeliver)
        drawn.append(faults)
    tail = None
    if data.draw(st.booleans(), label="tail jump"):
        tail = data.draw(st.sampled_from(JUMPS), label="tail jump by")
    return Schedule(turns=tuple(drawn), tail=tail)


@dataclass
class ExploreStats:
    """How a search is going: runs, failures, shrinking, and the faults explored."""

    budget: int
    #: Schedules played, in all (the search's and the shrinker's).
    runs: int = 0
    #: Of those, the ones played while shrinking a failure.
    shrink_runs: int = 0
    #: Schedules that failed (while shrinking, each smaller failure counts).
    failures: int = 0
    #: How many schedules held each kind of fault (the search's runs only).
    kinds: Counter[str] = field(default_factory=Counter)
    #: The smallest failing schedule so far.
    smallest: Schedule | None = None
    started: float = field(default_factory=time.perf_counter)

    @property
    def shrinking(self) -> bool:
        """True once a failure was found: the runs since are the shrinker's."""
        return self.failures > 0

    @property
    def elapsed(self) -> float:
        """Real seconds since the search started."""
        return time.perf_counter() - self.started


@dataclass(frozen=True)
class Finding:
    """A failing schedule: the scenario with its faults written in, and how it failed."""

    schedule: Schedule
    scenario: Scenario
    result: ScenarioResult
    #: True when the shrunk schedule failed again when it was played once more.
    confirmed: bool = True


@dataclass(frozen=True)
class Exploration:
    """What a search found (``finding`` is ``None`` when nothing failed in the budget)."""

    scenario: Scenario
    seed: int
    stats: ExploreStats
    finding: Finding | None = None


class _Failed(Exception):  # how a failing run reaches Hypothesis
    def __init__(self, schedule: Schedule, scenario: Scenario, result: ScenarioResult) -> None:
        super().__init__(schedule.describe())
        self.schedule = schedule
        self.scenario = scenario
        self.result = result


async def _play(
    runner: Runner,
    scenario: Scenario,
    invariants: Sequence[BoundInvariant],
    shared: Any,
    namespace: str,
) -> ScenarioResult:
    return await runner.run_scenario(scenario, invariants, namespace=namespace, shared=shared)


def explore(
    runner: Runner,
    scenario: Scenario,
    *,
    budget: int,
    seed: int = 0,
    on_run: Callable[[ExploreStats, Schedule, ScenarioResult], None] | None = None,
) -> Exploration:
    """Search up to ``budget`` schedules of ``scenario`` for one that fails, and shrink it.

    The runner plays each one (in-process, or against its agent at a URL).
    ``on_run`` hears of every run, for progress. Raises
    :class:`~harness.exceptions.ScenarioError` for a scenario the channel or
    the agent refuses, before the first run.
    """
    invariants = bind_invariants(scenario)
    runner.check([scenario])
    turns = split_turns(scenario)
    stats = ExploreStats(budget=budget)
    loop = asyncio.new_event_loop()
    context = runner.run_context()
    shared = loop.run_until_complete(context.__aenter__())
    remote = runner.options.target_url is not None
    # An agent at a URL keeps its own clock: the harness can't skew it.
    faults = [name for name in CHANNEL_FAULTS if not (remote and name in IN_PROCESS_ONLY)]

    def run(schedule: Schedule) -> tuple[Scenario, ScenarioResult]:
        variant = schedule.apply(scenario, turns)
        # Against a URL, every run has users of its own: the agent remembers them.
        namespace = f"explore{seed}-{stats.runs}" if remote else ""
        result = loop.run_until_complete(_play(runner, variant, invariants, shared, namespace))
        return variant, result

    @settings(
        max_examples=budget,
        database=None,
        deadline=None,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        print_blob=False,
    )
    @hypothesis_seed(seed)
    @given(st.data())
    def probe(data: st.DataObject) -> None:
        schedule = draw_schedule(data, scenario, turns, faults)
        shrinking = stats.shrinking
        variant, result = run(schedule)
        stats.runs += 1
        if shrinking:
            stats.shrink_runs += 1
        else:
            stats.kinds.update(schedule.kinds.keys())
        failed = result.status != "passed"
        if failed:
            stats.failures += 1
            if stats.smallest is None or schedule.size <= stats.smallest.size:
                stats.smallest = schedule
        if on_run is not None:
            on_run(stats, schedule, result)
        if failed:
            raise _Failed(schedule, variant, result)

    finding: Finding | None = None
    try:
        probe()
    except _Failed as failed:
        finding = Finding(failed.schedule, failed.scenario, failed.result)
    except Flaky as exc:  # the shrunk schedule passed when played again
        last = _first_failure(exc)
        if last is not None:
            finding = Finding(last.schedule, last.scenario, last.result, confirmed=False)
    finally:
        loop.run_until_complete(context.__aexit__(None, None, None))
        loop.close()
    return Exploration(scenario=scenario, seed=seed, stats=stats, finding=finding)


def _first_failure(exc: BaseException) -> _Failed | None:
    if isinstance(exc, _Failed):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _first_failure(inner)
        if found is not None:
            return found
    cause = exc.__cause__ or exc.__context__
    return _first_failure(cause) if cause is not None else None
