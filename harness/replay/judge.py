"""The judge: a language model scoring what no predicate can (goal completion, tone, relevance).

Invariants check what can be written as a rule over the trace; whether the
agent did what the user wanted, politely and on topic, takes a reader. A
:class:`Judge` renders a conversation as a transcript, asks a model to score
it against a rubric of :class:`Criterion` questions, and forces the answer
through one tool (``record_verdict``) so it comes back as data. The answer is
validated strictly: one that is not a well-formed verdict raises
:class:`~harness.exceptions.LLMError`, never passes.

The judge's client is meant to be a
:class:`~harness.recorder.RecordingLLMClient`: recording a run records the
exchange behind each verdict, and a replay serves it offline, with no API
key. The request is a pure function of the conversation, the goal and the
rubric (no wall-clock time, stable order), so the same conversation hits the
recording and a changed one misses it (:class:`~harness.exceptions.Divergence`);
:func:`gate_outcome` counts a missing verdict as a refusal, never a pass.
``verdicts.json`` (:func:`save_verdicts`, :func:`load_verdicts`) keeps the
verdicts with the exchanges behind them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.canonical import canonical_json, canonical_key
from harness.exceptions import (
    ConfigError,
    FixtureFormatError,
    FixtureNotFound,
    LLMError,
    SchemaVersionError,
)
from harness.files import write_atomic
from harness.fixture import VERDICTS_FILE
from harness.llm import LLMClient, LLMRequest, LLMResponse
from harness.recorder import (
    LLMRecord,
    RecordingLLMClient,
    RecordMode,
)
from harness.redaction import Redactor
from harness.suites.transcript import Transcript, render_event
from harness.trace import (
    ClockJump,
    Conversation,
    Event,
    InboundMessage,
    OutboundSend,
    StatusUpdate,
    ToolCall,
)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_RUBRIC",
    "EXIT_BELOW_THRESHOLD",
    "EXIT_NO_VERDICT",
    "VERDICTS_SCHEMA_VERSION",
    "VERDICT_TOOL",
    "Criterion",
    "CriterionScore",
    "GateFailure",
    "GateOutcome",
    "GateStatus",
    "Judge",
    "JudgeMode",
    "Rubric",
    "Verdict",
    "VerdictFile",
    "check_rubric",
    "check_threshold",
    "gate_outcome",
    "load_verdicts",
    "parse_rubric",
    "parse_verdict",
    "render_transcript",
    "save_verdicts",
]

DEFAULT_MODEL: Final = "claude-sonnet-4-6"
#: The one tool the judge is offered, and forced to call.
VERDICT_TOOL: Final = "record_verdict"
#: The file a fixture keeps its verdicts in, and the version of its format.
VERDICTS_SCHEMA_VERSION: Final = 1
#: Exit codes of a gated run: a verdict below the threshold, and no verdict at all
#: (bad input, like any other run that can't be judged).
EXIT_BELOW_THRESHOLD: Final = 4
EXIT_NO_VERDICT: Final = 2

#: ``advisory`` (``--judge``) only reports; ``gate`` (``--judge-gate``) sets the exit code.
JudgeMode: TypeAlias = Literal["advisory", "gate"]
#: How a gate went: every verdict at or above the threshold, one below, or one missing.
GateStatus: TypeAlias = Literal["pass", "below", "missing"]

_MODES: Final = ("advisory", "gate")
# Weighted means are sums of floats: a verdict that scored exactly the threshold must not
# fail it by a rounding error in the last bit.
_TOLERANCE: Final = 1e-9
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")  # what a tool schema takes as a property name
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
# render_event shows a message's text clipped to one line; the judge must read it whole.
# A private-use character goes through render_event untouched and is swapped for the text.
_TEXT_SLOT: Final = "\ue000"


# -- the rubric ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Criterion:
    """One question the judge answers about a conversation, and how much it counts.

    ``name`` keys the criterion in the verdict (a letter, then letters,
    digits, ``_`` or ``-``: a tool schema's property names); ``weight`` is
    its share of the overall score, and 0 reports it without counting it.
    """

    name: str
    question: str
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ConfigError(
                f"criterion name {self.name!r} must be a letter followed by up to 63 letters, "
                "digits, '_' or '-'"
            )
        if not self.question.strip():
            raise ConfigError(f"criterion {self.name!r}: the question is empty")
        if not math.isfinite(self.weight) or self.weight < 0:
            raise ConfigError(f"criterion {self.name!r}: weight must be >= 0, not {self.weight}")


#: A judge's criteria, in the order the verdict lists them.
Rubric: TypeAlias = tuple[Criterion, ...]

DEFAULT_RUBRIC: Final[Rubric] = (
    Criterion(
        "goal_completion",
        "Did the agent complete what the user asked for (e.g. a confirmed booking) without errors?",
    ),
    Criterion("tone", "Was the agent polite, concise and suited to WhatsApp?"),
    Criterion("relevance", "Did every reply address what the user last said?"),
)


def check_rubric(criteria: Iterable[Criterion]) -> Rubric:
    """``criteria`` as a rubric: at least one, names unique, some weight above 0."""
    rubric = tuple(criteria)
    if not rubric:
        raise ConfigError("a rubric needs at least one criterion")
    seen: set[str] = set()
    for criterion in rubric:
        if criterion.name in seen:
            raise ConfigError(f"the rubric names criterion {criterion.name!r} twice")
        seen.add(criterion.name)
    if not math.fsum(c.weight for c in rubric) > 0:
        raise ConfigError("a rubric needs a criterion with a weight above 0")
    return rubric


def parse_rubric(data: Mapping[str, Any] | Sequence[Any]) -> Rubric:
    """A rubric from YAML-shaped data; :class:`ConfigError` naming the field otherwise.

    Either a mapping of name to question, or to ``{question, weight}``, or a
    list of ``{name, question, weight}`` mappings::

        goal_completion: {question: "Was the table booked?", weight: 2}
        tone: "Was the agent polite?"
    """
    entries: list[tuple[object, object, str]] = []
    if isinstance(data, Mapping):
        entries = [(name, spec, f"rubric.{name}") for name, spec in data.items()]
    elif isinstance(data, Sequence) and not isinstance(data, str | bytes):
        for i, item in enumerate(data):
            if not isinstance(item, Mapping) or "name" not in item:
                raise ConfigError(f"rubric[{i}]: expected a mapping with name and question")
            fields = {key: value for key, value in item.items() if key != "name"}
            entries.append((item["name"], fields, f"rubric[{i}]"))
    else:
        raise ConfigError(f"rubric: expected a mapping or a list, not {type(data).__name__}")
    criteria = []
    for name, spec, where in entries:
        if not isinstance(name, str):
            raise ConfigError(f"{where}: a criterion's name must be text, not {name!r}")
        question: object = spec
        weight: object = 1.0
        if isinstance(spec, Mapping):
            unknown = sorted(map(str, set(spec) - {"question", "weight"}))
            if unknown:
                raise ConfigError(
                    f"{where}: unknown field {unknown[0]!r}; expected question, weight"
                )
            question, weight = spec.get("question"), spec.get("weight", 1.0)
        if not isinstance(question, str):
            raise ConfigError(f"{where}.question: expected text, not {question!r}")
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise ConfigError(f"{where}.weight: expected a number, not {weight!r}")
        criteria.append(Criterion(name, question, float(weight)))
    return check_rubric(criteria)


# -- verdicts --------------------------------------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CriterionScore(_Frozen):
    """The judge's answer to one criterion: score 0..1, pass or fail, and why."""

    name: str
    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    reason: str
    weight: float = Field(default=1.0, ge=0.0)


def _weighted_mean(scores: Sequence[CriterionScore]) -> float:
    total = math.fsum(s.weight for s in scores)
    if not total > 0:
        raise ValueError("the scores' weights add up to 0")
    return math.fsum(s.score * s.weight for s in scores) / total


class Verdict(_Frozen):
    """The judge's verdict on one conversation.

    ``overall`` is the mean of the scores weighted by their criteria's
    weights (checked on load). ``recorded`` is True when the verdict was
    served from a recording, False when a model gave it in this run.
    """

    scenario: str
    model: str
    scores: tuple[CriterionScore, ...] = Field(min_length=1)
    summary: str
    overall: float = Field(ge=0.0, le=1.0)
    recorded: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> Verdict:
        names = [s.name for s in self.scores]
        if len(set(names)) != len(names):
            raise ValueError("a criterion is scored twice")
        expected = _weighted_mean(self.scores)
        if abs(expected - self.overall) > _TOLERANCE:
            raise ValueError(f"overall {self.overall} is not the scores' weighted mean {expected}")
        return self

    @classmethod
    def from_scores(
        cls,
        *,
        scenario: str,
        model: str,
        scores: Sequence[CriterionScore],
        summary: str,
        recorded: bool = False,
    ) -> Verdict:
        """A verdict whose ``overall`` is computed from ``scores``."""
        overall = min(max(_weighted_mean(scores), 0.0), 1.0)
        return cls(
            scenario=scenario,
            model=model,
            scores=tuple(scores),
            summary=summary,
            overall=overall,
            recorded=recorded,
        )

    def gate(self, threshold: float) -> bool:
        """True when ``overall`` reaches ``threshold`` (equal passes)."""
        return self.overall + _TOLERANCE >= check_threshold(threshold)

    def headline(self) -> str:
        """One line: the overall score, then each criterion's (``goal_completion 1.00``)."""
        parts = [f"{s.name} {s.score:.2f}" + ("" if s.passed else " (failed)") for s in self.scores]
        source = "recorded" if self.recorded else "live"
        return f"judge {self.overall:.2f} ({source}, {self.model}): {', '.join(parts)}"


class _ScoreInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)

    reason: str = Field(min_length=1)
    score: float = Field(ge=0.0, le=1.0)
    passed: bool


