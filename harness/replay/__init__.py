"""Record once, replay offline: a scenario into a fixture, the fixture back through the channel.

Also the comparison of two conversations (diff) and the judge that scores them.
These use the core and the suites (a replay checks the scenario's invariants again).
"""

from __future__ import annotations

from harness.replay.clock_moves import moved_ahead, webhook_time
from harness.replay.diff import (
    ConversationDiff,
    TurnDiff,
    TurnStatus,
    diff_conversations,
)
from harness.replay.judge import (
    DEFAULT_MODEL,
    DEFAULT_RUBRIC,
    EXIT_BELOW_THRESHOLD,
    EXIT_NO_VERDICT,
    VERDICT_TOOL,
    VERDICTS_SCHEMA_VERSION,
    Criterion,
    CriterionScore,
    GateFailure,
    GateOutcome,
    GateStatus,
    Judge,
    JudgeMode,
    Rubric,
    Verdict,
    VerdictFile,
    check_rubric,
    check_threshold,
    gate_outcome,
    load_verdicts,
    parse_rubric,
    parse_verdict,
    render_transcript,
    save_verdicts,
)
from harness.replay.outcome import replay_run, replay_scenario_result
from harness.replay.playback import (
    Policy,
    ReplayAction,
    ReplayResult,
    ReplayStatus,
    plan_from_fixture,
    recorded_calls,
    replay_fixture,
    settings_differences,
)
from harness.replay.record import (
    SECRET_OPTIONS,
    llm_span,
    record_scenario,
)
from harness.replay.renaming import (
    rename_in_records,
    renamed_id,
    renamed_ids,
    renumbered,
    swap_strings,
    with_numbers,
)
from harness.replay.simulated import (
    SIMULATED_MEDIA,
    replay_simulated,
    simulated_scenario,
    user_model_of,
)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_RUBRIC",
    "EXIT_BELOW_THRESHOLD",
    "EXIT_NO_VERDICT",
    "SECRET_OPTIONS",
    "SIMULATED_MEDIA",
    "VERDICTS_SCHEMA_VERSION",
    "VERDICT_TOOL",
    "ConversationDiff",
    "Criterion",
    "CriterionScore",
    "GateFailure",
    "GateOutcome",
    "GateStatus",
    "Judge",
    "JudgeMode",
    "Policy",
    "ReplayAction",
    "ReplayResult",
    "ReplayStatus",
    "Rubric",
    "TurnDiff",
    "TurnStatus",
    "Verdict",
    "VerdictFile",
    "check_rubric",
    "check_threshold",
    "diff_conversations",
    "gate_outcome",
    "llm_span",
    "load_verdicts",
    "moved_ahead",
    "parse_rubric",
    "parse_verdict",
    "plan_from_fixture",
    "record_scenario",
    "recorded_calls",
    "rename_in_records",
    "renamed_id",
    "renamed_ids",
    "render_transcript",
    "renumbered",
    "replay_fixture",
    "replay_run",
    "replay_scenario_result",
    "replay_simulated",
    "save_verdicts",
    "settings_differences",
    "simulated_scenario",
    "swap_strings",
    "user_model_of",
    "webhook_time",
    "with_numbers",
]
