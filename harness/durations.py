"""Durations as scenario files and command lines write them: ``25h``, ``90s``, ``1d2h``, ``-5m``.

:func:`parse_duration` reads them (numbers are seconds) and
:func:`format_duration` writes a ``timedelta`` back the same way.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from typing import Final

from harness.exceptions import ConfigError

__all__ = ["format_duration", "parse_duration", "parse_duration_text"]

_UNITS: Final = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds", "ms": "milliseconds"}
_UNIT_RANK: Final = {unit: rank for rank, unit in enumerate(_UNITS)}
_NUMBER: Final = r"(?:\d+(?:\.\d+)?|\.\d+)"
_DURATION_PART: Final = re.compile(rf"({_NUMBER})(ms|[dhms])")
_DURATION: Final = re.compile(rf"([+-]?)((?:{_NUMBER}(?:ms|[dhms]))+)")
_HINT: Final = "a number with a unit (d, h, m, s, ms), e.g. 90s, 5m, 1d2h or 1.5h"
_SIGNED_HINT: Final = "a number with a unit (d, h, m, s, ms), e.g. 90s, 5m, 1d2h, -5m or 1.5h"


def parse_duration(value: str | float | timedelta, *, signed: bool = False) -> timedelta:
    """Read a duration such as ``"25h"``, ``"90s"``, ``"1d2h"``, ``"-5m"`` or ``"1.5h"``.

    Units go from largest to smallest, each at most once; a sign may lead.
    Numbers are taken as seconds and a ``timedelta`` as itself, so scenario
    files may write either. Anything else raises :class:`ConfigError`, whose
    examples include a negative one (``-5m``) only when ``signed`` says that
    the caller accepts negative durations (a caller that does not refuses
    them in its own words).
    """
    if isinstance(value, timedelta):
        return value
    try:
        if isinstance(value, bool):
            raise ConfigError(f"expected {_SIGNED_HINT if signed else _HINT}")
        if isinstance(value, int | float):
            if not math.isfinite(value):
                raise ConfigError("it must be finite")
            return timedelta(seconds=value)
        return parse_duration_text(value.strip(), signed=signed)
    except OverflowError:
        raise ConfigError(f"bad duration {value!r}: too long") from None
    except ConfigError as exc:
        raise ConfigError(f"bad duration {value!r}: {exc}") from None


def parse_duration_text(text: str, *, signed: bool = False) -> timedelta:
    """Read a duration written as text only (no plain numbers); see :func:`parse_duration`."""
    if text in ("0", "+0", "-0"):
        return timedelta(0)
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ConfigError(f"expected {_SIGNED_HINT if signed else _HINT}")
    sign, body = match.groups()
    total = timedelta(0)
    last_rank = -1
    for number, unit in _DURATION_PART.findall(body):
        if _UNIT_RANK[unit] <= last_rank:
            raise ConfigError("units must go from largest to smallest, each once")
        last_rank = _UNIT_RANK[unit]
        try:
            total += timedelta(**{_UNITS[unit]: float(number)})
        except OverflowError:
            raise ConfigError("the duration is too long") from None
    return -total if sign == "-" else total


def format_duration(delta: timedelta, *, plus: bool = False) -> str:
    """Write a duration the way :func:`parse_duration` reads it (``"1d2h"``, ``"-5m"``).

    ``plus`` puts a ``+`` before positive durations, as skew specs do.
    """
    if not delta:
        return "0s"
    sign = "-" if delta < timedelta(0) else ("+" if plus else "")
    delta = abs(delta)
    hours, rest = divmod(delta.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((delta.days, "d"), (hours, "h"), (minutes, "m")) if n]
    if delta.microseconds:
        parts.append(f"{seconds}.{delta.microseconds:06d}".rstrip("0") + "s")
    elif seconds:
        parts.append(f"{seconds}s")
    return sign + "".join(parts)
