"""Settings of the WhatsApp simulator: the business number, its secrets and Meta's timing.

Defaults follow ``whatsapp-cloud-api.md``; where Meta publishes no number
(retry schedule, webhook timeout) the default is documented here and can be
changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from channels.whatsapp import _defaults as default
from channels.whatsapp._defaults import DEFAULT_RETRY_SCHEDULE, RETRY_HORIZON

__all__ = [
    "DEFAULT_RETRY_SCHEDULE",
    "RETRY_HORIZON",
    "SimulatorConfig",
    "StatusTiming",
    "retry_delays",
]


def retry_delays(
    schedule: tuple[float, ...] = DEFAULT_RETRY_SCHEDULE,
    *,
    then_every: float = 3600.0,
    horizon: float = RETRY_HORIZON,
) -> Iterator[float]:
    """Offsets (seconds after the first attempt) of every retry, up to the horizon."""
    last = 0.0
    for offset in schedule:
        if offset > horizon:
            return
        last = offset
        yield offset
    if then_every <= 0:
        return
    offset = last + then_every
    while offset <= horizon:
        yield offset
        offset += then_every


class _Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StatusTiming(_Settings):
    """Seconds after an accepted send at which each status webhook goes out.

    ``None`` means that status never comes (a user who never opens the chat
    never sends ``read``). Statuses arrive in the order of their delays.
    """

    sent: float | None = 1.0
    delivered: float | None = 2.0
    read: float | None = 5.0

    @field_validator("sent", "delivered", "read")
    @classmethod
    def _not_negative(cls, value: float | None) -> float | None:
        if value is not None and value < 0:
            raise ValueError("a status delay can't be negative")
        return value


class SimulatorConfig(_Settings):
    """Everything that identifies the simulated business number and how Meta behaves."""

    app_secret: str = default.APP_SECRET
    #: The Meta app the bot is, as the account lists its subscribed apps.
    app_id: str = default.APP_ID
    verify_token: str = default.VERIFY_TOKEN
    access_token: str = default.ACCESS_TOKEN
    phone_number_id: str = default.PHONE_NUMBER_ID
    waba_id: str = default.WABA_ID
    display_phone_number: str = default.DISPLAY_PHONE_NUMBER
    #: Where the fake Graph API says it lives (used in media download URLs).
    public_url: str = default.PUBLIC_URL
    #: The agent's webhook path when the agent is an in-process ASGI app.
    webhook_path: str = default.WEBHOOK_PATH
    #: Perform the GET verification handshake before the first delivery.
    handshake: bool = default.HANDSHAKE
    statuses: StatusTiming = Field(default_factory=StatusTiming)
    #: Length of the customer-service window opened by each user message.
    window_seconds: float = default.WINDOW_SECONDS
    #: How a free-form send outside the window fails: Meta's usual way (accepted,
    #: then a ``failed`` status with 131047) or a synchronous 400.
    window_error: Literal["async", "sync"] = default.WINDOW_ERROR
    retry_schedule: tuple[float, ...] = DEFAULT_RETRY_SCHEDULE
    retry_every: float = default.RETRY_EVERY
    retry_horizon: float = RETRY_HORIZON
    #: Seconds (real time) the agent has to answer a webhook POST.
    webhook_timeout: float = default.WEBHOOK_TIMEOUT
    #: Enforce the pair rate limit (131056) and the throughput limit (130429).
    rate_limits: bool = default.RATE_LIMITS
    #: Messages per second the number may send before 130429.
    throughput_mps: float = default.THROUGHPUT_MPS
    #: Whether the business has a payment configuration. Meta's default business
    #: has none and is refused ``order_details`` and ``order_status`` messages
    #: (code 10, permission denied).
    payments: bool = default.PAYMENTS
    #: Graph API version the simulator itself names in URLs it hands out.
    api_version: str = default.API_VERSION
    #: The business's message templates as Meta lists them (``GET
    #: /{WABA-ID}/message_templates``: name, language, status, components), read by
    #: :func:`~channels.whatsapp.templates.read_templates`. ``None``: a few common ones
    #: (:meth:`~channels.whatsapp.templates.TemplateRegistry.default`).
    templates: tuple[dict[str, Any], ...] | None = default.TEMPLATES

    def retry_offsets(self) -> list[float]:
        """Every retry offset, in seconds after the first attempt."""
        return list(
            retry_delays(
                self.retry_schedule, then_every=self.retry_every, horizon=self.retry_horizon
            )
        )
