"""An agent declares its prompt files through its factory; the booking agent declares system.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from agents.booking import agent_factory
from harness.exceptions import ConfigError
from harness.prompts import PromptFile, declared_prompts

ROOT = Path(__file__).resolve().parents[3]
PACKAGED = ROOT / "agents" / "booking" / "prompts" / "system.md"


def test_the_booking_agent_declares_its_packaged_system_prompt() -> None:
    [prompt] = declared_prompts(agent_factory, {})
    assert prompt.name == "system"
    assert prompt.path.resolve() == PACKAGED.resolve()
    assert prompt.text == PACKAGED.read_text("utf-8")


def test_with_a_prompt_directory_the_file_there_is_declared(tmp_path: Path) -> None:
    [missing] = declared_prompts(agent_factory, {"BOOKING_PROMPT_DIR": str(tmp_path)})
    # not there yet: saving creates it; until then the agent reads the packaged prompt
    assert missing.path == tmp_path / "system.md"
    assert missing.text == PACKAGED.read_text("utf-8")
    (tmp_path / "system.md").write_text("my own prompt\n", encoding="utf-8")
    [present] = declared_prompts(agent_factory, {"prompt_dir": str(tmp_path)})
    assert present.text == "my own prompt\n"


def test_a_factory_that_declares_nothing_has_no_prompts() -> None:
    def factory(env: object) -> object:
        return object()

    assert declared_prompts(factory, {}) == []


def test_a_prompt_declared_twice_is_refused(tmp_path: Path) -> None:
    class Factory:
        def __call__(self, env: object) -> object:
            return object()

        def prompt_files(self, settings: Mapping[str, str]) -> list[PromptFile]:
            return [
                PromptFile("system", tmp_path / "a.md", ""),
                PromptFile("system", tmp_path / "b.md", ""),
            ]

    with pytest.raises(ConfigError, match="prompt_files: the prompt 'system' is declared twice"):
        declared_prompts(Factory(), {})
