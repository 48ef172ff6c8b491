"""What the fake Graph API answers for a path it can't place, or a method a path does not take.

Graph's own words, as third parties report them (Meta documents neither): an
object it can't use so is 100 with subcode 33, components past an object and
its edge are 2500. The simulator's own paths (``/_harness/``, ``/_media/``,
``/openapi.json``) answer 404 and 405 as HTTP has them.
"""

from __future__ import annotations

import re
from typing import Final

from starlette.requests import Request

from channels.whatsapp._openapi_parts import VERSION_PATTERN
from channels.whatsapp.errors import GraphAPIError, InvalidParameter, NoSuchObject, UnknownPath

__all__ = ["graph_path", "unknown_path", "unplaced", "unsupported_method"]

_VERSION: Final = re.compile(VERSION_PATTERN)


def graph_path(path: str) -> bool:
    """Whether ``path`` is Graph's to answer, not one of the simulator's own."""
    return not path.startswith("/_") and path != "/openapi.json"


def unplaced(request: Request, *, wrong_method: bool = False) -> GraphAPIError:
    """Graph's answer for a path it can't serve: no such object, or unknown components.

    After the version (from the start, when the first segment is not one) the
    first segment is the object; a method it does not take, or one edge Graph
    can't serve on it, makes the object the error (100, subcode 33); more
    components than that are unknown (2500).
    """
    path: str = request.scope["path"]  # as sent, decoded (the URL drops a newline)
    if not graph_path(path):
        return unknown_path(path)
    segments = [segment for segment in path.split("/") if segment]
    if segments and _VERSION.fullmatch(segments[0]) is not None:
        segments = segments[1:]
    if not segments:
        return UnknownPath.after(path)
    node, rest = segments[0], segments[1:]
    if wrong_method or len(rest) <= 1:
        return NoSuchObject.about(request.method, node)
    return UnknownPath.after("/" + "/".join(rest))


def unknown_path(path: str) -> InvalidParameter:
    """The 404 for one of the simulator's own paths that names nothing."""
    details = f"Unknown path components: no endpoint serves {path}."
    return InvalidParameter(message=f"(#100) {details}", details=details, http_status=404)


def unsupported_method(request: Request) -> InvalidParameter:
    """The 405 for a method one of the simulator's own paths does not take."""
    details = f"Unsupported {request.method.lower()} request on {request.url.path}."
    return InvalidParameter(message=f"(#100) {details}", details=details, http_status=405)