class _VerdictInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)

    criteria: dict[str, _ScoreInput]
    summary: str = Field(min_length=1)


def _describe(exc: ValidationError, limit: int = 3) -> str:
    errors = exc.errors()
    shown = []
    for error in errors[:limit]:
        where = ".".join(str(part) for part in error["loc"]) or "input"
        got = f" (got {_shorten(repr(error['input']), 40)})" if error["type"] != "missing" else ""
        shown.append(f"{where}: {error['msg']}{got}")
    more = f"; and {len(errors) - limit} more" if len(errors) > limit else ""
    return "; ".join(shown) + more


def parse_verdict(
    response: LLMResponse,
    rubric: Iterable[Criterion],
    *,
    scenario: str = "",
    recorded: bool = False,
) -> Verdict:
    """The verdict in a judge's answer: its one ``record_verdict`` call, validated strictly.

    Raises :class:`LLMError` when the call is missing or repeated, or its
    input is not one reason, score and pass flag for each criterion of
    ``rubric`` (no more, no fewer) plus a summary.
    """
    criteria = check_rubric(rubric)
    hint = (
        "; the answer was cut off at max_tokens: give the judge more"
        if response.stop_reason == "max_tokens"
        else ""
    )
    calls = [block for block in response.tool_uses if block.name == VERDICT_TOOL]
    if not calls:
        said = f", text {_shorten(repr(response.text), 80)}" if response.text else ""
        other = ", ".join(block.name for block in response.tool_uses)
        called = f", called {other}" if other else ""
        raise LLMError(
            f"the judge's answer holds no {VERDICT_TOOL} call (stop_reason "
            f"{response.stop_reason}{called}{said}){hint}"
        )
    if len(calls) > 1:
        raise LLMError(f"the judge called {VERDICT_TOOL} {len(calls)} times; expected once")
    try:
        data = _VerdictInput.model_validate(calls[0].input)
    except ValidationError as exc:
        raise LLMError(f"the judge's verdict is malformed: {_describe(exc)}{hint}") from None
    names = [c.name for c in criteria]
    missing = [name for name in names if name not in data.criteria]
    unknown = sorted(set(data.criteria) - set(names))
    if missing or unknown:
        problems = [
            f"{label}: {', '.join(found)}"
            for label, found in (("missing", missing), ("unknown", unknown))
            if found
        ]
        raise LLMError(f"the judge's verdict does not match the rubric ({'; '.join(problems)})")
    scores = [
        CriterionScore(
            name=c.name,
            score=data.criteria[c.name].score,
            passed=data.criteria[c.name].passed,
            reason=data.criteria[c.name].reason,
            weight=c.weight,
        )
        for c in criteria
    ]
    return Verdict.from_scores(
        scenario=scenario,
        model=response.model,
        scores=scores,
        summary=data.summary,
        recorded=recorded,
    )


