"""The ids a replay gives recorded messages, and the recordings rewritten to match.

A replay must not send the ids a live chat had: an agent that remembers the
messages it has seen (a dedupe store, a database) would drop them as
repeats. Each recorded message id gets a new one of the same shape
(:func:`renamed_ids`), the same for the same id and salt, and wherever the
recording holds the old id (a model request that quotes it, a tool's
arguments) it is rewritten (:func:`rename_in_records`), so the agent's calls
still find their recorded answers.

At a URL the agent also remembers who it talked to: a chat replayed twice
against the same running agent would meet a user it already knows. Each
recorded user gets numbers of their own for the replay (:func:`renumbered`),
the recording follows as for ids, and the replayed conversation is given
the recorded numbers back (:func:`with_numbers`) to be compared.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.canonical import canonical_bytes, canonical_key
from harness.channel import UserSpec
from harness.records import LLMRecord, ToolRecord
from harness.suites.realtime import distinct_user
from harness.trace import Conversation

__all__ = [
    "rename_in_records",
    "renamed_id",
    "renamed_ids",
    "renumbered",
    "swap_strings",
    "with_numbers",
]


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


def swap_strings(value: Any, ids: Mapping[str, str]) -> Any:
    """``value`` (JSON data) with every old id inside its strings replaced by its new one.

    ``value`` itself when nothing changed.
    """
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
        request = swap_strings(record.request, ids)
        if request is not record.request:
            key = hashlib.sha256(canonical_bytes(request)).hexdigest()
            record = record.model_copy(update={"request": request, "key": key})
        new_llm.append(record)
    new_tools = []
    for tool in tools:
        args = swap_strings(tool.args, ids)
        if args is not tool.args:
            key = canonical_key({"args": args, "name": tool.name})
            tool = tool.model_copy(update={"args": args, "key": key})
        new_tools.append(tool)
    return new_llm, new_tools


def renumbered(users: Sequence[UserSpec], salt: str) -> tuple[list[UserSpec], dict[str, str]]:
    """The users with numbers of their own for one replay, and each old number's new one."""
    fresh = [distinct_user(user, salt) for user in users]
    numbers: dict[str, str] = {}
    for old, new in zip(users, fresh, strict=True):
        for before, after in ((old.wa_id, new.wa_id), (old.bsuid, new.bsuid)):
            if before and after and before != after:
                numbers[before] = after
    return fresh, numbers


def with_numbers(conversation: Conversation, numbers: Mapping[str, str]) -> Conversation:
    """``conversation`` with each number in ``numbers`` replaced by the one it maps to."""
    if not numbers:
        return conversation
    text = conversation.model_dump_json()
    for old, new in numbers.items():
        text = text.replace(old, new)
    return Conversation.model_validate_json(text)
