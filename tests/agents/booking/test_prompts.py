"""The prompt registry: packaged prompts, a prompt directory, and overrides that always restore."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.booking import (
    DEFAULT_PROMPTS,
    BookingAgent,
    BookingSettings,
    PromptRegistry,
    ScriptedModel,
    override,
    packaged_prompt,
)
from harness.clock import VirtualClock
from harness.exceptions import ConfigError
from harness.store import MemoryStore


def test_the_system_prompt_ships_with_the_package() -> None:
    text = DEFAULT_PROMPTS.get("system")
    assert text == packaged_prompt("system")
    for placeholder in ("$business", "$today", "$weekday", "$profile"):
        assert placeholder in text
    assert "## House policies" in text


def test_an_unknown_prompt_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="nope"):
        DEFAULT_PROMPTS.get("nope")
    assert packaged_prompt("../etc/passwd") is None


def test_overrides_nest_and_restore_even_on_error() -> None:
    original = DEFAULT_PROMPTS.get("system")
    seen: list[str] = []

    def nested() -> None:
        with override("system", "outer"):
            seen.append(DEFAULT_PROMPTS.get("system"))
            with DEFAULT_PROMPTS.override("system", "inner"):
                seen.append(DEFAULT_PROMPTS.get("system"))
            seen.append(DEFAULT_PROMPTS.get("system"))
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        nested()
    assert seen == ["outer", "inner", "outer"]
    assert DEFAULT_PROMPTS.get("system") == original


def test_a_prompt_directory_wins_over_the_package_and_loses_to_overrides(tmp_path: Path) -> None:
    (tmp_path / "system.md").write_text("from the directory", encoding="utf-8")
    registry = PromptRegistry(tmp_path, fallback=DEFAULT_PROMPTS)
    assert registry.get("system") == "from the directory"
    with override("system", "overridden for all"):
        assert registry.get("system") == "overridden for all"
    with registry.override("system", "overridden here"):
        assert registry.get("system") == "overridden here"
        assert DEFAULT_PROMPTS.get("system") != "overridden here"


def test_a_missing_prompt_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        PromptRegistry(tmp_path / "missing")


async def test_the_agent_fills_the_prompt_and_an_override_reaches_the_model() -> None:
    clock = VirtualClock()
    agent = BookingAgent(
        BookingSettings(business_name="Tasca Zé"),
        store=MemoryStore(clock=clock),
        clock=clock,
        llm=ScriptedModel(),
    )
    state = await agent.states.load("u1")
    prompt = await agent.system_prompt(state, clock.now())
    assert "assistant of Tasca Zé" in prompt
    assert "Today is Thursday 2026-01-01; the time is 00:00 (UTC)" in prompt
    assert "- Nothing known yet." in prompt
    with override("system", "Assistant of $business, a bar.\n## House policies\nNo dogs."):
        from harness.agent import DirectMessage

        turn = await agent.handle_burst(
            "u1", [DirectMessage(text="any policies?")], now=clock.now()
        )
    assert turn.replies[0].text.endswith("No dogs.")
