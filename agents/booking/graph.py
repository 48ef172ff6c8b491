"""The agent's own small client for Meta's Graph API (WhatsApp Cloud API sends).

:class:`GraphClient` sends text, reply buttons and templates, and marks a
message read with a typing indicator, over an injected ``httpx.AsyncClient``
(the harness plugs in one that reaches its fake Graph API in-process).
Meta's rate limits are retried with exponential backoff on the injected
clock: 130429 (throughput) and 131056 (pair rate), waiting
``retry_base * 4**attempt`` seconds, as Meta suggests. Every other error
is raised as a :class:`GraphError`, read from Meta's error envelope
``{"error": {"code": ..., "message": ..., "error_data": {"details": ...}}}``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import httpx

from harness.clock import Clock

__all__ = ["RETRIED_CODES", "GraphClient", "GraphError", "SendResult"]

_log = logging.getLogger(__name__)

#: Error codes worth waiting for: the throughput and the pair rate limits.
RETRIED_CODES: Final = frozenset({130429, 131056})

_BUTTONS_MAX: Final = 3
_BUTTON_TITLE_MAX: Final = 20
_BUTTON_ID_MAX: Final = 256
_BUTTON_BODY_MAX: Final = 1024
_WA_ID: Final = re.compile(r"[0-9]{5,15}")


class GraphError(RuntimeError):
    """The Graph API refused a request (or could not be reached: ``code`` is None then)."""

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        details: str = "",
        http_status: int | None = None,
        fbtrace_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.details = details
        self.http_status = http_status
        self.fbtrace_id = fbtrace_id

    @property
    def retryable(self) -> bool:
        """True for the rate limits Meta asks us to retry after a wait."""
        return self.code in RETRIED_CODES


class SendResult:
    """What Meta answered to an accepted send: the new message's wamid (None for a receipt)."""

    __slots__ = ("attempts", "wamid")

    def __init__(self, wamid: str | None, attempts: int = 1) -> None:
        self.wamid = wamid
        self.attempts = attempts

    def __repr__(self) -> str:
        return f"SendResult(wamid={self.wamid!r}, attempts={self.attempts})"


class GraphClient:
    """Sends for one business phone number, with Meta's rate limits retried."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        clock: Clock,
        *,
        access_token: str,
        phone_number_id: str,
        graph_url: str = "https://graph.facebook.com",
        api_version: str = "v25.0",
        retries: int = 4,
        retry_base: float = 1.0,
    ) -> None:
        self.http = http
        self.clock = clock
        self._token = access_token
        self.phone_number_id = phone_number_id
        self.url = f"{graph_url.rstrip('/')}/{api_version}/{phone_number_id}/messages"
        self.retries = retries
        self.retry_base = retry_base

    def __repr__(self) -> str:
        return f"GraphClient({self.url!r})"

    @staticmethod
    def _address(user: str) -> dict[str, Any]:
        # A phone number goes in "to"; a user known only by BSUID in "recipient".
        if _WA_ID.fullmatch(user):
            return {"to": user}
        return {"recipient": user}

    def _message(self, user: str, kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            **self._address(user),
            "type": kind,
            kind: dict(body),
        }

    async def send_text(self, user: str, text: str) -> SendResult:
        """Send a text message (the caller keeps it within 4096 characters)."""
        return await self.post(self._message(user, "text", {"preview_url": False, "body": text}))

    async def send_buttons(
        self, user: str, text: str, buttons: Sequence[tuple[str, str]]
    ) -> SendResult:
        """Send ``text`` with up to three reply buttons, given as ``(id, title)`` pairs.

        Meta's limits are checked here first (a ``ValueError`` names the
        broken one), since Meta refuses the whole message otherwise.
        """
        if not 1 <= len(buttons) <= _BUTTONS_MAX:
            raise ValueError(
                f"a message takes 1 to {_BUTTONS_MAX} reply buttons, not {len(buttons)}"
            )
        if len({title for _, title in buttons}) != len(buttons):
            raise ValueError("reply button titles must be unique")
        for button_id, title in buttons:
            if not 0 < len(title) <= _BUTTON_TITLE_MAX:
                raise ValueError(
                    f"button title {title!r} must be 1 to {_BUTTON_TITLE_MAX} characters"
                )
            if not 0 < len(button_id) <= _BUTTON_ID_MAX:
                raise ValueError(
                    f"button id {button_id!r} must be 1 to {_BUTTON_ID_MAX} characters"
                )
        if not 0 < len(text) <= _BUTTON_BODY_MAX:
            raise ValueError(f"a button message body must be 1 to {_BUTTON_BODY_MAX} characters")
        interactive = {
            "type": "button",
            "body": {"text": text},
            "action": {
                "buttons": [
                    {"type": "reply", "reply": {"id": button_id, "title": title}}
                    for button_id, title in buttons
                ]
            },
        }
        return await self.post(self._message(user, "interactive", interactive))

    async def send_template(
        self, user: str, name: str, language: str, params: Sequence[str] = ()
    ) -> SendResult:
        """Send an approved template, with ``params`` filling its body in order."""
        template: dict[str, Any] = {"name": name, "language": {"code": language}}
        if params:
            template["components"] = [
                {"type": "body", "parameters": [{"type": "text", "text": p} for p in params]}
            ]
        return await self.post(self._message(user, "template", template))

    async def mark_read(self, wamid: str, *, typing: bool = True) -> SendResult:
        """Mark a message (and those before it) read, showing a typing indicator if asked."""
        body: dict[str, Any] = {
            "messaging_product": "whatsapp",
            "status": "read",
            "message_id": wamid,
        }
        if typing:
            body["typing_indicator"] = {"type": "text"}
        return await self.post(body)

    async def post(self, body: Mapping[str, Any]) -> SendResult:
        """POST one send body, retrying Meta's rate limits; raise :class:`GraphError` otherwise."""
        attempt = 0
        while True:
            try:
                wamid = await self._post_once(body)
                return SendResult(wamid, attempt + 1)
            except GraphError as exc:
                if not exc.retryable or attempt >= self.retries:
                    raise
                delay = self.retry_base * 4**attempt
                _log.info("Graph API rate limit %s; retrying in %.0f s", exc.code, delay)
                attempt += 1
                await self.clock.sleep(delay)

    async def _post_once(self, body: Mapping[str, Any]) -> str | None:
        try:
            response = await self.http.post(
                self.url, json=dict(body), headers={"Authorization": f"Bearer {self._token}"}
            )
        except httpx.HTTPError as exc:
            raise GraphError(f"could not reach the Graph API: {type(exc).__name__}: {exc}") from exc
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code == 200 and isinstance(data, dict):
            messages = data.get("messages")
            if isinstance(messages, list) and messages and isinstance(messages[0], dict):
                wamid = messages[0].get("id")
                return str(wamid) if wamid is not None else None
            return None
        raise _error(response.status_code, data, response.text)


def _error(status: int, data: Any, text: str) -> GraphError:
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return GraphError(f"Graph API answered {status}: {text[:200]}", http_status=status)
    try:
        code: int | None = int(str(error.get("code")))  # Meta's codes are int-castable
    except (TypeError, ValueError):
        code = None
    error_data = error.get("error_data")
    details = str(error_data.get("details", "")) if isinstance(error_data, dict) else ""
    message = str(error.get("message") or f"Graph API error {code}")
    return GraphError(
        f"Graph API answered {status}, code {code}: {message}"
        + (f" ({details})" if details else ""),
        code=code,
        details=details,
        http_status=status,
        fbtrace_id=error.get("fbtrace_id"),
    )
