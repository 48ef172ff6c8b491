"""``harness record``, ``harness replay`` and ``harness regress`` on the command line.

Exit codes: 0 the replay matched, 1 an invariant failed, 2 bad input (or,
with ``--judge-gate``, no verdict recorded), 3 the replay diverged (the
explanation names the turn and what changed), 4 the judge scored the
conversation below the gate's threshold.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

from harness.exceptions import ConfigError, Divergence, FixtureNotFound, LLMError
from harness.fixture import META_FILE, Fixture, load_fixture
from harness.llm import AnthropicClient
from harness.llm_recorder import RecordingLLMClient
from harness.options import parse_settings
from harness.prompts import parse_prompt_overrides
from harness.recording import publish_records
from harness.records import LLMRecord, ToolRecord
from harness.replay.judge import (
    Judge,
    Verdict,
    check_threshold,
    gate_outcome,
    load_verdicts,
    save_verdicts,
)
from harness.replay.playback import Policy, ReplayResult, replay_fixture
from harness.skew import Skew, parse_skew
from harness.store import open_store
from harness.suites.runner import DEFAULT_TARGET, Runner, RunOptions
from harness.suites.scenario import load_scenario
from harness.tape import RecordMode

__all__ = [
    "fixture_dirs",
    "judge_options",
    "record_command",
    "regress_command",
    "replay_command",
]

F = TypeVar("F", bound=Callable[..., Any])

_EXIT = {"same": 0, "changed": 0, "failed": 1, "error": 1, "diverged": 3}


def judge_options(command: F) -> F:
    """``--judge`` (advisory) and ``--judge-gate THRESHOLD`` (exit 4 below it, 2 without one)."""
    command = click.option(
        "--judge-gate",
        "judge_gate",
        type=float,
        default=None,
        metavar="THRESHOLD",
        help="Judge each replayed conversation from the recorded verdicts; exit 4 below "
        "THRESHOLD (0..1), 2 where no verdict was recorded.",
    )(command)
    return click.option(
        "--judge",
        "judge",
        is_flag=True,
        help="Judge each replayed conversation from the recorded verdicts (advisory).",
    )(command)


async def _judge(path: Path, result: ReplayResult) -> Verdict | None:
    """The recorded judge's verdict on the replayed conversation, offline; None if it can't."""
    try:
        recorded = load_verdicts(path)
    except FixtureNotFound:
        return None
    if not recorded.verdicts or result.conversation is None:
        return None
    first = recorded.verdicts[0]
    client = RecordingLLMClient(None, RecordMode.REPLAY, records=recorded.records)
    judge = Judge(client, model=first.model)
    try:
        return await judge.evaluate(result.conversation, scenario=first.scenario)
    except (Divergence, LLMError) as exc:
        click.echo(f"  judge: no recorded verdict for this conversation ({exc})", err=True)
        return None


def _judge_exit(
    paths: list[Path], results: list[ReplayResult], judge: bool, gate: float | None
) -> int:
    if not judge and gate is None:
        return 0
    if gate is not None:
        check_threshold(gate)
    verdicts = asyncio.run(_judge_all(paths, results))
    for path, verdict in zip(paths, verdicts, strict=True):
        line = verdict.headline() if verdict is not None else "judge: no verdict recorded"
        click.echo(f"{path.name}: {line}")
    outcome = gate_outcome(
        verdicts, 0.0 if gate is None else gate, scenarios=[p.name for p in paths]
    )
    click.echo(outcome.message)
    return outcome.exit_code("advisory" if gate is None else "gate")


async def _judge_all(paths: list[Path], results: list[ReplayResult]) -> list[Verdict | None]:
    return [await _judge(path, result) for path, result in zip(paths, results, strict=True)]


def fixture_dirs(paths: tuple[Path, ...]) -> list[Path]:
    """Fixture directories named directly, or found (recursively) under the directories given."""
    found: list[Path] = []
    for path in paths:
        if (path / META_FILE).is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(p.parent for p in path.rglob(META_FILE)))
        else:
            raise ConfigError(f"{path}: not a fixture directory (no {META_FILE})")
    if not found:
        raise ConfigError(f"no fixtures under {', '.join(map(str, paths))}")
    return found


@click.command("record")
@click.argument("scenario", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path),
    required=True,
    help="The fixture directory to write.",
)
@click.option("--overwrite", is_flag=True, help="Replace a fixture already in --out.")
@click.option(
    "--target",
    default=None,
    help=f"The agent's factory, package.module:attr (default: {DEFAULT_TARGET}).",
)
@click.option(
    "--live", is_flag=True, help="Use the real Anthropic model (needs ANTHROPIC_API_KEY)."
)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--agent-setting", "agent_settings", multiple=True, metavar="KEY=VALUE")
@click.option(
    "--judge",
    "judge",
    is_flag=True,
    help="Have the Anthropic judge score the conversation and record its verdict "
    "(needs ANTHROPIC_API_KEY); replays then judge offline.",
)
@click.pass_context
def record_command(
    ctx: click.Context,
    scenario: Path,
    out: Path,
    overwrite: bool,
    target: str | None,
    live: bool,
    seed: int,
    agent_settings: tuple[str, ...],
    judge: bool,
) -> None:
    """Run a scenario once with the agent's model and tools recorded, into a fixture."""
    from harness.replay.record import record_scenario

    settings = parse_settings(agent_settings, "--agent-setting")
    key = os.environ.get("ANTHROPIC_API_KEY")
    if (live or judge) and not key:
        flag = "--live" if live else "--judge"
        raise ConfigError(f"{flag} needs ANTHROPIC_API_KEY in the environment")
    if live and key:
        settings = {"HARNESS_LLM": "anthropic", "ANTHROPIC_API_KEY": key, **settings}
    runner = Runner(RunOptions(target=target, seed=seed, agent_settings=settings))
    loaded = load_scenario(scenario)
    secrets = (settings["ANTHROPIC_API_KEY"],) if "ANTHROPIC_API_KEY" in settings else ()
    result = asyncio.run(record_scenario(runner, loaded, out, overwrite=overwrite, secrets=secrets))
    click.echo(f"recorded {loaded.name!r} into {out}: {result.status}")
    if judge and key and result.conversation is not None:
        verdict_judge = Judge(RecordingLLMClient(AnthropicClient(api_key=key), RecordMode.RECORD))
        verdict = asyncio.run(verdict_judge.evaluate(result.conversation, scenario=loaded.name))
        save_verdicts(out, [verdict], records=verdict_judge.records, secrets=(key,))
        click.echo(verdict.headline())
    for violation in result.violations:
        click.echo(f"  {violation.headline()}")
    if result.error:
        click.echo(f"  error: {result.error}")
    ctx.exit(0 if result.status == "passed" else 1)


