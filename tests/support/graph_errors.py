"""Reading the fake Graph API's error envelopes in tests."""

from __future__ import annotations

import httpx

__all__ = ["graph_error"]


def graph_error(response: httpx.Response, status: int = 400, code: int = 100) -> str:
    """The ``details`` of an error answer, after checking its HTTP status and Meta's code."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code, error
    details: str = error["error_data"]["details"]
    return details
