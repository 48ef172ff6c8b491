"""What ``harness replay`` and ``harness regress`` share: finding, replaying and printing fixtures.

Exit codes by a replay's status: 0 the replay matched (or only changed),
1 an invariant failed or the run broke, 2 the fixture holds less than the
agent asked for (cut short, or a proxy's recording of the channel alone),
3 the replay diverged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import click
from rich.console import Console

from harness.exceptions import ConfigError
from harness.fixture import META_FILE, Fixture, load_fixture
from harness.options import side_effect_settings, upstream_settings
from harness.replay.outcome import replay_scenario_result
from harness.replay.playback import Policy, ReplayResult, replay_fixture, settings_differences
from harness.report import causes, run_models
from harness.skew import Skew
from harness.suites.runner import Runner

__all__ = [
    "REPLAY_EXIT",
    "fixture_agent",
    "fixture_dirs",
    "print_models",
    "print_result",
    "print_worth_a_look",
    "recorded_target",
    "replay_all",
    "url_channel_options",
]

#: The exit code of each replay status.
REPLAY_EXIT = {"same": 0, "changed": 0, "failed": 1, "error": 1, "incomplete": 2, "diverged": 3}


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


def print_result(result: ReplayResult, console: Console) -> None:
    """A replay's status, then what diverged, changed, failed or went unused, a line each.

    Violations are shown by cause (:mod:`harness.report.causes`); the agent's
    own background work that failed is a line each (``agent: ...``). Lines are
    never wrapped, so each stays one line in a log.
    """
    console.print(
        f"{result.status.upper():<9} {result.fixture} ({result.duration_s:.2f}s)",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    for line in result.divergences:
        console.print(f"  diverged: {line}", markup=False, highlight=False, soft_wrap=True)
    for line in result.changes[:12]:
        console.print(f"  changed {line}", markup=False, highlight=False, soft_wrap=True)
    if len(result.changes) > 12:
        more = len(result.changes) - 12
        console.print(f"  ... and {more} more change{'' if more == 1 else 's'}", markup=False)

    def line_of(text: str) -> None:
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    for cause in causes(result.violations, result.conversation):
        line_of(f"  ✗ {cause.lead.headline()}")
        for line in cause.lead.messages:
            line_of(f"      {line}")
        if cause.follows:
            line_of(f"    {len(cause.follows)} more from the same cause:")
            for follow in cause.follows:
                line_of(f"      - {follow.headline()}")
    if result.error:
        label = "incomplete" if result.status == "incomplete" else "error"
        line_of(f"  {label}: {result.error}")
    for line in result.agent_errors:
        line_of(f"  agent: {line}")
    for line in result.tool_notes:
        line_of(f"  note: {line}")
    if result.unused:
        console.print(f"  {result.unused} recorded answers were never asked for", markup=False)


def print_worth_a_look(results: Sequence[ReplayResult], console: Console) -> None:
    """:func:`print_result` of each replay that is not the same, or whose tools answered otherwise.

    ``harness regress`` lists every fixture in its table; the lines above it
    are for what needs a look: a change, and a SAME replay whose real tools
    gave other answers than the recording's (its notes).
    """
    for result in results:
        if result.status != "same" or result.tool_notes:
            print_result(result, console)


def print_models(results: Sequence[ReplayResult], console: Console) -> None:
    """Who answered the replays' model calls, one line each (``model: 5 model calls ...``)."""
    for count in run_models(replay_scenario_result(result) for result in results):
        console.print(f"model: {count.label}", markup=False, highlight=False)


def recorded_target(meta: object) -> str | None:
    """The factory a fixture's agent was recorded with (``pkg.mod:attr``), if it names one."""
    target = getattr(meta, "agent_version", None)
    return target if isinstance(target, str) and ":" in target else None


def fixture_agent(
    path: Path, meta: object, target: str | None, target_url: str | None
) -> tuple[str | None, str | None]:
    """The agent to replay the fixture at ``path`` against: a factory, or a URL.

    The flags first, then the agent the fixture was recorded with, then the
    project's (``[tool.harness]``). A fixture that names none (a chat recorded
    by ``harness proxy`` without ``--target``) is never replayed against an
    agent nobody named: a :class:`~harness.exceptions.ConfigError` says how
    to name one.
    """
    if target or target_url:
        return target, target_url
    recorded = recorded_target(meta)
    if recorded is not None:
        return recorded, None
    from harness.project import find_project

    project = find_project()
    if project.target or project.target_url:
        return project.target, project.target_url
    raise ConfigError(
        f"{path}: the fixture names no agent (harness proxy names one only when given "
        "--target): give --target-url URL for an agent at a URL, or --target pkg.mod:factory"
    )


def url_channel_options(
    ctx: click.Context,
    target_url: str | None,
    *,
    graph_host: str,
    graph_port: int,
    anthropic_upstream: str,
    openai_upstream: str,
    side_effect_tools: tuple[str, ...] = (),
) -> dict[str, object]:
    """The channel options of a replay against an agent at ``target_url`` (none without one).

    The fake Graph API it serves, the model upstreams and the tools with side
    effects (given without a URL: one line).
    """
    options = upstream_settings(ctx, target_url, anthropic_upstream, openai_upstream)
    options.update(side_effect_settings(target_url, side_effect_tools))
    if target_url is not None:
        options.update(graph_url=f"http://{graph_host}:{graph_port}", serve_graph=True)
    return options


def replay_all(
    fixtures: list[Path],
    runner: Runner | Callable[[Fixture], Runner],
    *,
    policy: Policy,
    skew: Skew | None,
    prompts: dict[str, str],
    notice: Callable[[str], None] | None = None,
) -> list[ReplayResult]:
    """Replay ``fixtures`` one after another with ``runner``, on one event loop.

    ``runner`` may be a function of the fixture, which gives the runner to replay it with.

    ``notice`` hears, before a fixture is replayed, how the agent's settings
    given to this replay differ from those it was recorded with.
    """

    async def go() -> list[ReplayResult]:
        results = []
        for path in fixtures:
            fixture = load_fixture(path)
            chosen = runner if isinstance(runner, Runner) else runner(fixture)
            changed = settings_differences(fixture, chosen.options.agent_settings)
            if changed and notice is not None:
                notice(
                    f"{path}: the agent's settings differ from the recording: {'; '.join(changed)}"
                )
            results.append(
                await replay_fixture(chosen, fixture, policy=policy, skew=skew, prompts=prompts)
            )
        return results

    return asyncio.run(go())
