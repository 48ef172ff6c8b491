"""Running scenario suites: each scenario through a channel, isolated, many at once.

The runner finds the channel among the installed plugins, builds the agent
under test from its import path (or reaches it at a URL), plays every step on
the channel's virtual clock, checks each ``expect`` step as it comes and the
scenario's invariants over the whole conversation, and collects a
:class:`~harness.results.RunResult`.

Scenarios are isolated from each other: each has its own channel session
(its own simulator, users and clock) and its own store namespace, so they
can share one Redis. Results do not depend on ``--concurrency``: the same
seed gives the same conversations. Concurrent scenarios of a large suite
run in worker processes (in-process scenarios are CPU-bound); a small suite,
or one with channel plugins handed in directly, runs on worker threads. Each
worker has its own event loop, because a virtual clock moves only when its
loop has nothing else to do.
Against a URL there is one agent and one fake Graph API port, so scenarios
run one at a time.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import multiprocessing
import os
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from harness.channel import AgentFactory, ChannelSession, ChannelSetup, UserSpec
from harness.exceptions import ConfigError, HarnessError, StepError
from harness.inflight import running_on
from harness.plugins import ChannelPlugin, load_channel_plugins
from harness.recording import Recording
from harness.results import RunResult, ScenarioResult, ScenarioStatus, Violation
from harness.store import Store, open_store
from harness.suites.expectations import check_expectation
from harness.suites.invariants import BoundInvariant, bind
from harness.suites.scenario import Scenario
from harness.suites.steps import (
    ExpectStep,
    RedeliverStep,
    SayStep,
    SendStep,
    TapStep,
    UserStep,
    WaitStep,
)
from harness.trace import Conversation

__all__ = ["DEFAULT_TARGET", "RunOptions", "Runner", "load_target", "settings_from"]

#: The agent the harness runs when no target is given: the bundled booking agent.
DEFAULT_TARGET = "agents.booking:agent_factory"


@dataclass(frozen=True)
class RunOptions:
    """How to run a suite: against what, through which channel, how many at once."""

    channel: str = "whatsapp"
    target: str | None = None
    target_url: str | None = None
    concurrency: int = 4
    seed: int = 0
    store_url: str | None = None
    agent_settings: Mapping[str, str] = field(default_factory=dict)
    channel_options: Mapping[str, Any] = field(default_factory=dict)


def load_target(path: str) -> AgentFactory:
    """Import an agent factory named ``package.module:attribute``."""
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"--target {path!r}: expected package.module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"--target {path!r}: can't import {module_name}: {exc}") from None
    try:
        factory = getattr(module, attribute)
    except AttributeError:
        raise ConfigError(f"--target {path!r}: {module_name} has no {attribute!r}") from None
    if not callable(factory):
        raise ConfigError(f"--target {path!r}: {attribute} is not callable")
    return factory  # type: ignore[no-any-return]  # checked callable above


def settings_from(agent: Mapping[str, Any]) -> dict[str, str]:
    """A scenario's ``agent:`` mapping as settings strings (lists joined with commas)."""
    settings: dict[str, str] = {}
    for key, value in agent.items():
        if isinstance(value, bool):
            settings[key] = "true" if value else "false"
        elif isinstance(value, list | tuple):
            settings[key] = ",".join(str(v) for v in value)
        else:
            settings[key] = str(value)
    return settings


@dataclass
class _Progress:
    """What one scenario run has done so far, for its result and the reproducing YAML."""

    violations: list[Violation] = field(default_factory=list)
    turns_after: list[int] = field(default_factory=list)


