"""Prompt files, found by name through a small registry that can be overridden.

The agent's system prompt is ``system.md`` in this package. A
:class:`PromptRegistry` finds a prompt by name: first an override set with
:meth:`PromptRegistry.override` (the harness replays a conversation with a
changed prompt this way), then a ``<name>.md`` file in the registry's
directory (``BOOKING_PROMPT_DIR``), then the registry it falls back on,
and at the end of the chain the packaged file. :data:`DEFAULT_PROMPTS` is the
registry every agent falls back on, so an override there reaches them all;
below it all, a prompt the harness overrides (``harness replay --prompt``)
wins over every file.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from importlib import resources
from pathlib import Path

from harness import prompts as harness_prompts
from harness.exceptions import ConfigError

__all__ = ["DEFAULT_PROMPTS", "PromptRegistry", "override", "packaged_prompt"]


@functools.cache
def packaged_prompt(name: str) -> str | None:
    """The text of ``<name>.md`` shipped in this package, or None."""
    if not name.replace("_", "").replace("-", "").isalnum():
        return None
    resource = resources.files(__name__).joinpath(f"{name}.md")
    if not resource.is_file():
        return None
    return resource.read_text(encoding="utf-8")


class PromptRegistry:
    """Prompts by name: overrides, then a directory, then the fallback registry or the package."""

    def __init__(
        self, directory: Path | str | None = None, *, fallback: PromptRegistry | None = None
    ) -> None:
        self.directory = None if directory is None else Path(directory)
        if self.directory is not None and not self.directory.is_dir():
            raise ConfigError(f"prompt directory {str(self.directory)!r} does not exist")
        self.fallback = fallback
        self._overrides: dict[str, list[str]] = {}

    def __repr__(self) -> str:
        return f"PromptRegistry(directory={self.directory!r})"

    def _overridden(self, name: str) -> str | None:
        stack = self._overrides.get(name)
        if stack:
            return stack[-1]
        if self.fallback is not None:
            return self.fallback._overridden(name)
        return harness_prompts.overridden(name)  # the harness's --prompt, last of all

    def _source(self, name: str) -> str | None:
        if self.directory is not None:
            path = self.directory / f"{name}.md"
            if path.is_file():
                return path.read_text(encoding="utf-8")
        if self.fallback is not None:
            return self.fallback._source(name)
        return packaged_prompt(name)

    def get(self, name: str) -> str:
        """The prompt called ``name``; :class:`ConfigError` when there is none."""
        text = self._overridden(name)
        if text is None:
            text = self._source(name)
        if text is None:
            raise ConfigError(f"no prompt named {name!r}")
        return text

    @contextmanager
    def override(self, name: str, text: str) -> Iterator[None]:
        """Serve ``text`` as prompt ``name`` inside the block; restored on exit, even on error.

        Overrides nest: the innermost wins, and leaving it brings back the one outside.
        """
        stack = self._overrides.setdefault(name, [])
        stack.append(text)
        try:
            yield
        finally:
            stack.pop()
            if not stack:
                del self._overrides[name]


#: The registry every agent falls back on; overrides here reach every agent.
DEFAULT_PROMPTS = PromptRegistry()


def override(name: str, text: str) -> AbstractContextManager[None]:
    """Override prompt ``name`` for every agent inside the block.

    See :meth:`PromptRegistry.override`; agents with their own prompt
    directory see it too, since overrides win over files.
    """
    return DEFAULT_PROMPTS.override(name, text)
