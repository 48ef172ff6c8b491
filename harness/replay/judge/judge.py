"""The :class:`Judge` itself: the request it sends a model, and the verdict it reads back.

The request is a pure function of the conversation, the goal and the rubric
(no wall-clock time, stable order), so a recording client serves it again
on replay, and a changed conversation misses the recording.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from harness.canonical import canonical_key
from harness.exceptions import ConfigError
from harness.llm import LLMClient, LLMRequest
from harness.llm_recorder import RecordingLLMClient
from harness.records import LLMRecord
from harness.replay.judge.rubric import DEFAULT_RUBRIC, Criterion, Rubric, check_rubric
from harness.replay.judge.transcript import render_transcript
from harness.replay.judge.verdict import VERDICT_TOOL, Verdict, parse_verdict
from harness.tape import RecordMode
from harness.trace import Conversation

__all__ = ["DEFAULT_MODEL", "Judge"]

DEFAULT_MODEL: Final = "claude-sonnet-4-6"
_SYSTEM: Final = (
    "You evaluate conversations between a user and an AI agent that talks to people on "
    "WhatsApp. You are given the transcript of one conversation and a rubric of criteria. "
    "Judge only what the transcript shows. For each criterion, give a one-sentence reason "
    "that points at the message or turn that decided it, a score from 0 (not met at all) to 1 "
    "(fully met), with values in between for partly met, and whether the criterion passed. "
    "Then summarise the conversation's quality in one or two sentences. Answer only by "
    f"calling the {VERDICT_TOOL} tool."
)
_LEGEND: Final = (
    "How to read the transcript: [turn N] numbers the user's turns; 'user <name>:' lines are "
    "what the user sent; 'agent:' lines are the agent's messages as the user received them "
    "('-> refused' means the message never arrived); 'tool' lines are actions the agent took "
    "behind the scenes, with their results; 'status failed' means a message failed to "
    "deliver; 'clock' lines mean time passed with nothing happening."
)


def _verdict_tool(rubric: Rubric) -> dict[str, Any]:
    """The ``record_verdict`` tool: one object per criterion, each required, and a summary."""
    per_criterion = {
        c.name: {
            "type": "object",
            "description": c.question,
            "properties": {
                # The reason comes first, so the model explains before it scores.
                "reason": {
                    "type": "string",
                    "description": "One sentence: why this score, naming the turn that decided.",
                },
                "score": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "description": "0 = not met at all, 1 = fully met.",
                },
                "passed": {"type": "boolean", "description": "Whether the criterion is met."},
            },
            "required": ["reason", "score", "passed"],
            "additionalProperties": False,
        }
        for c in rubric
    }
    return {
        "name": VERDICT_TOOL,
        "description": (
            "Record your verdict on the conversation: for each criterion a reason, a score "
            "and whether it passed, then a summary."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "criteria": {
                    "type": "object",
                    "properties": per_criterion,
                    "required": [c.name for c in rubric],
                    "additionalProperties": False,
                },
                "summary": {
                    "type": "string",
                    "description": "One or two sentences on the conversation as a whole.",
                },
            },
            "required": ["criteria", "summary"],
            "additionalProperties": False,
        },
    }


class Judge:
    """Scores conversations against a rubric with a model forced to answer as a verdict.

    ``client`` is any :class:`~harness.llm.LLMClient`; make it a
    :class:`~harness.recorder.RecordingLLMClient` to record verdicts and
    replay them offline (:attr:`records` then holds the exchanges to keep).
    ``temperature`` defaults to 0, to keep live verdicts as steady as the
    model allows; None leaves it to the API.
    """

    def __init__(
        self,
        client: LLMClient,
        *,
        model: str = DEFAULT_MODEL,
        rubric: Iterable[Criterion] = DEFAULT_RUBRIC,
        max_tokens: int = 1024,
        temperature: float | None = 0.0,
    ) -> None:
        if max_tokens < 1:
            raise ConfigError(f"the judge's max_tokens must be at least 1, not {max_tokens}")
        self.client = client
        self.model = model
        self.rubric = check_rubric(rubric)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._tool = _verdict_tool(self.rubric)

    def request(self, conversation: Conversation, *, goal: str | None = None) -> LLMRequest:
        """The request :meth:`evaluate` sends; equal inputs give an equal request."""
        goal_text = (goal or "").strip()
        stated = (
            f"The user's goal in this conversation: {goal_text}"
            if goal_text
            else "No goal was stated: infer what the user wanted from the conversation."
        )
        lines = render_transcript(conversation) or ["(the conversation is empty)"]
        questions = "\n".join(f"- {c.name}: {c.question.strip()}" for c in self.rubric)
        prompt = (
            f"{stated}\n\n<transcript>\n" + "\n".join(lines) + "\n</transcript>\n\n"
            f"{_LEGEND}\n\nCriteria:\n{questions}\n\n"
            f"Record your verdict with the {VERDICT_TOOL} tool."
        )
        params: dict[str, Any] = {"tool_choice": {"type": "tool", "name": VERDICT_TOOL}}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return LLMRequest(
            model=self.model,
            system=_SYSTEM,
            messages=({"role": "user", "content": prompt},),
            max_tokens=self.max_tokens,
            tools=(self._tool,),
            params=params,
        )

    async def evaluate(
        self, conversation: Conversation, *, scenario: str = "", goal: str | None = None
    ) -> Verdict:
        """Judge one conversation; ``scenario`` labels the verdict (not the prompt).

        Raises :class:`~harness.exceptions.Divergence` when a replaying
        client holds no verdict for this conversation, and
        :class:`~harness.exceptions.LLMError` when the call fails or the
        answer is not a well-formed verdict.
        """
        request = self.request(conversation, goal=goal)
        served = self._replays(request)
        response = await self.client.create(
            model=request.model,
            messages=request.messages,
            max_tokens=request.max_tokens,
            system=request.system,
            tools=request.tools,
            **request.params,
        )
        label = scenario or conversation.scenario or conversation.id
        return parse_verdict(response, self.rubric, scenario=label, recorded=served)

    def _replays(self, request: LLMRequest) -> bool:
        """Whether the client will serve ``request`` from its recording.

        Exact because nothing is awaited between this check and the
        recorder taking the record: ``create`` looks it up before its first await.
        """
        client = self.client
        if not isinstance(client, RecordingLLMClient) or client.mode is not RecordMode.REPLAY:
            return False
        key = canonical_key(request.body(exclude=client.volatile))
        return any(record.key == key for record in client.unused())

    @property
    def records(self) -> list[LLMRecord]:
        """The recorded exchanges behind the verdicts, to save beside them."""
        if not isinstance(self.client, RecordingLLMClient):
            raise ConfigError(
                "the judge's client records nothing: wrap it in a RecordingLLMClient to keep "
                "its verdicts for replay"
            )
        return self.client.records
