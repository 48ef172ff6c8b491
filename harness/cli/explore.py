"""``harness explore``: search a scenario's channel schedules for one that breaks the agent.

Hypothesis draws each run's schedule (see :mod:`harness.suites.explorer`);
the first failing one is shrunk and written as a plain scenario file, with
its faults as explicit steps, that ``harness run FILE`` plays the same way.
Exit codes: 0 nothing failed within the budget, 1 a failing schedule was
found and written, 2 bad input or an error.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli._shared_options import number_options, number_settings, url_target_options
from harness.cli.project import find_project, resolve_target
from harness.exceptions import ConfigError
from harness.options import parse_settings, positive_seconds

if TYPE_CHECKING:
    from harness.results import ScenarioResult
    from harness.suites.explorer import Exploration, ExploreStats
    from harness.suites.scenario import Scenario
    from harness.suites.schedules import Schedule

__all__ = ["ExploreProgress", "explore_command", "found_yaml", "summary_lines"]


class ExploreProgress:
    """Progress lines on stderr: every tenth of the budget, each failure, each smaller one."""

    def __init__(self, budget: int, *, quiet: bool = False) -> None:
        self.budget = budget
        self.quiet = quiet
        self._every = max(1, budget // 10)
        self._smallest: int | None = None

    def __call__(self, stats: ExploreStats, schedule: Schedule, result: ScenarioResult) -> None:
        """Hear of one run."""
        if self.quiet:
            return
        failed = result.status != "passed"
        if failed and self._smallest is None:
            self._smallest = schedule.size
            why = _why(result)
            click.echo(
                f"run {stats.runs}: FAIL with {_faults(schedule.size)} ({schedule.describe()})"
                f": {why}; shrinking",
                err=True,
            )
        elif failed and self._smallest is not None and schedule.size < self._smallest:
            self._smallest = schedule.size
            click.echo(
                f"shrinking (run {stats.shrink_runs}): {_faults(schedule.size)} still"
                f" fail{'s' if schedule.size == 1 else ''}"
                f" ({schedule.describe()})",
                err=True,
            )
        elif not stats.shrinking and stats.runs % self._every == 0:
            rate = stats.runs / stats.elapsed if stats.elapsed else 0.0
            click.echo(
                f"explored {stats.runs}/{self.budget} schedules, 0 failing ({rate:.0f}/s)",
                err=True,
            )


def _faults(count: int) -> str:
    return f"{count} fault{'' if count == 1 else 's'}"


def _why(result: ScenarioResult) -> str:
    if result.error:
        return f"error: {result.error}"
    if result.violations:
        first = result.violations[0]
        return f"{first.rule}: {first.message}"
    return result.status


def summary_lines(exploration: Exploration) -> list[str]:
    """The end-of-search summary: runs, speed, and how many schedules held each fault."""
    from harness.suites.schedules import FAULT_KINDS

    stats = exploration.stats
    searched = stats.runs - stats.shrink_runs
    rate = stats.runs / stats.elapsed if stats.elapsed else 0.0
    lines = [
        f"explored {searched} schedule{'' if searched == 1 else 's'}"
        f" (budget {stats.budget}, seed {exploration.seed})"
        + (f" and {stats.shrink_runs} more while shrinking" if stats.shrink_runs else "")
        + f" in {stats.elapsed:.2f}s ({rate:.1f} schedules/s)"
    ]
    counts = ", ".join(f"{kind} {stats.kinds.get(kind, 0)}" for kind in FAULT_KINDS)
    lines.append(f"schedules holding each fault: {counts}")
    return lines


def found_yaml(exploration: Exploration, command: str, path: Path) -> str:
    """The failing scenario as a plain file, with a comment saying how it was found."""
    finding = exploration.finding
    assert finding is not None
    stats = exploration.stats
    header = [
        f"Found by `{command}`",
        f"(Hypothesis seed {exploration.seed}): schedule {stats.runs - stats.shrink_runs}"
        f" failed, shrunk in {stats.shrink_runs} more runs to these faults:",
        f"  {finding.schedule.describe()}",
        f"Every fault is written below as a plain step; reproduce with: harness run {path}",
    ]
    if not finding.confirmed:
        header.append("WARNING: played once more, the shrunk schedule passed: the agent is flaky.")
    comment = "".join(f"# {line}\n" for line in header)
    return comment + finding.scenario.to_yaml()


def _written(scenario: Scenario, seed: int, settings: dict[str, str]) -> Scenario:
    """The scenario as the file will carry it: its seed and the agent settings it ran with."""
    agent: dict[str, object] = {**scenario.agent, **settings}
    update: dict[str, object] = {"agent": agent}
    if scenario.seed is None:
        update["seed"] = seed
    return scenario.model_copy(update=update)


@click.command("explore")
@click.argument("scenario", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--budget",
    default=100,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many schedules to try before giving up (shrinking a failure runs more).",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=int,
    help="Seeds the search and the channel: the same seed explores the same schedules.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Where to write the failing scenario (default: ./STEM.failing.yaml).",
)
@click.option(
    "--target",
    default=None,
    help="The agent's factory, package.module:attr (default: target in [tool.harness]).",
)
@click.option(
    "--target-url",
    default=None,
    help="The agent's webhook URL, for an agent in another process (slower: real time).",
)
@click.option(
    "--agent-setting",
    "agent_settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A setting for the agent under test (repeatable); written into the failing file.",
)
@url_target_options
@number_options
@click.option("-q", "terse", is_flag=True, help="No progress lines: the summary alone.")
@click.pass_context
def explore_command(
    ctx: click.Context,
    scenario: Path,
    budget: int,
    seed: int,
    out: Path | None,
    target: str | None,
    target_url: str | None,
    agent_settings: tuple[str, ...],
    graph_host: str,
    graph_port: int,
    expect_timeout: str,
    quiet_window: str,
    app_secret: str | None,
    verify_token: str | None,
    access_token: str | None,
    phone_number_id: str | None,
    templates: str | None,
    terse: bool,
) -> None:
    """Search SCENARIO's channel schedules for one that breaks the agent; write it shrunk.

    Each run plays the scenario under faults Hypothesis draws (clock jumps
    between turns, split bursts, redeliveries, duplicated or reordered
    webhooks, a 500 and Meta's retry, latency, late or lost statuses, the
    agent's clock skewed) and checks its expectations and invariants. Exit 0
    when nothing failed within --budget, 1 when a failing schedule was found
    and written (see --out), 2 on bad input.
    """
    # Imported here, not above: `harness --help` reads this module for the help alone.
    from harness.suites.explorer import explore
    from harness.suites.runner import Runner, RunOptions
    from harness.suites.scenario import load_scenario

    project = find_project()
    loaded = load_scenario(scenario)
    target, target_url, _source = resolve_target(target, target_url, project)
    channel_options = number_settings(
        app_secret=app_secret,
        verify_token=verify_token,
        access_token=access_token,
        phone_number_id=phone_number_id,
        templates=templates,
    )
    if target_url is not None:
        channel_options["graph_url"] = f"http://{graph_host}:{graph_port}"
        channel_options["serve_graph"] = True
    settings = parse_settings(agent_settings, "--agent-setting")
    options = RunOptions(
        target=target,
        target_url=target_url,
        concurrency=1,
        seed=seed,
        agent_settings=settings,
        channel_options=channel_options,
        expect_timeout=positive_seconds(expect_timeout, "--expect-timeout"),
        quiet=positive_seconds(quiet_window, "--quiet"),
        import_paths=(str(project.root),) if project.root is not None else (),
    )
    runner = Runner(options)
    click.echo(
        f"exploring {loaded.name} ({scenario}) against {runner.target}: "
        f"up to {budget} schedules, seed {seed}",
        err=True,
    )
    started = time.perf_counter()
    exploration = explore(
        runner, loaded, budget=budget, seed=seed, on_run=ExploreProgress(budget, quiet=terse)
    )
    for line in summary_lines(exploration):
        click.echo(line)
    finding = exploration.finding
    if finding is None:
        click.echo(f"no failing schedule in {budget} tries ({time.perf_counter() - started:.1f}s)")
        ctx.exit(0)
    if finding.schedule.size == 0:  # nothing the channel did: the scenario fails as it is
        raise ConfigError(
            f"{scenario}: fails with no channel fault at all ({_why(finding.result)}); "
            "fix it with harness run first"
        )
    written = replace(
        exploration, finding=replace(finding, scenario=_written(finding.scenario, seed, settings))
    )
    path = out or Path(f"{scenario.stem}.failing.yaml")
    command = f"harness explore {scenario} --budget {budget} --seed {seed}"
    try:
        path.write_text(found_yaml(written, command, path), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: can't write the failing scenario: {exc.strerror}") from None
    click.echo(f"FAIL: {_why(finding.result)}")
    click.echo(f"minimal schedule: {finding.schedule.describe()}")
    click.echo(f"wrote {path}; reproduce with: harness run {path}")
    ctx.exit(1)
