"""The ``harness`` command line: one module per subcommand, gathered in :mod:`harness.cli.main`.

Nothing else in the project imports the command line; it uses everything.
"""

from __future__ import annotations

from harness.cli.main import main
from harness.cli.project import (
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
    "main",
    "resolve_target",
]