class Runner:
    """Runs scenarios through one channel against one agent."""

    def __init__(
        self, options: RunOptions, *, plugins: Mapping[str, ChannelPlugin] | None = None
    ) -> None:
        if options.concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1, not {options.concurrency}")
        if options.target and options.target_url:
            raise ConfigError("give --target or --target-url, not both")
        self.options = options
        found = load_channel_plugins() if plugins is None else dict(plugins)
        if options.channel not in found:
            known = ", ".join(sorted(found)) or "none installed"
            raise ConfigError(f"--channel {options.channel!r}: unknown channel ({known})")
        self.plugin = found[options.channel]
        # Installed plugins can be found again by a worker process; plugins handed in can't.
        self._own_plugins = plugins is None
        self.factory: AgentFactory | None = None
        if options.target_url is None:
            self.factory = load_target(options.target or DEFAULT_TARGET)
        self.target = options.target_url or options.target or DEFAULT_TARGET

    async def run(
        self,
        scenarios: Sequence[Scenario],
        *,
        on_result: Callable[[ScenarioResult], None] | None = None,
    ) -> RunResult:
        """Run every scenario; results come back in the scenarios' order."""
        bound = [[bind(ref) for ref in s.invariants] for s in scenarios]
        started_at = datetime.now(UTC)
        started = time.perf_counter()
        limit = 1 if self.options.target_url else self.options.concurrency
        workers = max(1, min(limit, len(scenarios)))
        run_id = f"run{self.options.seed}-{started_at.strftime('%Y%m%d%H%M%S%f')}"
        results: list[ScenarioResult | None] = [None] * len(scenarios)
        pending = iter(range(len(scenarios)))
        lock = threading.Lock()
        main_loop = asyncio.get_running_loop()

        def report(result: ScenarioResult) -> None:
            if on_result is not None:
                on_result(result)

        async def work(in_main_loop: bool) -> None:
            # Each worker has its own store connection: a Redis client belongs to one loop.
            store = open_store(self.options.store_url)
            try:
                while True:
                    with lock:
                        index = next(pending, None)
                    if index is None:
                        return
                    result = await self.run_scenario(
                        scenarios[index],
                        bound[index],
                        store=store,
                        namespace=f"{run_id}:{index}",
                    )
                    results[index] = result
                    if in_main_loop:
                        report(result)
                    else:
                        main_loop.call_soon_threadsafe(report, result)
            finally:
                await store.close()

        processes = min(workers, os.cpu_count() or 1)
        # Starting a worker process costs about a second; it pays off on large suites.
        many = len(scenarios) >= _PROCESS_THRESHOLD
        if workers > 1 and processes > 1 and many and self._own_plugins:
            # In-process scenarios are CPU-bound: worker processes run them side by side.
            loop = asyncio.get_running_loop()
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
                futures = [
                    loop.run_in_executor(
                        pool, _run_elsewhere, self.options, scenario, f"{run_id}:{index}"
                    )
                    for index, scenario in enumerate(scenarios)
                ]
                for index, future in enumerate(futures):
                    future.add_done_callback(functools.partial(_finished, index, results, report))
                await asyncio.gather(*futures)
        elif workers == 1:
            await work(in_main_loop=True)
        else:
            # One event loop per worker thread: a virtual clock moves when its loop is
            # idle, and one loop shared by many scenarios would never be idle.
            await asyncio.gather(
                *(asyncio.to_thread(asyncio.run, work(in_main_loop=False)) for _ in range(workers))
            )
            await asyncio.sleep(0)  # deliver the last reports queued from the threads
        return RunResult(
            scenarios=tuple(r for r in results if r is not None),
            started_at=started_at,
            duration_s=round(time.perf_counter() - started, 3),
            target=self.target,
            channel=self.options.channel,
            seed=self.options.seed,
        )

    async def run_scenario(
        self,
        scenario: Scenario,
        invariants: Sequence[BoundInvariant] | None = None,
        *,
        store: Store | None = None,
        namespace: str = "",
        recording: Recording | None = None,
        before_close: Callable[[ChannelSession], Awaitable[None]] | None = None,
    ) -> ScenarioResult:
        """Play one scenario and check it; an agent that crashes gives an ``error`` result.

        ``recording`` makes the agent's seams record or replay (see
        :mod:`harness.recording`); ``before_close`` sees the session before it
        is closed (to collect media, say).
        """
        checks = [bind(ref) for ref in scenario.invariants] if invariants is None else invariants
        seed = scenario.seed if scenario.seed is not None else self.options.seed
        users = [UserSpec(u.name, u.wa_id, u.bsuid) for u in scenario.users]
        setup = ChannelSetup(
            users=users,
            seed=seed,
            faults=scenario.faults,
            agent_factory=self.factory,
            target_url=self.options.target_url,
            agent_settings={**settings_from(scenario.agent), **self.options.agent_settings},
            store=store,
            namespace=namespace,
            options=dict(self.options.channel_options),
            recording=recording,
        )
        started = time.perf_counter()
        progress = _Progress()
        session: ChannelSession | None = None
        error: str | None = None
        conversation = None
        try:
            session = self.plugin.factory(setup)
        except HarnessError as exc:
            error = str(exc)
        if session is not None:
            # Real work the agent starts (model calls, store and HTTP requests) holds this clock.
            with running_on(session.clock):
                conversation, error = await self._run(
                    scenario, session, users, progress, checks, before_close
                )
        violations = tuple(progress.violations)
        status: ScenarioStatus = "error" if error else ("failed" if violations else "passed")
        return ScenarioResult(
            name=scenario.name,
            path=str(scenario.path or ""),
            channel=self.options.channel,
            seed=seed,
            status=status,
            duration_s=round(time.perf_counter() - started, 4),
            violations=violations,
            error=error,
            conversation=conversation,
            faults=_faults_of(scenario),
            reproduce=_reproduce(scenario, violations, progress) if status != "passed" else "",
        )

    async def _run(
        self,
        scenario: Scenario,
        session: ChannelSession,
        users: Sequence[UserSpec],
        progress: _Progress,
        checks: Sequence[BoundInvariant],
        before_close: Callable[[ChannelSession], Awaitable[None]] | None,
    ) -> tuple[Conversation, str | None]:
        """Start the session, play the steps, check the invariants, close; the error, if any."""
        error: str | None = None
        conversation: Conversation | None = None
        try:
            await session.start()
            try:
                await self._play(scenario, session, users, progress)
            except StepError as exc:
                step = scenario.steps[len(progress.turns_after)]
                progress.violations.append(
                    Violation(
                        kind="expectation",
                        rule=step.action,
                        message=f"{exc} (the rest of the scenario was not played)",
                        step=step.index,
                        line=step.line,
                    )
                )
            conversation = session.conversation()
            for check in checks:
                progress.violations.extend(check.run(conversation))
        except HarnessError as exc:
            error = str(exc)
        except Exception as exc:  # the agent under test crashed: a result, not a crash of ours
            error = f"{type(exc).__name__}: {exc}"
        finally:
            if conversation is None:
                conversation = session.conversation()
            try:
                if before_close is not None:
                    await before_close(session)
                await session.close()
            except Exception as exc:  # closing a broken agent must not hide the result
                error = error or f"closing the agent failed: {type(exc).__name__}: {exc}"
        return conversation, error

    async def _play(
        self,
        scenario: Scenario,
        session: ChannelSession,
        users: Sequence[UserSpec],
        progress: _Progress,
    ) -> None:
        names = {u.key: u.name for u in users}
        by_name = {u.name: u for u in users}
        since = 0
        step_at = session.now()
        for step in scenario.steps:
            # Each step acts as its own `as:` user, else as the first user.
            acting = users[0]
            if isinstance(step, UserStep) and step.user is not None:
                acting = by_name[step.user]
            if isinstance(step, SayStep | TapStep | SendStep | RedeliverStep):
                since = len(session.conversation().events)
                step_at = session.now()
            if isinstance(step, SayStep):
                await session.say(acting.name, list(step.say), gap=step.gap.total_seconds())
            elif isinstance(step, TapStep):
                await session.tap(acting.name, step.tap)
            elif isinstance(step, SendStep):
                await session.send(acting.name, _message(step))
            elif isinstance(step, RedeliverStep):
                await session.redeliver(acting.name, step.which)
            elif isinstance(step, WaitStep):
                await session.wait(step.duration.total_seconds())
            elif isinstance(step, ExpectStep):
                if step.within is not None:
                    await session.wait(step.within.total_seconds())
                progress.violations.extend(
                    check_expectation(
                        step,
                        session.conversation(),
                        since=since,
                        user=acting.key,
                        step_at=step_at,
                        names=names,
                    )
                )
            if not isinstance(step, ExpectStep | WaitStep):
                await session.settle()
            progress.turns_after.append(len(session.conversation().turns))


