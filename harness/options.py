"""Option parsing shared by the harness's commands and the commands channel plugins add.

Channel plugins bring their own subcommands (``serve``, ``proxy``) and may not
import the command line itself, so what both need lives here in the core.
"""

from __future__ import annotations

import click

__all__ = ["parse_settings"]


def parse_settings(pairs: tuple[str, ...], option: str) -> dict[str, str]:
    """``KEY=VALUE`` pairs as a mapping; a pair without ``=`` is a usage error."""
    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint=option)
        settings[key.strip()] = value
    return settings
