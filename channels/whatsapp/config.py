"""Settings of the WhatsApp simulator: the business number, its secrets and Meta's timing.

Defaults follow ``whatsapp-cloud-api.md``; where Meta publishes no number
(retry schedule, webhook timeout) the default is documented here and can be
changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "DEFAULT_RETRY_SCHEDULE",
    "RETRY_HORIZON",
    "SimulatorConfig",
    "StatusTiming",
    "retry_delays",
]

#: Seconds after the first failed attempt at which a webhook is tried again
#: (Meta: "immediately, then a few more times with decreasing frequency").
#: After the last entry it is retried every hour until :data:`RETRY_HORIZON`.
DEFAULT_RETRY_SCHEDULE: tuple[float, ...] = (0.0, 10.0, 60.0, 600.0, 3600.0)

#: Meta gives up on a webhook it could not deliver after seven days.
RETRY_HORIZON = 7 * 24 * 3600.0


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

    app_secret: str = "harness-app-secret"
    verify_token: str = "harness-verify-token"
    access_token: str = "harness-access-token"
    phone_number_id: str = "100200300400500"
    waba_id: str = "900800700600500"
    display_phone_number: str = "15550001111"
    #: Where the fake Graph API says it lives (used in media download URLs).
    public_url: str = "http://graph.local"
    #: The agent's webhook path when the agent is an in-process ASGI app.
    webhook_path: str = "/webhook"
    #: Perform the GET verification handshake before the first delivery.
    handshake: bool = True
    statuses: StatusTiming = Field(default_factory=StatusTiming)
    #: Length of the customer-service window opened by each user message.
    window_seconds: float = 24 * 3600.0
    #: How a free-form send outside the window fails: Meta's usual way (accepted,
    #: then a ``failed`` status with 131047) or a synchronous 400.
    window_error: Literal["async", "sync"] = "async"
    retry_schedule: tuple[float, ...] = DEFAULT_RETRY_SCHEDULE
    retry_every: float = 3600.0
    retry_horizon: float = RETRY_HORIZON
    #: Seconds (real time) the agent has to answer a webhook POST.
    webhook_timeout: float = 10.0
    #: Enforce the pair rate limit (131056) and the throughput limit (130429).
    rate_limits: bool = True
    #: Messages per second the number may send before 130429.
    throughput_mps: float = 80.0
    #: Whether the business has a payment configuration. Meta's default business
    #: has none and is refused ``order_details`` and ``order_status`` messages
    #: (code 10, permission denied).
    payments: bool = False
    #: Graph API version the simulator itself names in URLs it hands out.
    api_version: str = "v25.0"

    def retry_offsets(self) -> list[float]:
        """Every retry offset, in seconds after the first attempt."""
        return list(
            retry_delays(
                self.retry_schedule, then_every=self.retry_every, horizon=self.retry_horizon
            )
        )
