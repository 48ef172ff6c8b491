"""The send-limit options of ``harness serve`` and ``harness load``: the tier, and limits at all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["limit_options"]

F = TypeVar("F", bound=Callable[..., Any])


def limit_options(command: F) -> F:
    """Add ``--throughput-mps`` and ``--rate-limits/--no-rate-limits`` (as ``rate_limits``)."""
    throughput = click.option(
        "--throughput-mps",
        default=80,
        show_default=True,
        type=click.IntRange(min=1),
        help="Messages per second the business number may send before 130429 (Meta: 80, "
        "1000 once upgraded).",
    )
    limits = click.option(
        "--rate-limits/--no-rate-limits",
        default=True,
        show_default=True,
        help="Apply Meta's throughput (130429) and pair rate (131056) limits; without them, "
        "every send within the window goes out, to measure the agent alone.",
    )
    return throughput(limits(command))
