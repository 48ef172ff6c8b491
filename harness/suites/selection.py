"""Choosing scenarios: by their tags (``--tag``, ``--skip-tag``) and by keywords (``-k``).

A scenario is kept when it has any of the wanted tags (all scenarios when
none is wanted) and none of the unwanted ones. A tag no scenario has is not
an error (it selects nothing), but a selection that leaves no scenario at
all is: a suite that runs nothing would pass vacuously. A keyword expression
(:mod:`harness.suites.keywords`) is matched against a scenario's name, its
file's path and its tags, as ``pytest -k`` matches a test's names.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from harness.exceptions import ConfigError
from harness.suites.keywords import KeywordExpression
from harness.suites.scenario import Scenario

__all__ = ["scenario_keywords", "select_by_keyword", "select_by_tags"]


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


def scenario_keywords(scenario: Scenario) -> list[str]:
    """What ``-k`` matches for a scenario: its name, its file's path (forward slashes), its tags."""
    names = [scenario.name, *scenario.tags]
    if scenario.path is not None:
        names.append(scenario.path.as_posix())
    return names


def select_by_keyword(scenarios: Sequence[Scenario], expression: str) -> list[Scenario]:
    """The scenarios ``expression`` (``-k``) matches; a usage error when it matches none."""
    parsed = KeywordExpression.parse(expression)
    kept = [s for s in scenarios if parsed.matches(scenario_keywords(s))]
    if kept or not scenarios:
        return kept
    raise ConfigError(f"-k {expression!r} matches none of the {len(scenarios)} scenarios")
