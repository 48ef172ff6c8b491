"""``harness run --redis`` with its Redis restarted or paused mid-run: right verdicts, or exit 2.

A restarted Redis has lost the keys of the scenarios in flight (their window,
their dedupe keys), so those scenarios have no verdict: the run must stop
with one line naming the server and exit 2, never fail them. A Redis paused
for a few seconds only slows the run down.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reliability.redis_faults import redis_trial

pytestmark = [pytest.mark.redis, pytest.mark.slow]


async def test_a_redis_restarted_mid_run_stops_it_with_one_line_and_exit_2(
    redis_program: str, tmp_path: Path
) -> None:
    trial = await redis_trial("restart", after=3, workdir=tmp_path, binary=redis_program)
    assert not trial.hung
    assert not trial.traceback
    assert trial.code == 2, trial.stdout
    assert "FAIL" not in trial.stdout
    [line] = trial.errors
    assert line.startswith(f"error: Redis at {trial.url} restarted while the scenario ran")
    assert "could not be judged" in line
    assert trial.ok


async def test_a_redis_paused_for_a_few_seconds_mid_run_only_slows_it(
    redis_program: str, tmp_path: Path
) -> None:
    trial = await redis_trial("pause", after=2, pause=2.0, workdir=tmp_path, binary=redis_program)
    assert trial.code == 0, trial.stdout + trial.stderr
    assert "15 scenarios: 15 passed" in trial.stdout
    assert trial.seconds >= 2.0  # the pause did fall inside the run
    assert trial.ok
