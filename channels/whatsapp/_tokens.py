"""The fake Graph API's check of a request's access token, answered in Graph's words.

A token is read from the ``Authorization: Bearer`` header, else from the
``access_token`` query parameter. One the simulator did not issue answers as
Graph answers a token it can't parse; an expired one names the instant it
expired and the current one, as Graph writes them, with subcode 463.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Final

from starlette.requests import Request

from channels.whatsapp.errors import AuthError

__all__ = ["authenticate"]

_EXPIRED_SUBCODE: Final = 463


def authenticate(request: Request, tokens: Mapping[str, datetime | None], now: datetime) -> None:
    """Raise :class:`AuthError` unless ``request`` carries one of ``tokens``, unexpired at ``now``.

    ``tokens`` maps each token to when it expires (``None``: never).
    """
    header = request.headers.get("authorization")
    token: str | None
    if header is not None:
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise _auth_error("the Authorization header must be 'Bearer <access token>'.")
        token = token.strip()
    else:
        token = request.query_params.get("access_token")
    if not token:
        raise _auth_error("an access token is needed for this request.")
    if token not in tokens:  # Graph's recorded words for a token it can't read
        raise AuthError(
            message="Invalid OAuth access token - Cannot parse access token",
            details="The access token is not valid.",
        )
    expires = tokens[token]
    if expires is not None and now >= expires:
        raise AuthError(
            message=(
                f"Error validating access token: Session has expired on {_graph_time(expires)}."
                f" The current time is {_graph_time(now)}."
            ),
            details=f"The access token expired at {expires.isoformat()}.",
            error_subcode=_EXPIRED_SUBCODE,
        )


def _graph_time(moment: datetime) -> str:
    """An instant as Graph writes one in its errors: ``Friday, 09-Feb-24 19:00:00 UTC``."""
    return moment.astimezone(UTC).strftime("%A, %d-%b-%y %H:%M:%S UTC")


def _auth_error(problem: str) -> AuthError:
    return AuthError(
        message=f"Error validating access token: {problem}", details=problem.capitalize()
    )
