"""Prompt overrides the harness can apply to any agent that looks its prompts up here.

``harness replay --prompt system=new.txt`` runs the recorded user turns
through the agent with its system prompt swapped. The harness can't know
where an agent keeps its prompts, so agents ask :func:`overridden` first
(the reference agent's prompt registry does), and :func:`override` swaps
prompts for the length of a ``with`` block, restoring them on the way out
even when the block raises.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.exceptions import ConfigError

__all__ = [
    "PromptFile",
    "PromptFiles",
    "declared_prompts",
    "overridden",
    "override",
    "parse_prompt_overrides",
]

_lock = threading.Lock()
_stacks: dict[str, list[str]] = {}


def overridden(name: str) -> str | None:
    """The text that replaces prompt ``name`` right now, or None."""
    with _lock:
        stack = _stacks.get(name)
        return stack[-1] if stack else None


@contextmanager
def override(prompts: Mapping[str, str]) -> Iterator[None]:
    """Serve each ``name -> text`` in ``prompts`` instead of the agent's own, inside the block."""
    with _lock:
        for name, text in prompts.items():
            _stacks.setdefault(name, []).append(text)
    try:
        yield
    finally:
        with _lock:
            for name in prompts:
                stack = _stacks.get(name)
                if stack:
                    stack.pop()
                if not stack:
                    _stacks.pop(name, None)


def parse_prompt_overrides(specs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``name=path`` pairs (``--prompt system=new.txt``) as ``name -> file text``."""
    prompts: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ConfigError(f"--prompt {spec!r}: expected NAME=PATH, e.g. system=prompt.txt")
        try:
            prompts[name.strip()] = Path(path.strip()).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"--prompt {spec!r}: can't read {path.strip()}: {exc.strerror}"
            ) from None
    return prompts


@dataclass(frozen=True)
class PromptFile:
    """One of an agent's prompts: its name, the file it is saved in, and its text now.

    ``text`` is what the agent would use, which is the file's text when the
    file exists and otherwise what the agent falls back on (its packaged
    prompt, say); saving creates the file.
    """

    name: str
    path: Path
    text: str


#: What a factory may also carry, as ``factory.prompt_files``: given the agent's settings (as
#: the agent receives them), its prompts, each with the file it is read from and saved in.
PromptFiles = Callable[[Mapping[str, str]], Sequence[PromptFile]]


def declared_prompts(factory: Any, settings: Mapping[str, str]) -> list[PromptFile]:
    """The prompts ``factory`` declares for ``settings``, by name; none when it declares none.

    Raises :class:`ConfigError` when the declaration names a prompt twice or
    gives something other than :class:`PromptFile`.
    """
    declare = getattr(factory, "prompt_files", None)
    if not callable(declare):
        return []
    found: list[PromptFile] = []
    for prompt in declare(settings):
        if not isinstance(prompt, PromptFile):
            raise ConfigError(f"prompt_files: expected PromptFile items, got {prompt!r}")
        if any(p.name == prompt.name for p in found):
            raise ConfigError(f"prompt_files: the prompt {prompt.name!r} is declared twice")
        found.append(prompt)
    return found
