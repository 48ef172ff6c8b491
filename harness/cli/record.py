"""``harness record``: run a scenario with the agent's model and tools recorded, into a fixture.

The agent is ``--target``, else the ``target`` of the project's
``[tool.harness]``, as for ``harness run`` (and never a default one). With
``--judge``, the Anthropic judge scores the conversation and its verdict is
recorded beside the fixture, so replays judge offline. Exit 0 when the
scenario passed, 1 when it failed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli._shared_options import templates_option
from harness.cli.project import find_project, resolve_target
from harness.exceptions import ConfigError
from harness.options import parse_settings

if TYPE_CHECKING:
    from harness.records import LLMRecord, ToolRecord
    from harness.results import ScenarioResult

__all__ = ["record_command"]


def _describe(record: LLMRecord | ToolRecord) -> str:
    """One line for a recorded exchange: what the model answered, or which tool ran."""
    from harness.llm import ToolUseBlock
    from harness.providers import answered_by
    from harness.records import ToolRecord

    if isinstance(record, ToolRecord):
        outcome = f"failed: {record.error}" if record.error else "done"
        return f"tool {record.name} {outcome}"
    blocks = record.response.content
    said = ", ".join(
        f"tool_use {block.name}" if isinstance(block, ToolUseBlock) else "text" for block in blocks
    )
    tokens = f"{record.input_tokens:,} -> {record.output_tokens:,} tokens"
    who = answered_by(record.provider, record.model)
    return f"model {who}: {said or 'nothing'} ({tokens})"


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
    help="The agent's factory, package.module:attr (default: target in [tool.harness]).",
)
@click.option(
    "--live", is_flag=True, help="Use the real Anthropic model (needs ANTHROPIC_API_KEY)."
)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option(
    "--user-model",
    type=click.Choice(["stand-in", "anthropic"]),
    default="stand-in",
    show_default=True,
    help="Who plays the simulated users: the offline stand-in, or Anthropic's model "
    "(needs ANTHROPIC_API_KEY); their exchanges go to users.jsonl.",
)
@click.option("--agent-setting", "agent_settings", multiple=True, metavar="KEY=VALUE")
@click.option(
    "--judge",
    "judge",
    is_flag=True,
    help="Have the Anthropic judge score the conversation and record its verdict "
    "(needs ANTHROPIC_API_KEY); replays then judge offline.",
)
@templates_option
@click.pass_context
def record_command(
    ctx: click.Context,
    scenario: Path,
    out: Path,
    overwrite: bool,
    target: str | None,
    live: bool,
    seed: int,
    user_model: str,
    agent_settings: tuple[str, ...],
    judge: bool,
    templates: str | None,
) -> None:
    """Run a scenario once with the agent's model and tools recorded, into a fixture.

    With ``--templates`` the fixture keeps the templates themselves, so its
    replays need no file.
    """
    # Imported here, not above: `harness --help` reads this module for the help alone.
    import asyncio

    from harness.exceptions import FixtureExists
    from harness.llm import AnthropicClient
    from harness.llm_recorder import RecordingLLMClient
    from harness.replay.judge import Judge, save_verdicts
    from harness.replay.record import record_scenario
    from harness.report import scenario_causes
    from harness.suites.runner import Runner, RunOptions
    from harness.suites.scenario import load_scenario
    from harness.tape import RecordMode

    settings = parse_settings(agent_settings, "--agent-setting")
    key = os.environ.get("ANTHROPIC_API_KEY")
    user_live = user_model == "anthropic"
    if (live or judge or user_live) and not key:
        flag = "--live" if live else "--judge" if judge else "--user-model anthropic"
        raise ConfigError(f"{flag} needs ANTHROPIC_API_KEY in the environment")
    if live and key:
        settings = {"HARNESS_LLM": "anthropic", "ANTHROPIC_API_KEY": key, **settings}
    project = find_project()
    target, _, _ = resolve_target(target, None, project, urls=False)
    if target is None:
        raise ConfigError(
            f"harness record runs the agent in-process, but {project.file} names a target-url: "
            "give --target package.module:factory"
        )
    search = (str(project.root),) if project.root is not None else ()
    runner = Runner(
        RunOptions(
            target=target,
            seed=seed,
            agent_settings=settings,
            import_paths=search,
            user_model=user_model,
            user_model_key=key if user_live else None,
            channel_options=_kept_templates(templates),
        )
    )
    loaded = load_scenario(scenario)
    known = (settings.get("ANTHROPIC_API_KEY"), key if user_live else None)
    secrets = tuple(dict.fromkeys(k for k in known if k))
    if live:
        where = os.environ.get("ANTHROPIC_BASE_URL") or "Anthropic's API"
        click.echo(f"recording {loaded.name!r} with the live model at {where}")
    started = time.monotonic()

    def report(record: LLMRecord | ToolRecord) -> None:
        click.echo(f"  {time.monotonic() - started:6.1f}s  {_describe(record)}")

    try:
        result = asyncio.run(
            record_scenario(
                runner, loaded, out, overwrite=overwrite, secrets=secrets, progress=report
            )
        )
    except FixtureExists as exc:
        raise exc.naming("--overwrite") from None
    click.echo(f"recorded {loaded.name!r} into {out}: {result.status}")
    if (unseen := _unrecorded(result)) is not None:
        click.echo(f"note: {unseen}", err=True)
    if judge and key and result.conversation is not None:
        verdict_judge = Judge(RecordingLLMClient(AnthropicClient(api_key=key), RecordMode.RECORD))
        verdict = asyncio.run(verdict_judge.evaluate(result.conversation, scenario=loaded.name))
        save_verdicts(out, [verdict], records=verdict_judge.records, secrets=(key,))
        click.echo(verdict.headline())
    for cause in scenario_causes(result):
        click.echo(f"  {cause.lead.headline()}")
        for follow in cause.follows:
            click.echo(f"    from the same cause: {follow.headline()}")
    if result.error:
        click.echo(f"  error: {result.error}")
    ctx.exit(0 if result.status == "passed" else 1)


def _unrecorded(result: ScenarioResult) -> str | None:
    """What of the agent's calls the fixture lacks because the harness never saw them, if any.

    An agent's model client and tools are recorded when it wraps them
    (:func:`harness.recording.wrap`, :func:`~harness.recording.wrap_tools`);
    one that calls its model or services directly is recorded at the channel only.
    """
    conversation = result.conversation
    if conversation is None:
        return None
    unseen = [
        what
        for kind, what in (("llm", "model calls"), ("tool", "tool calls"))
        if not conversation.observes(kind)
    ]
    if not unseen:
        return None
    return (
        f"the agent's {' and '.join(unseen)} went past the harness, so the fixture does not "
        "hold them and a replay makes them again: wrap the model client and tools with "
        "harness.recording.wrap(client, env) and wrap_tools(env) (docs/how-to/record-replay.md)"
    )


def _kept_templates(path: str | None) -> dict[str, object]:
    """The channel option ``templates``: the file's content, to be kept in the fixture.

    The channel checks the file first, so a problem names its line and field.
    """
    if path is None:
        return {}
    from harness.plugins import load_channel_plugins
    from harness.suites.run_options import RunOptions
    from harness.suites.yamlpos import read_text, read_yaml

    plugin = load_channel_plugins().get(RunOptions().channel)
    if plugin is not None and plugin.check_options is not None:
        plugin.check_options({"templates": path})
    return {"templates": read_yaml(read_text(path), path=path).data}
