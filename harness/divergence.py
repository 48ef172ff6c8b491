"""Why a replayed request matches no recorded one, in words a person can act on.

A recorder that misses looks for the nearest recorded request: requests are
cut into parts (model, system prompt, tools, each message, each parameter;
a tool call's name and each argument), each part fingerprinted and
weighted, and the recorded request sharing the most weight wins. Then this
module says what separates the two: ``system prompt differs``, ``tools
differ (added: x)``, ``messages[3] differs (recorded: '…'; now: '…')``,
``param temperature: 0.2 -> 0.7``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, TypeAlias

from harness.canonical import canonical_json

__all__ = [
    "Parts",
    "clip",
    "llm_differences",
    "llm_parts",
    "message_text",
    "quote",
    "tool_differences",
    "tool_parts",
]

#: Fingerprinted parts of a request, with their weights.
Parts: TypeAlias = dict[Hashable, int]

_NAMED_PARTS = frozenset({"model", "messages", "max_tokens", "system", "tools"})
_PREVIEW = 48
_SYSTEM_ROLES = frozenset({"system", "developer"})
_MAX_LISTED = 4


def _fingerprint(value: Any) -> int:
    return hash(canonical_json(value))


def llm_parts(body: Mapping[str, Any]) -> Parts:
    """Per-part fingerprints of a request; system and tools weigh more than one message."""
    parts: Parts = {
        ("model", body.get("model")): 1,
        ("system", _fingerprint(body.get("system"))): 2,
        ("tools", _fingerprint(body.get("tools"))): 2,
    }
    messages = body.get("messages") or []
    parts[("messages", len(messages))] = 1
    for i, message in enumerate(messages):
        parts[("message", i, _fingerprint(message))] = 1
    for name, value in body.items():
        if name not in _NAMED_PARTS or name == "max_tokens":
            parts[("param", name, _fingerprint(value))] = 1
    return parts


def tool_parts(name: str, args: Mapping[str, Any]) -> Parts:
    """Per-part fingerprints of a tool call; its name outweighs any number of arguments."""
    parts: Parts = {("tool", name): 1000}
    for arg, value in args.items():
        parts[("arg", arg, _fingerprint(value))] = 1
    return parts


def clip(text: str, start: int = 0) -> str:
    """A short preview of ``text`` from ``start`` on, on one line, with ellipses where cut."""
    text = text.replace("\n", "\\n")
    clipped = text[start : start + _PREVIEW]
    return ("…" if start > 0 else "") + clipped + ("…" if start + _PREVIEW < len(text) else "")


def quote(text: str, start: int = 0) -> str:
    """:func:`clip`, in quotes."""
    return "'" + clip(text, start) + "'"


def _pair(recorded: str, now: str) -> str:
    """``(recorded: '…'; now: '…')``, both shown from a little before where they part."""
    common = 0
    for a, b in zip(recorded, now, strict=False):
        if a != b:
            break
        common += 1
    start = max(0, common - 12)
    return f"(recorded: {quote(recorded, start)}; now: {quote(now, start)})"


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else canonical_json(value)


def message_text(message: Any) -> str:
    """A message as a person would skim it: ``user: text``, tool calls and results inline."""
    if not isinstance(message, Mapping):
        return _text_of(message)
    content = message.get("content")
    if isinstance(content, list):
        pieces = []
        for block in content:
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind == "text":
                pieces.append(_text_of(block.get("text")))
            elif kind == "tool_use":
                pieces.append(f"tool_use {block.get('name')}({canonical_json(block.get('input'))})")
            elif kind == "tool_result":
                pieces.append(f"tool_result {_text_of(block.get('content'))}")
            else:
                pieces.append(canonical_json(block))
        text = " | ".join(pieces)
    else:
        text = _text_of(content)
    return f"{message.get('role')}: {text}"


def _tool_names(tools: Any) -> dict[str, str]:
    named: dict[str, str] = {}
    for i, tool in enumerate(tools if isinstance(tools, list) else []):
        name = tool.get("name") if isinstance(tool, Mapping) else None
        named[str(name) if name is not None else f"#{i}"] = canonical_json(tool)
    return named


def _system_and_messages(body: Mapping[str, Any]) -> tuple[Any, list[Any], int]:
    """A request's system prompt, its other messages, and how many messages the prompt took.

    Anthropic's request has the prompt beside the messages; OpenAI's Chat
    Completions request has it as the first message (role ``system`` or
    ``developer``).
    """
    messages = list(body.get("messages") or [])
    system = body.get("system")
    first = messages[0] if messages else None
    if system is None and isinstance(first, Mapping) and first.get("role") in _SYSTEM_ROLES:
        return first.get("content"), messages[1:], 1
    return system, messages, 0


def llm_differences(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What separates ``now`` from ``recorded``, most telling first, in plain words."""
    out: list[str] = []
    if recorded.get("model") != now.get("model"):
        out.append(f"model: {recorded.get('model')} -> {now.get('model')}")
    old_system, old_messages, _ = _system_and_messages(recorded)
    new_system, new_messages, shift = _system_and_messages(now)
    if canonical_json(old_system) != canonical_json(new_system):
        out.append(
            "system prompt differs " + _pair(_text_of(old_system or ""), _text_of(new_system or ""))
        )
    old_tools, new_tools = _tool_names(recorded.get("tools")), _tool_names(now.get("tools"))
    if old_tools != new_tools:
        changes = [
            f"{label}: {', '.join(names)}"
            for label, names in (
                ("added", [n for n in new_tools if n not in old_tools]),
                ("removed", [n for n in old_tools if n not in new_tools]),
                (
                    "changed",
                    [n for n in new_tools if old_tools.get(n, new_tools[n]) != new_tools[n]],
                ),
            )
            if names
        ]
        out.append(f"tools differ ({'; '.join(changes) or 'order'})")
    if len(old_messages) != len(new_messages):
        out.append(f"messages: {len(new_messages)} now, {len(old_messages)} recorded")
    for i, (old, new) in enumerate(zip(old_messages, new_messages, strict=False), start=shift):
        if canonical_json(old) != canonical_json(new):
            old_text, new_text = message_text(old), message_text(new)
            if old_text == new_text:
                old_text, new_text = canonical_json(old), canonical_json(new)
            out.append(f"messages[{i}] differs {_pair(old_text, new_text)}")
    params = sorted(
        {n for n in recorded if n not in _NAMED_PARTS} | {n for n in now if n not in _NAMED_PARTS}
    )
    for name in ["max_tokens", *params]:
        old_value, new_value = recorded.get(name, _ABSENT), now.get(name, _ABSENT)
        if _show(old_value) != _show(new_value):
            out.append(f"param {name}: {_show(old_value)} -> {_show(new_value)}")
    return out


def tool_differences(
    recorded_name: str, recorded: Mapping[str, Any], name: str, now: Mapping[str, Any]
) -> list[str]:
    """Which tool or which arguments separate a call from the nearest recorded one."""
    out: list[str] = []
    if recorded_name != name:
        out.append(f"tool: {recorded_name} -> {name}")
    for arg in sorted(set(recorded) | set(now)):
        old_value, new_value = recorded.get(arg, _ABSENT), now.get(arg, _ABSENT)
        if _show(old_value) != _show(new_value):
            out.append(f"arg {arg}: {_show(old_value)} -> {_show(new_value)}")
    return out


_ABSENT = object()


def _show(value: Any) -> str:
    return "(absent)" if value is _ABSENT else clip(canonical_json(value))
