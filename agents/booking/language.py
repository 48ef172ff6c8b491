"""Reading what customers type: dates, times, yes and no, cancel and policy questions.

Deterministic and dependency-free. The agent uses the yes/no readers to open
its confirmation gate; :class:`~agents.booking.scripted.ScriptedModel` uses
all of it to stand in for a language model offline.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from functools import lru_cache
from typing import Final

__all__ = [
    "WEEKDAYS",
    "find_date",
    "find_time",
    "format_day",
    "is_cancel_request",
    "is_confirmation",
    "is_greeting",
    "is_policy_question",
    "is_rejection",
]

#: Weekday names, Monday first, as ``date.weekday()`` counts them.
WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS: Final = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip

_ISO: Final = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_WEEKDAY: Final = re.compile(
    r"\b(?:(next|this)\s+)?(mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|rsday|urday)?\b"
)
_MONTH_NAME: Final = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*"
_DAY_MONTH: Final = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+{_MONTH_NAME}\b")
_MONTH_DAY: Final = re.compile(rf"\b{_MONTH_NAME}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b")
_CLOCK: Final = re.compile(r"\b([01]?\d|2[0-3])[:.h]([0-5]\d)\s*(am|pm|a\.m\.|p\.m\.)?(?!\d)")
_HOUR_MERIDIEM: Final = re.compile(r"\b(1[0-2]|0?[1-9])\s*(am|pm|a\.m\.|p\.m\.)(?![a-z])")
_AT_HOUR: Final = re.compile(
    r"\b(?:at|around)\s+(1[0-2]|0?[1-9])(?!\s*(?:[\d:.h]|am\b|pm\b|a\.m|p\.m|people|guests))"
)
_HALF_PAST: Final = re.compile(r"\bhalf\s+past\s+(1[0-2]|0?[1-9])\b")

_YES: Final = re.compile(
    r"^\W*(yes|yeah|yep|yup|sure|ok|okay|confirm|confirmed|correct|perfect|great|"
    r"book it|please do|go ahead|do it|sounds good|that works|that's fine|fine)\b"
    r"|\b(yes please|please confirm|confirm it|confirm please|book it|go ahead)\b"
    r"|^\s*(👍|👌|✅)"
)
_NO: Final = re.compile(
    r"^\W*(no|nope|nah|not that|change|change it|different|another)\b"
    r"|\b(something else|another (day|time)|different (day|time)|change (it|the))\b"
)
_CANCEL: Final = re.compile(r"\b(cancel|call off|can't make it|cannot make it)\b")
_POLICY: Final = re.compile(r"\b(polic(y|ies)|house rules|terms|deposit|allergen)s?\b")
_GREETING: Final = re.compile(r"^\W*(hi|hello|hey|hiya|hola|good (morning|afternoon|evening))\b")


def _clean(text: str) -> str:
    return " ".join(text.lower().replace("’", "'").split())


@lru_cache(maxsize=4096)
def find_date(text: str, today: date) -> date | None:
    """The date ``text`` names, read relative to ``today``; the last one mentioned wins.

    Understands ISO dates (``2026-01-09``), ``today``, ``tomorrow``, ``the
    day after tomorrow``, weekdays (``friday``, ``this fri``: the next such
    day after today; ``next friday``: the same, one week further when that
    day falls within the next two days), and ``9 january`` / ``jan 9th``
    (the next such day, today included).
    """
    clean = _clean(text)
    found: list[tuple[int, date]] = []
    for match in _ISO.finditer(clean):
        try:
            found.append((match.start(), date(*(int(g) for g in match.groups()))))
        except ValueError:
            continue
    for word, offset in (("day after tomorrow", 2), ("tomorrow", 1), ("today", 0), ("tonight", 0)):
        for match in re.finditer(rf"\b{word}\b", clean):
            if word == "tomorrow" and clean[: match.start()].endswith("day after "):
                continue
            found.append((match.start(), today + timedelta(days=offset)))
    for match in _WEEKDAY.finditer(clean):
        which, stem = match.groups()
        weekday = next(i for i, name in enumerate(WEEKDAYS) if name.startswith(stem[:3]))
        ahead = (weekday - today.weekday()) % 7 or 7
        if which == "next" and ahead <= 2:
            ahead += 7
        found.append((match.start(), today + timedelta(days=ahead)))
    for pattern, day_group, month_group in ((_DAY_MONTH, 1, 2), (_MONTH_DAY, 2, 1)):
        for match in pattern.finditer(clean):
            month = _month(match.group(month_group))
            day = int(match.group(day_group))
            when = _next_on_or_after(today, month, day)
            if when is not None:
                found.append((match.start(), when))
    return max(found, key=lambda item: item[0])[1] if found else None


def _month(stem: str) -> int:
    return next(i for i, name in enumerate(_MONTHS, start=1) if name.startswith(stem[:3]))


def _next_on_or_after(today: date, month: int, day: int) -> date | None:
    for year in (today.year, today.year + 1):
        try:
            when = date(year, month, day)
        except ValueError:
            return None
        if when >= today:
            return when
    return None


@lru_cache(maxsize=4096)
def find_time(text: str) -> str | None:
    """The time of day ``text`` names, as ``HH:MM``; the last one mentioned wins.

    Understands ``19:00``, ``7.30pm``, ``7pm``, ``9 am``, ``noon``, ``half
    past 7`` and ``at 8``. Without am/pm, an hour from 1 to 9 is read as
    evening or afternoon (a restaurant serves no breakfast).
    """
    clean = _ISO.sub(" ", _clean(text))
    found: list[tuple[int, int, int]] = []
    for match in _CLOCK.finditer(clean):
        hour, minute, meridiem = int(match.group(1)), int(match.group(2)), match.group(3)
        if meridiem is None and match.group(1).startswith("0"):
            found.append((match.start(), hour, minute))  # 09:30 is written as a 24-hour time
        else:
            found.append((match.start(), _meridiem(hour, meridiem), minute))
    for match in _HOUR_MERIDIEM.finditer(clean):
        if any(start <= match.start() < start + 6 for start, _, _ in found):
            continue  # already read as 7:30pm
        found.append((match.start(), _meridiem(int(match.group(1)), match.group(2)), 0))
    for match in _HALF_PAST.finditer(clean):
        found.append((match.start(), _meridiem(int(match.group(1)), None), 30))
    for match in _AT_HOUR.finditer(clean):
        found.append((match.start(), _meridiem(int(match.group(1)), None), 0))
    for word, hour in (("noon", 12), ("midday", 12), ("midnight", 0)):
        for match in re.finditer(rf"\b{word}\b", clean):
            found.append((match.start(), hour, 0))
    if not found:
        return None
    _, hour, minute = max(found, key=lambda item: item[0])
    return f"{hour:02d}:{minute:02d}"


def _meridiem(hour: int, meridiem: str | None) -> int:
    if meridiem is None:
        return hour + 12 if 1 <= hour <= 9 else hour
    if meridiem.startswith("p"):
        return hour if hour == 12 else hour + 12
    return 0 if hour == 12 else hour


def is_confirmation(text: str) -> bool:
    """True when ``text`` says yes (``yes``, ``confirm``, ``book it``, ``sounds good``...)."""
    clean = _clean(text)
    return bool(_YES.search(clean)) and not _NO.match(clean)


def is_rejection(text: str) -> bool:
    """True when ``text`` turns a proposal down or asks for another one (``no``, ``change``)."""
    return bool(_NO.search(_clean(text)))


def is_cancel_request(text: str) -> bool:
    """True when ``text`` asks to cancel a booking."""
    return bool(_CANCEL.search(_clean(text))) and not is_policy_question(text)


def is_policy_question(text: str) -> bool:
    """True when ``text`` asks about the house policies (cancellation policy, deposit...)."""
    return bool(_POLICY.search(_clean(text)))


def is_greeting(text: str) -> bool:
    """True when ``text`` opens with a greeting."""
    return bool(_GREETING.search(_clean(text)))


def format_day(day: date) -> str:
    """A date as people write it in a chat: ``Friday 2 January``."""
    return f"{WEEKDAYS[day.weekday()].capitalize()} {day.day} {_MONTHS[day.month - 1].capitalize()}"
