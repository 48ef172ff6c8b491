"""Dates relative to a scenario's start, written in expectations as ``${friday}``.

An in-process run starts on a fixed day; an agent at a URL lives on real
time, so "friday" is another date every week. An expectation that names a
date as an expression holds either way: the expression is resolved against
the day the scenario started (its first instant, in UTC) when it is checked.

An expression is ``${DAY}``, ``${DAY+OFFSET}`` or ``${DAY:FORMAT}``:

- ``DAY`` is ``today``, ``tomorrow``, ``yesterday``, a weekday (``friday``,
  ``fri``: the next such day strictly after the start), or a month and a day
  (``january 9``, ``9 january``, ``jan 9th``: the next such date on or
  after the start);
- ``OFFSET`` is a number of days or weeks, ``+3d``, ``-1w``;
- ``FORMAT`` is how the date is written (default ``%Y-%m-%d``), with
  ``%Y %y %m %-m %d %-d %j %A %a %B %b %%`` and any other text; names are
  English, whatever the machine's locale.

``$${`` stands for a literal ``${``. :func:`check_dates` finds the mistakes
when a scenario is loaded; :func:`resolve_dates` writes the dates in.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Final

from pydantic import JsonValue

from harness.suites.yamlpos import LocatedError

__all__ = [
    "DEFAULT_FORMAT",
    "DateExpression",
    "check_dated_regex",
    "check_dated_values",
    "check_dates",
    "has_dates",
    "parse_date_expression",
    "resolve_dates",
]

_WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS: Final = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
#: The format a date is written in when an expression names none.
DEFAULT_FORMAT: Final = "%Y-%m-%d"

_PLACEHOLDER: Final = re.compile(r"\$\$\{|\$\{([^}]*)(\})?")
_RELATIVE: Final = {"today": 0, "tomorrow": 1, "yesterday": -1}
_OFFSET: Final = re.compile(r"^(.*?)\s*([+-])\s*(\d+)\s*([dw])$")
_ORDINAL: Final = r"(\d{1,2})(?:st|nd|rd|th)?"
_MONTH_DAY: Final = re.compile(rf"^([a-z]+)\.?\s+{_ORDINAL}$")
_DAY_MONTH: Final = re.compile(rf"^{_ORDINAL}(?:\s+of)?\s+([a-z]+)\.?$")
_DIRECTIVE: Final = re.compile(r"%(-?.)?")
_FORMATS: Final[dict[str, Callable[[date], str]]] = {
    "Y": lambda d: f"{d.year:04d}",
    "y": lambda d: f"{d.year % 100:02d}",
    "m": lambda d: f"{d.month:02d}",
    "-m": lambda d: str(d.month),
    "d": lambda d: f"{d.day:02d}",
    "-d": lambda d: str(d.day),
    "j": lambda d: f"{d.timetuple().tm_yday:03d}",
    "A": lambda d: _WEEKDAYS[d.weekday()].capitalize(),
    "a": lambda d: _WEEKDAYS[d.weekday()][:3].capitalize(),
    "B": lambda d: _MONTHS[d.month - 1].capitalize(),
    "b": lambda d: _MONTHS[d.month - 1][:3].capitalize(),
    "%": lambda d: "%",
}
_HELP: Final = (
    "a date is today, tomorrow, yesterday, a weekday (friday) or a month and day "
    "(january 9), with an optional offset (+3d, -1w) and format (:%A %-d %B)"
)


def _name(word: str, names: tuple[str, ...]) -> int | None:
    """The index of a full or three-letter name (``fri``, ``sept``), else None."""
    for index, name in enumerate(names):
        if word == name or (len(word) >= 3 and name.startswith(word)):
            return index
    return None


def _suggest(word: str) -> str:
    known = [*_RELATIVE, *_WEEKDAYS, *_MONTHS]
    close = difflib.get_close_matches(word, known, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


@dataclass(frozen=True)
class DateExpression:
    """One ``${...}``: which day, how far from it, and how to write it."""

    text: str
    days: int = 0
    weekday: int | None = None
    month: int | None = None
    day: int | None = None
    offset: timedelta = timedelta(0)
    format: str = DEFAULT_FORMAT

    def date_from(self, start: date) -> date:
        """The date this expression names for a scenario that started on ``start``."""
        if self.weekday is not None:
            base = start + timedelta(days=(self.weekday - start.weekday()) % 7 or 7)
        elif self.month is not None and self.day is not None:
            base = _on_or_after(start, self.month, self.day)
        else:
            base = start + timedelta(days=self.days)
        return base + self.offset

    def render(self, start: date) -> str:
        """The date, written in the expression's format."""
        when = self.date_from(start)
        return _DIRECTIVE.sub(lambda m: _FORMATS[m.group(1)](when), self.format)


