"""The simulated user's model: the request it is sent, and an offline stand-in that answers it.

Each turn the model is sent one Messages API request: a system prompt that
casts it as the persona (with the scenario's brief as JSON between
``<brief>`` tags), then the conversation so far from the user's side: what
their phone showed (JSON between ``<phone>`` tags) and what they did (their
``act`` calls). The request is a pure function of the brief, the seed and
what the phone showed, so a recorder keys it the same on every run that
sees the same replies, and a changed agent misses the recording.

:class:`StandInUser` answers such a request with no model at all: a
seeded, rule-based user that works through the agenda, taps what fits,
and puts in fragments, typos, silences and a change of mind as often as
the brief allows. Its choices depend only on the request, so it is
deterministic; it is what offline runs and the tests use. The real user
model is Anthropic's, through :class:`~harness.llm.AnthropicClient`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Final

from harness.canonical import canonical_bytes
from harness.durations import format_duration
from harness.exceptions import LLMError
from harness.llm import LLMResponse, SystemPrompt, TextBlock, ToolUseBlock, Usage
from harness.providers import STAND_IN
from harness.suites.simulate_step import Simulation
from harness.suites.user_actions import ACT_TOOL, act_tool

__all__ = ["StandInUser", "brief_of", "user_request"]

_BRIEF: Final = re.compile(r"<brief>\s*(\{.*\})\s*</brief>", re.S)
_PHONE: Final = re.compile(r"<phone>\s*(\{.*\})\s*</phone>", re.S)
_POSITIVE: Final = ("confirm", "yes", "book", "ok", "accept", "sí", "si", "sim", "oui", "ja")

_SYSTEM: Final = """\
You are role-playing a person who writes to a business on WhatsApp. The business answers with an \
AI agent, and this conversation tests that agent, but you never say or hint that it is a test, \
that you are an AI, or that you follow a brief.

Who you are, what you want, and how you write are in the brief below, as JSON:
- persona: who you are. Stay in character; know only what this person would know.
- goal: what you want from this chat. Pursue it the way this person would.
- language: write only in this language.
- agenda: what you mean to get across, in this order, when it fits the conversation. You may \
word it your own way; a {"media": file} item means sending that file.
- behaviour: how you write, as chances from 0 (never) to 1 (always):
  - fragments: how often you split a thought into several short messages sent one after \
another (the "messages" of a say), the way people type on phones. At 0, send one message a turn.
  - typos: how often a message has a small typo.
  - taps: how often you tap a button or list row that fits, instead of typing the answer.
  - silences: how often (chance), how many times (at_most) and for how long at most (length) \
you go quiet before answering (the wait action). Never wait if at_most is 0.
  - media: the only files you can send.
  - change_mind: how often you change your mind once when asked to confirm; say is what you \
might say then.
- max_turns: how many turns you have in all.

Each turn you get what is new on your phone, as JSON between <phone> tags:
- new_messages: the business's messages since you last did something: texts, messages with \
buttons or a list, templates, media with captions, reactions;
- you_can_tap: the buttons and list rows you can tap now;
- agent_read_your_messages: whether your last messages show blue ticks;
- agent_was_typing: whether you saw "typing...".
If nothing is new, the business has not answered (yet).

