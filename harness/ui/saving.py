"""Saving an edited prompt: whole or not at all, the version it replaces kept beside it.

Only a prompt the agent declares can be saved, at the path it declares
(:func:`harness.prompts.declared_prompts`); the browser names the prompt,
never a path. The editor says which text it started from (its digest): if
the file changed since, the save is refused rather than losing someone
else's edit.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from harness.exceptions import HarnessError
from harness.files import write_atomic
from harness.prompts import PromptFile

__all__ = ["BACKUP_SUFFIX", "PromptConflict", "SavedPrompt", "backup_path", "digest", "save_prompt"]

#: The previous version of ``system.md`` is kept as ``system.md.bak``.
BACKUP_SUFFIX = ".bak"


class PromptConflict(HarnessError):
    """The prompt file changed after the editor read it; saving would lose that change."""


@dataclass(frozen=True)
class SavedPrompt:
    """Where a prompt was written, and where the version it replaced went (None: a new file)."""

    path: Path
    backup: Path | None
    digest: str


def digest(text: str) -> str:
    """The sha256 of a prompt's text, which the editor sends back to say what it edited."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def backup_path(path: Path) -> Path:
    """Where the previous version of the prompt at ``path`` is kept."""
    return path.with_name(path.name + BACKUP_SUFFIX)


def save_prompt(prompt: PromptFile, text: str, *, based_on: str | None = None) -> SavedPrompt:
    """Write ``text`` to the prompt's file atomically, after copying the old file to its backup.

    ``prompt`` is the declaration as it stands now; ``based_on`` is the digest
    of the text the edit started from. Raises :class:`PromptConflict` when the
    prompt's current text is another.
    """
    if based_on is not None and digest(prompt.text) != based_on:
        raise PromptConflict(
            f"{prompt.path}: changed on disk since it was opened; reload it before saving"
        )
    backup: Path | None = None
    if prompt.path.is_file():
        backup = write_atomic(backup_path(prompt.path), prompt.path.read_bytes())
    write_atomic(prompt.path, text.encode("utf-8"))
    return SavedPrompt(path=prompt.path, backup=backup, digest=digest(text))
