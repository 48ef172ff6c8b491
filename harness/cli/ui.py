"""``harness ui``: the prompt debugger, a web app on loopback (see :mod:`harness.ui`).

The web server (Starlette, uvicorn) is imported when the command runs, so
the other commands never load it. The app can write the agent's prompt
files, so it listens on 127.0.0.1 and nowhere else.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from harness.cli.project import NO_FACTORY_TARGET, find_project
from harness.exceptions import ConfigError
from harness.options import parse_settings

__all__ = ["LOOPBACK_HOST", "ui_command"]

#: Where the app listens, always.
LOOPBACK_HOST = "127.0.0.1"
_LOOPBACK_ALIASES = (LOOPBACK_HOST, "localhost")


def _recorded_target(paths: list[Path]) -> str | None:
    from harness.fixture import load_fixture

    for path in paths:
        try:
            target = load_fixture(path).meta.agent_version
        except ConfigError:
            continue
        if isinstance(target, str) and ":" in target:
            return target
    return None


@click.command("ui")
@click.argument("fixtures", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--target",
    default=None,
    help="The agent's factory, package.module:attr (default: the project's, else the recorded).",
)
@click.option("--agent-setting", "agent_settings", multiple=True, metavar="KEY=VALUE")
@click.option(
    "--live",
    is_flag=True,
    help="What the recording can't answer goes to the real Anthropic model "
    "(needs ANTHROPIC_API_KEY); without it, to the agent's configured model.",
)
@click.option(
    "--host",
    default=LOOPBACK_HOST,
    show_default=True,
    help="Only 127.0.0.1 (or localhost): the app writes prompt files.",
)
@click.option("--port", default=8765, show_default=True, type=int, help="0 picks a free port.")
def ui_command(
    fixtures: tuple[Path, ...],
    target: str | None,
    agent_settings: tuple[str, ...],
    live: bool,
    host: str,
    port: int,
) -> None:
    """Edit the agent's prompts, replay recorded chats with them, compare, and save.

    FIXTURES are fixture folders, or folders holding them (default: the
    project's paths). Replays use the live policy: a request the recording
    can't answer goes to the agent's own model.
    """
    # Imported here, not above: `harness --help` reads this module for the help alone.
    from harness.cli.replaying import fixture_dirs
    from harness.prompts import declared_prompts

    if host not in _LOOPBACK_ALIASES:
        raise ConfigError(
            f"--host {host!r}: harness ui listens on {LOOPBACK_HOST} only, since it can write "
            "the agent's prompt files"
        )
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port}: expected 0 to 65535")
    settings = parse_settings(agent_settings, "--agent-setting")
    if live:
        key = os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ConfigError("--live needs ANTHROPIC_API_KEY in the environment")
        settings = {"HARNESS_LLM": "anthropic", "ANTHROPIC_API_KEY": key, **settings}
    project = find_project()
    paths = fixture_dirs(tuple(fixtures) or project.paths or (Path("scenarios"),))
    target = target or project.target or _recorded_target(paths)
    if target is None:
        raise ConfigError(NO_FACTORY_TARGET)

    import socket

    import uvicorn  # the web server loads only for this command

    from harness.suites.runner import Runner, RunOptions
    from harness.ui import catalog, create_app

    runner = Runner(
        RunOptions(
            target=target,
            agent_settings=settings,
            import_paths=(str(project.root),) if project.root is not None else (),
        )
    )
    declared_prompts(runner.factory, settings)  # a bad setting stops here, as one line
    app = create_app(catalog(paths), runner, settings)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((LOOPBACK_HOST, port))
    except OSError as exc:
        listener.close()
        raise ConfigError(
            f"--port {port}: can't listen on {LOOPBACK_HOST}: {exc.strerror}"
        ) from None
    listener.listen(128)
    bound = listener.getsockname()[1]
    # Listening already: a browser opened on this line waits in the backlog, never refused.
    click.echo(f"harness ui: {len(paths)} fixtures, agent {runner.target}")
    click.echo(f"harness ui: serving on http://{LOOPBACK_HOST}:{bound}/ (Ctrl+C stops)", err=False)
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    server.run(sockets=[listener])
