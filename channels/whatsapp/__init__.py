"""The WhatsApp Cloud API simulator."""

from __future__ import annotations

__all__: list[str] = []
