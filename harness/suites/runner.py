"""Running scenario suites: each scenario through a channel, isolated, many at once.

The runner finds the channel among the installed plugins, builds the agent
under test from its import path (or reaches it at a URL), plays every step on
the channel's virtual clock, checks each ``expect`` step as it comes and the
scenario's invariants over the whole conversation, and collects a
:class:`~harness.results.RunResult`.

Scenarios are isolated from each other: each has its own channel session
(its own simulator, users and clock) and its own store namespace, so they
can share one Redis. Results do not depend on ``--concurrency``: the same
seed gives the same conversations, each run with message ids of its own (the
channel derives them from the seed and the run's namespaces). Concurrent scenarios of a large suite
run on every core, in this process and in worker processes (in-process scenarios
are CPU-bound: :mod:`harness.suites._spread`); a small suite,
or one with channel plugins handed in directly, runs on worker threads. Each
worker has its own event loop, because a virtual clock moves only when its
loop has nothing else to do.
Against a URL there is one agent and one fake Graph API port: the scenarios
share the channel's run context (one Graph API routing each send to its
scenario), each gets users of its own, and they wait on the agent in real
time, as a person watching the phone would.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from harness.agent_contract import explain_agent_error, loop_errors
from harness.channel import AgentFactory, ChannelSession, ChannelSetup, UserSpec, settings_check
from harness.exceptions import ConfigError, HarnessError, StepError
from harness.failures import collecting_failures
from harness.inflight import running_on
from harness.plugins import ChannelPlugin, load_channel_plugins
from harness.recording import Recording
from harness.results import RunResult, ScenarioResult, ScenarioStatus, Skip, Violation
from harness.store import Store, check_store, open_store
from harness.suites._spread import PROCESS_THRESHOLD, spread
from harness.suites.expectations import check_expectation
from harness.suites.fit import ChannelFit
from harness.suites.invariants import BoundInvariant
from harness.suites.messages import MessageLabels
from harness.suites.preflight import bind_invariants, check_agent_settings, check_faults
from harness.suites.realtime import (
    distinct_user,
    expect_in_time,
    numbers_seen,
    revisions,
    with_run_news,
)
from harness.suites.reproduce import shortest_reproduction
from harness.suites.run_options import RunOptions as RunOptions
from harness.suites.scenario import Scenario
from harness.suites.sending import change_faults, check_step_messages, send_step
from harness.suites.simulate import Stretch, play_simulation
from harness.suites.simulate_step import SimulateStep
from harness.suites.steps import (
    ExpectStep,
    FaultsStep,
    LabelledStep,
    RedeliverStep,
    SayStep,
    SendStep,
    TapStep,
    UserStep,
    WaitStep,
)
from harness.suites.store_watch import watch_outages
from harness.suites.target import DEFAULT_TARGET, describe_factory, load_target, settings_from
from harness.suites.target_url import check_target_url
from harness.suites.user_clients import check_user_models, user_client
from harness.trace import Conversation

__all__ = ["Runner"]


@dataclass
class _Progress:
    """What one scenario run has done so far, for its result and the reproducing YAML."""

    violations: list[Violation] = field(default_factory=list)
    turns_after: list[int] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    agent_errors: list[str] = field(default_factory=list)
    stretches: list[Stretch] = field(default_factory=list)
    seed: int = 0
    recording: Recording | None = None


class Runner:
    """Runs scenarios through one channel against one agent."""

    def __init__(
        self,
        options: RunOptions,
        *,
        plugins: Mapping[str, ChannelPlugin] | None = None,
        factory: AgentFactory | None = None,
    ) -> None:
        """``factory`` builds the agent instead of the one ``options.target`` names."""
        if options.concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1, not {options.concurrency}")
        if options.target and options.target_url:
            raise ConfigError("give --target or --target-url, not both")
        if options.target_url is not None:
            check_target_url(options.target_url)
        self.options = options
        found = load_channel_plugins() if plugins is None else dict(plugins)
        if options.channel not in found:
            known = ", ".join(sorted(found)) or "none installed"
            raise ConfigError(f"--channel {options.channel!r}: unknown channel ({known})")
        self.plugin = found[options.channel]
        self._channels = frozenset(found)
        # Installed plugins and a named target can be found again by a worker process;
        # plugins or a factory handed in can't.
        self._own_plugins = plugins is None and factory is None
        self.factory: AgentFactory | None = factory
        if options.target_url is None and factory is None:
            self.factory = load_target(
                options.target or DEFAULT_TARGET, search=options.import_paths
            )
        self.target = options.target_url or options.target or DEFAULT_TARGET
        if factory is not None and options.target_url is None:
            self.target = options.target or describe_factory(factory)

    async def run(
        self,
        scenarios: Sequence[Scenario],
        *,
        on_result: Callable[[ScenarioResult], None] | None = None,
        on_revised: Callable[[ScenarioResult, ScenarioResult], None] | None = None,
    ) -> RunResult:
        """Run every scenario; results come back in the scenarios' order.

        Against an agent at a URL the scenarios share this event loop (they
        wait rather than compute) and the channel's run context; the run ends
        a ``quiet`` window after its last scenario, so that whatever the agent
        still sends is reported, as late, on the scenario it belongs to.
        ``on_revised`` hears of a result ``on_result`` was given that this
        changed (a scenario that passed, failed by a late send): before, after.
        """
        await check_store(self.options.store_url)  # a dead store stops the run at once
        bound = [bind_invariants(s) for s in scenarios]
        self.check(scenarios)
        started_at = datetime.now(UTC)
        started = time.perf_counter()
        # Users on the scenarios' own numbers: two scenarios at once could share one.
        at_once = 1 if self.options.keep_numbers else self.options.concurrency
        workers = max(1, min(at_once, len(scenarios)))
        run_id = f"run{self.options.seed}-{started_at.strftime('%Y%m%d%H%M%S%f')}"
        results: list[ScenarioResult | None] = [None] * len(scenarios)
        pending = iter(range(len(scenarios)))
        lock = threading.Lock()
        main_loop = asyncio.get_running_loop()

        stop = threading.Event()

        def report(result: ScenarioResult) -> None:
            if self._stops_after(result):
                stop.set()
            if on_result is not None:
                on_result(result)

        def next_index() -> int | None:
            with lock:
                return None if stop.is_set() else next(pending, None)

        async def work(in_main_loop: bool) -> None:
            # Each worker has its own store connection: a Redis client belongs to one loop.
            store = open_store(self.options.store_url)
            try:
                while (index := next_index()) is not None:
                    result = await self.run_scenario(
                        scenarios[index],
                        bound[index],
                        store=store,
                        namespace=f"{run_id}:{index}",
                    )
                    results[index] = result
                    if self._stops_after(result):
                        stop.set()  # at once: the main loop hears of it later
                    if in_main_loop:
                        report(result)
                    else:
                        main_loop.call_soon_threadsafe(report, result)
            finally:
                await store.close()

        processes = self._processes(len(scenarios))
        if self.options.target_url is not None:
            # An agent at a URL lives on real time: its scenarios wait for it rather than
            # compute, so they share this loop and the run's one fake Graph API server.
            async with self.run_context() as shared:
                reported = await self._run_remote(
                    scenarios, bound, run_id, results, report, shared, workers, next_index
                )
            if on_revised is not None:
                for before, after in revisions(reported, results):
                    on_revised(before, after)
        elif self.in_processes(len(scenarios)):
            # In-process scenarios are CPU-bound: this process and worker processes run
            # them side by side, one core each. This process plays its share in this loop,
            # one scenario at a time; the hand-overs to the workers wait here for results.

            def finished(index: int, result: ScenarioResult) -> None:
                results[index] = result
                report(result)

            await spread(
                lambda: work(in_main_loop=True),
                Runner,
                processes - 1,
                self.options,
                scenarios,
                run_id,
                next_index,
                finished,
                stop,
            )
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

    def in_processes(self, count: int) -> bool:
        """Whether a run of ``count`` scenarios plays in worker processes beside this one.

        A large in-process suite does, at a concurrency above one on a machine
        with more than one core. The workers start before the first scenario
        plays, forked when no other thread is alive (see
        :mod:`harness.suites._spread`): a caller that draws progress from a
        thread of its own starts drawing after the first result.
        """
        return (
            self.options.target_url is None
            and self._processes(count) > 1
            and count >= PROCESS_THRESHOLD
            and self._own_plugins
        )

    def _processes(self, count: int) -> int:
        """Processes a run of ``count`` scenarios may use: one per core, up to its concurrency."""
        return max(1, min(self.options.concurrency, count, os.cpu_count() or 1))

    def _stops_after(self, result: ScenarioResult) -> bool:
        """Whether no scenario should start after this one: -x and a failure, or an outage."""
        failed = self.options.fail_fast and result.status in ("failed", "error")
        return failed or result.outage

    def check(self, scenarios: Sequence[Scenario]) -> None:
        """What the channel and the agent say of each scenario's messages, faults and settings.

        Raises :class:`~harness.exceptions.ScenarioError` naming the file and
        line of the first problem (see :mod:`harness.suites.preflight`).
        """
        check_user_models(scenarios, self.options.user_model, self.options.user_model_key)
        if self.plugin.check_options is not None:
            try:
                self.plugin.check_options(self.options.channel_options)
            except ConfigError:
                raise
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        if self.plugin.check_message is not None:
            check_step_messages(scenarios, self.plugin.check_message)
        if self.plugin.check_faults is not None:
            check_faults(scenarios, self.plugin.check_faults)
        agent_check = settings_check(self.factory)
        if agent_check is not None:
            check_agent_settings(scenarios, agent_check)

    def run_context(self) -> AbstractAsyncContextManager[Any]:
        """What the channel shares between the scenarios of this run (nothing by default)."""
        if self.plugin.run_context is None:
            return nullcontext()
        return self.plugin.run_context(
            target_url=self.options.target_url, options=dict(self.options.channel_options)
        )

    async def _run_remote(
        self,
        scenarios: Sequence[Scenario],
        bound: Sequence[Sequence[BoundInvariant]],
        run_id: str,
        results: list[ScenarioResult | None],
        report: Callable[[ScenarioResult], None],
        shared: Any,
        workers: int,
        next_index: Callable[[], int | None],
    ) -> list[ScenarioResult | None]:
        """Scenarios against an agent at a URL, ``workers`` at a time, in this event loop.

        Returns the results as they were reported, before the run's news changed any.
        """
        store = open_store(self.options.store_url)

        async def work() -> None:
            while (index := next_index()) is not None:
                results[index] = await self.run_scenario(
                    scenarios[index],
                    bound[index],
                    store=store,
                    namespace=f"{run_id}:{index}",
                    shared=shared,
                )
                report(results[index])  # type: ignore[arg-type]  # set just above

        try:
            await asyncio.gather(*(work() for _ in range(workers)))
        finally:
            await store.close()
        reported = list(results)
        if shared is None:
            return reported
        # The last scenarios' late sends still reach the run's Graph API for a while.
        await asyncio.sleep(self.options.quiet)
        # What the agent sent for a scenario after it ended is that scenario's, never another's;
        # what it sent to a number no scenario plays goes on the scenarios running then.
        for index, result in enumerate(results):
            if result is not None:
                written = {u.wa_id: u.name for u in scenarios[index].users if u.wa_id}
                results[index] = with_run_news(result, shared, f"{run_id}:{index}", written)
        return reported

    async def run_scenario(
        self,
        scenario: Scenario,
        invariants: Sequence[BoundInvariant] | None = None,
        *,
        store: Store | None = None,
        namespace: str = "",
        recording: Recording | None = None,
        before_close: Callable[[ChannelSession], Awaitable[None]] | None = None,
        shared: Any = None,
    ) -> ScenarioResult:
        """Play one scenario and check it; an agent that crashes gives an ``error`` result.

        ``recording`` makes the agent's seams record or replay (see
        :mod:`harness.recording`); ``before_close`` sees the session before it
        is closed (to collect media, say).
        """
        if invariants is None:  # played on its own, not as part of run(): check it here
            invariants = bind_invariants(scenario)
            self.check([scenario])
        checks = invariants
        seed = scenario.seed if scenario.seed is not None else self.options.seed
        fit = ChannelFit(self.options.channel, self.plugin.unsupported)
        not_here = fit.scenario_skip(scenario, self._channels)
        if not_here is not None:
            return ScenarioResult(
                name=scenario.name,
                path=str(scenario.path or ""),
                channel=self.options.channel,
                seed=seed,
                status="skipped",
                faults=_faults_of(scenario),
                skipped=(not_here,),
            )
        users = [UserSpec(u.name, u.wa_id, u.bsuid, u.on_whatsapp) for u in scenario.users]
        if self.options.target_url is not None and namespace and not self.options.keep_numbers:
            # One agent serves every scenario of the run, and remembers users across runs:
            # each scenario gets numbers of its own, so none sees another's conversation.
            users = [distinct_user(u, namespace) for u in users]
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
            shared=shared,
            real_work_limit=self.options.real_work_limit,
            start=self.options.start if self.options.target_url is None else None,
        )
        started = time.perf_counter()
        progress = _Progress(skipped=fit.skipped, seed=seed, recording=recording)
        session: ChannelSession | None = None
        error: str | None = None
        conversation = None
        # A store that fails under the scenario, whoever catches its error, leaves no verdict.
        async with watch_outages(store) as outages:
            try:
                session = self.plugin.factory(setup)
            except HarnessError as exc:
                error = str(exc)
            if session is not None:
                # Real work the agent starts (model calls, store and HTTP requests) holds this
                # clock; what an in-process agent raises in the background is this scenario's.
                crashes: AbstractAsyncContextManager[list[BaseException]] = (
                    loop_errors() if self.factory is not None else nullcontext([])
                )
                with running_on(session.clock), collecting_failures() as agent_errors:
                    async with crashes as crashed:
                        conversation, error = await self._run(
                            scenario, session, users, progress, checks, before_close, fit
                        )
                progress.agent_errors.extend(agent_errors)
                if crashed and error is None:
                    error = explain_agent_error(crashed[0])
        if outages:
            error = outages.messages[0]
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
            outage=bool(outages),
            conversation=conversation,
            faults=_faults_of(scenario),
            reproduce=(
                shortest_reproduction(scenario, violations, progress.turns_after)
                if status != "passed"
                else ""
            ),
            skipped=tuple(progress.skipped),
            agent_errors=tuple(progress.agent_errors),
            numbers=numbers_seen(scenario.users, users),
            simulated=tuple(line for stretch in progress.stretches for line in stretch.actions),
        )

    async def _run(
        self,
        scenario: Scenario,
        session: ChannelSession,
        users: Sequence[UserSpec],
        progress: _Progress,
        checks: Sequence[BoundInvariant],
        before_close: Callable[[ChannelSession], Awaitable[None]] | None,
        fit: ChannelFit,
    ) -> tuple[Conversation, str | None]:
        """Start the session, play the steps, check the invariants, close; the error, if any."""
        error: str | None = None
        conversation: Conversation | None = None
        try:
            await session.start()
            try:
                await self._play(scenario, session, users, progress, fit)
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
            conversation = session.conversation(finished=True)
            for check in checks:
                progress.violations.extend(check.run(conversation))
        except HarnessError as exc:
            error = str(exc)
        except Exception as exc:  # the agent under test crashed: a result, not a crash of ours
            error = explain_agent_error(exc)
        finally:
            if conversation is None:
                conversation = session.conversation(finished=True)
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
        fit: ChannelFit,
    ) -> None:
        names = {u.key: u.name for u in users}
        by_name = {u.name: u for u in users}
        since = 0
        before = 0
        step_at = session.now()
        real = session.real_time
        acted = False
        labels = MessageLabels()
        # Dates in expectations (${friday}) count from the day the conversation starts.
        start = session.now().astimezone(UTC).date()
        for written in scenario.steps:
            step = fit.step(written)
            if step is None:  # this channel can't play it: noted in the result
                if isinstance(written, ExpectStep) and written.label is not None:
                    user = by_name[written.user].key if written.user else users[0].key
                    labels.expect_step(written.label, session.conversation(), user, since)
                progress.turns_after.append(len(session.conversation().turns))
                continue
            # Each step acts as its own `as:` user, else as the first user.
            acting = users[0]
            if isinstance(step, UserStep) and step.user is not None:
                acting = by_name[step.user]
            if isinstance(step, SayStep | TapStep | SendStep | RedeliverStep):
                if real and acted:
                    # A person answers once the agent has finished with their last message.
                    await session.quiet(self.options.quiet, self.options.expect_timeout)
                acted = True
                since = len(session.conversation().events)
                before = len(session.conversation().inbound(acting.key))
                step_at = session.now()
            if isinstance(step, SendStep) or (isinstance(step, SayStep) and step.reply_to):
                await send_step(scenario, step, session, acting, labels)
            elif isinstance(step, SayStep):
                await session.say(acting.name, list(step.say), gap=step.gap.total_seconds())
            elif isinstance(step, TapStep):
                await session.tap(acting.name, step.tap)
            elif isinstance(step, RedeliverStep):
                await session.redeliver(acting.name, step.which)
            elif isinstance(step, FaultsStep):
                await change_faults(session, step.faults)
            elif isinstance(step, WaitStep):
                await session.wait(step.duration.total_seconds())
                if real:
                    await session.quiet(self.options.quiet, self.options.expect_timeout)
            elif isinstance(step, SimulateStep):
                stretch = await play_simulation(
                    step,
                    session=session,
                    acting=acting,
                    client=user_client(self.options, progress.recording, session.clock),
                    seed=progress.seed,
                    scenario_path=scenario.path,
                    names=names,
                    start=start,
                    quiet=(self.options.quiet, self.options.expect_timeout) if real else None,
                )
                progress.violations.extend(stretch.violations)
                progress.stretches.append(stretch)
                since, step_at = stretch.since, stretch.step_at or step_at
                acted = True
            elif isinstance(step, ExpectStep):
                if real:
                    await expect_in_time(
                        step,
                        session,
                        expect_timeout=self.options.expect_timeout,
                        quiet=self.options.quiet,
                        since=since,
                        user=acting.key,
                        step_at=step_at,
                    )
                elif step.within is not None:
                    await session.wait(step.within.total_seconds())
                progress.violations.extend(
                    check_expectation(
                        step,
                        session.conversation(),
                        since=since,
                        user=acting.key,
                        step_at=step_at,
                        names=names,
                        start=start,
                    )
                )
            if not isinstance(step, ExpectStep | WaitStep):
                await session.settle()
            if isinstance(step, LabelledStep) and step.label is not None:
                trace = session.conversation()
                if isinstance(step, ExpectStep):
                    labels.expect_step(step.label, trace, acting.key, since)
                else:
                    labels.user_step(step.label, trace, acting.key, before)
            progress.turns_after.append(len(session.conversation().turns))
        if real:
            # The scenario ends when its agent has gone quiet; what comes later is late.
            await session.quiet(self.options.quiet, self.options.expect_timeout)


def _faults_of(scenario: Scenario) -> dict[str, Any]:
    faults = scenario.faults
    if faults is None:
        return {}
    if isinstance(faults, str):
        return {"preset": faults}
    return dict(faults)
