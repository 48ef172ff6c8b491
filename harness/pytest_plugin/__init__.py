"""pytest, natively: scenario files as test items, a ``whatsapp`` fixture, record modes.

The package installs the plugin (:mod:`harness.pytest_plugin.plugin`, entry
point ``pytest11``), so a project that installs the harness has it:

- ``pytest --harness-scenarios scenarios`` (or ``harness_scenarios`` in the
  ini) runs each scenario file as a test;
- a test takes the ``whatsapp`` fixture (or ``wa``) and plays the user:
  ``await wa.say("user", "hi")``, then checks ``wa.replies("user")`` and
  ``assert_invariants(wa.trace(), [...])``;
- ``--harness-record-mode none|once|new|all`` says how the agent's model
  and tools use each test's recording;
- ``--harness-templates FILE`` (or ``harness_templates`` in the ini) gives
  the business's message templates, as Meta lists them.

Names load on first use, so loading the plugin imports nothing heavy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.pytest_plugin.cassette import Cassette, missing_recording
    from harness.pytest_plugin.chat import Chat, InvariantsFailed, assert_invariants
    from harness.pytest_plugin.items import (
        ScenarioFailed,
        ScenarioFile,
        ScenarioItem,
        play_scenario,
    )
    from harness.pytest_plugin.loop import LoopThread
    from harness.pytest_plugin.modes import (
        Plan,
        RecordingMode,
        function_recording,
        plan_for,
        scenario_recording,
    )
    from harness.pytest_plugin.namespaces import url_namespace
    from harness.pytest_plugin.reach import target_problem
    from harness.pytest_plugin.render import render_result, render_violations
    from harness.pytest_plugin.settings import (
        NO_AGENT,
        NUMBER_SETTINGS,
        UPSTREAM_SETTINGS,
        PluginSettings,
        PytestConfig,
        check_channel_options,
        read_settings,
    )

_OWNERS: dict[str, str] = {
    "Cassette": "harness.pytest_plugin.cassette",
    "Chat": "harness.pytest_plugin.chat",
    "InvariantsFailed": "harness.pytest_plugin.chat",
    "LoopThread": "harness.pytest_plugin.loop",
    "NO_AGENT": "harness.pytest_plugin.settings",
    "NUMBER_SETTINGS": "harness.pytest_plugin.settings",
    "UPSTREAM_SETTINGS": "harness.pytest_plugin.settings",
    "Plan": "harness.pytest_plugin.modes",
    "PluginSettings": "harness.pytest_plugin.settings",
    "PytestConfig": "harness.pytest_plugin.settings",
    "RecordingMode": "harness.pytest_plugin.modes",
    "ScenarioFailed": "harness.pytest_plugin.items",
    "ScenarioFile": "harness.pytest_plugin.items",
    "ScenarioItem": "harness.pytest_plugin.items",
    "assert_invariants": "harness.pytest_plugin.chat",
    "check_channel_options": "harness.pytest_plugin.settings",
    "function_recording": "harness.pytest_plugin.modes",
    "missing_recording": "harness.pytest_plugin.cassette",
    "plan_for": "harness.pytest_plugin.modes",
    "play_scenario": "harness.pytest_plugin.items",
    "read_settings": "harness.pytest_plugin.settings",
    "render_result": "harness.pytest_plugin.render",
    "render_violations": "harness.pytest_plugin.render",
    "scenario_recording": "harness.pytest_plugin.modes",
    "target_problem": "harness.pytest_plugin.reach",
    "url_namespace": "harness.pytest_plugin.namespaces",
}

__all__ = [
    "NO_AGENT",
    "NUMBER_SETTINGS",
    "UPSTREAM_SETTINGS",
    "Cassette",
    "Chat",
    "InvariantsFailed",
    "LoopThread",
    "Plan",
    "PluginSettings",
    "PytestConfig",
    "RecordingMode",
    "ScenarioFailed",
    "ScenarioFile",
    "ScenarioItem",
    "assert_invariants",
    "check_channel_options",
    "function_recording",
    "missing_recording",
    "plan_for",
    "play_scenario",
    "read_settings",
    "render_result",
    "render_violations",
    "scenario_recording",
    "target_problem",
    "url_namespace",
]


def __getattr__(name: str) -> object:
    owner = _OWNERS.get(name)
    if owner is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(owner), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
