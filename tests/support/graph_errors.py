"""Reading the fake Graph API's error envelopes in tests."""

from __future__ import annotations

import httpx

__all__ = ["graph_error", "no_such_object", "unknown_path"]


def graph_error(response: httpx.Response, status: int = 400, code: int = 100) -> str:
    """The ``details`` of an error answer, after checking its HTTP status and Meta's code.

    Graph's own errors (a bad token, an unknown object) carry no ``error_data``:
    their ``message`` then.
    """
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code, error
    details: str = error["error_data"]["details"] if "error_data" in error else error["message"]
    return details


def no_such_object(response: httpx.Response, object_id: str, method: str = "get") -> str:
    """The message of Graph's answer for an object it can't use so (100, subcode 33).

    Checks it as third parties report Graph's: HTTP 400, ``GraphMethodException``,
    no ``error_data``, the words repeated in ``WWW-Authenticate``.
    """
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["code"], error.get("error_subcode"), error["type"]) == (
        100,
        33,
        "GraphMethodException",
    ), error
    assert "error_data" not in error, error
    message: str = error["message"]
    assert message.startswith(f"Unsupported {method} request. Object with ID '{object_id}' does")
    assert message.endswith(
        "Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api"
    )
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('OAuth "Facebook Platform" "invalid_request" "Unsupported'), (
        challenge
    )
    assert "allow" not in response.headers
    return message


def unknown_path(response: httpx.Response, components: str) -> None:
    """Check Graph's answer for path components it can't place (400, code 2500)."""
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["code"], error["type"]) == (2500, "OAuthException"), error
    assert error["message"] == f"Unknown path components: {components}", error
    assert not {"error_data", "error_subcode"} & set(error), error
