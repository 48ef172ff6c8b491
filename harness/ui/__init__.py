"""``harness ui``: the prompt debugger, a local web app for changing an agent's prompts honestly.

Recorded conversations are replayed through the agent with the prompts as
edited in the browser, shown beside their recordings with the changed turns
highlighted and the invariants checked again, over one fixture or many; the
edited prompt is written to the agent's own prompt file only when saved.
The catalog sums up the fixtures, the jobs run the replays, saving writes
the prompt files, and the app serves it all on loopback.
"""

from __future__ import annotations

from harness.ui.app import LOOPBACK_NAMES, UIState, create_app
from harness.ui.catalog import (
    FixtureEntry,
    InvariantStatus,
    catalog,
    recorded_invariants,
    recorded_run,
    scenario_of,
)
from harness.ui.jobs import Job, Replayed, Replayer
from harness.ui.saving import (
    BACKUP_SUFFIX,
    PromptConflict,
    SavedPrompt,
    backup_path,
    digest,
    save_prompt,
)

__all__ = [
    "BACKUP_SUFFIX",
    "LOOPBACK_NAMES",
    "FixtureEntry",
    "InvariantStatus",
    "Job",
    "PromptConflict",
    "Replayed",
    "Replayer",
    "SavedPrompt",
    "UIState",
    "backup_path",
    "catalog",
    "create_app",
    "digest",
    "recorded_invariants",
    "recorded_run",
    "save_prompt",
    "scenario_of",
]
