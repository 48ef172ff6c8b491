"""A project's own run settings, from ``[tool.harness]``: see :mod:`harness.project`.

The command line reads them from here; the pytest plugin, which may not
import the command line, reads them from :mod:`harness.project` directly.
"""

from __future__ import annotations

from harness.project import (
    NO_FACTORY_TARGET,
    NO_TARGET,
    PROJECT_FILE,
    ProjectSettings,
    find_project,
    resolve_target,
)

__all__ = [
    "NO_FACTORY_TARGET",
    "NO_TARGET",
    "PROJECT_FILE",
    "ProjectSettings",
    "find_project",
    "resolve_target",
]