# -- the transcript and the request ----------------------------------------------------


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(event: Event) -> bool:
    """Whether the judge sees an event: what the user lived through, not channel mechanics."""
    if isinstance(event, InboundMessage):
        return not event.duplicate  # a redelivered copy is the channel's doing, not the user's
    if isinstance(event, OutboundSend):
        return event.is_message  # refused sends too: the user waited for them in vain
    if isinstance(event, StatusUpdate):
        return event.status == "failed"
    return isinstance(event, ToolCall | ClockJump)


def render_transcript(conversation: Conversation) -> list[str]:
    """The conversation as the judge reads it, one event a line (messages in full).

    User and agent messages (refused sends included), tool calls with their
    results, failed statuses and clock jumps, in log order; redelivered
    copies, receipts, typing, deliveries and model calls are left out. No
    line carries a time of day, so a replay renders the same lines.
    """
    transcript = Transcript(conversation)
    lines: list[str] = []
    for index, event in enumerate(transcript.events):
        if not _shown(event):
            continue
        turn = transcript.turn(index)
        names, recipient = transcript.names, transcript.recipient
        if isinstance(event, InboundMessage | OutboundSend) and event.text:
            slotted = event.model_copy(update={"text": _TEXT_SLOT})
            full = "\n    ".join(event.text.strip().splitlines())
            line = render_event(slotted, turn, names=names, recipient=recipient)
            line = line.replace(_TEXT_SLOT, full, 1)
        else:
            line = render_event(event, turn, names=names, recipient=recipient)
        if isinstance(event, ToolCall) and event.error is None:
            line += f" -> {_shorten(canonical_json(event.result), 300)}"
        elif isinstance(event, StatusUpdate):
            send = conversation.send_for(event.wamid)
            if send is not None and send.text:
                line += f" (the agent's message {_shorten(repr(send.text.strip()), 80)})"
        lines.append(line)
    return lines


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


