"""A large in-process suite runs in this process and in worker processes, each scenario once."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest

from harness.exceptions import ConfigError
from harness.results import ScenarioResult
from harness.suites import _spread
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario

# The agent writes down which process ran it, one file per process, a line per scenario. In the
# test's own process it first pauses: a worker still starting on a busy machine gets its share.
FACTORY = """\
import os
import signal
import time
from pathlib import Path

from agents.booking import agent_factory


def factory(env):
    if str(os.getpid()) == os.environ["SPREAD_TEST_PARENT"]:
        time.sleep(float(os.environ["SPREAD_TEST_PAUSE"]))
    folder = Path(os.environ["SPREAD_TEST_PIDS"])
    ctrl_c = "python" if signal.getsignal(signal.SIGINT) is signal.default_int_handler else "other"
    with (folder / str(os.getpid())).open("a") as ran:
        ran.write(ctrl_c + "\\n")
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
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")  # xdist's own thread
@pytest.mark.parametrize("method", ["fork", "spawn"])
async def test_this_process_and_a_worker_process_share_a_large_suite(
    agent: tuple[str, Path], monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    target, folder = agent
    monkeypatch.setattr(_spread, "start_method", lambda: method)
    # The run's process handles Ctrl-C its own way; a worker, forked or not, takes Python's.
    previous = signal.signal(signal.SIGINT, _interrupted)
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

    try:
        run = await Runner(options).run(scenarios, on_result=on_result)
    finally:
        signal.signal(signal.SIGINT, previous)
    # Every scenario once, in the suite's order, and each heard of once, on this thread.
    assert [s.name for s in run.scenarios] == [f"s{i:03}" for i in range(count)]
    assert all(s.status == "passed" for s in run.scenarios), [s.error for s in run.scenarios]
    assert Counter(r.name for r in heard) == Counter(s.name for s in run.scenarios)
    assert threads == {threading.get_ident()}
    # This process ran some (it starts at once) and one worker process ran the others.
    lines = {int(p.name): p.read_text().split() for p in (folder / "pids").iterdir()}
    ran = {pid: len(said) for pid, said in lines.items()}
    assert os.getpid() in ran
    assert len(ran) == 2
    assert sum(ran.values()) >= count
    assert set(lines[os.getpid()]) == {"other"}
    worker = next(pid for pid in lines if pid != os.getpid())
    assert set(lines[worker]) == {"python"}


def _interrupted(signum: int, frame: object) -> None:
    """A Ctrl-C handler of the run's process's own."""


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


def test_workers_fork_only_on_linux_while_the_main_thread_is_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert _spread.start_method() == "fork"
    # Another thread alive: a fork would copy whatever locks it holds, held forever.
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert _spread.start_method() == "spawn"
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert _spread.start_method() == "spawn"


def test_with_a_second_thread_alive_the_workers_are_spawned() -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert _spread.start_method() == "spawn"
    finally:
        release.set()
        other.join()


@pytest.mark.slow
async def test_the_workers_start_before_this_process_plays_its_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A forked worker is a copy of this process: it must be made before a scenario is half
    # played here. So every worker exists by the time this process's share begins.
    monkeypatch.setattr(_spread, "start_method", lambda: "spawn")
    scenarios = [parse_scenario(SCENARIO.format(name=f"s{i}")) for i in range(12)]
    handed = iter(range(len(scenarios)))
    lock = threading.Lock()
    seen: list[int] = []
    finished: dict[int, ScenarioResult] = {}

    def next_index() -> int | None:
        with lock:
            return next(handed, None)

    before = set(multiprocessing.active_children())  # an earlier run's, still exiting

    async def here() -> None:
        seen.append(len(set(multiprocessing.active_children()) - before))

    await _spread.spread(
        here,
        Runner,
        2,
        RunOptions(channel="direct", target="agents.booking:agent_factory"),
        scenarios,
        "run-early",
        next_index,
        finished.__setitem__,
        threading.Event(),
    )
    assert seen == [2]
    assert sorted(finished) == list(range(len(scenarios)))
    assert all(r.status == "passed" for r in finished.values())


def test_a_runner_says_which_runs_play_in_worker_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    large = _spread.PROCESS_THRESHOLD
    assert Runner(RunOptions(concurrency=2)).in_processes(large)
    assert not Runner(RunOptions(concurrency=2)).in_processes(large - 1)
    assert not Runner(RunOptions(concurrency=1)).in_processes(large)
    at_url = RunOptions(concurrency=2, target_url="http://127.0.0.1:9/webhook")
    assert not Runner(at_url).in_processes(large)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert not Runner(RunOptions(concurrency=2)).in_processes(large)


def test_the_environment_can_make_every_worker_start_fresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setenv(_spread.START_VARIABLE, "spawn")
    assert _spread.start_method() == "spawn"
    monkeypatch.setenv(_spread.START_VARIABLE, "auto")
    assert _spread.start_method() == "fork"
    monkeypatch.setenv(_spread.START_VARIABLE, "forkserver")
    with pytest.raises(ConfigError, match=r"^HARNESS_WORKER_START='forkserver': use auto "):
        _spread.start_method()
