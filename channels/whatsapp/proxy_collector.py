"""The model and tool calls of an agent in another process, brought into the proxy's fixture.

The agent records into a store under the fixture's id; the collector moves
what it finds there into the :class:`~channels.whatsapp.proxy_record.ProxyRecorder`.
"""

from __future__ import annotations

import asyncio
import json
import logging

from pydantic import ValidationError

from channels.whatsapp.proxy_record import ProxyRecorder
from harness.recording import store_key
from harness.records import LLMRecord, ToolRecord
from harness.store import Store

__all__ = ["RecordingCollector"]

_log = logging.getLogger("channels.whatsapp.proxy")


class RecordingCollector:
    """Collects the model and tool records an agent in another process keeps in a store.

    The agent records with the harness's recorders into ``store`` under
    ``fixture_id`` (:meth:`harness.recording.Recording.in_store`, or
    ``HARNESS_RECORD_MODE=record`` with ``HARNESS_RECORDING_URL`` and
    ``HARNESS_FIXTURE_ID`` for :meth:`~harness.recording.Recording.from_settings`);
    each :meth:`drain` moves the records made since the last one into the
    proxy's fixture, with the trace events the recorders would have emitted,
    and the settings the agent reported (:meth:`~harness.recording.Recording.report_settings`)
    into its ``meta.json``.
    """

    def __init__(self, store: Store, fixture_id: str) -> None:
        self._store = store
        self._fixture_id = fixture_id
        self._next = {"llm": 0, "tools": 0}
        self._lock = asyncio.Lock()
        self._settings: dict[str, str] = {}

    async def start(self) -> None:
        """Begin after what the store already holds under the id: an earlier session's records.

        An agent keeps recording under the id it was started with; each proxy
        run makes a fixture of what happens while it runs.
        """
        async with self._lock:
            for log in self._next:
                self._next[log] = len(await self._store.read_log(store_key(self._fixture_id, log)))
            await self._store.delete(store_key(self._fixture_id, "settings"))

    async def drain(self, recorder: ProxyRecorder) -> int:
        """Move every record kept since the last call into ``recorder``; returns how many."""
        moved = 0
        async with self._lock:
            for log, start in self._next.items():
                lines = await self._store.read_log(store_key(self._fixture_id, log), start=start)
                self._next[log] = start + len(lines)
                for line in lines:
                    try:
                        if log == "llm":
                            recorder.add_llm(LLMRecord.model_validate_json(line))
                        else:
                            recorder.add_tool(ToolRecord.model_validate_json(line))
                    except ValidationError as exc:
                        _log.warning("skipped a malformed %s record in the store: %s", log, exc)
                        continue
                    moved += 1
            if not self._settings:
                raw = await self._store.get(store_key(self._fixture_id, "settings"))
                if raw is not None:
                    self._settings = _settings(raw)
                    if self._settings:
                        recorder.agent_reported(self._settings)
        return moved


def _settings(raw: bytes) -> dict[str, str]:
    try:
        data = json.loads(raw)
    except ValueError:
        _log.warning("skipped the agent's settings in the store: not JSON")
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items()}
