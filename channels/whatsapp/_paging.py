"""Graph's paging of a list: a page of ``limit`` items, with ``after`` and ``before`` cursors.

The account's listings (its numbers, its templates) and the number's
blocked users are paged alike. A cursor is the position of an item, written
as Graph writes cursors (opaque base64); a list that changes between two
reads shifts under its cursors, as Meta's does.
"""

from __future__ import annotations

import base64
from typing import Any, Final
from urllib.parse import urlencode

from starlette.requests import Request

from channels.whatsapp.sends.problems import request_error

__all__ = ["MOST_PER_PAGE", "PAGE", "page"]

PAGE: Final = 25
"""How many items a page holds when the call gives no ``limit``."""
MOST_PER_PAGE: Final = 1000
"""The largest ``limit`` a call may give."""


def page(request: Request, items: list[dict[str, Any]]) -> dict[str, Any]:
    """One page of ``items`` with Graph's cursors: ``limit``, then ``after`` or ``before``."""
    query = request.query_params
    limit = _number(query.get("limit"), "limit", PAGE)
    if not 1 <= limit <= MOST_PER_PAGE:
        raise request_error("limit", f"must be between 1 and {MOST_PER_PAGE}")
    start = 0
    if query.get("after") is not None:
        start = _cursor(query["after"], "after") + 1
    elif query.get("before") is not None:
        start = max(0, _cursor(query["before"], "before") - limit)
    chosen = items[start : start + limit]
    answer: dict[str, Any] = {"data": chosen}
    if not chosen:
        return answer
    cursors = {"before": _encode(start), "after": _encode(start + len(chosen) - 1)}
    answer["paging"] = {"cursors": cursors}
    base = str(request.url.replace(query=""))
    kept = {k: v for k, v in query.items() if k not in ("after", "before")}
    if start + len(chosen) < len(items):
        answer["paging"]["next"] = f"{base}?{urlencode({**kept, 'after': cursors['after']})}"
    if start > 0:
        answer["paging"]["previous"] = f"{base}?{urlencode({**kept, 'before': cursors['before']})}"
    return answer


def _encode(position: int) -> str:
    return base64.urlsafe_b64encode(str(position).encode()).decode().rstrip("=")


def _cursor(text: str, name: str) -> int:
    try:
        decoded = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
        if decoded.isdigit():
            return int(decoded)
    except (ValueError, UnicodeDecodeError):
        pass
    raise request_error(name, "is not a cursor this endpoint gave")


def _number(text: str | None, name: str, fallback: int) -> int:
    if text is None:
        return fallback
    if not text.isdigit() or not text.isascii():
        raise request_error(name, "must be a whole number")
    return int(text)
