"""Option parsing shared by the harness's commands and the commands channel plugins add.

Channel plugins bring their own subcommands (``serve``, ``proxy``) and may not
import the command line itself, so what both need lives here in the core:
``KEY=VALUE`` settings, durations, and where the model calls an agent sends to
the harness go on to (``--anthropic-upstream``, ``--openai-upstream``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from harness.durations import parse_duration
from harness.endpoints.upstreams import ANTHROPIC_UPSTREAM, OPENAI_UPSTREAM
from harness.exceptions import ConfigError

__all__ = ["parse_settings", "positive_seconds", "upstream_options", "upstream_settings"]

F = TypeVar("F", bound=Callable[..., Any])


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


def upstream_options(when: str = "") -> Callable[[F], F]:
    """``--anthropic-upstream`` and ``--openai-upstream``, the real APIs by default.

    ``when`` leads each option's help (``"With --target-url: "``).
    """
    options = [
        click.option(
            "--anthropic-upstream",
            default=ANTHROPIC_UPSTREAM,
            show_default=True,
            help=_led(when, "where /v1/messages calls go on to when recorded or passed through."),
        ),
        click.option(
            "--openai-upstream",
            default=OPENAI_UPSTREAM,
            show_default=True,
            help=_led(
                when,
                "where /v1/chat/completions calls go on to (with its /v1, as OPENAI_BASE_URL).",
            ),
        ),
    ]

    def add(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return add


def upstream_settings(
    ctx: click.Context, target_url: str | None, anthropic_upstream: str, openai_upstream: str
) -> dict[str, object]:
    """The channel options of :func:`upstream_options`: for an agent at ``target_url`` only.

    An agent in process calls its model itself, so either option given
    without ``--target-url`` is a usage error; so is a value that is not an
    http(s) URL.
    """
    given: dict[str, object] = {
        "anthropic_upstream": anthropic_upstream,
        "openai_upstream": openai_upstream,
    }
    for name, url in given.items():
        option = "--" + name.replace("_", "-")
        source = ctx.get_parameter_source(name)
        if target_url is None and source not in (None, ParameterSource.DEFAULT):
            raise ConfigError(
                f"{option} needs --target-url (an agent in process calls its model itself)"
            )
        if not str(url).startswith(("http://", "https://")):
            raise ConfigError(f"{option} {url!r}: expected an http:// or https:// URL")
    return given if target_url is not None else {}


def _led(when: str, text: str) -> str:
    """``text`` led by ``when``, or capitalised on its own."""
    return f"{when}{text}" if when else text[0].upper() + text[1:]