#: Suites at least this large run in worker processes (smaller ones on threads).
_PROCESS_THRESHOLD = 100

_WORKER_RUNNERS: dict[int, Runner] = {}


def _run_elsewhere(options: RunOptions, scenario: Scenario, namespace: str) -> ScenarioResult:
    """Run one scenario in a worker process (its runner is built once per process)."""
    runner = _WORKER_RUNNERS.get(id(options))
    if runner is None:
        runner = _WORKER_RUNNERS[id(options)] = Runner(options)

    async def go() -> ScenarioResult:
        store = open_store(options.store_url)
        try:
            return await runner.run_scenario(scenario, store=store, namespace=namespace)
        finally:
            await store.close()

    return asyncio.run(go())


def _finished(
    index: int,
    results: list[ScenarioResult | None],
    report: Callable[[ScenarioResult], None],
    done: asyncio.Future[ScenarioResult],
) -> None:
    if done.cancelled() or done.exception() is not None:
        return
    results[index] = done.result()
    report(done.result())


def _message(step: SendStep) -> dict[str, Any]:
    if isinstance(step.send, str):
        content: dict[str, Any] = {}
        if step.caption is not None:
            content["caption"] = step.caption
        return {"type": step.send, step.send: content}
    return dict(step.send)


def _faults_of(scenario: Scenario) -> dict[str, Any]:
    faults = scenario.faults
    if faults is None:
        return {}
    if isinstance(faults, str):
        return {"preset": faults}
    return dict(faults)


def _reproduce(scenario: Scenario, violations: Sequence[Violation], progress: _Progress) -> str:
    """The shortest prefix of the scenario that still shows the first violation, as YAML."""
    if not violations:
        return scenario.to_yaml()
    first = violations[0]
    last_step = len(scenario.steps) - 1
    if first.step is not None:
        last_step = first.step
    elif first.turn is not None:
        for index, turns in enumerate(progress.turns_after):
            if turns > first.turn:
                last_step = index
                break
    steps = scenario.steps[: last_step + 1]
    rules = {v.rule for v in violations if v.kind == "invariant"}
    # A rule is the invariant's registered name, which a file may have written as an import path.
    invariants = tuple(ref for ref in scenario.invariants if bind(ref).name in rules)
    trimmed = scenario.model_copy(update={"steps": steps, "invariants": invariants})
    return trimmed.to_yaml()
