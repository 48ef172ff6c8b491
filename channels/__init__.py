"""Channels carry a conversation plan to an agent and report what happened."""

from __future__ import annotations

__all__: list[str] = []
