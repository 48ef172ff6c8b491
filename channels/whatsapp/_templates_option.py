"""``--templates FILE`` of ``harness serve`` and ``harness load``: the business's own templates.

The file is read when the command starts, so a bad one stops it with one line
naming the file, the line and the field, before anything is served.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["business_templates_option"]

F = TypeVar("F", bound=Callable[..., Any])


def business_templates_option(command: F) -> F:
    """Add ``--templates FILE``, given to the command read, as ``business_templates``."""
    option = click.option(
        "--templates",
        "business_templates",
        default=None,
        type=click.Path(dir_okay=False),
        callback=_read,
        help="The business's message templates (a JSON or YAML file, as Meta's GET "
        "message_templates lists them); without it, hello_world and two examples.",
    )
    return option(command)


def _read(_: click.Context, __: click.Parameter, path: str | None) -> tuple[Any, ...] | None:
    """The templates in the file, as Meta lists them (``None`` when not given)."""
    if path is None:
        return None
    from channels.whatsapp.templates import template_objects
    from harness.exceptions import HarnessError

    try:
        return template_objects(path)
    except HarnessError as exc:
        raise click.BadParameter(str(exc), param_hint="--templates") from None
