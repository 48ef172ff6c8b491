"""The booking agent's settings: one frozen object, read from the environment at the edge.

Nothing reads the environment at import time. :meth:`BookingSettings.from_env`
is called by ``agents.booking:app`` (for ``uvicorn``) and by whoever builds
the agent; everything below it receives the settings object.

=============================  ==============================  =============================
variable                       field                           default
=============================  ==============================  =============================
WHATSAPP_GRAPH_URL             graph_url                       https://graph.facebook.com
WHATSAPP_API_VERSION           api_version                     v25.0
WHATSAPP_ACCESS_TOKEN          access_token                    (required by the webhook app)
WHATSAPP_PHONE_NUMBER_ID       phone_number_id                 (required by the webhook app)
WHATSAPP_APP_SECRET            app_secret                      (required by the webhook app)
WHATSAPP_VERIFY_TOKEN          verify_token                    (required by the webhook app)
BOOKING_LLM, HARNESS_LLM       llm                             scripted (or anthropic)
BOOKING_MODEL                  model                           claude-sonnet-4-6
ANTHROPIC_API_KEY              anthropic_api_key               (needed for BOOKING_LLM=anthropic)
BOOKING_MAX_TOKENS             max_tokens                      1024
BOOKING_MAX_TOOL_ROUNDS        max_tool_rounds                 8
BOOKING_REDIS_URL, REDIS_URL   redis_url                       (none: memory store)
BOOKING_STORE_NAMESPACE        store_namespace                 booking
BOOKING_REGRESSIONS            regressions                     (none)
BOOKING_DEBOUNCE_SECONDS       debounce_seconds                2.0
BOOKING_FOLLOWUP_HOURS         followup_hours                  25 (0 turns follow-ups off)
BOOKING_WINDOW_HOURS           window_hours                    24
BOOKING_DEDUPE_TTL_HOURS       dedupe_ttl_hours                192 (8 days: Meta retries for 7)
BOOKING_SEND_RETRIES           send_retries                    4
BOOKING_RETRY_BASE_SECONDS     retry_base_seconds              1.0 (waits 1, 4, 16, 64 s)
BOOKING_PROMPT_DIR             prompt_dir                      (none: packaged prompts)
BOOKING_HISTORY_MESSAGES       history_messages                40
BOOKING_TIMEZONE               timezone                        UTC
BOOKING_BUSINESS_NAME          business_name                   Casa Lucia
BOOKING_TABLES_PER_SEATING     tables_per_seating              2
BOOKING_TEMPLATE               template_name                   appointment_reminder
BOOKING_TEMPLATE_LANGUAGE      template_language               en_US
=============================  ==============================  =============================

``BOOKING_REDIS_URL`` wins over ``REDIS_URL`` when both are set.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from agents.booking.regressions import Regression, parse_regressions
from harness.exceptions import ConfigError

__all__ = [
    "BEHAVIOUR_FIELDS",
    "ENV_VARIABLES",
    "BookingSettings",
    "check_settings",
    "named_settings",
]

#: Every variable :meth:`BookingSettings.from_env` reads, by field; the first name wins.
ENV_VARIABLES: dict[str, tuple[str, ...]] = {
    "graph_url": ("WHATSAPP_GRAPH_URL",),
    "api_version": ("WHATSAPP_API_VERSION",),
    "access_token": ("WHATSAPP_ACCESS_TOKEN",),
    "phone_number_id": ("WHATSAPP_PHONE_NUMBER_ID",),
    "app_secret": ("WHATSAPP_APP_SECRET",),
    "verify_token": ("WHATSAPP_VERIFY_TOKEN",),
    "llm": ("BOOKING_LLM", "HARNESS_LLM"),
    "model": ("BOOKING_MODEL",),
    "anthropic_api_key": ("ANTHROPIC_API_KEY",),
    "max_tokens": ("BOOKING_MAX_TOKENS",),
    "max_tool_rounds": ("BOOKING_MAX_TOOL_ROUNDS",),
    "redis_url": ("BOOKING_REDIS_URL", "REDIS_URL"),
    "store_namespace": ("BOOKING_STORE_NAMESPACE",),
    "regressions": ("BOOKING_REGRESSIONS",),
    "debounce_seconds": ("BOOKING_DEBOUNCE_SECONDS",),
    "followup_hours": ("BOOKING_FOLLOWUP_HOURS",),
    "window_hours": ("BOOKING_WINDOW_HOURS",),
    "dedupe_ttl_hours": ("BOOKING_DEDUPE_TTL_HOURS",),
    "send_retries": ("BOOKING_SEND_RETRIES",),
    "retry_base_seconds": ("BOOKING_RETRY_BASE_SECONDS",),
    "prompt_dir": ("BOOKING_PROMPT_DIR",),
    "history_messages": ("BOOKING_HISTORY_MESSAGES",),
    "timezone": ("BOOKING_TIMEZONE",),
    "business_name": ("BOOKING_BUSINESS_NAME",),
    "tables_per_seating": ("BOOKING_TABLES_PER_SEATING",),
    "template_name": ("BOOKING_TEMPLATE",),
    "template_language": ("BOOKING_TEMPLATE_LANGUAGE",),
}


#: The settings that shape how the agent behaves, which a replay must give it again.
#: Left out: credentials and addresses (another place, another key), the choice of model
#: client (a replay answers from the recording) and where state is kept.
BEHAVIOUR_FIELDS: tuple[str, ...] = (
    "model",
    "max_tokens",
    "max_tool_rounds",
    "history_messages",
    "regressions",
    "debounce_seconds",
    "followup_hours",
    "window_hours",
    "dedupe_ttl_hours",
    "send_retries",
    "retry_base_seconds",
    "timezone",
    "business_name",
    "tables_per_seating",
    "template_name",
    "template_language",
)


class BookingSettings(BaseModel):
    """Everything the booking agent can be told; frozen, so it is passed around safely.

    Secrets are :class:`~pydantic.SecretStr`, so they never show in a repr or
    a log line.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # -- WhatsApp Cloud API
    graph_url: str = "https://graph.facebook.com"
    api_version: str = Field(default="v25.0", pattern=r"^v[0-9]+\.[0-9]+$")
    access_token: SecretStr = SecretStr("")
    phone_number_id: str = ""
    app_secret: SecretStr = SecretStr("")
    verify_token: SecretStr = SecretStr("")
    # -- the model
    llm: Literal["scripted", "anthropic"] = "scripted"
    model: str = "claude-sonnet-4-6"
    anthropic_api_key: SecretStr | None = None
    max_tokens: int = Field(default=1024, ge=1)
    max_tool_rounds: int = Field(default=8, ge=1)
    # -- state
    redis_url: str | None = None
    store_namespace: str = "booking"
    history_messages: int = Field(default=40, ge=2)
    # -- behaviour
    regressions: frozenset[Regression] = frozenset()
    debounce_seconds: float = Field(default=2.0, ge=0)
    followup_hours: float = Field(default=25.0, ge=0)
    window_hours: float = Field(default=24.0, gt=0)
    dedupe_ttl_hours: float = Field(default=192.0, gt=0)
    send_retries: int = Field(default=4, ge=0)
    retry_base_seconds: float = Field(default=1.0, ge=0)
    prompt_dir: Path | None = None
    timezone: str = "UTC"
    business_name: str = "Casa Lucia"
    tables_per_seating: int = Field(default=2, ge=1)
    template_name: str = "appointment_reminder"
    template_language: str = "en_US"

    @field_validator("regressions", mode="before")
    @classmethod
    def _parse_regressions(cls, value: Any) -> frozenset[Regression]:
        return parse_regressions(value)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r}") from None
        return value

    @field_validator("graph_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
        return value.rstrip("/")

    @property
    def zone(self) -> ZoneInfo:
        """The business's time zone, for what "today" and "Friday" mean."""
        return ZoneInfo(self.timezone)

    def has(self, regression: Regression) -> bool:
        """True when ``regression`` is switched on."""
        return regression in self.regressions

    def missing_for_webhook(self) -> list[str]:
        """The environment variables the webhook app needs but that are empty."""
        needed = {
            "WHATSAPP_ACCESS_TOKEN": self.access_token.get_secret_value(),
            "WHATSAPP_PHONE_NUMBER_ID": self.phone_number_id,
            "WHATSAPP_APP_SECRET": self.app_secret.get_secret_value(),
            "WHATSAPP_VERIFY_TOKEN": self.verify_token.get_secret_value(),
        }
        return [name for name, value in needed.items() if not value]

    def behaviour(self) -> dict[str, str]:
        """The :data:`BEHAVIOUR_FIELDS`, named and written as the environment has them."""
        found: dict[str, str] = {}
        for name in BEHAVIOUR_FIELDS:
            value = getattr(self, name)
            if isinstance(value, frozenset | tuple | list | set):
                text = ",".join(sorted(str(v.value if hasattr(v, "value") else v) for v in value))
            else:
                text = str(value)
            found[ENV_VARIABLES[name][0]] = text
        return found

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **overrides: Any
    ) -> BookingSettings:
        """Settings from ``environ`` (``os.environ`` when None), then ``overrides``.

        Empty variables count as unset. A bad value raises
        :class:`~harness.exceptions.ConfigError` naming the variable.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        source: dict[str, str] = {}
        for field, names in ENV_VARIABLES.items():
            for name in names:
                raw = env.get(name)
                if raw is not None and raw.strip():
                    values[field] = _READERS.get(field, _strip)(raw)
                    source[field] = name
                    break
        values.update(overrides)
        try:
            return cls(**values)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = str(error["loc"][0]) if error["loc"] else ""
            where = source.get(field, field or "settings")
            message = str(error["msg"]).removeprefix("Value error, ")
            raise ConfigError(f"{where}: {message}") from None


def _strip(raw: str) -> str:
    return raw.strip()


_READERS: dict[str, Callable[[str], Any]] = {
    "prompt_dir": lambda raw: Path(raw.strip()),
    "llm": lambda raw: raw.strip().lower(),
}


def named_settings(settings: Mapping[str, str]) -> dict[str, Any]:
    """The settings given by field name (a scenario's ``regressions: [no_dedupe]``), read.

    They are the overrides :meth:`BookingSettings.from_env` takes, so a field
    named in a scenario wins over its environment variable.
    """
    return {
        field: _READERS.get(field, _strip)(raw)
        for field, raw in settings.items()
        if field in ENV_VARIABLES
    }


def check_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """The problem with each setting the booking agent would not take, by the name given.

    A name is a field of :class:`BookingSettings` or one of its environment
    variables; an unknown one is named with the closest known one.
    """
    names = {name for names in ENV_VARIABLES.values() for name in names}
    problems: dict[str, str] = {}
    for key, raw in settings.items():
        if key not in ENV_VARIABLES and key not in names:
            close = difflib.get_close_matches(key, [*ENV_VARIABLES, *names], n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            problems[key] = f"the booking agent has no such setting{hint}"
            continue
        try:
            if key in ENV_VARIABLES:
                BookingSettings.from_env({}, **named_settings({key: raw}))
            else:
                BookingSettings.from_env({key: raw})
        except ConfigError as exc:
            problems[key] = str(exc).removeprefix(f"{key}: ")
    return problems
