"""A large in-process suite runs in this process and in worker processes, each scenario once."""

from __future__ import annotations

import os
import sys
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest

from harness.results import ScenarioResult
from harness.suites import _spread
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario

# The agent writes down which process ran it, one file per process, a line per scenario. In the
# test's own process it first pauses: a worker still starting on a busy machine gets its share.
FACTORY = """\
import os
import time
from pathlib import Path

from agents.booking import agent_factory


def factory(env):
    if str(os.getpid()) == os.environ["SPREAD_TEST_PARENT"]:
        time.sleep(float(os.environ["SPREAD_TEST_PAUSE"]))
    folder = Path(os.environ["SPREAD_TEST_PIDS"])
    with (folder / str(os.getpid())).open("a") as ran:
        ran.write("x\\n")
    return agent_factory(env)
"""

SCENARIO = "name: {name}\nsteps:\n  - say: hello\n  - expect: {{replies: 1}}\n"


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """An agent module in a folder of its own, and the folder where it notes its processes."""
    name = f"spreadbot_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(FACTORY, encoding="utf-8")
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("SPREAD_TEST_PIDS", str(pids))
    monkeypatch.setenv("SPREAD_TEST_PARENT", str(os.getpid()))
    monkeypatch.setenv("SPREAD_TEST_PAUSE", "0.05")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # as on the machine it is measured on
    return f"{name}:factory", tmp_path


@pytest.mark.slow
async def test_this_process_and_a_worker_process_share_a_large_suite(
    agent: tuple[str, Path],
) -> None:
    target, folder = agent
    count = _spread.PROCESS_THRESHOLD + 20
    scenarios = [parse_scenario(SCENARIO.format(name=f"s{i:03}")) for i in range(count)]
    options = RunOptions(
        channel="direct", target=target, import_paths=(str(folder),), concurrency=2
    )
    heard: list[ScenarioResult] = []
    threads: set[int] = set()

    def on_result(result: ScenarioResult) -> None:
        heard.append(result)
        threads.add(threading.get_ident())

    run = await Runner(options).run(scenarios, on_result=on_result)
    # Every scenario once, in the suite's order, and each heard of once, on this thread.
    assert [s.name for s in run.scenarios] == [f"s{i:03}" for i in range(count)]
    assert all(s.status == "passed" for s in run.scenarios), [s.error for s in run.scenarios]
    assert Counter(r.name for r in heard) == Counter(s.name for s in run.scenarios)
    assert threads == {threading.get_ident()}
    # This process ran some (it starts at once) and one worker process ran the others.
    ran = {int(p.name): len(p.read_text().split()) for p in (folder / "pids").iterdir()}
    assert os.getpid() in ran
    assert len(ran) == 2
    assert sum(ran.values()) >= count


@pytest.mark.slow
async def test_a_worker_that_fails_stops_this_process_taking_scenarios_and_raises(
    agent: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    target, folder = agent
    count = _spread.PROCESS_THRESHOLD
    scenarios = [parse_scenario(SCENARIO.format(name=f"s{i:03}")) for i in range(count)]
    options = RunOptions(
        channel="direct", target=target, import_paths=(str(folder),), concurrency=2
    )
    # Scenarios here take 0.1 s each, so this process is still busy when the worker fails.
    monkeypatch.setenv("SPREAD_TEST_PAUSE", "0.1")
    monkeypatch.setattr("harness.suites.runner.Runner", _Unbuildable)
    with pytest.raises(TypeError, match="no runner in a worker process"):
        await Runner(options).run(scenarios)
    ran = {int(p.name): len(p.read_text().split()) for p in (folder / "pids").iterdir()}
    assert list(ran) == [os.getpid()]  # the worker never got as far as its agent
    assert ran[os.getpid()] < count


class _Unbuildable(Runner):
    """A runner that a worker process (any but the test's) refuses to build."""

    def __init__(self, options: RunOptions) -> None:
        if os.getpid() != int(os.environ["SPREAD_TEST_PARENT"]):
            raise TypeError("no runner in a worker process")
        super().__init__(options)
