"""The judge's gate: thresholds, and the exit code of a run by its verdicts."""

from __future__ import annotations

import math

import pytest

from harness.exceptions import ConfigError
from harness.replay.judge import (
    EXIT_BELOW_THRESHOLD,
    EXIT_NO_VERDICT,
    GateOutcome,
    check_threshold,
    gate_outcome,
)
from tests.harness.replay.judge.fakes import verdict


def test_a_verdict_at_the_threshold_passes_despite_rounding() -> None:
    at = verdict(0.7, 0.7, 0.7)
    assert at.overall < 0.7  # the float mean lands a hair below
    assert at.gate(0.7)
    assert not at.gate(0.7001)


@pytest.mark.parametrize(
    ("scores", "threshold", "passes"),
    [
        ((0.0, 0.0), 0.0, True),
        ((1.0, 1.0), 1.0, True),
        ((1.0, 0.99), 1.0, False),
        ((0.5, 0.5), 0.5, True),
        ((0.5, 0.49), 0.5, False),
    ],
)
def test_gate_edges(scores: tuple[float, ...], threshold: float, passes: bool) -> None:
    assert verdict(*scores).gate(threshold) is passes


@pytest.mark.parametrize("threshold", [-0.01, 1.01, math.nan, math.inf])
def test_a_threshold_outside_zero_to_one_is_refused(threshold: float) -> None:
    with pytest.raises(ConfigError, match="between 0 and 1"):
        check_threshold(threshold)
    with pytest.raises(ConfigError):
        verdict(0.5).gate(threshold)
    with pytest.raises(ConfigError):
        gate_outcome([verdict(0.5)], threshold)


def test_the_gate_passes_when_every_verdict_reaches_the_threshold() -> None:
    outcome = gate_outcome([verdict(0.8), verdict(0.7, 0.7, 0.7)], 0.7)

    assert outcome == GateOutcome(status="pass", threshold=0.7, judged=2)
    assert (outcome.exit_code("gate"), outcome.exit_code("advisory")) == (0, 0)
    assert outcome.message == "judge gate passed: 2 verdict(s) at or above 0.7"


def test_a_verdict_below_the_threshold_fails_the_gate_with_exit_4() -> None:
    outcome = gate_outcome([verdict(0.9), verdict(0.4)], 0.75, scenarios=["happy", "rude"])

    assert outcome.status == "below"
    assert [(f.index, f.scenario, f.overall) for f in outcome.failing] == [(1, "rude", 0.4)]
    assert outcome.exit_code() == EXIT_BELOW_THRESHOLD == 4
    assert outcome.exit_code("advisory") == 0
    assert outcome.message == "judge gate failed: 1 of 2 below 0.75: rude (0.400)"


def test_a_missing_verdict_refuses_the_gate_with_exit_2_even_beside_a_low_one() -> None:
    outcome = gate_outcome([verdict(0.2), None, verdict(0.9)], 0.5)

    assert outcome.status == "missing"
    assert [(f.scenario, f.overall) for f in outcome.failing] == [("s", 0.2), ("#2", None)]
    assert outcome.judged == 2
    assert outcome.exit_code() == EXIT_NO_VERDICT == 2
    assert outcome.exit_code("advisory") == 0
    assert outcome.message == "judge gate refused: no verdict for #2; below 0.5: s (0.200)"


def test_no_verdicts_at_all_refuse_the_gate() -> None:
    outcome = gate_outcome([], 0.5)

    assert (outcome.status, outcome.exit_code()) == ("missing", 2)
    assert outcome.message == "judge gate refused: no verdicts to gate on"


def test_gate_arguments_are_checked() -> None:
    with pytest.raises(ConfigError, match="2 scenario names for 1 verdicts"):
        gate_outcome([None], 0.5, scenarios=["a", "b"])
    with pytest.raises(ConfigError, match="invalid judge mode 'strict'"):
        gate_outcome([None], 0.5).exit_code("strict")  # type: ignore[arg-type]  # on purpose
