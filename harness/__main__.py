"""``python -m harness`` runs the command line."""

from __future__ import annotations

from harness.cli.main import main

__all__: list[str] = []

if __name__ == "__main__":
    main()
