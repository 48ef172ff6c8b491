"""compose.yaml, the staging topology: its structure, Docker's view of it, and a run of it.

The structure is checked without Docker; ``docker compose config`` where Docker
has compose (skipped, saying so, where it has not); and the same services run
here as processes on loopback, from the file's own commands, environment and
healthchecks, with the hosts and ports swapped for free loopback ones.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from channels.whatsapp.config import SimulatorConfig
from tests.bots.loopback import free_port
from tests.support.processes import stop
from tests.support.redis_server import RedisServer

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "compose.yaml"
# The ports each service listens on inside the topology.
PORTS = {"redis": 6379, "meta": 8000, "agent": 8080}


def _compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _services() -> dict[str, dict[str, Any]]:
    services = _compose()["services"]
    assert isinstance(services, dict)
    return services


def _option(command: list[str], name: str) -> str:
    """The value of ``--name=value`` or ``--name value`` in a command."""
    for i, word in enumerate(command):
        if word.startswith(f"{name}="):
            return word.split("=", 1)[1]
        if word == name:
            return command[i + 1]
    raise AssertionError(f"{name} not in {command}")


def test_the_topology_has_its_services_and_the_agent_two_replicas() -> None:
    services = _services()
    assert set(services) == {"redis", "meta", "agent", "worker", "suite"}
    assert services["agent"]["deploy"]["replicas"] == 2
    assert services["worker"]["deploy"]["replicas"] == 2
    assert services["agent"]["command"][:2] == ["uvicorn", "agents.booking:app"]
    assert services["meta"]["command"][:2] == ["harness", "serve"]
    assert services["worker"]["command"][:2] == ["harness", "worker"]
    assert services["suite"]["command"][:2] == ["harness", "run"]
    assert services["suite"]["restart"] == "no"  # a one-shot
    built = [name for name, s in services.items() if s.get("build") == "."]
    assert sorted(built) == ["agent", "meta", "suite", "worker"]
    assert (ROOT / "Dockerfile").is_file()


def test_every_service_waits_for_what_it_uses_to_be_healthy() -> None:
    services = _services()
    for name in ("redis", "meta", "agent"):
        assert services[name]["healthcheck"]["test"][0] == "CMD", name
    depends = {name: s.get("depends_on", {}) for name, s in services.items()}
    assert depends["agent"] == {
        "redis": {"condition": "service_healthy"},
        "meta": {"condition": "service_healthy"},
    }
    assert depends["worker"] == {"redis": {"condition": "service_healthy"}}
    assert depends["suite"]["redis"] == {"condition": "service_healthy"}
    assert depends["suite"]["worker"] == {"condition": "service_started"}
    assert depends["meta"] == {"redis": {"condition": "service_healthy"}}


def test_the_agent_and_the_simulator_are_wired_to_each_other_and_to_redis() -> None:
    services = _services()
    env = services["agent"]["environment"]
    meta = services["meta"]["command"]
    # The agent sends to the simulator, which delivers to the agent's webhook, signed with
    # the secret the agent checks (the simulator's own defaults).
    assert env["WHATSAPP_GRAPH_URL"] == f"http://meta:{PORTS['meta']}"
    assert _option(meta, "--port") == str(PORTS["meta"])
    assert _option(meta, "--public-url") == f"http://meta:{PORTS['meta']}"
    assert _option(meta, "--webhook-url") == f"http://agent:{PORTS['agent']}/webhook"
    assert _option(services["agent"]["command"], "--port") == str(PORTS["agent"])
    defaults = SimulatorConfig()
    assert env["WHATSAPP_APP_SECRET"] == defaults.app_secret
    assert env["WHATSAPP_VERIFY_TOKEN"] == defaults.verify_token
    assert env["WHATSAPP_ACCESS_TOKEN"] == defaults.access_token
    assert env["WHATSAPP_PHONE_NUMBER_ID"] == defaults.phone_number_id
    # Redis-backed replicas, recording every exchange into the store.
    assert env["BOOKING_REDIS_URL"] == "redis://redis:6379/0"
    assert env["HARNESS_RECORD_MODE"] == "record"
    assert env["HARNESS_RECORDING_URL"].startswith("redis://redis:6379/")
    assert env["HARNESS_FIXTURE_ID"]
    # The suite queues its scenarios where the workers take them, and plays them against
    # the replicas' webhook.
    suite = services["suite"]["command"]
    worker = services["worker"]["command"]
    broker = _option(worker, "--broker")
    assert _option(suite, "--distributed") == broker
    assert broker.startswith("redis://redis:6379/")
    assert broker != env["BOOKING_REDIS_URL"]  # the queue keeps off the agents' database
    assert _option(suite, "--target-url") == f"http://agent:{PORTS['agent']}/webhook"
    # The replicas report their calls to the suite's store, where the workers also write
    # which users they play, and where the simulator the replicas send to looks them up.
    store = _option(suite, "--redis")
    assert env["HARNESS_STORE_URL"] == store == _option(meta, "--routes")
    assert store not in (broker, env["BOOKING_REDIS_URL"])
    # Each worker serves its Graph API on every interface, advertised under its own name.
    assert _option(worker, "--graph-host") == "0.0.0.0"
    assert "--graph-advertise" not in " ".join(worker)


def test_docker_compose_validates_the_file() -> None:
    command = _docker_compose()
    if command is None:
        if os.environ.get("HARNESS_REQUIRE_COMPOSE"):  # CI installs it: its absence is a failure
            pytest.fail(
                "HARNESS_REQUIRE_COMPOSE is set, but neither docker compose nor docker-compose is"
            )
        pytest.skip("Docker's compose (docker compose or docker-compose) is not installed here")
    done = subprocess.run(
        [*command, "-f", str(COMPOSE), "config", "-q"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr


def _docker_compose() -> list[str] | None:
    docker = shutil.which("docker")
    if docker is not None:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy is not None else None


# --- the same topology, as processes on loopback ---------------------------------------


class _Loopback:
    """Turns the file's hosts, ports and paths into this machine's."""

    def __init__(self, ports: dict[str, int], reports: Path) -> None:
        self.ports = ports
        self.reports = reports

    def word(self, text: str, own: int | None = None) -> str:
        for name, port in PORTS.items():
            text = text.replace(f"{name}:{port}", f"127.0.0.1:{self.ports[name]}")
        text = text.replace("0.0.0.0", "127.0.0.1").replace("/reports", str(self.reports))
        text = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", text)  # a variable's default
        if own is not None:  # the service's own port, inside its container
            text = re.sub(rf"^(--port=)?{own}$", rf"\g<1>{self.ports_of(own)}", text)
            text = text.replace(f"127.0.0.1:{own}", f"127.0.0.1:{self.ports_of(own)}")
        return text

    def ports_of(self, own: int) -> int:
        name = next(n for n, p in PORTS.items() if p == own)
        return self.ports[name]

    def command(self, name: str, service: dict[str, Any]) -> list[str]:
        own = PORTS.get(name)
        words = [self.word(str(w), own) for w in service["command"]]
        # Each worker's Graph API on a free port of its own, as each container has its own.
        words = [re.sub(r"^--graph-port=\d+$", "--graph-port=0", w) for w in words]
        if words[0] == "harness":
            return [sys.executable, "-m", "harness", *words[1:]]
        if words[0] == "uvicorn":  # replicas share their port, as behind a service name
            return [sys.executable, "-m", "tests.support.replica", *words[1:]]
        raise AssertionError(f"no loopback stand-in for {words[0]}")

    def environment(self, service: dict[str, Any]) -> dict[str, str]:
        env = {k: self.word(str(v)) for k, v in (service.get("environment") or {}).items()}
        return {**os.environ, **env, "PYTHONUNBUFFERED": "1"}

    def healthcheck(self, name: str, service: dict[str, Any]) -> list[str] | None:
        test = service.get("healthcheck", {}).get("test")
        if not test or test[1] != "python":
            return None
        return [sys.executable, *(self.word(str(w), PORTS.get(name)) for w in test[2:])]


def _order(services: dict[str, dict[str, Any]]) -> list[str]:
    """The services in an order that starts each after what it depends on."""
    done: list[str] = []
    while len(done) < len(services):
        for name, service in services.items():
            if name not in done and all(d in done for d in service.get("depends_on", {})):
                done.append(name)
    return done


@pytest.fixture
async def broker(redis_program: str, tmp_path: Path) -> AsyncIterator[RedisServer]:
    server = RedisServer(redis_program, free_port(), tmp_path)
    await server.start()
    try:
        yield server
    finally:
        await server.kill()


async def _healthy(command: list[str], name: str) -> None:
    for _ in range(150):
        probe = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
        )
        try:
            healthy = await probe.wait() == 0
        finally:
            await stop(probe)  # a probe still waiting on its answer when time is up
        if healthy:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{name} never passed its healthcheck")


def _verdicts(report: Path) -> dict[str, tuple[str, list[str]]]:
    """Each scenario's status and the rules it broke, by name (each name once)."""
    scenarios = json.loads(report.read_text())["scenarios"]
    verdicts = {
        s["name"]: (s["status"], sorted({v["rule"] for v in s["violations"]})) for s in scenarios
    }
    assert len(verdicts) == len(scenarios)
    return verdicts