def _print_result(result: ReplayResult, console: Console) -> None:
    console.print(
        f"{result.status.upper():<9} {result.fixture} ({result.duration_s:.2f}s)",
        markup=False,
        highlight=False,
    )
    for line in result.divergences:
        console.print(f"  diverged: {line}", markup=False, highlight=False)
    for line in result.changes[:12]:
        console.print(f"  changed {line}", markup=False, highlight=False)
    if len(result.changes) > 12:
        console.print(f"  ... and {len(result.changes) - 12} more changes", markup=False)
    for violation in result.violations:
        console.print(f"  ✗ {violation.headline()}", markup=False, highlight=False)
        for line in violation.messages:
            console.print(f"      {line}", markup=False, highlight=False)
    if result.error:
        console.print(f"  error: {result.error}", markup=False, highlight=False)
    if result.unused:
        console.print(f"  {result.unused} recorded answers were never asked for", markup=False)


def _replay_all(
    fixtures: list[Path],
    runner: Runner,
    *,
    policy: Policy,
    skew: Skew | None,
    prompts: dict[str, str],
) -> list[ReplayResult]:
    async def go() -> list[ReplayResult]:
        return [
            await replay_fixture(
                runner, load_fixture(path), policy=policy, skew=skew, prompts=prompts
            )
            for path in fixtures
        ]

    return asyncio.run(go())


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
@click.option(
    "--graph-host",
    default="127.0.0.1",
    show_default=True,
    help="Where the fake Graph API listens, with --target-url.",
)
@click.option("--graph-port", default=8000, show_default=True, type=int)
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
    redis_url: str | None,
    fixture_id: str | None,
    judge: bool,
    judge_gate: float | None,
) -> None:
    """Replay a recorded conversation with its timing, offline, and compare it turn by turn."""
    found = fixture_dirs((fixture,))
    if len(found) != 1 or found[0] != fixture:
        raise ConfigError(
            f"{fixture}: holds {len(found)} fixtures; name one, or replay them all with "
            "harness regress"
        )
    [path] = found
    loaded = load_fixture(path)
    if redis_url is not None:
        asyncio.run(_publish(loaded, redis_url, fixture_id or path.name))
        click.echo(f"published the recording to {redis_url} as {fixture_id or path.name!r}")
    channel_options: dict[str, object] = {}
    if target_url is not None:
        channel_options = {"graph_url": f"http://{graph_host}:{graph_port}", "serve_graph": True}
    runner = Runner(
        RunOptions(
            target=None if target_url else (target or _recorded_target(loaded.meta)),
            target_url=target_url,
            agent_settings=parse_settings(agent_settings, "--agent-setting"),
            channel_options=channel_options,
        )
    )
    results = _replay_all(
        [path],
        runner,
        policy=policy,
        skew=parse_skew(skew) if skew else None,
        prompts=parse_prompt_overrides(list(prompt_specs)),
    )
    _print_result(results[0], Console())
    code = _EXIT[results[0].status]
    judged = _judge_exit([path], results, judge, judge_gate)
    ctx.exit(code or judged)


