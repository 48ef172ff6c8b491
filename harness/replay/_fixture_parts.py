"""What a replay reads from a fixture besides its conversation: media, gaps, settings, faults."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness.fixture import CONVERSATION_FILE, Fixture

__all__ = ["any_map", "gap", "media_index", "replay_faults", "str_map"]


def media_index(fixture: Fixture) -> dict[str, str]:
    """Which media file under ``media/`` each recorded message carried, by its wamid."""
    index = fixture.path / "media" / "index.json"
    if not index.is_file():
        return {}
    data = json.loads(index.read_text(encoding="utf-8"))
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def gap(fixture: Fixture) -> tuple[str, str] | None:
    """Why ``fixture`` may hold less than its conversation asked for, and what to do; or None."""
    proxied = getattr(fixture.meta, "recorded_by", None) == "harness proxy"
    seams = len(fixture.raw("llm")) + len(fixture.raw("tools"))  # one record a line
    if proxied and not seams:
        return (
            f"{fixture.path}: harness proxy recorded the channel only, none of the agent's "
            "model or tool calls",
            "record them too (the agent with HARNESS_RECORD_MODE=record, the proxy with "
            "--store), or replay with --policy live or --target-url",
        )
    if fixture.conversation is None:
        return (
            f"{fixture.path}: the recording was cut short (it has no {CONVERSATION_FILE})",
            "record it again to replay it whole",
        )
    return None


def str_map(value: object) -> dict[str, str]:
    """A mapping read from ``meta.json`` as text to text (anything else: empty)."""
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def any_map(value: object) -> dict[str, Any]:
    """A mapping read from ``meta.json`` with text keys (anything else: empty)."""
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else {}


def replay_faults(faults: object) -> dict[str, Any] | None:
    """The recorded fault profile without the faults the recording already holds.

    Duplicates and fragments are in the recorded actions; latency, reordering
    and batching are in their recorded instants. Status faults stay, seeded
    as they were.
    """
    base: dict[str, Any] = {}
    if isinstance(faults, Mapping):
        base = dict(faults)
    elif isinstance(faults, str) and faults not in ("", "none"):
        base = {"preset": faults}
    if not base:
        return None
    base.update(duplicate=0.0, fragment=0.0, latency=0.0, jitter=0.0, reorder=0.0, batch=1)
    return base
