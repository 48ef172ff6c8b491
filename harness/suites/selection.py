"""Choosing scenarios by their tags: ``--tag`` keeps, ``--skip-tag`` leaves out.

A scenario is kept when it has any of the wanted tags (all scenarios when
none is wanted) and none of the unwanted ones. A tag no scenario has is not
an error (it selects nothing), but a selection that leaves no scenario at
all is: a suite that runs nothing would pass vacuously.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from harness.exceptions import ConfigError
from harness.suites.scenario import Scenario

__all__ = ["select_by_tags"]


def select_by_tags(
    scenarios: Sequence[Scenario], tags: Collection[str] = (), skip_tags: Collection[str] = ()
) -> list[Scenario]:
    """The scenarios with any of ``tags`` (any scenario, without them) and none of ``skip_tags``.

    Raises :class:`~harness.exceptions.ConfigError` when tags were given and
    no scenario is left.
    """
    wanted, unwanted = set(tags), set(skip_tags)
    kept = [
        scenario
        for scenario in scenarios
        if (not wanted or wanted & set(scenario.tags)) and not unwanted & set(scenario.tags)
    ]
    if kept or not scenarios or not (wanted or unwanted):
        return kept
    asked = [
        *(f"--tag {t}" for t in sorted(wanted)),
        *(f"--skip-tag {t}" for t in sorted(unwanted)),
    ]
    known = sorted({tag for scenario in scenarios for tag in scenario.tags})
    raise ConfigError(
        f"{' '.join(asked)} selects none of the {len(scenarios)} scenarios "
        f"(their tags: {', '.join(known) or 'none'})"
    )
