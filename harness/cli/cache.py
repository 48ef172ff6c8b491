"""What ``harness run`` remembers between runs, for ``--lf``: which scenarios failed last.

The cache is a folder, ``.harness_cache/`` in the project's folder (the one
whose ``pyproject.toml`` has ``[tool.harness]``), else in the current
directory, holding a ``.gitignore`` that keeps it out of version control.
``lastfailed.json`` maps each scenario that failed or errored, as
``path::name`` (its file's path relative to the cache's folder, with forward
slashes), to ``true``. Each run updates it as ``pytest`` does its own: the
scenarios it ran that passed are dropped, those that failed are added, and
those it did not run keep what they had. A cache that can't be read counts
as empty, and one that can't be written is left as it was: it only ever
changes which scenarios ``--lf`` runs first.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from harness.files import write_atomic
from harness.results import ScenarioResult
from harness.suites.scenario import Scenario

__all__ = ["CACHE_DIR", "LastFailed"]

#: The cache's folder name.
CACHE_DIR: Final = ".harness_cache"
_FILE: Final = "lastfailed.json"
_IGNORE: Final = "# written by harness run\n*\n"


class LastFailed:
    """The scenarios that failed in earlier runs, kept under ``root``/.harness_cache."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.folder = self.root / CACHE_DIR
        self.failed: set[str] = self._read()

    def _read(self) -> set[str]:
        try:
            data = json.loads((self.folder / _FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return set()
        if not isinstance(data, dict):
            return set()
        return {str(key) for key, value in data.items() if value}

    def key(self, path: str | Path | None, name: str) -> str:
        """How the cache names a scenario: its file relative to the cache's folder, and name."""
        if path is None or str(path) == "":
            return f"::{name}"
        where = Path(path).resolve()
        shown = where.relative_to(self.root) if where.is_relative_to(self.root) else where
        return f"{shown.as_posix()}::{name}"

    def of(self, scenario: Scenario) -> str:
        """The key of a scenario as loaded."""
        return self.key(scenario.path, scenario.name)

    def select(self, scenarios: Sequence[Scenario]) -> list[Scenario]:
        """The scenarios that failed last time; all of them when none did (as ``pytest --lf``)."""
        kept = [s for s in scenarios if self.of(s) in self.failed]
        return kept or list(scenarios)

    def update(self, results: Iterable[ScenarioResult]) -> None:
        """Forget the scenarios that passed, remember those that failed, and save."""
        for result in results:
            key = self.key(result.path, result.name)
            if result.status in ("failed", "error"):
                self.failed.add(key)
            elif result.status == "passed":
                self.failed.discard(key)
        # A read-only checkout runs as well: it just forgets.
        with contextlib.suppress(OSError):
            ignore = self.folder / ".gitignore"
            if not ignore.exists():
                write_atomic(ignore, _IGNORE)
            text = json.dumps(dict.fromkeys(sorted(self.failed), True), indent=2) + "\n"
            write_atomic(self.folder / _FILE, text)
