"""``harness explore`` finds the channel bugs planted in the booking agent, and only those.

The scenario explored is the bundled happy path, which has no faults written
in it: every fault comes from the schedules Hypothesis draws. Budgets are
small (each run takes some milliseconds in-process), so each test takes
seconds.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from harness.cli.main import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from harness.results import ScenarioResult
from harness.suites.explorer import ExploreStats, explore
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import Scenario, load_scenario, parse_scenario
from harness.suites.schedules import Schedule, TurnFaults, split_turns
from harness.suites.steps import DEFAULT_GAP, FaultsStep, RedeliverStep, SayStep, WaitStep
from tests.support.cli import harness as _harness

ROOT = Path(__file__).resolve().parents[3]
HAPPY = ROOT / "scenarios" / "booking" / "happy_confirm_button.yaml"
TARGET = "agents.booking:agent_factory"
BUDGET = 60


def _runner(regressions: str = "") -> Runner:
    settings = {"BOOKING_REGRESSIONS": regressions} if regressions else {}
    return Runner(RunOptions(concurrency=1, agent_settings=settings))


def _passes(runner: Runner, scenario: Scenario) -> bool:
    return asyncio.run(runner.run_scenario(scenario)).status == "passed"


def test_the_happy_path_has_no_faults_of_its_own() -> None:
    scenario = load_scenario(HAPPY)
    assert scenario.faults is None
    assert not any(isinstance(s, WaitStep | RedeliverStep | FaultsStep) for s in scenario.steps)
    assert all(len(s.say) == 1 for s in scenario.steps if isinstance(s, SayStep))


@pytest.mark.parametrize("seed", [0, 1])
def test_with_no_regression_planted_nothing_fails_within_the_budget(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code = _harness(
        "explore", str(HAPPY), "--budget", str(BUDGET), "--seed", str(seed), "--target", TARGET
    )
    assert code == EXIT_OK
    assert list(tmp_path.iterdir()) == []  # nothing written


def _fault_steps(written: Scenario, base: Scenario) -> list[list[int]]:
    """The written file's faults, each as the indexes of the steps that make it.

    A wait, a redelivery or a ``faults:`` step the base has not (with the
    ``faults:`` step that restores the scenario's own faults after it), or a
    ``say`` the base writes as one message.
    """
    base_says = {s.say[0] for s in base.steps if isinstance(s, SayStep) and len(s.say) == 1}
    units: list[list[int]] = []
    steps = written.steps
    restoring: set[int] = set()
    for index, step in enumerate(steps):
        if index in restoring:
            continue
        if isinstance(step, WaitStep | RedeliverStep):
            units.append([index])
        elif isinstance(step, FaultsStep):
            assert step.faults  # a fault turned on, and later off again
            end = next(i for i in range(index + 1, len(steps)) if isinstance(steps[i], FaultsStep))
            assert steps[end].model_dump()["faults"] is None
            restoring.add(end)
            units.append([index, end])
        elif isinstance(step, SayStep) and len(step.say) > 1:
            assert " ".join(step.say) in base_says  # the base's message, split
            units.append([index])
    return units


def _without(written: Scenario, unit: list[int], base: Scenario) -> Scenario:
    """The written scenario with one fault taken out (a split say joined again)."""
    steps = []
    for index, step in enumerate(written.steps):
        if index not in unit:
            steps.append(step)
        elif isinstance(step, SayStep):
            steps.append(step.model_copy(update={"say": (" ".join(step.say),), "gap": DEFAULT_GAP}))
    return parse_scenario(written.model_copy(update={"steps": tuple(steps)}).to_yaml())


@pytest.mark.parametrize(
    ("regression", "kinds"),
    [
        ("no_dedupe", {"redeliver", "duplicate", "answer_lost"}),
        ("reply_per_fragment", {"split"}),
        ("ignore_window", {"jump"}),
    ],
)
def test_a_planted_channel_regression_is_found_written_reproduced_and_minimal(
    regression: str, kinds: set[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "found.yaml"
    setting = f"BOOKING_REGRESSIONS={regression}"
    args = ("--budget", str(BUDGET), "--seed", "0", "--agent-setting", setting)
    code = _harness("explore", str(HAPPY), *args, "--out", str(out), "--target", TARGET)
    assert code == EXIT_FAILED
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Found by `harness explore")
    assert "seed 0" in text.splitlines()[0] + text.splitlines()[1]

    # A plain scenario file: `harness run` plays it and fails, with nothing else given.
    assert _harness("run", str(out), "--target", TARGET, "-q") == EXIT_FAILED
    written = load_scenario(out)
    assert written.agent == {"BOOKING_REGRESSIONS": regression}
    assert written.seed == 0

    # Its faults are of the kind that shows the regression, and none is one too many.
    base = load_scenario(HAPPY)
    units = _fault_steps(written, base)
    assert units
    found = set()
    for unit in units:
        step = written.steps[unit[0]]
        if isinstance(step, WaitStep):
            found.add("jump")
            if regression == "ignore_window":
                assert step.duration > timedelta(hours=24)
        elif isinstance(step, RedeliverStep):
            found.add("redeliver")
        elif isinstance(step, SayStep):
            found.add("split")
        elif isinstance(step, FaultsStep) and isinstance(step.faults, dict):
            found.update(step.faults)
    assert found & kinds
    runner = _runner(regression)
    for unit in units:
        assert _passes(runner, _without(written, unit, base)), f"fault {unit} is not needed"


def test_the_same_seed_explores_the_same_schedules_and_finds_the_same_one() -> None:
    scenario = load_scenario(HAPPY)
    first = explore(_runner("no_dedupe"), scenario, budget=BUDGET, seed=3)
    again = explore(_runner("no_dedupe"), scenario, budget=BUDGET, seed=3)
    assert first.finding is not None
    assert again.finding is not None
    assert first.finding.schedule == again.finding.schedule
    assert first.stats.runs == again.stats.runs
    assert first.finding.confirmed


def test_progress_hears_of_every_run_and_the_summary_counts_each_fault_kind() -> None:
    heard: list[tuple[int, bool, str]] = []

    def on_run(stats: ExploreStats, schedule: Schedule, result: ScenarioResult) -> None:
        heard.append((stats.runs, stats.shrinking, result.status))

    exploration = explore(_runner(), load_scenario(HAPPY), budget=30, seed=0, on_run=on_run)
    assert exploration.finding is None
    assert [runs for runs, _, _ in heard] == list(range(1, 31))
    assert {status for _, _, status in heard} == {"passed"}
    kinds = exploration.stats.kinds
    # Thirty schedules hold every kind of fault at least once.
    assert set(kinds) == {
        "jump",
        "split",
        "redeliver",
        "duplicate",
        "answer_lost",
        "reorder",
        "latency",
        "status_late",
        "status_missing",
        "status_out_of_order",
        "skip_delivered",
        "skew_behind",
        "skew_ahead",
    }


def test_a_schedule_writes_its_faults_as_plain_steps_around_the_turns() -> None:
    scenario = load_scenario(HAPPY)
    turns = split_turns(scenario)
    assert [type(t.opener).__name__ for t in turns] == ["SayStep", "TapStep"]
    schedule = Schedule(
        turns=(
            TurnFaults(split=("Hi! Do you have", "a table on Friday at 8pm?")),
            TurnFaults(jump=timedelta(hours=25), channel=("status_missing",), redeliver=2),
        ),
        tail=timedelta(minutes=10),
    )
    data = schedule.apply(scenario, turns).to_data()["steps"]
    assert isinstance(data, list)
    actions = [next(iter(step)) for step in data if isinstance(step, dict)]
    assert actions == [
        "say",
        "expect",
        "wait",
        "faults",
        "tap",
        "expect",
        "faults",
        "redeliver",
        "wait",
    ]
    assert data[0] == {"say": ["Hi! Do you have", "a table on Friday at 8pm?"]}
    assert data[2] == {"wait": "1d1h"}
    assert data[3] == {"faults": {"status_missing": 1.0}}
    assert data[6] == {"faults": None}
    assert data[7] == {"redeliver": 2}
    last = Schedule(turns=(TurnFaults(redeliver="last"),)).apply(scenario, turns).to_data()
    assert last["steps"][2] == {"redeliver": "last"}  # type: ignore[index]
    assert schedule.kinds == {"split": 1, "jump": 2, "status_missing": 1, "redeliver": 1}
    assert Schedule().apply(scenario, turns).to_data() == scenario.to_data()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--budget", "0"), "--budget"),
        (("--seed", "x"), "--seed"),
    ],
)
def test_bad_options_are_usage_errors(
    args: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _harness("explore", str(HAPPY), *args) == EXIT_USAGE
    assert message in capsys.readouterr().err


def test_a_missing_scenario_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.yaml"
    assert _harness("explore", str(missing), "--target", TARGET) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(missing) in err


def test_a_scenario_that_fails_with_no_fault_is_an_error_not_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    broken = tmp_path / "broken.yaml"
    broken.write_text("steps:\n  - say: hi\n  - expect: {reply_contains: zebra}\n")
    assert _harness("explore", str(broken), "--budget", "5", "--target", TARGET) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (
        f"error: {broken}: fails with no channel fault at all "
        "(expect: no reply contains 'zebra'); fix it with harness run first"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.yaml"]
