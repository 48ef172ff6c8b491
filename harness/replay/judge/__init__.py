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

One module per part: the rubric, the verdict, the gate, ``verdicts.json``,
the transcript the judge reads, and the judge.
"""

from __future__ import annotations

from harness.replay.judge.gate import (
    EXIT_BELOW_THRESHOLD,
    EXIT_NO_VERDICT,
    GateFailure,
    GateOutcome,
    GateStatus,
    JudgeMode,
    gate_outcome,
)
from harness.replay.judge.judge import (
    DEFAULT_MODEL,
    Judge,
)
from harness.replay.judge.rubric import (
    DEFAULT_RUBRIC,
    Criterion,
    Rubric,
    check_rubric,
    parse_rubric,
)
from harness.replay.judge.scenarios import (
    NOT_CONFIGURED,
    judge_run,
    judgement_of,
    scenario_goal,
)
from harness.replay.judge.transcript import (
    render_transcript,
)
from harness.replay.judge.verdict import (
    VERDICT_TOOL,
    CriterionScore,
    Verdict,
    check_threshold,
    parse_verdict,
)
from harness.replay.judge.verdict_file import (
    VERDICTS_SCHEMA_VERSION,
    VerdictFile,
    load_verdicts,
    save_verdicts,
)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_RUBRIC",
    "EXIT_BELOW_THRESHOLD",
    "EXIT_NO_VERDICT",
    "NOT_CONFIGURED",
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
    "judge_run",
    "judgement_of",
    "load_verdicts",
    "parse_rubric",
    "parse_verdict",
    "render_transcript",
    "save_verdicts",
    "scenario_goal",
]
