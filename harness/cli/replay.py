"""``harness replay``: replay one recorded conversation with its timing, offline, and compare it.

Exit codes: 0 the replay matched, 1 an invariant failed, 2 bad input (an
agent at ``--target-url`` that fails the verification handshake among it; or,
with ``--judge-gate``, no verdict recorded), 3 the replay diverged (the
explanation names the turn and what changed), 4 the judge scored the
conversation below the gate's threshold.
"""

from __future__ import annotations

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
from harness.exceptions import ConfigError
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

__all__ = ["replay_command"]


@click.command("replay")
@click.argument("fixture", type=click.Path(path_type=Path))
@click.option(
    "--skew",
    default=None,
    help="shift=+25h@turn3, scale=10, agent-offset=-5m (combinable with commas).",
)
@click.option(
    "--policy",
    type=click.Choice(["pinned", "live"]),
    default="pinned",
    show_default=True,
    help="pinned: an unrecorded request diverges; live: it goes to the agent's model.",
)
@click.option(
    "--prompt",
    "prompt_specs",
    multiple=True,
    metavar="NAME=PATH",
    help="Replace one of the agent's prompts with a file's text.",
)
@click.option("--target", default=None, help="The agent's factory (default: the recorded one).")
@click.option("--agent-setting", "agent_settings", multiple=True, metavar="KEY=VALUE")
@click.option(
    "--target-url",
    default=None,
    help="Replay against an agent at this webhook URL (a staging deployment).",
)
@url_target_options
@upstream_options("With --target-url and --policy live: ")
@side_effect_option("With --target-url: ")
@click.option(
    "--redis",
    "redis_url",
    default=None,
    help="Publish the recording to this store first, for the agent's replicas "
    "(they run with HARNESS_RECORD_MODE=replay, HARNESS_RECORDING_URL and "
    "HARNESS_FIXTURE_ID).",
)
@click.option(
    "--fixture-id",
    default=None,
    help="The id the replicas know the recording by (default: the folder's name).",
)
@click.option(
    "--report-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Write report.json, junit.xml and report.html here, as harness run does.",
)
@number_options
@waba_option
@judge_options
@click.pass_context
def replay_command(
    ctx: click.Context,
    fixture: Path,
    skew: str | None,
    policy: Policy,
    prompt_specs: tuple[str, ...],
    target: str | None,
    agent_settings: tuple[str, ...],
    target_url: str | None,
    graph_host: str,
    graph_port: int,
    expect_timeout: str,
    quiet_window: str,
    anthropic_upstream: str,
    openai_upstream: str,
    side_effect_tools: tuple[str, ...],
    redis_url: str | None,
    fixture_id: str | None,
    report_dir: Path | None,
    app_secret: str | None,
    verify_token: str | None,
    access_token: str | None,
    phone_number_id: str | None,
    templates: str | None,
    waba_id: str | None,
    judge: bool,
    judge_gate: float | None,
) -> None:
    """Replay a recorded conversation with its timing, offline, and compare it turn by turn."""
    # Imported here, not above: `harness --help` reads this module for the help alone.
    import asyncio

    from harness.cli.replaying import (
        REPLAY_EXIT,
        fixture_agent,
        fixture_dirs,
        print_models,
        print_result,
        replay_all,
        url_channel_options,
    )
    from harness.cli.run import write_reports
    from harness.fixture import load_fixture
    from harness.replay.outcome import replay_run
    from harness.report import make_console
    from harness.skew import REMOTE_AGENT_OFFSET, parse_skew
    from harness.suites.runner import Runner, RunOptions

    found = fixture_dirs((fixture,))
    if len(found) != 1 or found[0] != fixture:
        raise ConfigError(
            f"{fixture}: holds {len(found)} fixtures; name one, or replay them all with "
            "harness regress"
        )
    [path] = found
    loaded = load_fixture(path)
    target, target_url = fixture_agent(path, loaded.meta, target, target_url)
    skewed = parse_skew(skew) if skew else None
    if skewed is not None and skewed.agent_offset and target_url is not None:
        raise ConfigError(REMOTE_AGENT_OFFSET)
    if redis_url is not None:
        asyncio.run(_publish(loaded, redis_url, fixture_id or path.name))
        click.echo(f"published the recording to {redis_url} as {fixture_id or path.name!r}")
    channel_options = number_settings(
        app_secret=app_secret,
        verify_token=verify_token,
        access_token=access_token,
        phone_number_id=phone_number_id,
        templates=templates,
        waba_id=waba_id,
    )
    channel_options.update(
        url_channel_options(
            ctx,
            target_url,
            graph_host=graph_host,
            graph_port=graph_port,
            anthropic_upstream=anthropic_upstream,
            openai_upstream=openai_upstream,
            side_effect_tools=side_effect_tools,
        )
    )
    runner = Runner(
        RunOptions(
            target=None if target_url else target,
            target_url=target_url,
            expect_timeout=positive_seconds(expect_timeout, "--expect-timeout"),
            quiet=positive_seconds(quiet_window, "--quiet"),
            agent_settings=parse_settings(agent_settings, "--agent-setting"),
            channel_options=channel_options,
        )
    )
    runner.check([])  # the channel's options (--templates...), before anything is replayed
    results = replay_all(
        [path],
        runner,
        policy=policy,
        skew=skewed,
        prompts=parse_prompt_overrides(list(prompt_specs)),
        notice=lambda line: click.echo(f"note: {line}", err=True),
    )
    console = make_console()
    print_result(results[0], console)
    print_models(results, console)
    if report_dir is not None:
        for written in write_reports(replay_run(results, target=runner.target), report_dir):
            click.echo(f"wrote {written}")
    code = REPLAY_EXIT[results[0].status]
    judged = judge_exit([path], results, judge, judge_gate)
    ctx.exit(code or judged)


async def _publish(fixture: Fixture, url: str, fixture_id: str) -> None:
    from harness.recording import publish_records
    from harness.records import LLMRecord, ToolRecord
    from harness.store import open_store

    store = open_store(url)
    try:
        await publish_records(
            store,
            fixture_id,
            fixture.records("llm", LLMRecord),
            fixture.records("tools", ToolRecord),
        )
    finally:
        await store.close()