# Faults drawn at random per webhook: which message they hit follows the order the webhooks
# go out in, and against an agent on real time its statuses interleave with the messages
# differently than in-process, so the same seed may hit another message.
_DRAWN = ("duplicate", "reorder", "fragment", "answer_lost")


def _drawn_at_random() -> set[str]:
    """The bundled scenarios whose faults are drawn at random (see :data:`_DRAWN`)."""
    from channels.whatsapp.faults import FaultProfile
    from harness.suites.scenario import load_scenarios

    names = set()
    for scenario in load_scenarios([ROOT / "scenarios"]):
        if scenario.faults is not None:
            profile = FaultProfile.parse(scenario.faults).model_dump()
            if any(0 < profile[field] < 1 for field in _DRAWN):
                names.add(scenario.name)
    return names


async def _in_process(tmp_path: Path, regression: str | None) -> dict[str, tuple[str, list[str]]]:
    """The verdicts of the bundled suite run here, on the agent built in-process."""
    setting = ["--agent-setting", f"BOOKING_REGRESSIONS={regression}"] if regression else []
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "harness", "run", *setting, "-q"),
        *("--report-dir", str(tmp_path / "local")),
        cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await asyncio.wait_for(process.wait(), 180)
    finally:
        await stop(process)
    return _verdicts(tmp_path / "local" / "report.json")


