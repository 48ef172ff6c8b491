"""What a suite is checked for before anything runs, each problem one line at its file and line.

The loader checks a scenario's own shape; some of what a scenario says only
others can judge: the invariants' registry knows their names and
parameters, the channel knows its fault settings, and the agent under test
knows its own settings (through its factory's ``check_settings``, see
:data:`~harness.channel.SettingsCheck`). The runner asks them all here,
before the first scenario starts, so a typo stops the run with
``file:line: field: message`` instead of failing one scenario after
another, or, worse, being ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.channel import SettingsCheck
from harness.exceptions import ConfigError, ScenarioError
from harness.suites.invariants import BoundInvariant, bind
from harness.suites.scenario import Scenario
from harness.suites.steps import FaultsStep
from harness.suites.target import settings_from
from harness.suites.yamlpos import YamlPath, field_name, read_text, read_yaml, scenario_error

__all__ = ["bind_invariants", "check_agent_settings", "check_faults"]


def bind_invariants(scenario: Scenario) -> list[BoundInvariant]:
    """The scenario's invariants, bound; an unknown name or bad parameter names its line."""
    bound = []
    for index, ref in enumerate(scenario.invariants):
        try:
            bound.append(bind(ref))
        except ConfigError as exc:
            at = f"invariants[{index}]"
            raise scenario_error(str(exc), path=scenario.path, line=ref.line, field=at) from None
    return bound


def check_faults(scenarios: Sequence[Scenario], check: Callable[[Any], None]) -> None:
    """Have the channel ``check`` each scenario's ``faults:``, at the top and in ``faults`` steps.

    The first one refused is an error naming its line.
    """
    for scenario in scenarios:
        specs: list[tuple[YamlPath, object]] = [(("faults",), scenario.faults)]
        for index, step in enumerate(scenario.steps):
            if isinstance(step, FaultsStep):
                specs.append((("steps", index, "faults"), step.faults))
        for at, spec in specs:
            if spec is None:
                continue
            try:
                check(spec)
            except ValueError as exc:
                loc = getattr(exc, "loc", ())
                raise _located(scenario, (*at, *loc), str(exc)) from None


def check_agent_settings(scenarios: Sequence[Scenario], check: SettingsCheck) -> None:
    """Have the agent ``check`` each scenario's ``agent:`` settings; the first refused is an error.

    Each setting is given as the agent receives it (a list joined with commas).
    """
    for scenario in scenarios:
        if not scenario.agent:
            continue
        problems = check(settings_from(scenario.agent))
        for key in scenario.agent:  # in the file's order
            if key in problems:
                raise _located(scenario, ("agent", key), problems[key])


def _located(scenario: Scenario, at: YamlPath, message: str) -> ScenarioError:
    return scenario_error(
        message, path=scenario.path, line=_line_of(scenario, at), field=field_name(at)
    )


def _line_of(scenario: Scenario, at: YamlPath) -> int | None:
    """Where the scenario's file writes ``at`` (read again: only errors need it)."""
    if scenario.path is None:
        return None
    try:
        return read_yaml(read_text(scenario.path), path=scenario.path).line_of(at)
    except ScenarioError:  # changed since it was loaded: name the file alone
        return None
