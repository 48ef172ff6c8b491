"""``harness serve``'s retention options: how much of the past the server keeps.

Each limit is a count or an age (the server's clock as it runs, not its
jumps; written ``90s``, ``12h``, ``7d``), or ``all`` for no limit;
``--keep-all`` turns every limit off, as in-process runs have it. The options gather into one
:class:`~channels.whatsapp.retention.RetentionPolicy` handed to the command
as ``retention``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Final, TypeVar

import click

from channels.whatsapp.retention_policy import SERVE_RETENTION, RetentionPolicy
from harness.durations import format_duration, parse_duration_text
from harness.exceptions import ConfigError

__all__ = ["retention_options"]

F = TypeVar("F", bound=Callable[..., Any])
_ALL = "all"


def _count(ctx: click.Context, param: click.Parameter, value: str) -> int | None:
    """A limit on a count: a whole number from 1, or ``all``."""
    text = value.strip().lower()
    if text == _ALL:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 18 or int(text) < 1:
        raise click.BadParameter(f"expected a whole number from 1, or {_ALL!r}; got {value!r}")
    return int(text)


def _age(ctx: click.Context, param: click.Parameter, value: str) -> timedelta | None:
    """A limit on an age: a duration (``12h``, ``7d``), or ``all``."""
    if value.strip().lower() == _ALL:
        return None
    return _duration(ctx, param, value)


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> timedelta:
    try:
        age = parse_duration_text(value.strip().lower())
    except ConfigError as exc:
        raise click.BadParameter(f"{value!r}: {exc}") from None
    except OverflowError:
        raise click.BadParameter(f"{value!r} is too long") from None
    if age <= timedelta(0):
        raise click.BadParameter(f"{value!r}: it must be longer than 0")
    return age


def _shown(limit: int | timedelta | None) -> str:
    if limit is None:
        return _ALL
    return format_duration(limit) if isinstance(limit, timedelta) else str(limit)


_Convert = Callable[[click.Context, click.Parameter, str], Any]
_COUNT: Final = "COUNT|all"
_AGE: Final = "DURATION|all"
_LIMITS: tuple[tuple[str, str, _Convert, str, str], ...] = (
    ("keep_events", "events", _count, _COUNT, "Trace events kept (oldest dropped first)."),
    ("keep_events_for", "events_for", _age, _AGE, "How long an event is kept."),
    ("keep_outbox", "outbox", _count, _COUNT, "Sends kept in the outbox."),
    ("keep_outbox_for", "outbox_for", _age, _AGE, "How long a send stays in the outbox."),
    (
        "keep_messages",
        "messages",
        _count,
        _COUNT,
        "Messages remembered each way, for statuses, taps, reactions and redelivery;"
        " older ids answer as unknown ones.",
    ),
    ("keep_messages_for", "messages_for", _age, _AGE, "How long a message is remembered."),
    ("keep_media", "media", _count, _COUNT, "Media files kept (besides Meta's own lifetimes)."),
)


def retention_options(command: F) -> F:
    """Add the retention options; the command gets them as one ``retention`` policy."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        limits = {field: kwargs.pop(option) for option, field, _, _, _ in _LIMITS}
        active = kwargs.pop("active_for")
        keep_all = kwargs.pop("keep_all")
        kwargs["retention"] = (
            RetentionPolicy() if keep_all else RetentionPolicy(**limits, active=active)
        )
        return command(*args, **kwargs)

    options = [
        click.option(
            f"--{option.replace('_', '-')}",
            option,
            metavar=metavar,
            callback=convert,
            default=_shown(getattr(SERVE_RETENTION, field)),
            show_default=True,
            help=text,
        )
        for option, field, convert, metavar, text in _LIMITS
    ]
    options.append(
        click.option(
            "--active-for",
            metavar="DURATION",
            callback=_duration,
            default=_shown(SERVE_RETENTION.active),
            show_default=True,
            help="A conversation whose user did something this recently keeps its current"
            " turn whole, whatever the limits.",
        )
    )
    options.append(
        click.option(
            "--keep-all",
            is_flag=True,
            help="Keep everything for the life of the server (memory grows with every turn).",
        )
    )
    decorated: Any = wrapper
    for option in reversed(options):
        decorated = option(decorated)
    result: F = decorated
    return result
