"""Before a run: what the channel, the agent and the invariants say of each scenario, at its line.

Each file under ``tests/data/scenarios/bad_at_run`` loads (its shape is
fine) but names something only the channel, the agent under test or the
invariants' registry can judge; its first line announces the error. Until
these checks, the fault typo failed each scenario without a line, the agent
setting was silently ignored, and the invariant had no line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from harness.exceptions import ScenarioError
from harness.suites.preflight import bind_invariants, check_agent_settings, check_faults
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import load_scenario, parse_scenario

BAD_AT_RUN = Path(__file__).resolve().parents[2] / "data" / "scenarios" / "bad_at_run"
FILES = sorted(BAD_AT_RUN.glob("*.yaml"))


def _announced(path: Path) -> str:
    return path.read_text(encoding="utf-8").splitlines()[0].removeprefix("# error: ")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
async def test_each_file_stops_the_run_before_it_starts_naming_its_line(path: Path) -> None:
    announced = _announced(path)
    scenario = load_scenario(path)
    runner = Runner(RunOptions())  # the bundled agent through the WhatsApp channel
    reported: list[object] = []
    with pytest.raises(ScenarioError) as caught:
        await runner.run([scenario], on_result=reported.append)
    if announced.endswith(" ..."):  # the rest lists what is registered, which tests may add to
        assert str(caught.value).startswith(f"{path}:{announced.removesuffix(' ...')}")
    else:
        assert str(caught.value) == f"{path}:{announced}"
    assert (caught.value.path, caught.value.line) == (path, int(announced.split(":")[0]))
    assert reported == []


def test_the_files_cover_faults_agent_settings_and_invariants() -> None:
    kinds = {path.stem.split("_")[-1] for path in FILES}
    assert {"setting", "preset", "regression", "invariant", "parameter", "range"} <= kinds


def test_a_scenario_built_in_code_is_named_without_a_line() -> None:
    scenario = parse_scenario("faults: {latency: -1}\nsteps:\n  - say: hi\n")

    def check(spec: object) -> None:
        raise ValueError("must not be negative")

    with pytest.raises(ScenarioError, match=r"^<scenario>: faults: must not be negative$"):
        check_faults([scenario], check)


def test_an_agent_without_a_check_takes_any_setting() -> None:
    scenario = parse_scenario("agent: {anything: 1}\nsteps:\n  - say: hi\n")
    check_agent_settings([scenario], lambda settings: {})
    assert bind_invariants(scenario) == []


def test_the_agent_is_asked_with_the_settings_it_would_receive() -> None:
    scenario = parse_scenario("agent: {regressions: [a, b], strict: true}\nsteps:\n  - say: hi\n")
    seen: list[dict[str, str]] = []

    def check(settings: Mapping[str, str]) -> dict[str, str]:
        seen.append(dict(settings))
        return {}

    check_agent_settings([scenario], check)
    assert seen == [{"regressions": "a,b", "strict": "true"}]


async def test_a_scenario_played_on_its_own_is_checked_too() -> None:
    scenario = load_scenario(BAD_AT_RUN / "unknown_regression.yaml")
    with pytest.raises(ScenarioError, match=r"agent\.regressions: unknown regression 'no_dedup'"):
        await Runner(RunOptions()).run_scenario(scenario)
