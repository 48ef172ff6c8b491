"""The harness's version, in a module of its own so that any module can read it."""

from __future__ import annotations

__all__ = ["VERSION"]

#: The version of the harness (also in ``pyproject.toml``).
VERSION = "0.1.0"
