"""The ``harness`` command line."""

from __future__ import annotations

import click

from harness import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
def cli() -> None:
    """Record, replay and regression-test AI agents that run on WhatsApp."""


def main() -> None:
    """Entry point of the ``harness`` console script."""
    cli()
