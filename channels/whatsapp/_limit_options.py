"""The ``--throughput-mps`` option of ``harness serve`` and ``harness load``: the sending tier."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["throughput_option"]

F = TypeVar("F", bound=Callable[..., Any])


def throughput_option(command: F) -> F:
    """Add ``--throughput-mps``: the command gets its value as ``throughput_mps``."""
    option = click.option(
        "--throughput-mps",
        default=80,
        show_default=True,
        type=click.IntRange(min=1),
        help="Messages per second the business number may send before 130429 (Meta: 80, "
        "1000 once upgraded).",
    )
    return option(command)