@pytest.mark.redis
@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("regression", [None, "no_dedupe"])
async def test_the_topology_runs_as_processes_on_loopback(
    broker: RedisServer, tmp_path: Path, regression: str | None
) -> None:
    services = _services()
    if regression is not None:  # planted in the deployed replicas, as a bad release would be
        agent = services["agent"]
        agent["environment"] = {**agent["environment"], "BOOKING_REGRESSIONS": regression}
    loopback = _Loopback(
        {"redis": broker.port, "meta": free_port(), "agent": free_port()}, tmp_path / "reports"
    )
    running: list[asyncio.subprocess.Process] = []
    suite_code: int | None = None
    try:
        for name in _order(services):
            service = services[name]
            if name == "redis":
                continue  # the test's own server stands in for it
            command = loopback.command(name, service)
            replicas = service.get("deploy", {}).get("replicas", 1)
            started = [
                await asyncio.create_subprocess_exec(
                    *command,
                    cwd=ROOT,
                    env=loopback.environment(service),
                    stdout=asyncio.subprocess.PIPE
                    if name == "suite"
                    else asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.STDOUT
                    if name == "suite"
                    else asyncio.subprocess.DEVNULL,
                )
                for _ in range(replicas)
            ]
            running.extend(started)  # the one-shot too: stopped with the rest if it has not ended
            if service.get("restart") == "no":  # the one-shot: wait for it
                [suite] = started
                out, _ = await asyncio.wait_for(suite.communicate(), 120)
                suite_code = suite.returncode
                suite_out = out.decode(errors="replace")
                continue
            check = loopback.healthcheck(name, service)
            if check is not None:
                await asyncio.wait_for(_healthy(check, name), 40)
        # The deployment answers a user through the simulator, as a person would chat.
        token = loopback.word(services["meta"]["environment"]["HARNESS_CONTROL_TOKEN"])
        meta = f"http://127.0.0.1:{loopback.ports['meta']}"
        async with httpx.AsyncClient(
            base_url=meta, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as client:
            sent = await client.post(
                "/_harness/inbound",
                json={"user": "15551234567", "text": "A table on friday at 8pm"},
            )
            assert sent.status_code == 200, sent.text
            outbox = await client.get(
                "/_harness/outbox", params={"user": "15551234567", "wait": 20}
            )
            replies = outbox.json()["messages"]
    finally:
        await asyncio.gather(*(stop(process, within=10) for process in running))
    assert suite_code == (0 if regression is None else 1), suite_out
    # The suite played at the replicas through the workers judges as it does in-process.
    verdicts = _verdicts(tmp_path / "reports" / "report.json")
    assert len(verdicts) == 15
    local = await _in_process(tmp_path, regression)
    assert set(verdicts) == set(local)
    random_faults = _drawn_at_random()
    assert len(random_faults) <= 1  # the rest of the suite is compared verdict for verdict
    for name in random_faults:
        assert verdicts.pop(name)[0] in ("passed", "failed")
        local.pop(name)
    assert verdicts == local
    if regression is None:
        assert {status for status, _ in verdicts.values()} == {"passed"}
    else:
        assert "no_repeated_side_effects" in {r for _, rules in verdicts.values() for r in rules}
    assert replies, "the agent did not answer through the simulator"
    assert replies[0]["to"] == "15551234567"