@click.command("regress")
@click.argument("fixtures", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--candidate",
    "candidate",
    multiple=True,
    metavar="SPEC",
    help="What changed: KEY=VALUE (an agent setting, e.g. "
    "BOOKING_REGRESSIONS=no_dedupe), prompt:NAME=PATH, or target=pkg.mod:attr.",
)
@click.option(
    "--policy", type=click.Choice(["pinned", "live"]), default="pinned", show_default=True
)
@judge_options
@click.pass_context
def regress_command(
    ctx: click.Context,
    fixtures: tuple[Path, ...],
    candidate: tuple[str, ...],
    policy: Policy,
    judge: bool,
    judge_gate: float | None,
) -> None:
    """Replay fixtures against a changed agent: exit 3 if any diverged, 1 if any failed."""
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
    paths = fixture_dirs(fixtures)
    runner = Runner(
        RunOptions(target=target, agent_settings=parse_settings(tuple(settings), "--candidate"))
    )
    results = _replay_all(
        paths, runner, policy=policy, skew=None, prompts=parse_prompt_overrides(prompts)
    )
    console = Console()
    for result in results:
        if result.status != "same":
            _print_result(result, console)
    table = Table("fixture", "status", "changes", "violations", title=None)
    for result in results:
        table.add_row(
            Path(result.fixture).name,
            result.status.upper(),
            str(len(result.changes)),
            str(len(result.violations)),
        )
    console.print(table)
    worst = max((_EXIT[r.status] for r in results), default=0)
    same = sum(1 for r in results if r.status == "same")
    console.print(f"{len(results)} fixtures: {same} same, {len(results) - same} not", markup=False)
    judged = _judge_exit(paths, results, judge, judge_gate)
    ctx.exit(worst or judged)


async def _publish(fixture: Fixture, url: str, fixture_id: str) -> None:
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


def _recorded_target(meta: object) -> str | None:
    target = getattr(meta, "agent_version", None)
    return target if isinstance(target, str) and ":" in target else None
