"""Settings from the environment: names, defaults, precedence and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.booking import ENV_VARIABLES, BookingSettings, Regression
from harness.exceptions import ConfigError


def test_defaults() -> None:
    settings = BookingSettings.from_env({})
    assert settings.graph_url == "https://graph.facebook.com"
    assert settings.api_version == "v25.0"
    assert settings.llm == "scripted"
    assert settings.debounce_seconds == 2.0
    assert settings.followup_hours == 25.0
    assert settings.window_hours == 24.0
    assert settings.regressions == frozenset()
    assert settings.redis_url is None
    assert settings.prompt_dir is None
    assert settings.template_name == "appointment_reminder"
    assert settings.template_language == "en_US"
    assert settings.missing_for_webhook() == [
        "WHATSAPP_ACCESS_TOKEN",
        "WHATSAPP_PHONE_NUMBER_ID",
        "WHATSAPP_APP_SECRET",
        "WHATSAPP_VERIFY_TOKEN",
    ]


def test_every_variable_is_read(tmp_path: Path) -> None:
    env = {
        "WHATSAPP_GRAPH_URL": "http://graph.local/",
        "WHATSAPP_API_VERSION": "v24.0",
        "WHATSAPP_ACCESS_TOKEN": "tok",
        "WHATSAPP_PHONE_NUMBER_ID": "123",
        "WHATSAPP_APP_SECRET": "app-secret-value",
        "WHATSAPP_VERIFY_TOKEN": "ver",
        "BOOKING_LLM": "Anthropic",
        "HARNESS_LLM": "scripted",  # BOOKING_LLM wins: it is named first
        "BOOKING_MODEL": "claude-x",
        "ANTHROPIC_API_KEY": "sk-test",
        "BOOKING_MAX_TOKENS": "512",
        "BOOKING_MAX_TOOL_ROUNDS": "3",
        "BOOKING_REDIS_URL": "redis://booking:6379/1",
        "REDIS_URL": "redis://other:6379/0",
        "BOOKING_STORE_NAMESPACE": "b2",
        "BOOKING_REGRESSIONS": "no_dedupe, ignore_window",
        "BOOKING_DEBOUNCE_SECONDS": "0.5",
        "BOOKING_FOLLOWUP_HOURS": "0",
        "BOOKING_WINDOW_HOURS": "12",
        "BOOKING_DEDUPE_TTL_HOURS": "24",
        "BOOKING_SEND_RETRIES": "2",
        "BOOKING_RETRY_BASE_SECONDS": "0.5",
        "BOOKING_PROMPT_DIR": str(tmp_path),
        "BOOKING_HISTORY_MESSAGES": "10",
        "BOOKING_TIMEZONE": "Europe/Lisbon",
        "BOOKING_BUSINESS_NAME": "Tasca",
        "BOOKING_TABLES_PER_SEATING": "5",
        "BOOKING_TEMPLATE": "reminder_v2",
        "BOOKING_TEMPLATE_LANGUAGE": "pt_BR",
    }
    assert {n for names in ENV_VARIABLES.values() for n in names} == set(env)
    s = BookingSettings.from_env(env)
    assert s.graph_url == "http://graph.local"
    assert s.api_version == "v24.0"
    assert s.access_token.get_secret_value() == "tok"
    assert s.phone_number_id == "123"
    assert s.app_secret.get_secret_value() == "app-secret-value"
    assert s.verify_token.get_secret_value() == "ver"
    assert s.llm == "anthropic"
    assert s.model == "claude-x"
    assert s.anthropic_api_key is not None
    assert (s.max_tokens, s.max_tool_rounds) == (512, 3)
    assert s.redis_url == "redis://booking:6379/1"
    assert s.store_namespace == "b2"
    assert s.regressions == {Regression.NO_DEDUPE, Regression.IGNORE_WINDOW}
    assert (s.debounce_seconds, s.followup_hours, s.window_hours) == (0.5, 0.0, 12.0)
    assert (s.dedupe_ttl_hours, s.send_retries, s.retry_base_seconds) == (24.0, 2, 0.5)
    assert s.prompt_dir == tmp_path
    assert s.history_messages == 10
    assert s.timezone == "Europe/Lisbon"
    assert (s.business_name, s.tables_per_seating) == ("Tasca", 5)
    assert (s.template_name, s.template_language) == ("reminder_v2", "pt_BR")
    assert s.missing_for_webhook() == []
    for secret in ("sk-test", "app-secret-value", "tok'", "ver'"):
        assert secret not in repr(s)


def test_redis_url_falls_back_to_the_generic_variable() -> None:
    assert BookingSettings.from_env({"REDIS_URL": "redis://x:6379"}).redis_url == "redis://x:6379"
    assert BookingSettings.from_env({"REDIS_URL": "  "}).redis_url is None


def test_overrides_win_over_the_environment() -> None:
    s = BookingSettings.from_env({"BOOKING_DEBOUNCE_SECONDS": "5"}, debounce_seconds=0)
    assert s.debounce_seconds == 0


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"BOOKING_REGRESSIONS": "no_dedupe,bogus"}, "BOOKING_REGRESSIONS"),
        ({"BOOKING_DEBOUNCE_SECONDS": "soon"}, "BOOKING_DEBOUNCE_SECONDS"),
        ({"BOOKING_DEBOUNCE_SECONDS": "-1"}, "BOOKING_DEBOUNCE_SECONDS"),
        ({"BOOKING_LLM": "gpt"}, "BOOKING_LLM"),
        ({"WHATSAPP_API_VERSION": "v25"}, "WHATSAPP_API_VERSION"),
        ({"WHATSAPP_GRAPH_URL": "graph.facebook.com"}, "WHATSAPP_GRAPH_URL"),
        ({"BOOKING_TIMEZONE": "Mars/Olympus"}, "BOOKING_TIMEZONE"),
    ],
)
def test_bad_values_name_their_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        BookingSettings.from_env(env)


def test_settings_are_frozen() -> None:
    settings = BookingSettings()
    with pytest.raises(ValueError, match="frozen"):
        settings.debounce_seconds = 1  # type: ignore[misc]


def test_harness_llm_chooses_the_model_when_booking_llm_is_unset() -> None:
    # `harness record --live` asks every agent for its live model this way.
    assert BookingSettings.from_env({"HARNESS_LLM": "anthropic"}).llm == "anthropic"
    assert BookingSettings.from_env({}).llm == "scripted"
