"""The ``harness`` command line: one module per subcommand, gathered in :mod:`harness.cli.main`.

Nothing else in the project imports the command line; it uses everything.
"""

from __future__ import annotations

from harness.cli.main import main
from harness.cli.project import PROJECT_FILE, ProjectSettings, find_project

__all__ = ["PROJECT_FILE", "ProjectSettings", "find_project", "main"]
