"""The fake Graph API's application: Starlette, with sends taken straight to their endpoint.

Every agent turn makes at least one ``POST /{version}/{phone_number_id}/messages``,
so :class:`GraphApp` hands that one request to its endpoint without Starlette's
middleware stack and route scan, which cost more than validating the send.
The endpoint, the request it reads and the response it sends are the same
objects Starlette would have used, so the answer is the same byte for byte;
every other request goes through Starlette as before. A send path that one of
the app's extra routes (the harness's control endpoints) could also serve is
left to Starlette too, which tries those routes first.

A path without a version whose first segment is an id (``/{phone_number_id}/messages``,
``/{media_id}``) is served at the app's default version, as Graph serves an
unversioned call; a path ending in ``/`` is served as the path without it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.types import Receive, Scope, Send

__all__ = ["ANY_METHOD", "GraphApp", "SuccessJSON"]

#: Every method, for routes that answer a method they don't take themselves (405, Meta's form).
ANY_METHOD: Final = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "QUERY"]
_SEND_PATH: Final = re.compile(r"/([^/]+)/([^/]+)/messages")
_LITERAL_FIRST: Final = re.compile(r"/([^/{}]*)(?:/|$)")
# An unversioned Graph path: an id, maybe with an edge (``/{id}``, ``/{id}/messages``).
_ID_FIRST: Final = re.compile(r"/[0-9]+(?:/[^/]+)?")

Endpoint = Callable[[Request], Awaitable[Response]]


class SuccessJSON(JSONResponse):
    """A send's success body, the bytes Starlette's ``JSONResponse`` writes, written by orjson.

    For objects of strings, integers, booleans and nulls (a success body has
    nothing else) the two agree to the byte: compact, non-ASCII as UTF-8,
    control characters escaped alike (a test compares them over every
    character). They write some floats differently, so this is not for bodies
    that hold any.
    """

    def render(self, content: Any) -> bytes:
        """The body, as :class:`JSONResponse` renders it."""
        return orjson.dumps(content)


class GraphApp(Starlette):
    """The Graph API's routes, with ``send`` served directly for the messages path.

    ``extra`` are the routes served before the Graph API's own: a send path
    whose first segment one of them could match is left to Starlette.
    ``version`` is the one an unversioned call is served at.
    """

    def __init__(
        self,
        *,
        send: Endpoint,
        routes: Sequence[BaseRoute],
        extra: Sequence[BaseRoute],
        exception_handlers: Mapping[Any, Callable[..., Any]],
        version: str,
    ) -> None:
        super().__init__(routes=list(routes), exception_handlers=dict(exception_handlers))
        self._version = version
        self._send_endpoint = send
        self._taken = _first_segments(extra)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request; see the class."""
        if scope["type"] == "http":
            path = scope["path"]
            if len(path) > 1 and path.endswith("/"):  # Graph takes /{id}/ as /{id}
                path = path.rstrip("/") or "/"
            if _ID_FIRST.fullmatch(path) is not None:
                path = f"/{self._version}{path}"  # unversioned
            if path != scope["path"]:
                scope = {**scope, "path": path}
        # Under a root path (a mount, a proxy's prefix) Starlette finds the route.
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and not scope.get("root_path")
            and not self.user_middleware
        ):
            found = _SEND_PATH.fullmatch(scope["path"])
            if found is not None and self._taken is not None and found[1] not in self._taken:
                scope["app"] = self
                params = {"version": found[1], "phone_number_id": found[2]}
                scope["path_params"] = {**scope.get("path_params", {}), **params}
                response = await self._send_endpoint(Request(scope, receive, send))
                await response(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def _first_segments(routes: Sequence[BaseRoute]) -> frozenset[str] | None:
    """The literal first path segments ``routes`` can match (``None``: one may match any)."""
    segments: set[str] = set()
    for route in routes:
        if isinstance(route, Route | WebSocketRoute):
            path = route.path
        elif isinstance(route, Mount):
            path = route.path or "/"
        else:  # a Host or a route of another kind: no telling what it matches
            return None
        found = _LITERAL_FIRST.match(path)
        if found is None or (isinstance(route, Mount) and not found[1]):
            return None  # a parameter in the first segment, or a Mount at the root
        segments.add(found[1])
    return frozenset(segments)
