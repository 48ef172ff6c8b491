"""A project's own run settings, from ``[tool.harness]`` in its ``pyproject.toml``.

A bot's project says once what ``harness run`` tests, instead of on every
command line::

    [tool.harness]
    target = "mybot_harness:factory"   # or target-url = "http://127.0.0.1:9000/webhook"
    paths = ["scenarios"]              # relative to this file
    channel = "whatsapp"
    concurrency = 4

The file is the nearest ``pyproject.toml`` with a ``[tool.harness]`` table,
from the current directory up. Flags on the command line win over it. Every
problem (bad TOML, an unknown key, a value of the wrong type) is one
:class:`~harness.exceptions.ConfigError` line naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from harness.exceptions import ConfigError

__all__ = [
    "NO_FACTORY_TARGET",
    "NO_TARGET",
    "PROJECT_FILE",
    "ProjectSettings",
    "find_project",
    "resolve_target",
]

#: The file a project's settings live in.
PROJECT_FILE: Final = "pyproject.toml"
#: What a command says when nothing names the agent under test.
NO_TARGET: Final = (
    "no agent to test: give --target package.module:factory (or --target-url URL), "
    'or set target = "package.module:factory" under [tool.harness] in pyproject.toml'
)
#: What a command that runs the agent in-process only says when nothing names it.
NO_FACTORY_TARGET: Final = (
    "no agent to test: give --target package.module:factory, "
    'or set target = "package.module:factory" under [tool.harness] in pyproject.toml'
)
_KEYS: Final = ("target", "target-url", "paths", "channel", "concurrency")


@dataclass(frozen=True)
class ProjectSettings:
    """What a project's ``[tool.harness]`` table sets (``None``: not set)."""

    #: The ``pyproject.toml`` the settings came from; ``None`` when none was found.
    file: Path | None = None
    target: str | None = None
    target_url: str | None = None
    paths: tuple[Path, ...] = ()
    channel: str | None = None
    concurrency: int | None = None

    @property
    def root(self) -> Path | None:
        """The project's folder: where ``paths`` are relative to, and the target is importable."""
        return None if self.file is None else self.file.parent


def _string(file: Path, table: Mapping[str, Any], key: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{file}: [tool.harness] {key}: expected a non-empty text, got {value!r}")
    return value


def _settings(file: Path, table: Mapping[str, Any]) -> ProjectSettings:
    for key in table:
        if key not in _KEYS:
            import difflib

            close = difflib.get_close_matches(key.replace("_", "-"), _KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(_KEYS)})"
            raise ConfigError(f"{file}: [tool.harness] unknown key '{key}'{hint}")
    paths = table.get("paths", [])
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise ConfigError(
            f"{file}: [tool.harness] paths: expected a list of folders or files, got {paths!r}"
        )
    concurrency = table.get("concurrency")
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
    ):
        raise ConfigError(
            f"{file}: [tool.harness] concurrency: expected a whole number of at least 1, "
            f"got {concurrency!r}"
        )
    target = _string(file, table, "target")
    target_url = _string(file, table, "target-url")
    if target and target_url:
        raise ConfigError(f"{file}: [tool.harness] sets target and target-url: keep one")
    return ProjectSettings(
        file=file,
        target=target,
        target_url=target_url,
        paths=tuple(file.parent / p for p in paths),
        channel=_string(file, table, "channel"),
        concurrency=concurrency,
    )


def find_project(start: Path | None = None) -> ProjectSettings:
    """The settings of the nearest ``pyproject.toml`` with ``[tool.harness]``, from ``start`` up.

    ``start`` is the current directory by default; with no such file, every
    setting is unset.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        file = folder / PROJECT_FILE
        if not file.is_file():
            continue
        import tomllib

        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{file}: not valid TOML: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"{file}: can't read the file: {exc.strerror or exc}") from None
        tool = data.get("tool")
        table = tool.get("harness") if isinstance(tool, dict) else None
        if table is None:
            continue
        if not isinstance(table, dict):
            raise ConfigError(f"{file}: [tool.harness] must be a table")
        return _settings(file, table)
    return ProjectSettings()


def resolve_target(
    target: str | None,
    target_url: str | None,
    project: ProjectSettings,
    *,
    urls: bool = True,
) -> tuple[str | None, str | None, str]:
    """The target and target URL to run, and where they came from; flags win over the project.

    There is no default: with neither a flag nor a project setting, the
    command stops with :data:`NO_TARGET` rather than test an agent the user
    did not name (:data:`NO_FACTORY_TARGET` for a command that has no
    ``--target-url``: ``urls`` False).
    """
    if target or target_url:
        return target, target_url, "--target" if target else "--target-url"
    if project.target or project.target_url:
        return project.target, project.target_url, str(project.file)
    raise ConfigError(NO_TARGET if urls else NO_FACTORY_TARGET)
