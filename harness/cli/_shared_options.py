"""Options ``harness run``, ``harness explore`` and ``harness replay`` share, alike in all.

Where the fake Graph API listens and how long to wait for an agent at a URL,
which lives on real time; and the business number's secrets and ids, for an
agent configured with its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = [
    "number_options",
    "number_settings",
    "templates_option",
    "url_target_options",
    "waba_option",
]

F = TypeVar("F", bound=Callable[..., Any])


def url_target_options(command: F) -> F:
    """Add ``--graph-host``, ``--graph-port``, ``--expect-timeout`` and ``--quiet``."""
    options = [
        click.option(
            "--graph-host",
            default="127.0.0.1",
            show_default=True,
            help="Where the fake Graph API listens, with --target-url.",
        ),
        click.option(
            "--graph-port",
            default=8000,
            show_default=True,
            type=int,
            help="Its port, with --target-url.",
        ),
        click.option(
            "--expect-timeout",
            default="10s",
            show_default=True,
            help="With --target-url: how long an expect step waits for what it expects (e.g. 10s).",
        ),
        click.option(
            "--quiet",
            "quiet_window",
            default="3s",
            show_default=True,
            help="With --target-url: how long with nothing from the agent counts as done "
            '(e.g. 3s); while it shows a user "typing...", it is not done.',
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def templates_option(command: F) -> F:
    """Add ``--templates FILE``: the business's message templates, as Meta lists them."""
    option = click.option(
        "--templates",
        default=None,
        type=click.Path(dir_okay=False),
        help="The business's message templates (a JSON or YAML file, as Meta's GET "
        "message_templates lists them); without it, hello_world and two examples.",
    )
    return option(command)


def number_options(command: F) -> F:
    """Add ``--app-secret``, ``--verify-token``, ``--access-token``, ``--phone-number-id``
    and ``--templates``."""
    options = [
        click.option(
            "--app-secret", default=None, help="Signs the webhooks (X-Hub-Signature-256)."
        ),
        click.option("--verify-token", default=None, help="Token of the verification handshake."),
        click.option(
            "--access-token", default=None, help="Bearer token the fake Graph API accepts."
        ),
        click.option("--phone-number-id", default=None, help="The business number's id."),
        templates_option,
    ]
    for option in reversed(options):
        command = option(command)
    return command


def waba_option(command: F) -> F:
    """Add ``--waba-id``: the WhatsApp Business Account's id."""
    option = click.option("--waba-id", default=None, help="The WhatsApp Business Account id.")
    return option(command)


def number_settings(**given: object) -> dict[str, object]:
    """The channel options of the business number's options given (those not None).

    Called with the parameters of :func:`number_options` (and ``waba_id``),
    by name: ``number_settings(app_secret=app_secret, ...)``.
    """
    return {key: value for key, value in given.items() if value is not None}
