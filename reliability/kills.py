"""SIGKILL trials: ``harness record`` and ``harness proxy`` killed at random instants.

A recording is only worth keeping if a crash leaves it readable. Each trial
starts the command as a process of its own, kills it with SIGKILL at an
instant drawn from a seeded generator, and then checks what it left:

- ``record``: the bundled happy-path scenario; the fixture (if the process got
  as far as creating one) must load, and its events must be the first events
  of a complete recording of the same scenario, in order (nothing lost in
  the middle, nothing invented);
- ``proxy``: the simulator plays Meta and the Graph API, the reference agent
  sits behind the proxy, a user books a table; the fixture must load, every
  user message Meta saw acknowledged must be in it, and at most one
  acknowledged delivery (the one in flight) may be missing.

Run: ``python reliability/kills.py`` (``--trials 20`` each, ``--seed 7``).
Prints one line per trial and a summary row per command, as RELIABILITY.md
shows them.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
from starlette.applications import Starlette

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.booking import agent_factory  # noqa: E402  # after the path tweak
from channels.whatsapp.channel import agent_settings  # noqa: E402
from channels.whatsapp.config import SimulatorConfig  # noqa: E402
from channels.whatsapp.server import BackgroundServer  # noqa: E402
from channels.whatsapp.simulator import WhatsAppSimulator  # noqa: E402
from harness.channel import AgentEnvironment  # noqa: E402
from harness.clock import SystemClock, VirtualClock  # noqa: E402
from harness.exceptions import HarnessError  # noqa: E402
from harness.fixture import Fixture, load_fixture  # noqa: E402
from harness.store import MemoryStore  # noqa: E402
from harness.trace import Conversation, DeliveryAttempt, Event, InboundMessage  # noqa: E402
from tests.bots.loopback import free_port  # noqa: E402

SCENARIO = ROOT / "scenarios" / "booking" / "happy_confirm_button.yaml"
USER = "5511987654321"


@dataclass
class Trial:
    """What one killed process left behind."""

    command: str
    killed_after: float
    loaded: bool
    kept: int
    lost: int
    problem: str = ""
    #: The process had already ended when the kill came (a short recording can).
    finished: bool = False

    @property
    def ok(self) -> bool:
        """Whether the fixture loaded and lost nothing beyond the event in flight."""
        return self.loaded and not self.problem


def _load(out: Path) -> Fixture | None:
    """The fixture at ``out``, or None if the process died before it wrote meta.json."""
    if not (out / "meta.json").exists():
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn last line is expected, and dropped
        return load_fixture(out)


def _shape(event: Event) -> tuple[str, ...]:
    """An event without its ids and instants, which differ from run to run."""
    text = getattr(event, "text", None)
    return (event.kind, str(getattr(event, "type", "")), str(text or ""))


# -- harness record ----------------------------------------------------------------------


def record_command(out: Path) -> list[str]:
    """``harness record`` of the bundled happy-path scenario into ``out``."""
    return [sys.executable, "-m", "harness", "record", str(SCENARIO), "--out", str(out)]


async def started(out: Path, process: asyncio.subprocess.Process) -> float:
    """Wait until the recording has begun (its meta.json exists); the time that took."""
    started = time.perf_counter()
    while not (out / "meta.json").exists() and process.returncode is None:  # noqa: ASYNC110  # a file appearing: nothing to wait on but polling
        await asyncio.sleep(0.002)
    return time.perf_counter() - started


async def _complete_recording(workdir: Path) -> tuple[list[tuple[str, ...]], float]:
    """A whole recording's events, and how long it runs once it has begun."""
    out = workdir / "complete"
    process = await asyncio.create_subprocess_exec(
        *record_command(out),
        cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    await started(out, process)
    began = time.perf_counter()
    if await process.wait() != 0:
        raise RuntimeError("the complete recording failed")
    fixture = load_fixture(out)
    return [_shape(e) for e in fixture.events], time.perf_counter() - began


async def _record_trial(
    workdir: Path, n: int, after: float, complete: list[tuple[str, ...]]
) -> Trial:
    out = workdir / f"record-{n}"
    process = await asyncio.create_subprocess_exec(
        *record_command(out),
        cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    await started(out, process)  # the kill falls while the scenario runs, not at start-up
    await asyncio.sleep(after)
    finished = process.returncode is not None
    if not finished:
        process.send_signal(signal.SIGKILL)
    await process.wait()
    try:
        fixture = _load(out)
    except HarnessError as exc:
        return Trial("record", after, False, 0, 0, f"does not load: {exc}")
    if fixture is None:
        return Trial("record", after, False, 0, 0, "no fixture at all")
    kept = [_shape(e) for e in fixture.events]
    if kept != complete[: len(kept)]:
        problem = "events are not the run's first ones"
        return Trial("record", after, True, len(kept), 0, problem, finished)
    return Trial("record", after, True, len(kept), len(complete) - len(kept), "", finished)


# -- harness proxy -----------------------------------------------------------------------


@asynccontextmanager
async def _agent(config: SimulatorConfig, proxy_url: str) -> AsyncIterator[BackgroundServer]:
    http = httpx.AsyncClient(timeout=10)
    env = AgentEnvironment(
        channel="whatsapp",
        settings={**agent_settings(config, proxy_url), "BOOKING_DEBOUNCE_SECONDS": "0.2"},
        clock=SystemClock(),
        store=MemoryStore(),
        http_client=http,
    )
    app = agent_factory(env)
    assert isinstance(app, Starlette)
    try:
        async with BackgroundServer(app) as server:
            yield server
    finally:
        await app.state.agent.aclose()
        await http.aclose()


async def _wait_for(url: str, process: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + 20
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline and process.returncode is None:
            try:
                await client.get(url)
                return
            except httpx.TransportError:
                await asyncio.sleep(0.05)
    raise RuntimeError("the proxy did not start")


async def _chat(sim: WhatsAppSimulator) -> None:
    await sim.say(USER, "A table on friday at 8pm for two please")
    await sim.settle()
    await sim.tap(USER, "confirm")
    await sim.settle()
    await sim.say(USER, "thanks!")
    await sim.settle()


async def proxy_chat(
    out: Path,
    *,
    kill_after: float | None = None,
    app_secret: str | None = None,
    verify_token: str | None = None,
    access_token: str | None = None,
) -> tuple[bytes, Conversation]:
    """A chat recorded by ``harness proxy`` into ``out``; its output and Meta's view of the chat.

    With ``kill_after``, the proxy is killed with SIGKILL that many seconds
    into the chat. The simulator's conversation is kept on ``proxy_chat.sim``
    for the caller to compare.
    """
    graph_port, proxy_port = free_port(), free_port()
    secrets = {"app_secret": app_secret, "verify_token": verify_token, "access_token": access_token}
    config = SimulatorConfig(public_url=f"http://127.0.0.1:{graph_port}").model_copy(
        update={k: v for k, v in secrets.items() if v is not None}
    )
    sim = WhatsAppSimulator(config, clock=VirtualClock(datetime.now(UTC).replace(microsecond=0)))
    proxy_url = f"http://127.0.0.1:{proxy_port}"
    async with (
        BackgroundServer(sim.graph_app, port=graph_port) as graph,
        _agent(config, proxy_url) as agent,
    ):
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "channels.whatsapp.proxy_cli"),
            *("--listen", f"127.0.0.1:{proxy_port}", "--agent-url", f"{agent.url}/webhook"),
            *("--upstream-graph", graph.url, "--out", str(out)),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={
                **os.environ,
                "WHATSAPP_APP_SECRET": config.app_secret,
                "WHATSAPP_VERIFY_TOKEN": config.verify_token,
            },
        )
        try:
            await _wait_for(f"{proxy_url}/webhook", process)
            sim.connect(f"{proxy_url}/webhook")
            sim.add_user(USER, "Ana")
            chat = asyncio.create_task(_chat(sim))
            if kill_after is None:
                await chat
                process.send_signal(signal.SIGINT)
            else:
                await asyncio.sleep(kill_after)
                process.send_signal(signal.SIGKILL)
            printed, _ = await process.communicate()
            if not chat.done():
                # What Meta saw acknowledged is settled once the proxy is dead (an answer already
                # on its way is read within moments); its retries to a dead webhook, which take
                # seconds to give up, are not what is checked.
                await asyncio.wait({chat}, timeout=0.5)
                chat.cancel()
                await asyncio.gather(chat, return_exceptions=True)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            await sim.aclose()
    return printed, sim.conversation()


async def _proxy_trial(workdir: Path, n: int, after: float) -> Trial:
    out = workdir / f"proxy-{n}"
    _, seen = await proxy_chat(out, kill_after=after)
    try:
        fixture = _load(out)
    except HarnessError as exc:
        return Trial("proxy", after, False, 0, 0, f"does not load: {exc}")
    if fixture is None:
        return Trial("proxy", after, False, 0, 0, "no fixture at all")
    acknowledged = [d for d in seen.deliveries() if d.status_code == 200]
    delivered = [e for e in fixture.events if isinstance(e, DeliveryAttempt)]
    recorded = {e.wamid for e in fixture.events if isinstance(e, InboundMessage)}
    acked_messages = {
        m.wamid for m in seen.inbound() if any(d.delivery == m.delivery for d in acknowledged)
    }
    lost = max(0, len(acknowledged) - len(delivered))
    problem = ""
    if lost > 1:
        problem = f"{lost} acknowledged deliveries missing"
    elif len(acked_messages - recorded) > 1:
        problem = f"{len(acked_messages - recorded)} acknowledged messages missing"
    return Trial("proxy", after, True, len(fixture.events), lost, problem)


# -- the run -----------------------------------------------------------------------------


async def run(trials: int, seed: int) -> list[Trial]:
    """Run every trial; one line per trial as it ends."""
    rng = random.Random(seed)
    results: list[Trial] = []
    with tempfile.TemporaryDirectory(prefix="harness-kills-") as tmp:
        workdir = Path(tmp)
        complete, full = await _complete_recording(workdir)
        for n in range(trials):
            trial = await _record_trial(workdir, n, rng.uniform(0.0, full), complete)
            results.append(trial)
            _print(trial)
        for n in range(trials):
            trial = await _proxy_trial(workdir, n, rng.uniform(0.05, 1.5))
            results.append(trial)
            _print(trial)
    return results


def _print(trial: Trial) -> None:
    verdict = "ok" if trial.ok else f"FAILED: {trial.problem}"
    if trial.finished:
        verdict += ", it had finished"
    print(
        f"{trial.command:<7} killed after {trial.killed_after:5.2f} s: "
        f"{trial.kept:3d} events kept, {trial.lost} not yet written ({verdict})",
        flush=True,
    )


def summary(results: list[Trial]) -> list[str]:
    """One markdown table row per command."""
    rows = []
    for command in ("record", "proxy"):
        mine = [t for t in results if t.command == command]
        loaded = sum(t.loaded for t in mine)
        bad = [t for t in mine if not t.ok]
        rows.append(
            f"| SIGKILL of `harness {command}` at a random instant | {len(mine)} | "
            f"{loaded} of {len(mine)} fixtures load; {len(bad)} lost more than the event "
            f"in flight |"
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    """Run the trials and print the summary; exit 1 if any trial lost more than it may."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # the agent's complaints about the dead proxy
    results = asyncio.run(run(args.trials, args.seed))
    print()
    print("\n".join(summary(results)))
    sys.exit(0 if all(t.ok for t in results) else 1)


if __name__ == "__main__":
    main()
