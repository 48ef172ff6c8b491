"""The judge on harness run: simulated scenarios scored against their goals, INCONCLUSIVE kept."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.replay.judge.scenarios import NOT_CONFIGURED, judge_run, scenario_goal
from harness.report import render_html, report_data, result_line
from harness.report.junit import junit_xml
from harness.results import RunResult, ScenarioResult, Violation
from harness.suites.scenario import parse_scenario
from tests.harness.replay.judge.fakes import FakeModel, answer, conversation, prompt_of

TEXT = """\
name: hesitant
steps:
  - simulate: {persona: Rosa, goal: a step-free table on friday}
judge:
  criteria:
    wheelchair: Did the agent remember the wheelchair?
  threshold: 0.7
  margin: 0.1
"""
SCENARIO = parse_scenario(TEXT, path="s.yaml")
SCRIPTED = parse_scenario("name: scripted\nsteps:\n  - say: hi\n", path="t.yaml")


def result(status: str = "passed", name: str = "hesitant", path: str = "s.yaml") -> ScenarioResult:
    violations = (
        (Violation(rule="never_reasks", message="asked twice"),) if status == "failed" else ()
    )
    return ScenarioResult(
        name=name,
        path=path,
        status=status,  # type: ignore[arg-type]  # one of the statuses
        conversation=conversation(),
        violations=violations,
    )


def scores(value: float) -> FakeModel:
    names = ("goal_completion", "tone", "relevance", "wheelchair")
    return FakeModel(answer(**dict.fromkeys(names, (value, value >= 0.7))))


async def judged(value: float, status: str = "passed") -> ScenarioResult:
    run = RunResult(scenarios=(result(status),))
    [out] = (await judge_run(run, [SCENARIO], scores(value))).scenarios
    return out


async def test_a_score_too_close_to_the_threshold_is_inconclusive_not_a_failure() -> None:
    out = await judged(0.65)
    assert out.status == "inconclusive"
    assert out.judgement is not None
    assert out.judgement.outcome == "inconclusive"
    assert out.judgement.score == pytest.approx(0.65)
    assert out.violations == ()
    assert RunResult(scenarios=(out,)).ok
    assert result_line(out).startswith(
        "INCONCLUSIVE hesitant: judge: inconclusive, 0.65 against 0.70"
    )


async def test_clear_scores_pass_or_fail_and_a_failure_says_why() -> None:
    assert (await judged(0.9)).status == "passed"
    low = await judged(0.3)
    assert low.status == "failed"
    [violation] = low.violations
    assert violation.kind == "judge"
    assert violation.message.startswith("scored 0.30, below the threshold 0.70")


async def test_failed_invariants_stay_failed_whatever_the_judge_says() -> None:
    out = await judged(0.95, status="failed")
    assert out.status == "failed"
    assert out.judgement is not None
    assert out.judgement.outcome == "passed"


async def test_the_judge_reads_the_goal_and_the_scenarios_own_criteria() -> None:
    model = scores(0.9)
    await judge_run(RunResult(scenarios=(result(),)), [SCENARIO], model)
    [call] = model.calls
    prompt = prompt_of(call)
    assert "The user's goal in this conversation: a step-free table on friday" in prompt
    assert "- wheelchair: Did the agent remember the wheelchair?" in prompt
    assert scenario_goal(SCENARIO) == "a step-free table on friday"


async def test_without_a_judge_model_nothing_is_invented() -> None:
    run = RunResult(scenarios=(result(), result(name="scripted", path="t.yaml")))
    judged_run = await judge_run(run, [SCENARIO, SCRIPTED], None)
    simulated, scripted = judged_run.scenarios
    assert simulated.status == "passed"
    assert simulated.judgement is not None
    assert simulated.judgement.outcome == "not judged"
    assert simulated.judgement.note == NOT_CONFIGURED
    assert scripted.judgement is None  # no simulated user and no criteria: nothing to judge


async def test_a_judge_that_cannot_answer_leaves_the_invariants_to_decide() -> None:
    broken = FakeModel(answer(goal_completion=(0.9, True)))  # misses the other criteria
    run = RunResult(scenarios=(result(),))
    [out] = (await judge_run(run, [SCENARIO], broken)).scenarios
    assert out.status == "passed"
    assert out.judgement is not None
    assert out.judgement.outcome == "not judged"
    assert "the judge could not answer" in out.judgement.note


async def test_every_report_names_an_inconclusive_scenario_as_such() -> None:
    out = await judged(0.65)
    run = RunResult(scenarios=(out, result(name="ok", path="u.yaml")))
    data = report_data(run)
    assert data["summary"]["inconclusive"] == 1
    assert data["scenarios"][0]["status"] == "inconclusive"
    assert data["scenarios"][0]["judgement"]["outcome"] == "inconclusive"
    root = ET.fromstring(junit_xml(run).split("\n", 1)[1])
    [case] = [c for c in root.iter("testcase") if c.get("name") == "hesitant"]
    skipped = case.find("skipped")
    assert skipped is not None
    assert skipped.get("type") == "inconclusive"
    assert (skipped.get("message") or "").startswith("INCONCLUSIVE: judge: inconclusive")
    assert root.get("failures") == "0"
    page = render_html(run)
    assert 'class="badge badge-inconclusive">INCONCLUSIVE</span>' in page
    assert 'data-filter="inconclusive">Inconclusive <b>1</b>' in page


def test_repeated_runs_report_a_pass_rate_per_scenario(tmp_path: Path) -> None:
    runs = [
        result().model_copy(update={"seed": 7}),
        result("failed").model_copy(update={"seed": 8}),
        result().model_copy(update={"seed": 9}),
        result(name="once", path="o.yaml"),
    ]
    run = RunResult(scenarios=tuple(runs))
    [rate] = run.pass_rates()
    assert (rate.name, rate.runs, rate.passed, rate.failed_seeds) == ("hesitant", 3, 2, (8,))
    assert rate.headline() == "hesitant: 2/3 passed (67%); failed with seed 8"
    assert report_data(run)["summary"]["pass_rates"] == [
        {
            "name": "hesitant",
            "path": "s.yaml",
            "runs": 3,
            "passed": 2,
            "inconclusive": 0,
            "failed_seeds": [8],
            "rate": 0.6667,
        }
    ]
    root = ET.fromstring(junit_xml(run).split("\n", 1)[1])
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["pass_rate.hesitant"] == "2/3"
    assert "<caption>Pass rate over repeated runs</caption>" in render_html(run)
