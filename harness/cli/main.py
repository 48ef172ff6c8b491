"""The ``harness`` command line.

Exit codes: 0 success, 1 an invariant or expectation failed, 2 bad input or
usage, 3 a replay diverged, 4 the judge scored below the gate's threshold.
Errors are printed as one line, never a traceback.
Channel plugins add their own subcommands (see :mod:`harness.plugins`).
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final, NoReturn

import click

from harness.cli.logs import configure_logging
from harness.exceptions import Divergence, HarnessError
from harness.plugins import load_channel_plugins
from harness.version import VERSION

__all__ = [
    "BUILTIN_COMMANDS",
    "EXIT_DIVERGED",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "GC_THRESHOLDS",
    "HarnessGroup",
    "cli",
    "main",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_DIVERGED = 3


#: Each built-in command and the module that declares it, imported when the command is
#: asked for: ``harness run`` never imports what ``harness diff`` needs. The modules
#: import what their command runs with inside it, so ``harness --help``, which reads
#: every command's help, stays quick.
BUILTIN_COMMANDS: dict[str, str] = {
    "diff": "harness.cli.diff:diff_command",
    "explore": "harness.cli.explore:explore_command",
    "record": "harness.cli.record:record_command",
    "regress": "harness.cli.regress:regress_command",
    "replay": "harness.cli.replay:replay_command",
    "run": "harness.cli.run:run_command",
    "schema": "harness.cli.schema:schema_command",
    "ui": "harness.cli.ui:ui_command",
    "worker": "harness.cli.worker:worker_command",
}


class HarnessGroup(click.Group):
    """The top-level group: built-in commands plus those of installed channel plugins."""

    _plugins: dict[str, click.Command] | None = None

    def _plugin_commands(self) -> dict[str, click.Command]:
        # Once per process: finding the plugins reads every installed package's metadata.
        if self._plugins is None:
            commands: dict[str, click.Command] = {}
            for plugin in load_channel_plugins().values():
                for command in plugin.commands:
                    if command.name:
                        commands[command.name] = command
            self._plugins = commands
        return self._plugins

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Built-in and plugin commands (and any added to the group), sorted."""
        return sorted({*super().list_commands(ctx), *BUILTIN_COMMANDS, *self._plugin_commands()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A command added to the group, else a built-in one (imported now), else a plugin's."""
        added = super().get_command(ctx, cmd_name)
        if added is not None:
            return added
        if cmd_name in BUILTIN_COMMANDS:
            module, _, attr = BUILTIN_COMMANDS[cmd_name].partition(":")
            command: click.Command = getattr(importlib.import_module(module), attr)
            return command
        return self._plugin_commands().get(cmd_name)

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


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point of the ``harness`` console script and ``python -m harness``; exits."""
    configure_logging()
    with _collecting_less_often():
        code = _run(argv)
    sys.exit(code)


def _run(argv: list[str] | None) -> int:
    try:
        result = cli.main(args=argv, prog_name="harness", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return EXIT_FAILED
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except Divergence as exc:  # raised outside a command (while loading plugins)
        click.echo(f"error: {exc}", err=True)
        return EXIT_DIVERGED
    except HarnessError as exc:
        click.echo(f"error: {exc}", err=True)
        return EXIT_USAGE
    return result if isinstance(result, int) else EXIT_OK


#: The cyclic garbage collector's thresholds while a command runs (Python's are 700, 10, 10).
#: A run keeps every event it records until its report is written, and the collector's full
#: collections walk everything kept: at Python's pace they took a sixth of a long in-process
#: run. Young objects are collected every 10,000 allocations instead of 700, so far fewer
#: survive into the old generations by being alive at the wrong moment, and the full
#: collections come far apart. The last figure stays: a full collection still waits for the
#: old generation to have grown by a quarter.
GC_THRESHOLDS: Final = (10_000, 10, 10)


@contextmanager
def _collecting_less_often() -> Iterator[None]:
    """Collect garbage at the command's pace while it runs; Python's settings again after.

    A process-wide setting, so only the command line sets it (never the
    library or the pytest plugin), and it is put back however the command
    ends: tests call :func:`main` inside their own process.
    """
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
