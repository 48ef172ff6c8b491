"""Real I/O on a virtual clock: a slow Redis and a slow service never lose the agent's work."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import load_scenarios
from tests.support.latency import latency_proxy

SUITE = Path(__file__).resolve().parents[2] / "scenarios" / "booking"


@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.parametrize("concurrency", [1, 4])
async def test_the_bundled_suite_passes_on_a_redis_that_answers_slowly(
    redis_url: str, concurrency: int
) -> None:
    url = urlsplit(redis_url)
    scenarios = load_scenarios([SUITE])
    # 2 ms each way on every chunk: each command costs a few real milliseconds, during
    # which the event loop under test is idle and the virtual clock must wait.
    with latency_proxy(url.hostname or "127.0.0.1", url.port or 6379, 0.002) as (host, port):
        slow = f"redis://{host}:{port}{url.path}"
        for _ in range(2):
            run = await Runner(RunOptions(concurrency=concurrency, store_url=slow)).run(scenarios)
            failures = {
                r.name: r.error or [v.message for v in r.violations]
                for r in run.scenarios
                if r.status != "passed"
            }
            assert failures == {}
            assert run.passed == len(scenarios) == 15
