"""``python -m harness`` runs the command line."""

from __future__ import annotations

from harness.cli import main

if __name__ == "__main__":
    main()
