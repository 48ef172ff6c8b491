"""Two ``harness worker`` processes, one killed mid-scenario: every scenario is reported once.

Each worker runs in a network namespace of its own where the machine lets
this test make one (root and ``unshare``): it has no network at all, and
reaches the broker through the Redis server's Unix socket, as a worker on
another machine reaches it through the network. Elsewhere the workers run
on loopback. The coordinator is ``harness run --distributed``; its report is
compared with a local ``harness run`` of the same suite.

Against an agent at a URL the workers run on loopback (they must reach the
agent, and it them): the agent sends to the survivor's Graph API, which
passes the dead worker's sends on to it (answered with a temporary failure
once it is gone) and plays its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from channels.whatsapp.config import SimulatorConfig
from tests.bots.loopback import free_port, started_process
from tests.support.processes import stop
from tests.support.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[3]
SLOW_TARGET = "tests.harness.suites.slow_agent:slow_agent"
REGRESSION = ("--agent-setting", "BOOKING_REGRESSIONS=no_dedupe")
# How a worker's line about a scenario that ended starts.
_ENDINGS = ("passed ", "failed ", "error ", "skipped ")

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def _own_network_namespace() -> list[str]:
    """The command prefix that starts a program in a new network namespace, if one can be made."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        return []
    probe = subprocess.run([unshare, "--net", "true"], capture_output=True, check=False)
    return [unshare, "--net", "--"] if probe.returncode == 0 else []


@pytest.fixture
async def broker(redis_program: str, tmp_path: Path) -> AsyncIterator[RedisServer]:
    """A Redis of the test's own, on a loopback port and a Unix socket."""
    # A socket's path is limited to about 100 bytes: a short folder, not tmp_path.
    with tempfile.TemporaryDirectory(prefix="hw") as folder:
        server = RedisServer(
            redis_program, free_port(), tmp_path, unix_socket=Path(folder) / "redis.sock"
        )
        await server.start()
        try:
            yield server
        finally:
            await server.kill()


