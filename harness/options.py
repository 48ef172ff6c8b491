"""Option parsing shared by the harness's commands and the commands channel plugins add.

Channel plugins bring their own subcommands (``serve``, ``proxy``) and may not
import the command line itself, so what both need lives here in the core.
"""

from __future__ import annotations

import click

from harness.durations import parse_duration
from harness.exceptions import ConfigError

__all__ = ["parse_settings", "positive_seconds"]


def parse_settings(pairs: tuple[str, ...], option: str) -> dict[str, str]:
    """``KEY=VALUE`` pairs as a mapping; a pair without ``=`` is a usage error."""
    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint=option)
        settings[key.strip()] = value
    return settings


def positive_seconds(text: str, option: str) -> float:
    """A duration option (``3s``, ``1m``) in seconds; not one, or not above 0, is a usage error."""
    try:
        seconds = parse_duration(text).total_seconds()
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None
    if seconds <= 0:
        raise click.BadParameter("it must be more than 0s", param_hint=option)
    return seconds
