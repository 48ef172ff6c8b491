"""Running the ``harness`` command in the test's own process."""

from __future__ import annotations

from harness.cli.main import main

__all__ = ["harness"]


def harness(*args: str) -> int:
    """Run ``harness args`` in-process; the exit code the script would end with."""
    try:
        code: object = main(list(args))
    except SystemExit as exc:
        code = exc.code
    assert isinstance(code, int)
    return code