# -- the gate --------------------------------------------------------------------------


def check_threshold(threshold: float) -> float:
    """``threshold`` as a float, or a :class:`ConfigError` when it is outside 0..1."""
    if not 0.0 <= threshold <= 1.0:  # NaN fails this too
        raise ConfigError(f"a judge threshold must be between 0 and 1, not {threshold}")
    return float(threshold)


class GateFailure(_Frozen):
    """A scenario that kept the gate shut: its verdict's ``overall``, or None for no verdict."""

    index: int
    scenario: str
    overall: float | None = None


class GateOutcome(_Frozen):
    """What the judge gate decided over a run's verdicts.

    ``missing`` (a scenario without a verdict, or no verdicts at all) wins
    over ``below``: a gate refuses to pass what it could not judge.
    """

    status: GateStatus
    threshold: float
    judged: int
    failing: tuple[GateFailure, ...] = ()

    def exit_code(self, mode: JudgeMode = "gate") -> int:
        """The run's exit code for this outcome: always 0 when ``advisory``."""
        if mode not in _MODES:
            raise ConfigError(f"invalid judge mode {mode!r}; valid modes: {', '.join(_MODES)}")
        if mode == "advisory" or self.status == "pass":
            return 0
        return EXIT_BELOW_THRESHOLD if self.status == "below" else EXIT_NO_VERDICT

    @property
    def message(self) -> str:
        """One line saying what the gate decided, naming the scenarios that failed it."""
        at = f"{self.threshold:g}"
        if self.status == "pass":
            return f"judge gate passed: {self.judged} verdict(s) at or above {at}"
        below = [f"{f.scenario} ({f.overall:.3f})" for f in self.failing if f.overall is not None]
        below_text = f"below {at}: {', '.join(below)}" if below else ""
        if self.status == "below":
            return f"judge gate failed: {len(below)} of {self.judged} {below_text}"
        missing = [f.scenario for f in self.failing if f.overall is None]
        what = f"no verdict for {', '.join(missing)}" if missing else "no verdicts to gate on"
        return f"judge gate refused: {what}" + (f"; {below_text}" if below else "")