def _on_or_after(start: date, month: int, day: int) -> date:
    # Eight years always hold a 29 February; other dates come within two.
    for year in range(start.year, start.year + 9):
        try:
            when = date(year, month, day)
        except ValueError:
            continue
        if when >= start:
            return when
    raise ValueError(f"no {_MONTHS[month - 1]} {day}")  # refused when parsed


def _check_format(spec: str) -> str:
    for match in _DIRECTIVE.finditer(spec):
        if match.group(1) not in _FORMATS:
            known = " ".join(f"%{key}" for key in _FORMATS)
            raise ValueError(f"unknown format directive '{match.group(0)}' (known: {known})")
    return spec


def parse_date_expression(inside: str) -> DateExpression:
    """Read what is between ``${`` and ``}``; a :class:`ValueError` says what is wrong."""
    text = f"${{{inside}}}"
    body, colon, spec = inside.partition(":")
    fmt = _check_format(spec) if colon else DEFAULT_FORMAT
    if colon and not spec:
        raise ValueError(f"{text}: the format after ':' is empty")
    words = " ".join(body.lower().split())
    offset = timedelta(0)
    found = _OFFSET.match(words)
    if found is not None:
        words, sign, count, unit = found.groups()
        days = int(count) * (7 if unit == "w" else 1)
        offset = timedelta(days=-days if sign == "-" else days)
    if not words:
        raise ValueError(f"{text}: no date; {_HELP}")
    if words in _RELATIVE:
        return DateExpression(text, days=_RELATIVE[words], offset=offset, format=fmt)
    weekday = _name(words, _WEEKDAYS)
    if weekday is not None:
        return DateExpression(text, weekday=weekday, offset=offset, format=fmt)
    for pattern, month_group, day_group in ((_MONTH_DAY, 1, 2), (_DAY_MONTH, 2, 1)):
        match = pattern.match(words)
        if match is None:
            continue
        month = _name(match.group(month_group), _MONTHS)
        if month is None:
            word = match.group(month_group)
            raise ValueError(f"{text}: unknown month '{word}'{_suggest(word)}")
        day = int(match.group(day_group))
        if not any(_valid(year, month + 1, day) for year in (2024, 2025)):
            raise ValueError(f"{text}: there is no {_MONTHS[month]} {day}")
        return DateExpression(text, month=month + 1, day=day, offset=offset, format=fmt)
    raise ValueError(f"{text}: unknown date '{words}'{_suggest(words)}; {_HELP}")


def _valid(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def _pieces(text: str) -> list[str | DateExpression]:
    out: list[str | DateExpression] = []
    last = 0
    for match in _PLACEHOLDER.finditer(text):
        out.append(text[last : match.start()])
        last = match.end()
        if match.group(0) == "$${":
            out.append("${")
        elif match.group(2) is None:
            raise ValueError(
                f"'${{' without a closing '}}' in {text!r} (write $${{ for a literal ${{)"
            )
        else:
            out.append(parse_date_expression(match.group(1)))
    out.append(text[last:])
    return out


def has_dates(text: str) -> bool:
    """True when ``text`` holds a date expression (or an escaped ``$${``) to resolve."""
    return _PLACEHOLDER.search(text) is not None


def check_dates(text: str) -> str:
    """``text`` itself, once every date expression in it reads; else a one-line ValueError."""
    _pieces(text)
    return text


def resolve_dates(text: str, start: date, *, escape: Callable[[str], str] | None = None) -> str:
    """``text`` with every date expression written in for a scenario that started on ``start``.

    ``escape`` treats each written date (``re.escape`` in a regular expression).
    """
    if not has_dates(text):
        return text
    out: list[str] = []
    for piece in _pieces(text):
        if isinstance(piece, str):
            out.append(piece)
        else:
            written = piece.render(start)
            out.append(escape(written) if escape is not None else written)
    return "".join(out)


# Any day will do to check that a pattern naming dates compiles once they are written in.
_SOME_DAY: Final = date(2026, 1, 1)


def check_dated_regex(pattern: str) -> str:
    """``pattern`` itself, once its dates read and it compiles with them written in."""
    check_dates(pattern)
    try:
        re.compile(resolve_dates(pattern, _SOME_DAY, escape=re.escape))
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return pattern


def check_dated_values(value: JsonValue) -> JsonValue:
    """Check the date expressions in a tool call's expected arguments, wherever they are."""
    if isinstance(value, str):
        return check_dates(value)
    items: list[tuple[str | int, JsonValue]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    for key, item in items:
        try:
            check_dated_values(item)
        except LocatedError as exc:
            raise LocatedError(str(exc), (key, *exc.loc)) from None
        except ValueError as exc:
            raise LocatedError(str(exc), (key,)) from None
    return value