class _Worker:
    """A ``harness worker`` process and the lines it printed."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.started = asyncio.Event()
        self.ready = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line = raw.decode(errors="replace").rstrip()
            self.lines.append(line)
            if line.startswith("worker "):
                self.ready.set()
            if line.startswith("started "):
                self.started.set()


async def _stop(*workers: _Worker) -> None:
    """Stop every worker (SIGTERM, then SIGKILL after 10 s), then read what each printed last."""
    for worker in workers:
        await stop(worker.process, within=10, read=False)  # its reader reads its output
    for worker in workers:
        await asyncio.wait_for(worker.reader, 5)


async def _worker(prefix: list[str], url: str, *extra: str) -> _Worker:
    process = await asyncio.create_subprocess_exec(
        *prefix,
        *(sys.executable, "-m", "harness", "worker", "--broker", url, "--heartbeat", "2s"),
        *extra,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    return _Worker(process)


async def _harness(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "harness", *args),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), 180)
    except TimeoutError:
        process.kill()
        out, _ = await process.communicate()
        said = out.decode(errors="replace")
        raise AssertionError(
            f"harness {' '.join(args)} did not end in 180 s; it said:\n{said}"
        ) from None
    finally:
        await stop(process)  # the run goes with a test that is cancelled while it waits
    assert process.returncode is not None
    return process.returncode, out.decode(errors="replace")


def _verdicts(report: Path) -> list[tuple[Any, ...]]:
    data = json.loads(report.read_text())
    return [
        (
            s["name"],
            s["path"],
            s["status"],
            [(v["rule"], v["turn"], v["line"]) for v in s["violations"]],
        )
        for s in data["scenarios"]
    ]


async def test_a_worker_killed_mid_scenario_has_its_scenario_run_again_elsewhere(
    broker: RedisServer, tmp_path: Path
) -> None:
    prefix = _own_network_namespace()
    # In a namespace of its own a worker has no network: it reaches Redis by its socket.
    url = broker.socket_url if prefix else broker.url
    doomed, survivor = await _worker(prefix, url), await _worker(prefix, url)
    try:
        await asyncio.wait_for(asyncio.gather(doomed.ready.wait(), survivor.ready.wait()), 30)
        coordinator = asyncio.create_task(
            _harness(
                *("run", "--distributed", broker.url, "--target", SLOW_TARGET, *REGRESSION),
                *("-q", "--report-dir", str(tmp_path / "distributed")),
            )
        )
        await asyncio.wait_for(doomed.started.wait(), 60)
        doomed.process.send_signal(signal.SIGKILL)  # mid-scenario: each takes about a second
        await doomed.process.wait()
        code, out = await coordinator
    finally:
        await _stop(doomed, survivor)
    killed = next(line.split()[1] for line in doomed.lines if line.startswith("started "))
    # It was killed mid-scenario: it never said the scenario ended.
    ended = {line.split()[1] for line in doomed.lines if line.startswith(_ENDINGS)}
    assert killed not in ended, doomed.lines
    # The scenario the dead worker held was handed to the survivor.
    assert f"started {killed} (attempt 2)" in survivor.lines, survivor.lines
    local_code, local_out = await _harness(
        "run", *REGRESSION, "-q", "--report-dir", str(tmp_path / "local")
    )
    assert (code, local_code) == (1, 1), out + local_out
    distributed = _verdicts(tmp_path / "distributed" / "report.json")
    local = _verdicts(tmp_path / "local" / "report.json")
    assert distributed == local
    names = [v[0] for v in distributed]
    assert len(names) == len(set(names)) == 15
    assert (tmp_path / "distributed" / "junit.xml").exists()
    assert (tmp_path / "distributed" / "report.html").exists()


@pytest.mark.network
async def test_url_scenarios_survive_a_worker_killed_mid_scenario(
    broker: RedisServer, tmp_path: Path
) -> None:
    store = broker.url.removesuffix("/0") + "/2"
    graph_port = free_port()
    defaults = SimulatorConfig()
    agent_env = {
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}",  # the survivor's Graph API
        "WHATSAPP_ACCESS_TOKEN": defaults.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": defaults.phone_number_id,
        "WHATSAPP_APP_SECRET": defaults.app_secret,
        "WHATSAPP_VERIFY_TOKEN": defaults.verify_token,
        "HARNESS_STORE_URL": store,
    }
    async with started_process(
        "tests.support.replica", "agents.booking:app", env=agent_env, ready_path="/healthz"
    ) as (agent, _):
        doomed = await _worker([], broker.url, "--concurrency", "4")
        survivor = await _worker(
            [], broker.url, "--concurrency", "4", "--graph-port", str(graph_port)
        )
        try:
            await asyncio.wait_for(asyncio.gather(doomed.ready.wait(), survivor.ready.wait()), 30)
            coordinator = asyncio.create_task(
                _harness(
                    *("run", "--distributed", broker.url, "--redis", store),
                    *("--target-url", f"{agent}/webhook", "-q"),
                    *("--report-dir", str(tmp_path / "distributed")),
                )
            )
            await asyncio.wait_for(doomed.started.wait(), 60)
            await asyncio.sleep(0.5)  # its scenario under way: a message out, the agent at work
            doomed.process.send_signal(signal.SIGKILL)
            await doomed.process.wait()
            code, out = await coordinator
        finally:
            await _stop(doomed, survivor)
    started = [line.split()[1] for line in doomed.lines if line.startswith("started ")]
    ended = {line.split()[1] for line in doomed.lines if line.startswith(_ENDINGS)}
    killed = [key for key in started if key not in ended]
    assert killed, doomed.lines
    for key in killed:  # each scenario the dead worker held was played again by the survivor
        assert any(line.startswith(f"started {key} (attempt ") for line in survivor.lines)
    assert code == 0, out
    verdicts = _verdicts(tmp_path / "distributed" / "report.json")
    names = [v[0] for v in verdicts]
    assert len(names) == len(set(names)) == 15
    assert {v[2] for v in verdicts} == {"passed"}, out
