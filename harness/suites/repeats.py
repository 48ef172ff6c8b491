"""``harness run --repeat N``: a simulated scenario played N times, each with a seed of its own.

A scripted scenario plays the same every time, so it runs once. A simulated
user's choices follow its seed (the stand-in's fragments, typos, taps and
silences; the brief a live model reads), so the same scenario with other
seeds is another customer of the same kind: N runs give a pass rate
(:meth:`harness.results.RunResult.pass_rates`) rather than one verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.exceptions import ConfigError
from harness.suites.scenario import Scenario
from harness.suites.simulate_step import SimulateStep

__all__ = ["is_simulated", "repeated"]


def is_simulated(scenario: Scenario | None) -> bool:
    """True when a simulated user plays part of ``scenario``."""
    return scenario is not None and any(isinstance(s, SimulateStep) for s in scenario.steps)


def repeated(scenarios: Sequence[Scenario], times: int, seed: int) -> list[Scenario]:
    """Each simulated scenario ``times`` times, with seeds counting up from its own.

    A scenario's own ``seed`` is where its count starts, else ``seed`` (the
    run's ``--seed``); other scenarios are kept once, as they are.
    """
    if times < 1:
        raise ConfigError(f"--repeat must be at least 1, not {times}")
    out: list[Scenario] = []
    for scenario in scenarios:
        if times == 1 or not is_simulated(scenario):
            out.append(scenario)
            continue
        base = scenario.seed if scenario.seed is not None else seed
        out.extend(scenario.model_copy(update={"seed": base + i}) for i in range(times))
    return out
