"""The judge on the replay commands: ``--judge`` and ``--judge-gate``, and the exit code they set.

A replay is judged offline from the verdicts recorded beside the fixture;
with ``--judge-gate``, exit 4 when a verdict is below the threshold and 2
when none was recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from harness.replay.judge import Verdict
    from harness.replay.playback import ReplayResult

__all__ = ["judge_exit", "judge_options"]

F = TypeVar("F", bound=Callable[..., Any])


def _threshold(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Refuse a threshold outside 0..1 before anything is replayed."""
    if value is not None:
        from harness.exceptions import ConfigError
        from harness.replay.judge import check_threshold

        try:
            check_threshold(value)
        except ConfigError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


def judge_options(command: F) -> F:
    """``--judge`` (advisory) and ``--judge-gate THRESHOLD`` (exit 4 below it, 2 without one)."""
    command = click.option(
        "--judge-gate",
        "judge_gate",
        type=float,
        default=None,
        callback=_threshold,
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
    from harness.exceptions import Divergence, FixtureNotFound, LLMError
    from harness.llm_recorder import RecordingLLMClient
    from harness.replay.judge import Judge, load_verdicts
    from harness.tape import RecordMode

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


def judge_exit(
    paths: list[Path], results: list[ReplayResult], judge: bool, gate: float | None
) -> int:
    """Print each fixture's verdict and the gate's decision; the exit code they set (0 unasked)."""
    if not judge and gate is None:
        return 0
    import asyncio

    from harness.replay.judge import check_threshold, gate_outcome

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
