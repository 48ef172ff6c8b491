"""The ``harness`` command line.

Exit codes: 0 success, 1 an invariant or expectation failed, 2 bad input or
usage, 3 a replay diverged, 4 the judge scored below the gate's threshold.
Errors are printed as one line, never a traceback.
Channel plugins add their own subcommands (see :mod:`harness.plugins`).
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from harness.cli.logs import configure_logging
from harness.exceptions import Divergence, HarnessError
from harness.plugins import load_channel_plugins
from harness.version import VERSION

__all__ = ["EXIT_DIVERGED", "EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "HarnessGroup", "cli", "main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_DIVERGED = 3


class HarnessGroup(click.Group):
    """The top-level group: built-in commands plus those of installed channel plugins."""

    def _plugin_commands(self) -> dict[str, click.Command]:
        commands: dict[str, click.Command] = {}
        for plugin in load_channel_plugins().values():
            for command in plugin.commands:
                if command.name:
                    commands[command.name] = command
        return commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Built-in and plugin commands, sorted."""
        return sorted({*super().list_commands(ctx), *self._plugin_commands()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A built-in command, else a plugin's."""
        return super().get_command(ctx, cmd_name) or self._plugin_commands().get(cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        """Run the command; the harness's own errors become one line and an exit code."""
        try:
            return super().invoke(ctx)
        except Divergence as exc:
            click.echo(f"error: {exc}", err=True)
            raise click.exceptions.Exit(EXIT_DIVERGED) from None
        except HarnessError as exc:
            click.echo(f"error: {exc}", err=True)
            raise click.exceptions.Exit(EXIT_USAGE) from None


@click.group(cls=HarnessGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(VERSION, prog_name="harness")
def cli() -> None:
    """Record, replay and regression-test AI agents that run on WhatsApp."""


def _builtin_commands() -> None:
    # Imported here so that `harness --help` stays quick and plugins load lazily.
    from harness.cli.diff import diff_command
    from harness.cli.record import record_command
    from harness.cli.regress import regress_command
    from harness.cli.replay import replay_command
    from harness.cli.run import run_command
    from harness.cli.schema import schema_command
    from harness.cli.ui import ui_command  # its web server loads when it runs, not here

    commands = (
        diff_command,
        record_command,
        regress_command,
        replay_command,
        run_command,
        schema_command,
        ui_command,
    )
    for command in commands:
        cli.add_command(command)


_builtin_commands()


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point of the ``harness`` console script and ``python -m harness``; exits."""
    configure_logging()
    try:
        result = cli.main(args=argv, prog_name="harness", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(EXIT_FAILED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_USAGE)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except Divergence as exc:  # raised outside a command (while loading plugins)
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_DIVERGED)
    except HarnessError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    sys.exit(result if isinstance(result, int) else EXIT_OK)
