"""The simulator's default settings as plain values, without the settings' models.

:class:`channels.whatsapp.config.SimulatorConfig` takes its defaults from here,
and so does the help of ``harness serve`` and ``harness run``: showing a
default does not import pydantic. A test checks the two agree field by field.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = [
    "ACCESS_TOKEN",
    "API_VERSION",
    "APP_ID",
    "APP_SECRET",
    "DEFAULT_RETRY_SCHEDULE",
    "DISPLAY_PHONE_NUMBER",
    "HANDSHAKE",
    "PAYMENTS",
    "PHONE_NUMBER_ID",
    "PUBLIC_URL",
    "RATE_LIMITS",
    "RETRY_EVERY",
    "RETRY_HORIZON",
    "SIMULATOR_DEFAULTS",
    "TEMPLATES",
    "THROUGHPUT_MPS",
    "VERIFY_TOKEN",
    "WABA_ID",
    "WEBHOOK_PATH",
    "WEBHOOK_TIMEOUT",
    "WINDOW_ERROR",
    "WINDOW_SECONDS",
]

APP_SECRET: Final = "harness-app-secret"
#: The Meta app the bot is: the one ``GET /{waba_id}/subscribed_apps`` lists.
APP_ID: Final = "700600500400300"
VERIFY_TOKEN: Final = "harness-verify-token"
ACCESS_TOKEN: Final = "harness-access-token"
PHONE_NUMBER_ID: Final = "100200300400500"
WABA_ID: Final = "900800700600500"
DISPLAY_PHONE_NUMBER: Final = "15550001111"
PUBLIC_URL: Final = "http://graph.local"
WEBHOOK_PATH: Final = "/webhook"
HANDSHAKE: Final = True
WINDOW_SECONDS: Final = 24 * 3600.0
WINDOW_ERROR: Final = "async"

#: Seconds after the first failed attempt at which a webhook is tried again
#: (Meta: "immediately, then a few more times with decreasing frequency").
#: After the last entry it is retried every hour until :data:`RETRY_HORIZON`.
DEFAULT_RETRY_SCHEDULE: tuple[float, ...] = (0.0, 10.0, 60.0, 600.0, 3600.0)
RETRY_EVERY: Final = 3600.0
#: Meta gives up on a webhook it could not deliver after seven days.
RETRY_HORIZON: Final = 7 * 24 * 3600.0

WEBHOOK_TIMEOUT: Final = 10.0
RATE_LIMITS: Final = True
THROUGHPUT_MPS: Final = 80.0
PAYMENTS: Final = False
API_VERSION: Final = "v25.0"
#: No templates of the business's own: a few common ones instead (``TemplateRegistry.default``).
TEMPLATES: Final = None

#: Every setting of the simulator that has a plain default, by field name.
SIMULATOR_DEFAULTS: Final[Mapping[str, object]] = MappingProxyType(
    {
        "app_secret": APP_SECRET,
        "app_id": APP_ID,
        "verify_token": VERIFY_TOKEN,
        "access_token": ACCESS_TOKEN,
        "phone_number_id": PHONE_NUMBER_ID,
        "waba_id": WABA_ID,
        "display_phone_number": DISPLAY_PHONE_NUMBER,
        "public_url": PUBLIC_URL,
        "webhook_path": WEBHOOK_PATH,
        "handshake": HANDSHAKE,
        "window_seconds": WINDOW_SECONDS,
        "window_error": WINDOW_ERROR,
        "retry_schedule": DEFAULT_RETRY_SCHEDULE,
        "retry_every": RETRY_EVERY,
        "retry_horizon": RETRY_HORIZON,
        "webhook_timeout": WEBHOOK_TIMEOUT,
        "rate_limits": RATE_LIMITS,
        "throughput_mps": THROUGHPUT_MPS,
        "payments": PAYMENTS,
        "api_version": API_VERSION,
        "templates": TEMPLATES,
    }
)
