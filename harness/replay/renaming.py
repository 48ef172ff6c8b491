"""The ids a replay gives recorded messages, and the recordings rewritten to match.

A replay must not send the ids a live chat had: an agent that remembers the
messages it has seen (a dedupe store, a database) would drop them as
repeats. Each recorded message id gets a new one of the same shape
(:func:`renamed_ids`), the same for the same id and salt, and wherever the
recording holds the old id (a model request that quotes it, a tool's
arguments) it is rewritten (:func:`rename_in_records`), so the agent's calls
still find their recorded answers.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.canonical import canonical_bytes, canonical_key
from harness.records import LLMRecord, ToolRecord

__all__ = ["rename_in_records", "renamed_id", "renamed_ids"]


def renamed_id(old: str, salt: str) -> str:
    """A new id of ``old``'s shape: its prefix up to the first ``.`` kept, the rest replaced."""
    prefix, dot, rest = old.partition(".")
    if not dot:
        prefix, rest = "", old
    digest = hashlib.sha256(f"{salt}:{old}".encode()).digest()
    while len(digest) * 4 // 3 < len(rest):
        digest += hashlib.sha256(digest).digest()
    body = base64.b64encode(digest).decode()[: max(len(rest), 8)]
    return f"{prefix}{dot}{body}"


def renamed_ids(olds: Iterable[str], salt: str) -> dict[str, str]:
    """Each old id and its new one (see :func:`renamed_id`)."""
    return {old: renamed_id(old, salt) for old in olds if old}


def _swap(value: Any, ids: Mapping[str, str]) -> Any:
    """``value`` (JSON data) with every old id inside its strings replaced by its new one."""
    text = json.dumps(value, ensure_ascii=False)
    changed = text
    for old, new in ids.items():
        changed = changed.replace(old, new)
    return value if changed == text else json.loads(changed)


def rename_in_records(
    llm: Sequence[LLMRecord], tools: Sequence[ToolRecord], ids: Mapping[str, str]
) -> tuple[list[LLMRecord], list[ToolRecord]]:
    """The records with the old ids replaced in their requests and arguments, keys recomputed."""
    if not ids:
        return list(llm), list(tools)
    new_llm = []
    for record in llm:
        request = _swap(record.request, ids)
        if request is not record.request:
            key = hashlib.sha256(canonical_bytes(request)).hexdigest()
            record = record.model_copy(update={"request": request, "key": key})
        new_llm.append(record)
    new_tools = []
    for tool in tools:
        args = _swap(tool.args, ids)
        if args is not tool.args:
            key = canonical_key({"args": args, "name": tool.name})
            tool = tool.model_copy(update={"args": args, "key": key})
        new_tools.append(tool)
    return new_llm, new_tools
