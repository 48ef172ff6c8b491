"""Saving a prompt: whole, the previous version kept, and never over an edit made meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.prompts import PromptFile
from harness.ui.saving import PromptConflict, digest, save_prompt


def _declared(path: Path, fallback: str = "packaged text") -> PromptFile:
    return PromptFile("system", path, path.read_text("utf-8") if path.is_file() else fallback)


def test_saving_writes_the_new_text_and_keeps_the_old_one_as_a_backup(tmp_path: Path) -> None:
    path = tmp_path / "system.md"
    path.write_text("You are a booking assistant.\n", encoding="utf-8")
    prompt = _declared(path)
    saved = save_prompt(
        prompt, "You are a terse booking assistant.\n", based_on=digest(prompt.text)
    )
    assert path.read_text("utf-8") == "You are a terse booking assistant.\n"
    assert saved.backup == tmp_path / "system.md.bak"
    assert saved.backup.read_text("utf-8") == "You are a booking assistant.\n"
    assert saved.digest == digest("You are a terse booking assistant.\n")
    # no temporary file is left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["system.md", "system.md.bak"]


def test_a_prompt_changed_on_disk_since_it_was_opened_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "system.md"
    path.write_text("version 1\n", encoding="utf-8")
    opened = digest("version 1\n")
    path.write_text("version 2, saved by someone else\n", encoding="utf-8")
    with pytest.raises(PromptConflict, match=r"system\.md: changed on disk since it was opened"):
        save_prompt(_declared(path), "my edit of version 1\n", based_on=opened)
    assert path.read_text("utf-8") == "version 2, saved by someone else\n"
    assert not (tmp_path / "system.md.bak").exists()


def test_a_prompt_file_not_there_yet_is_created_with_no_backup(tmp_path: Path) -> None:
    path = tmp_path / "prompts" / "system.md"
    prompt = _declared(path, fallback="the packaged prompt")
    saved = save_prompt(prompt, "a prompt of my own\n", based_on=digest("the packaged prompt"))
    assert path.read_text("utf-8") == "a prompt of my own\n"
    assert saved.backup is None
    assert sorted(p.name for p in path.parent.iterdir()) == ["system.md"]