Answer every turn by calling the act tool exactly once, with a short thought:
- say: what you type (one message, or fragments as separate items);
- tap: the title of one of you_can_tap;
- send_media: one of your files, with a caption if you like;
- wait: go quiet for a duration such as 3h or 1d (only within your silences);
- done: outcome goal_met once the business has done what you wanted (a confirmation you can \
see), or gave_up if it clearly can't help you after several tries.
Keep messages short and natural, as on a phone. Do not repeat yourself word for word. \
Say how many agenda items you have got across so far in covered."""


def brief_of(simulation: Simulation, seed: int) -> dict[str, Any]:
    """The brief as the model reads it: persona, goal, language, agenda, bounds and the seed."""
    behaviour = simulation.behaviour
    agenda: list[Any] = []
    for item in simulation.agenda:
        if item.say is not None:
            agenda.append(item.say)
        else:
            media: dict[str, Any] = {"media": item.media}
            if item.caption is not None:
                media["caption"] = item.caption
            agenda.append(media)
    return {
        "persona": simulation.persona,
        "goal": simulation.goal,
        "language": simulation.language,
        "agenda": agenda,
        "behaviour": {
            "fragments": behaviour.fragments,
            "typos": behaviour.typos,
            "taps": behaviour.taps,
            "silences": {
                "chance": behaviour.silences.chance,
                "at_most": behaviour.silences.at_most,
                "length": _duration_text(behaviour.silences.length.total_seconds()),
            },
            "media": list(behaviour.media),
            "change_mind": {
                "chance": behaviour.change_mind.chance,
                "say": list(behaviour.change_mind.say),
            },
        },
        "max_turns": simulation.max_turns,
        "seed": seed,
    }


def _duration_text(seconds: float) -> str:
    return format_duration(timedelta(seconds=seconds))


def _json(value: Any) -> str:
    return canonical_bytes(value).decode()


def user_request(
    simulation: Simulation,
    seed: int,
    turns: Sequence[tuple[Mapping[str, Any], LLMResponse]],
    phone: Mapping[str, Any],
) -> dict[str, Any]:
    """The keyword arguments of the next ``create`` call: ``turns`` are the earlier ones.

    Each earlier turn is what the phone showed and the model's answer; the
    answer's ``act`` call is followed by its result, as the Messages API wants.
    """
    system = f"{_SYSTEM}\n\n<brief>\n{_json(brief_of(simulation, seed))}\n</brief>"
    messages: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for shown, answer in turns:
        messages.append({"role": "user", "content": [*pending, _phone_block(shown)]})
        messages.append(answer.as_message())
        pending = [
            {"type": "tool_result", "tool_use_id": use.id, "content": "done"}
            for use in answer.tool_uses
        ]
    messages.append({"role": "user", "content": [*pending, _phone_block(phone)]})
    return {
        "model": simulation.model,
        "system": system,
        "messages": messages,
        "max_tokens": 1024,
        "tools": [act_tool()],
        "tool_choice": {"type": "tool", "name": ACT_TOOL},
    }


def _phone_block(phone: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "text", "text": f"<phone>\n{_json(phone)}\n</phone>"}


# -- the offline stand-in -------------------------------------------------------------


class StandInUser:
    """A deterministic, rule-based simulated user that answers :func:`user_request` requests.

    It needs no model and no network. Its random choices are seeded by the
    request itself (which holds the brief's seed), so the same request always
    gets the same answer.
    """

    #: Who answers (:mod:`harness.providers`): the offline stand-in.
    provider = STAND_IN

    async def create(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        max_tokens: int,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> LLMResponse:
        """Read the brief, the phone and the earlier actions; answer with one ``act`` call."""
        text = system if isinstance(system, str) else ""
        found = _BRIEF.search(text)
        if found is None or not messages:
            raise LLMError(
                "the stand-in user answers simulated users' requests only: no <brief> in the "
                "system prompt"
            )
        brief = json.loads(found.group(1))
        phone = _last_phone(messages[-1])
        earlier = [
            use
            for message in messages
            if message.get("role") == "assistant"
            for use in _tool_inputs(message)
        ]
        digest = hashlib.sha256(
            canonical_bytes({"system": text, "messages": list(messages)})
        ).digest()
        rng = random.Random(digest)
        action = _decide(brief, phone, earlier, rng)
        turn = len(earlier) + 1
        return LLMResponse(
            id=f"msg_stand_in_{digest.hex()[:16]}",
            model=model,
            content=(
                TextBlock(text=str(action.get("thought", ""))),
                ToolUseBlock(id=f"toolu_stand_in_{turn}", name=ACT_TOOL, input=action),
            ),
            stop_reason="tool_use",
            usage=Usage(input_tokens=len(text) // 4, output_tokens=24),
        )


def _tool_inputs(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return [
        dict(block["input"])
        for block in blocks
        if isinstance(block, Mapping) and block.get("type") == "tool_use"
    ]


def _last_phone(message: Mapping[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    for block in reversed(blocks):
        if isinstance(block, Mapping) and block.get("type") == "text":
            found = _PHONE.search(str(block.get("text", "")))
            if found is not None:
                loaded = json.loads(found.group(1))
                return loaded if isinstance(loaded, dict) else {}
    raise LLMError("the stand-in user found no <phone> in the request's last message")


def _decide(
    brief: Mapping[str, Any],
    phone: Mapping[str, Any],
    earlier: Sequence[Mapping[str, Any]],
    rng: random.Random,
) -> dict[str, Any]:
    """The stand-in's next action, from the brief, the phone and what it did before."""
    behaviour = brief.get("behaviour") or {}
    agenda: list[Any] = list(brief.get("agenda") or [])
    covered = max((int(a.get("covered") or 0) for a in earlier), default=0)
    silences = behaviour.get("silences") or {}
    waited = sum(1 for a in earlier if a.get("action") == "wait")
    changed = any(a.get("thought") == "changing my mind" for a in earlier)
    choices = [c for c in phone.get("you_can_tap") or [] if isinstance(c, Mapping)]
    messages = [m for m in phone.get("new_messages") or [] if isinstance(m, Mapping)]
    if (
        earlier
        and messages
        and waited < int(silences.get("at_most") or 0)
        and rng.random() < float(silences.get("chance") or 0)
    ):
        length = silences.get("length", "1d")
        return {"action": "wait", "duration": length, "thought": "going quiet"}
    following = agenda[covered] if covered < len(agenda) else None
    if choices:
        fitting = _fitting(choices, following) if isinstance(following, str) else None
        if fitting is not None:
            return _pick(fitting, behaviour, rng, covered + 1, "that option fits what I want")
        if following is None:
            mind = behaviour.get("change_mind") or {}
            if not changed and rng.random() < float(mind.get("chance") or 0):
                lines = list(mind.get("say") or ["hmm wait, actually can we change that?"])
                said = _styled(rng.choice(lines), behaviour, rng)
                return {"action": "say", "messages": said, "thought": "changing my mind"}
            return _pick(_positive(choices), behaviour, rng, covered, "that is what I wanted")
    if following is not None:
        if isinstance(following, Mapping):
            action = {"action": "send_media", "file": str(following.get("media"))}
            if following.get("caption"):
                action["caption"] = str(following["caption"])
            return {**action, "thought": "sending my file", "covered": covered + 1}
        said = _styled(str(following), behaviour, rng)
        return {"action": "say", "messages": said, "thought": "next thing", "covered": covered + 1}
    last = str(messages[-1].get("text", "")) if messages else ""
    if last.rstrip().endswith("?"):
        return {"action": "done", "outcome": "gave_up", "thought": "I have nothing more to add"}
    return {"action": "done", "outcome": "goal_met", "thought": "that is all I wanted"}


def _fitting(choices: Sequence[Mapping[str, Any]], text: str) -> Mapping[str, Any] | None:
    wanted = text.casefold()
    for choice in choices:
        title = str(choice.get("title", "")).casefold()
        if title and (title in wanted or wanted in title):
            return choice
    return None


def _positive(choices: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    for choice in choices:
        named = f"{choice.get('id', '')} {choice.get('title', '')}".casefold()
        if any(word in named.split() or named.startswith(word) for word in _POSITIVE):
            return choice
    return choices[0]


def _pick(
    choice: Mapping[str, Any],
    behaviour: Mapping[str, Any],
    rng: random.Random,
    covered: int,
    thought: str,
) -> dict[str, Any]:
    """Tap ``choice``, or (as often as ``taps`` leaves) type its title instead."""
    title = str(choice.get("title") or choice.get("id") or "")
    if rng.random() < float(behaviour.get("taps", 1.0)):
        return {"action": "tap", "choice": title, "thought": thought, "covered": covered}
    return {"action": "say", "messages": [title.lower()], "thought": thought, "covered": covered}


def _styled(text: str, behaviour: Mapping[str, Any], rng: random.Random) -> list[str]:
    """``text`` as a phone user types it: maybe with a typo, maybe in fragments."""
    words = text.split()
    if rng.random() < float(behaviour.get("typos") or 0):
        words = _typo(words, rng)
    if len(words) >= 4 and rng.random() < float(behaviour.get("fragments") or 0):
        pieces = rng.choice((2, 3)) if len(words) >= 6 else 2
        cuts = sorted(rng.sample(range(1, len(words)), pieces - 1))
        bounds = [0, *cuts, len(words)]
        return [" ".join(words[a:b]) for a, b in itertools.pairwise(bounds)]
    return [" ".join(words)]


def _typo(words: list[str], rng: random.Random) -> list[str]:
    """Two neighbouring letters swapped inside one longer plain word."""
    candidates = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not candidates:
        return words
    index = rng.choice(candidates)
    word = words[index]
    at = rng.randrange(1, len(word) - 2)
    changed = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    return [*words[:index], changed, *words[index + 1 :]]
