"""``harness regress``: replay fixtures against a changed agent, and show which changed.

Exit 3 when any replay diverged, 1 when any failed; with the judge options,
4 or 2 as for ``harness replay``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli._shared_options import (
    number_options,
    number_settings,
    url_target_options,
    waba_option,
)
from harness.cli.judging import judge_exit, judge_options
from harness.options import (
    parse_settings,
    positive_seconds,
    side_effect_option,
    upstream_options,
)
from harness.prompts import parse_prompt_overrides

if TYPE_CHECKING:
    from harness.fixture import Fixture
    from harness.replay.playback import Policy

__all__ = ["regress_command"]


@click.command("regress")
@click.argument("fixtures", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--candidate",
    "candidate",
    multiple=True,
    metavar="SPEC",
    help="What changed: KEY=VALUE (an agent setting, e.g. "
    "BOOKING_REGRESSIONS=no_dedupe), prompt:NAME=PATH, or target=pkg.mod:attr "
    "(default: the agent each fixture was recorded with).",
)
@click.option(
    "--policy", type=click.Choice(["pinned", "live"]), default="pinned", show_default=True
)
@click.option(
    "--report-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Write report.json, junit.xml and report.html here, as harness run does (for CI).",
)
@click.option(
    "--target-url",
    default=None,
    help="Replay every fixture against the agent at this webhook URL (a staging deployment).",
)
@url_target_options
@upstream_options("With --target-url and --policy live: ")
@side_effect_option("With --target-url: ")
@number_options
@waba_option
@judge_options
@click.pass_context
def regress_command(
    ctx: click.Context,
    fixtures: tuple[Path, ...],
    candidate: tuple[str, ...],
    policy: Policy,
    report_dir: Path | None,
    target_url: str | None,
    graph_host: str,
    graph_port: int,
    expect_timeout: str,
    quiet_window: str,
    anthropic_upstream: str,
    openai_upstream: str,
    side_effect_tools: tuple[str, ...],
    app_secret: str | None,
    verify_token: str | None,
    access_token: str | None,
    phone_number_id: str | None,
    templates: str | None,
    waba_id: str | None,
    judge: bool,
    judge_gate: float | None,
) -> None:
    """Replay fixtures against a changed agent: exit 3 if any diverged, 1 if any failed.

    Exit 2 if a fixture holds less than the agent asked for (incomplete).
    """
    # Imported here, not above: `harness --help` reads this module for the help alone.
    from rich.table import Table

    from harness.cli.replaying import (
        REPLAY_EXIT,
        fixture_agent,
        fixture_dirs,
        print_models,
        print_worth_a_look,
        replay_all,
        url_channel_options,
    )
    from harness.cli.run import write_reports
    from harness.exceptions import ConfigError
    from harness.fixture import load_fixture_meta
    from harness.replay.outcome import replay_run
    from harness.report import make_console
    from harness.suites.runner import Runner, RunOptions
    from harness.suites.target import load_target

    settings: list[str] = []
    prompts: list[str] = []
    target: str | None = None
    for spec in candidate:
        if spec.startswith("prompt:"):
            prompts.append(spec.removeprefix("prompt:"))
        elif spec.startswith("target="):
            target = spec.removeprefix("target=")
        else:
            settings.append(spec)
    if target and target_url:
        raise ConfigError("give --candidate target= or --target-url, not both")
    # Loaded here, so that an error names the option given, before anything is replayed.
    candidate_factory = (
        load_target(target, given_as=f"--candidate {'target=' + target!r}") if target else None
    )
    paths = fixture_dirs(fixtures)
    # Each fixture's agent: target= or --target-url, else the one it was recorded with, else
    # the project's.
    agents = {
        path: fixture_agent(path, load_fixture_meta(path), target, target_url) for path in paths
    }
    agent_settings = parse_settings(tuple(settings), "--candidate")
    channel_options = number_settings(
        app_secret=app_secret,
        verify_token=verify_token,
        access_token=access_token,
        phone_number_id=phone_number_id,
        templates=templates,
        waba_id=waba_id,
    )
    url_channel_options(  # refuses an upstream given without --target-url, before any replay
        ctx,
        target_url,
        graph_host=graph_host,
        graph_port=graph_port,
        anthropic_upstream=anthropic_upstream,
        openai_upstream=openai_upstream,
        side_effect_tools=side_effect_tools,
    )
    runners: dict[tuple[str | None, str | None], Runner] = {}

    def runner_for(fixture: Fixture) -> Runner:
        chosen, url = agents[Path(fixture.path)]
        if (chosen, url) not in runners:
            runners[chosen, url] = Runner(
                RunOptions(
                    target=None if url else chosen,
                    target_url=url,
                    expect_timeout=positive_seconds(expect_timeout, "--expect-timeout"),
                    quiet=positive_seconds(quiet_window, "--quiet"),
                    agent_settings=agent_settings,
                    channel_options={
                        **channel_options,
                        **url_channel_options(
                            ctx,
                            url,
                            graph_host=graph_host,
                            graph_port=graph_port,
                            anthropic_upstream=anthropic_upstream,
                            openai_upstream=openai_upstream,
                            side_effect_tools=side_effect_tools,
                        ),
                    },
                ),
                # target= names every fixture's agent: the one loaded above.
                factory=candidate_factory if chosen == target and url is None else None,
            )
        return runners[chosen, url]

    started_at = datetime.now(UTC)
    started = time.perf_counter()
    results = replay_all(
        paths, runner_for, policy=policy, skew=None, prompts=parse_prompt_overrides(prompts)
    )
    elapsed = time.perf_counter() - started
    console = make_console()
    print_worth_a_look(results, console)
    table = Table("fixture", "status", "changes", "violations", title=None)
    for result in results:
        table.add_row(
            Path(result.fixture).name,
            result.status.upper(),
            str(len(result.changes)),
            str(len(result.violations)),
        )
    console.print(table)
    worst = max((REPLAY_EXIT[r.status] for r in results), default=0)
    same = sum(1 for r in results if r.status == "same")
    print_models(results, console)
    console.print(f"{len(results)} fixtures: {same} same, {len(results) - same} not", markup=False)
    if report_dir is not None:
        targets = ", ".join(sorted({runner.target for runner in runners.values()}))
        run = replay_run(results, target=targets, started_at=started_at, duration_s=elapsed)
        for written in write_reports(run, report_dir):
            click.echo(f"wrote {written}")
    judged = judge_exit(paths, results, judge, judge_gate)
    ctx.exit(worst or judged)
