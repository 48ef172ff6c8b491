"""``harness run``: scenario suites from the command line, with reports.

What is run comes from the command line, else from the project's
``[tool.harness]`` (:mod:`harness.cli.project`). There is no silent default
agent: without ``--target``, ``--target-url`` or a project ``target``, the
run stops with a line saying how to name one (this project's own
``pyproject.toml`` names the bundled booking agent, for its ``scenarios/``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli._shared_options import (
    number_options,
    number_settings,
    url_target_options,
    waba_option,
)
from harness.cli.project import find_project, resolve_target
from harness.exceptions import ConfigError, StoreError
from harness.options import (
    parse_settings,
    positive_seconds,
    side_effect_option,
    side_effect_settings,
    upstream_options,
    upstream_settings,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from harness.cli.cache import LastFailed
    from harness.results import RunResult, ScenarioResult
    from harness.suites.runner import Runner
    from harness.suites.scenario import Scenario

__all__ = ["DEFAULT_SUITE", "parse_settings", "run_command", "write_reports"]

#: Where ``harness run`` looks when no path is given (nor ``paths`` in the project).
DEFAULT_SUITE = Path("scenarios")


def write_reports(run: RunResult, directory: Path) -> list[Path]:
    """Write report.json, junit.xml and report.html into ``directory``."""
    from harness.report import write_html, write_json, write_junit

    directory.mkdir(parents=True, exist_ok=True)
    return [
        write_json(run, directory / "report.json"),
        write_junit(run, directory / "junit.xml"),
        write_html(run, directory / "report.html"),
    ]


@click.command("run")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--target",
    default=None,
    help="The agent's factory, package.module:attr (default: target in [tool.harness]).",
)
@click.option(
    "--target-url",
    default=None,
    help="The agent's webhook URL, for an agent in another process (staging).",
)
@click.option(
    "--channel",
    default=None,
    help="How the conversation reaches the agent: whatsapp or direct (default: whatsapp).",
)
@click.option(
    "--concurrency",
    default=None,
    type=int,
    help="Scenarios run at once (default: 4; against --target-url, each gets its own users).",
)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="TAG",
    help="Run only the scenarios with this tag (repeatable: any of them).",
)
@click.option(
    "--skip-tag",
    "skip_tags",
    multiple=True,
    metavar="TAG",
    help="Leave out the scenarios with this tag (repeatable).",
)
@click.option(
    "-k",
    "keyword",
    default=None,
    metavar="EXPR",
    help="Run only the scenarios whose name, file or tags match, as pytest -k: "
    "'booking and not cancel'.",
)
@click.option(
    "--lf",
    "--last-failed",
    "last_failed",
    is_flag=True,
    help="Run only the scenarios that failed last time (all of them if none did).",
)
@click.option("-x", "--fail-fast", is_flag=True, help="Start no scenario after one has failed.")
@click.option(
    "--list",
    "list_only",
    is_flag=True,
    help="List the scenarios the selection picks, without running them.",
)
@click.option(
    "-v",
    "verbose",
    is_flag=True,
    help="A line for each scenario as it finishes, and every scenario in the table.",
)
@click.option("-q", "terse", is_flag=True, help="No progress and no table: failures and totals.")
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=int,
    help="Seed for ids and faults; a scenario's own seed wins.",
)
@click.option(
    "--redis",
    "redis_url",
    default=None,
    help="A redis:// URL for a shared store (default: in memory).",
)
@click.option(
    "--distributed",
    "broker_url",
    default=None,
    metavar="URL",
    help="Hand the scenarios to `harness worker --broker URL` processes through this Redis "
    "(redis://host:6379/1) instead of running them here.",
)
@click.option(
    "--report-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Write report.json, junit.xml and report.html here.",
)
@click.option(
    "--agent-setting",
    "agent_settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A setting for the agent under test (repeatable), e.g. BOOKING_REGRESSIONS=no_dedupe.",
)
@url_target_options
@upstream_options("With --target-url: ")
@side_effect_option("With --target-url: ")
@click.option(
    "--graph-advertise",
    default=None,
    metavar="URL",
    help="With --target-url and --redis: the address other Graph APIs of the harness reach "
    "this run's at (harness serve --routes, workers); sends for this run's users that land "
    "there are passed on to it.",
)
@click.option(
    "--keep-numbers",
    is_flag=True,
    help="With --target-url: the users write from the numbers the scenarios give them, not "
    "from numbers of the run's own, for a bot that answers a number it is configured with; "
    "scenarios then run one at a time, and a bot that remembers users sees earlier runs.",
)
@click.option(
    "--real-work-limit",
    default="120s",
    show_default=True,
    help="How long the agent's real work (a model call, a request) may take before its "
    "scenario ends with an error naming it.",
)
@click.option(
    "--repeat",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Run each simulated scenario this many times, with seeds counting up from its own; "
    "prints each one's pass rate.",
)
@click.option(
    "--user-model",
    type=click.Choice(["stand-in", "anthropic"]),
    default="stand-in",
    show_default=True,
    help="Who plays the simulated users: the offline, seeded stand-in, or Anthropic's model "
    "(needs ANTHROPIC_API_KEY).",
)
@click.option(
    "--judge",
    "judge",
    is_flag=True,
    help="Have the Anthropic judge score simulated scenarios against their users' goals "
    "(needs ANTHROPIC_API_KEY); a score too close to call is INCONCLUSIVE.",
)
@number_options
@waba_option
@click.pass_context
def run_command(
    ctx: click.Context,
    paths: tuple[Path, ...],
    target: str | None,
    target_url: str | None,
    channel: str | None,
    concurrency: int | None,
    tags: tuple[str, ...],
    skip_tags: tuple[str, ...],
    keyword: str | None,
    last_failed: bool,
    fail_fast: bool,
    list_only: bool,
    verbose: bool,
    terse: bool,
    seed: int,
    redis_url: str | None,
    broker_url: str | None,
    report_dir: Path | None,
    agent_settings: tuple[str, ...],
    graph_host: str,
    graph_port: int,
    graph_advertise: str | None,
    expect_timeout: str,
    quiet_window: str,
    anthropic_upstream: str,
    openai_upstream: str,
    side_effect_tools: tuple[str, ...],
    real_work_limit: str,
    keep_numbers: bool,
    repeat: int,
    user_model: str,
    judge: bool,
    app_secret: str | None,
    verify_token: str | None,
    access_token: str | None,
    phone_number_id: str | None,
    templates: str | None,
    waba_id: str | None,
) -> None:
    """Run scenario suites (default: scenarios/) against an agent; exit 1 if any fails.

    Exit 2 when the store failed under the run: its verdicts would not be the agent's;
    and, before any scenario, for an agent at --target-url that nothing answers at or
    that fails the verification handshake.
    An INCONCLUSIVE scenario (the judge could not call it) fails nothing.

    Defaults for the target, the paths, the channel and the concurrency come
    from [tool.harness] in the nearest pyproject.toml; flags win.
    """
    # Imported here, not above: `harness --help` reads this module for the help alone.
    import asyncio

    from harness.cli.cache import LastFailed
    from harness.report import SuiteProgress, make_console, print_summary
    from harness.suites.repeats import repeated
    from harness.suites.runner import Runner, RunOptions
    from harness.suites.scenario import load_scenarios
    from harness.suites.selection import select_by_keyword, select_by_tags

    project = find_project()
    suite = list(paths) or list(project.paths) or [DEFAULT_SUITE]
    scenarios = load_scenarios(suite)
    if not scenarios:
        raise ConfigError(f"no scenario files in {', '.join(map(str, suite))}")
    scenarios = select_by_tags(scenarios, tags, skip_tags)
    if keyword is not None:
        scenarios = select_by_keyword(scenarios, keyword)
    cache = LastFailed(project.root or Path.cwd())
    if last_failed:
        scenarios = cache.select(scenarios)
    scenarios = repeated(scenarios, repeat, seed)
    if list_only:
        _list(scenarios, cache)
        return
    key = os.environ.get("ANTHROPIC_API_KEY") or None
    if judge and not key:
        raise ConfigError("--judge needs ANTHROPIC_API_KEY in the environment")
    target, target_url, source = resolve_target(target, target_url, project)
    channel = channel or project.channel or "whatsapp"
    channel_options = number_settings(
        app_secret=app_secret,
        verify_token=verify_token,
        access_token=access_token,
        phone_number_id=phone_number_id,
        templates=templates,
        waba_id=waba_id,
    )
    if graph_advertise is not None and not graph_advertise.startswith(("http://", "https://")):
        raise ConfigError(f"--graph-advertise {graph_advertise!r}: expected an http:// URL")
    if graph_advertise is not None and (target_url is None or redis_url is None):
        raise ConfigError(
            "--graph-advertise needs --target-url and --redis (the store the other Graph APIs "
            "read who plays which user from)"
        )
    if keep_numbers and target_url is None:
        raise ConfigError("--keep-numbers needs --target-url (in process, numbers are as written)")
    if keep_numbers and broker_url is not None:
        raise ConfigError("--keep-numbers runs the scenarios one at a time: not with --distributed")
    channel_options.update(upstream_settings(ctx, target_url, anthropic_upstream, openai_upstream))
    channel_options.update(side_effect_settings(target_url, side_effect_tools))
    if target_url is not None:
        channel_options["graph_url"] = f"http://{graph_host}:{graph_port}"
        channel_options["serve_graph"] = True
        if redis_url is not None:
            # The run's Graph API reads who plays which user; it writes its own when advertised.
            channel_options["graph_routes"] = redis_url
        if graph_advertise is not None:
            channel_options["graph_advertise"] = graph_advertise.rstrip("/")
    options = RunOptions(
        expect_timeout=positive_seconds(expect_timeout, "--expect-timeout"),
        quiet=positive_seconds(quiet_window, "--quiet"),
        keep_numbers=keep_numbers,
        real_work_limit=positive_seconds(real_work_limit, "--real-work-limit"),
        channel=channel,
        target=target,
        target_url=target_url,
        concurrency=concurrency if concurrency is not None else project.concurrency or 4,
        seed=seed,
        store_url=redis_url,
        agent_settings=parse_settings(agent_settings, "--agent-setting"),
        channel_options=channel_options,
        import_paths=(str(project.root),) if project.root is not None else (),
        fail_fast=fail_fast,
        user_model=user_model,
        user_model_key=key if user_model == "anthropic" else None,
    )
    runner = Runner(options)
    noun = "scenario" if len(scenarios) == 1 else "scenarios"
    click.echo(
        f"{len(scenarios)} {noun} against {runner.target} (from {source}), "
        f"through the {channel} channel"
    )
    console = make_console()
    if terse:
        run = asyncio.run(_play(runner, scenarios, broker_url, None))
    else:
        with SuiteProgress(
            len(scenarios),
            console=console,
            enabled=False if verbose else None,
            from_first_result=runner.in_processes(len(scenarios)),
        ) as progress:
            run = asyncio.run(
                _play(runner, scenarios, broker_url, progress.advance, progress.revise)
            )
    run = _judged(run, scenarios, key if judge else None)
    print_summary(run, console, table=not terse, verbose=verbose)
    cache.update(run.scenarios)
    left = len(scenarios) - len(run.scenarios)
    if left and not run.outages:
        click.echo(f"stopped after the first failure (-x): {left} not run")
    if report_dir is not None:
        for path in write_reports(run, report_dir):
            click.echo(f"wrote {path}")
    if run.outages:
        raise StoreError(_outage_line(run, left))
    ctx.exit(0 if run.ok else 1)


async def _play(
    runner: Runner,
    scenarios: list[Scenario],
    broker_url: str | None,
    on_result: Callable[[ScenarioResult], None] | None,
    on_revised: Callable[[ScenarioResult, ScenarioResult], None] | None = None,
) -> RunResult:
    """Run the scenarios here, or hand them to the workers of ``broker_url``."""
    if broker_url is None:
        return await runner.run(scenarios, on_result=on_result, on_revised=on_revised)
    from harness.suites.distributed import run_distributed
    from harness.suites.queue import safe_broker_url

    def queued(count: int) -> None:
        noun = "scenario" if count == 1 else "scenarios"
        click.echo(
            f"queued {count} {noun} for the workers on {safe_broker_url(broker_url)} "
            f"(harness worker --broker URL)"
        )

    def idle(seconds: float) -> None:
        click.echo(
            f"no worker has taken a scenario in {seconds:g}s: is one running? "
            f"harness worker --broker {safe_broker_url(broker_url)}",
            err=True,
        )

    return await run_distributed(
        runner, scenarios, broker_url, on_result=on_result, on_queued=queued, on_idle=idle
    )


def _judged(run: RunResult, scenarios: list[Scenario], key: str | None) -> RunResult:
    """The run with the judge's judgements on its simulated scenarios (none without a key)."""
    import asyncio

    from harness.replay.judge.scenarios import judge_run
    from harness.suites.repeats import is_simulated

    if not any(is_simulated(s) or s.judge is not None for s in scenarios):
        return run
    from harness.llm import AnthropicClient

    async def judged() -> RunResult:
        client = AnthropicClient(api_key=key) if key else None
        try:
            return await judge_run(run, scenarios, client)
        finally:
            if client is not None:
                await client.aclose()

    return asyncio.run(judged())


def _outage_line(run: RunResult, left: int) -> str:
    """The store failed under some scenarios: the first failure, and what the run lost."""
    hit = len(run.outages)
    line = (run.outages[0].error or "the store failed").rstrip(".")
    line += f"; {hit} {'scenario' if hit == 1 else 'scenarios'} could not be judged"
    if left:
        line += f" and {left} {'was' if left == 1 else 'were'} not run"
    return line


def _list(scenarios: list[Scenario], cache: LastFailed) -> None:
    """Print the scenarios a run would play, one ``path::name`` a line, then how many."""
    for scenario in scenarios:
        click.echo(cache.of(scenario))
    noun = "scenario" if len(scenarios) == 1 else "scenarios"
    click.echo(f"{len(scenarios)} {noun} selected")
