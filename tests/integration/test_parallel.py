"""A large suite runs on every core, with the same results as one at a time."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.results import ScenarioResult
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import load_scenarios

SUITE = Path(__file__).resolve().parents[2] / "scenarios" / "booking"


def _outcome(result: ScenarioResult) -> tuple[str, str, tuple[str, ...], int]:
    turns = len(result.conversation.turns) if result.conversation else -1
    return result.name, result.status, tuple(v.rule for v in result.violations), turns


@pytest.mark.slow
async def test_worker_processes_give_the_results_of_a_sequential_run() -> None:
    suite = load_scenarios([SUITE])
    scenarios = [suite[i % len(suite)] for i in range(112)]  # over the process threshold
    regression = {"BOOKING_REGRESSIONS": "no_dedupe"}
    reported: list[str] = []
    workers: list[int] = []

    def seen(result: ScenarioResult) -> None:
        reported.append(result.name)
        workers.append(len(multiprocessing.active_children()))

    parallel = await Runner(RunOptions(concurrency=4, agent_settings=regression)).run(
        scenarios, on_result=seen
    )
    sequential = await Runner(RunOptions(concurrency=1, agent_settings=regression)).run(scenarios)
    assert [_outcome(r) for r in parallel.scenarios] == [_outcome(r) for r in sequential.scenarios]
    assert sorted(reported) == sorted(s.name for s in scenarios)
    assert parallel.failed == sequential.failed > 0  # the regression is caught either way
    # This process ran some, and one worker process per further core (up to 4) the others.
    assert max(workers) >= min(4, os.cpu_count() or 1) - 1


AGENT = """\
import os
import sys
from pathlib import Path

from agents.booking import agent_factory


def factory(env):
    spawned = b"spawn_main" in Path("/proc/self/cmdline").read_bytes()  # a fresh interpreter's
    started = "spawned" if spawned else "forked"
    with (Path(os.environ["PARALLEL_TEST_PIDS"]) / str(os.getpid())).open("a") as ran:
        ran.write(started + "\\n")
    return agent_factory(env)
"""


def _on_a_terminal(command: list[str], cwd: Path, env: dict[str, str], limit: float) -> str:
    """Run ``command`` with a pseudo-terminal for its output; what it wrote.

    The command runs in a session of its own, so that its worker processes are
    killed with it however the test ends.
    """
    leader, follower = os.openpty()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=follower, stderr=follower, start_new_session=True
    )
    os.close(follower)
    written = b""
    deadline = time.monotonic() + limit
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the command has closed the terminal: it is done
                break
            if not chunk:
                break
            written += chunk
        assert process.wait(timeout=max(deadline - time.monotonic(), 1)) == 0, written
    finally:
        os.close(leader)
        with contextlib.suppress(ProcessLookupError):  # none of the session is left
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return written.decode(errors="replace")


@pytest.mark.slow
@pytest.mark.skipif((os.cpu_count() or 1) < 2 or sys.platform != "linux", reason="forks on Linux")
def test_a_large_run_on_a_terminal_forks_its_worker_before_drawing_its_bar(
    tmp_path: Path,
) -> None:
    # rich redraws the bar from a thread of its own, and a worker is forked only while no
    # other thread is alive: so the bar waits for the first result.
    (tmp_path / "terminalbot.py").write_text(AGENT, encoding="utf-8")
    suite = tmp_path / "suite"
    suite.mkdir()
    for i in range(105):
        (suite / f"s{i:03}.yaml").write_text(
            f"name: s{i:03}\nsteps:\n  - say: hello\n  - expect: {{replies: 1}}\n",
            encoding="utf-8",
        )
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**os.environ, "PARALLEL_TEST_PIDS": str(pids), "PYTHONPATH": str(tmp_path)}
    command = [sys.executable, "-m", "harness", "run", "suite", "--channel", "direct"]
    command += ["--target", "terminalbot:factory", "--concurrency", "2"]
    written = _on_a_terminal(command, tmp_path, env, limit=120)
    assert "105/105" in written  # the bar was drawn
    started = {int(p.name): set(p.read_text().split()) for p in pids.iterdir()}
    assert len(started) == 2, started
    assert all(how == {"forked"} for how in started.values()), started
