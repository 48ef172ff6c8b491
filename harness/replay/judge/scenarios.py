"""The judge on ``harness run``: simulated scenarios scored against their users' goals.

Invariants decide what a rule can; whether a simulated customer got what
they came for takes a reader. After a run, each scenario a simulated user
took part in (or that names ``judge:`` criteria) is scored by the judge,
against the default rubric plus the scenario's own criteria, with the
simulated users' goals as the goal. Then:

- a scenario whose invariants or expectations failed stays failed, whatever
  the judge says (the judgement is still reported beside it);
- otherwise a score at least ``margin`` above the threshold passes, one at
  least ``margin`` below fails (a ``judge`` violation says why), and one in
  between is ``inconclusive``: reported as such, neither a pass nor a failure;
- with no judge model configured, nothing is invented: the judgement says
  ``not judged`` and why, and the invariants alone decided.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from harness.exceptions import HarnessError
from harness.llm import LLMClient
from harness.replay.judge.judge import DEFAULT_MODEL, Judge
from harness.replay.judge.rubric import DEFAULT_RUBRIC, Criterion, check_rubric
from harness.replay.judge.verdict import Verdict
from harness.results import Judgement, RunResult, ScenarioResult, Violation
from harness.suites.judge_spec import JudgeSpec
from harness.suites.repeats import is_simulated
from harness.suites.scenario import Scenario
from harness.suites.simulate_step import SimulateStep

__all__ = ["NOT_CONFIGURED", "judge_run", "judgement_of", "scenario_goal"]

#: Why a run with no judge model leaves its scenarios unjudged.
NOT_CONFIGURED: Final = (
    "no judge model configured (harness run --judge, with ANTHROPIC_API_KEY); "
    "the invariants alone decided"
)
_DEFAULT_SPEC: Final = JudgeSpec()


def _judged(scenario: Scenario) -> bool:
    return scenario.judge is not None or is_simulated(scenario)


def scenario_goal(scenario: Scenario) -> str:
    """The simulated users' goals, as the judge reads them (empty without a simulated user)."""
    goals = [s.simulate.goal for s in scenario.steps if isinstance(s, SimulateStep)]
    return "; ".join(dict.fromkeys(goals))


def judgement_of(verdict: Verdict, spec: JudgeSpec, goal: str) -> Judgement:
    """The verdict against the scenario's threshold and margin."""
    score = verdict.overall
    if abs(score - spec.threshold) < spec.margin:
        outcome = "inconclusive"
    elif score >= spec.threshold:
        outcome = "passed"
    else:
        outcome = "failed"
    return Judgement(
        outcome=outcome,  # type: ignore[arg-type]  # one of the three just above
        note=verdict.summary,
        score=round(score, 4),
        threshold=spec.threshold,
        margin=spec.margin,
        goal=goal,
        criteria=tuple(
            f"{s.name}: {s.score:.2f} {'passed' if s.passed else 'failed'}: {s.reason}"
            for s in verdict.scores
        ),
    )


def _combined(result: ScenarioResult, judgement: Judgement) -> ScenarioResult:
    """The result with the judgement, and the status the two make together."""
    update: dict[str, object] = {"judgement": judgement}
    if result.status == "passed" and judgement.outcome == "inconclusive":
        update["status"] = "inconclusive"
    elif result.status == "passed" and judgement.outcome == "failed":
        update["status"] = "failed"
        update["violations"] = (
            *result.violations,
            Violation(
                kind="judge",
                rule="judge",
                message=f"scored {judgement.score:.2f}, below the threshold "
                f"{judgement.threshold:.2f}: {judgement.note}",
            ),
        )
    return result.model_copy(update=update)


async def judge_run(
    run: RunResult,
    scenarios: Sequence[Scenario],
    client: LLMClient | None,
    *,
    model: str = DEFAULT_MODEL,
) -> RunResult:
    """``run`` with each judged scenario's judgement, and its status changed accordingly."""
    by_key = {(str(s.path or ""), s.name): s for s in scenarios}
    results: list[ScenarioResult] = []
    for result in run.scenarios:
        scenario = by_key.get((result.path, result.name))
        if scenario is None or not _judged(scenario) or result.status in ("error", "skipped"):
            results.append(result)
            continue
        goal = scenario_goal(scenario)
        if client is None or result.conversation is None:
            results.append(
                result.model_copy(
                    update={"judgement": Judgement(outcome="not judged", note=NOT_CONFIGURED)}
                )
            )
            continue
        spec = scenario.judge or _DEFAULT_SPEC
        rubric = check_rubric(
            (*DEFAULT_RUBRIC, *(Criterion(n, q, w) for n, q, w in spec.questions()))
        )
        judge = Judge(client, model=model, rubric=rubric)
        try:
            verdict = await judge.evaluate(result.conversation, scenario=result.name, goal=goal)
        except HarnessError as exc:
            note = f"the judge could not answer ({exc}); the invariants alone decided"
            results.append(
                result.model_copy(update={"judgement": Judgement(outcome="not judged", note=note)})
            )
            continue
        results.append(_combined(result, judgement_of(verdict, spec, goal)))
    return run.model_copy(update={"scenarios": tuple(results)})