def gate_outcome(
    verdicts: Sequence[Verdict | None],
    threshold: float,
    *,
    scenarios: Sequence[str] | None = None,
) -> GateOutcome:
    """Gate a run on its verdicts, one per scenario (None where none was recorded).

    ``scenarios`` names the entries, for the ones with no verdict to name them.
    """
    limit = check_threshold(threshold)
    if scenarios is not None and len(scenarios) != len(verdicts):
        raise ConfigError(f"{len(scenarios)} scenario names for {len(verdicts)} verdicts")
    failing: list[GateFailure] = []
    for index, verdict in enumerate(verdicts):
        named = scenarios[index] if scenarios is not None else ""
        name = named or (verdict.scenario if verdict is not None else "") or f"#{index + 1}"
        if verdict is None:
            failing.append(GateFailure(index=index, scenario=name))
        elif not verdict.gate(limit):
            failing.append(GateFailure(index=index, scenario=name, overall=verdict.overall))
    status: GateStatus = "pass"
    if not verdicts or any(f.overall is None for f in failing):
        status = "missing"
    elif failing:
        status = "below"
    judged = sum(1 for v in verdicts if v is not None)
    return GateOutcome(status=status, threshold=limit, judged=judged, failing=tuple(failing))


# -- verdicts.json ---------------------------------------------------------------------


class VerdictFile(_Frozen):
    """What ``verdicts.json`` holds: verdicts, and the recorded exchanges that replay them."""

    schema_version: Literal[1] = VERDICTS_SCHEMA_VERSION
    verdicts: tuple[Verdict, ...] = ()
    records: tuple[LLMRecord, ...] = ()


def _file(path: Path | str) -> Path:
    target = Path(path)
    return target / VERDICTS_FILE if target.is_dir() else target


def save_verdicts(
    path: Path | str,
    verdicts: Iterable[Verdict],
    *,
    records: Iterable[LLMRecord] = (),
    secrets: Iterable[str] = (),
) -> Path:
    """Write ``verdicts.json`` atomically (into ``path`` when it is a directory); returns it.

    ``records`` are the judge's exchanges (:attr:`Judge.records`). Secrets
    are scrubbed as in a fixture (``secrets`` are literal values to mask);
    record keys are kept, so a scrubbed request still replays.
    """
    content = VerdictFile(verdicts=tuple(verdicts), records=tuple(records))
    data = Redactor(secrets)(content.model_dump(mode="json"))
    text = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    return write_atomic(_file(path), text)


def load_verdicts(path: Path | str) -> VerdictFile:
    """Read ``verdicts.json`` (from ``path``, or inside it when it is a directory).

    Raises :class:`~harness.exceptions.FixtureNotFound`,
    :class:`~harness.exceptions.SchemaVersionError` or
    :class:`~harness.exceptions.FixtureFormatError`, each one line naming the file.
    """
    target = _file(path)
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        raise FixtureNotFound(f"{target}: not found", path=target) from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise FixtureFormatError(
            f"{target}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})",
            path=target,
            line=exc.lineno,
        ) from None
    except UnicodeDecodeError as exc:
        raise FixtureFormatError(f"{target}: invalid UTF-8: {exc.reason}", path=target) from None
    if not isinstance(data, dict):
        raise FixtureFormatError(f"{target}: expected a JSON object", path=target)
    found = data.get("schema_version")
    if type(found) is not int or found != VERDICTS_SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{target}: schema version {found!r} is not supported "
            f"(this harness reads version {VERDICTS_SCHEMA_VERSION})",
            path=target,
            found=found,
            supported=VERDICTS_SCHEMA_VERSION,
        )
    try:
        return VerdictFile.model_validate(data)
    except ValidationError as exc:
        raise FixtureFormatError(
            f"{target}: invalid verdicts: {_describe(exc)}", path=target
        ) from None
