"""Option parsing shared by the harness's commands and the commands channel plugins add.

Channel plugins bring their own subcommands (``serve``, ``proxy``) and may not
import the command line itself, so what both need lives here in the core:
``KEY=VALUE`` settings, durations, and where the model calls an agent sends to
the harness go on to (``--anthropic-upstream``, ``--openai-upstream``), and
which of the tools its spans report have side effects (``--side-effect-tool``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from harness.durations import parse_duration
from harness.endpoints.upstreams import ANTHROPIC_UPSTREAM, OPENAI_UPSTREAM
from harness.exceptions import ConfigError

__all__ = [
    "parse_settings",
    "positive_seconds",
    "side_effect_option",
    "side_effect_settings",
    "upstream_options",
    "upstream_settings",
]

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


def side_effect_option(when: str = "") -> Callable[[F], F]:
    """``--side-effect-tool NAME`` (repeatable), as ``side_effect_tools``.

    The OpenTelemetry GenAI conventions have no word for a side effect: a tool
    call an agent's span reports is side-effecting when its span says so
    (``harness.tool.side_effect = true``) or its name is given here.
    ``when`` leads the option's help (``"With --target-url: "``).
    """
    return click.option(
        "--side-effect-tool",
        "side_effect_tools",
        multiple=True,
        metavar="NAME",
        help=_led(
            when, "a tool with side effects, for the tool calls /v1/traces reports (repeatable)."
        ),
    )


def side_effect_settings(target_url: str | None, tools: tuple[str, ...]) -> dict[str, object]:
    """The channel option of :func:`side_effect_option`: for an agent at ``target_url`` only.

    An agent in process registers its tools' side effects itself
    (``wrap_tools``), so a tool named without ``--target-url`` is a usage
    error, as is an empty name.
    """
    if not tools:
        return {}
    if target_url is None:
        raise ConfigError(
            "--side-effect-tool needs --target-url (an agent in process marks its tools' "
            "side effects itself)"
        )
    if not all(name.strip() for name in tools):
        raise ConfigError("--side-effect-tool: expected a tool's name, got ''")
    return {"side_effect_tools": tuple(dict.fromkeys(name.strip() for name in tools))}


def _led(when: str, text: str) -> str:
    """``text`` led by ``when``, or capitalised on its own."""
    return f"{when}{text}" if when else text[0].upper() + text[1:]
