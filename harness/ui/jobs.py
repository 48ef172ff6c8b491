"""Replays the prompt debugger runs: one job replays one or more fixtures with edited prompts.

Jobs run one at a time, on a worker thread with an event loop of its own, so
the web app keeps answering while the agent works. One at a time because a
prompt override (:func:`harness.prompts.override`) holds for the whole
process while a replay runs. Each job keeps a log of progress events (a
fixture started, a fixture finished and how) that the browser reads as it
grows: :meth:`Job.wait` returns as soon as there is something new, so a
reader waits on the job, not on a timer.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from harness.exceptions import HarnessError
from harness.fixture import load_fixture
from harness.replay.diff import ConversationDiff, diff_conversations
from harness.replay.playback import ReplayResult, replay_fixture
from harness.suites.runner import Runner
from harness.trace import Conversation
from harness.ui.catalog import FixtureEntry, InvariantStatus, recorded_invariants

__all__ = ["Job", "Replayed", "Replayer"]

_KEPT_JOBS = 20


@dataclass(frozen=True)
class Replayed:
    """One fixture replayed in a job: the replay, the recording it is compared with, the diff."""

    entry: FixtureEntry
    result: ReplayResult
    recorded: Conversation | None
    diff: ConversationDiff | None
    invariants_before: InvariantStatus

    @property
    def changed_turns(self) -> list[int]:
        """The numbers (from 1) of the turns that differ from the recording."""
        return [] if self.diff is None else [t.number for t in self.diff.turns if not t.same]

    @property
    def invariants_now(self) -> InvariantStatus:
        """Whether the new conversation keeps the scenario's invariants."""
        if self.result.conversation is None:
            return "error"
        if self.invariants_before == "none":
            return "none"
        return "broken" if self.result.violations else "kept"

    def summary(self) -> dict[str, Any]:
        """What the browser shows of it: JSON-ready."""
        return {
            "fixture": self.entry.id,
            "name": self.entry.name,
            "scenario": self.entry.scenario,
            "status": self.result.status,
            "changed": bool(self.changed_turns),
            "changed_turns": self.changed_turns,
            "changes": list(self.result.changes),
            "invariants_before": self.invariants_before,
            "invariants_now": self.invariants_now,
            "newly_failing": self.invariants_now == "broken" and self.invariants_before != "broken",
            "violations": [v.headline() for v in self.result.violations],
            "divergences": list(self.result.divergences),
            "error": self.result.error,
            "duration_s": self.result.duration_s,
        }


@dataclass
class Job:
    """One replay of some fixtures with some prompts; its events grow as it runs."""

    id: str
    entries: tuple[FixtureEntry, ...]
    prompts: Mapping[str, str]
    events: list[dict[str, Any]] = field(default_factory=list)
    replayed: dict[int, Replayed] = field(default_factory=dict)
    done: bool = False
    _condition: threading.Condition = field(default_factory=threading.Condition, repr=False)

    def _add(self, event: dict[str, Any], *, finished: bool = False) -> None:
        with self._condition:
            self.events.append(event)
            self.done = self.done or finished
            self._condition.notify_all()

    def snapshot(self, after: int = 0) -> dict[str, Any]:
        """The events after the first ``after``, and whether the job is done."""
        with self._condition:
            return {
                "job": self.id,
                "events": self.events[after:],
                "next": len(self.events),
                "done": self.done,
                "total": len(self.entries),
            }

    def _has_news(self, after: int) -> bool:
        return self.done or len(self.events) > after

    async def wait(self, after: int, seconds: float) -> dict[str, Any]:
        """Wait (up to ``seconds``) for an event past ``after`` or the job's end; the snapshot."""

        def block() -> None:
            with self._condition:
                self._condition.wait_for(lambda: self._has_news(after), seconds)

        if not self._has_news(after):
            await asyncio.to_thread(block)
        return self.snapshot(after)


class Replayer:
    """Runs jobs one at a time on a worker thread, through one runner, on the live policy.

    A request the recording can't answer (the prompt changed, so the model's
    request did) goes to the agent's own model: its offline stand-in, or the
    real one when the agent's settings configure it.
    """

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="harness-ui-replay")

    def submit(self, entries: Sequence[FixtureEntry], prompts: Mapping[str, str]) -> Job:
        """Queue a job replaying ``entries``, ``prompts`` (name -> text) in place of the files."""
        job = Job(id=uuid.uuid4().hex[:12], entries=tuple(entries), prompts=dict(prompts))
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > _KEPT_JOBS:
                oldest = next(iter(self._jobs))
                if not self._jobs[oldest].done:
                    break
                del self._jobs[oldest]
        self._worker.submit(self._run, job)
        return job

    def get(self, job_id: str) -> Job | None:
        """A job still kept, by id."""
        with self._lock:
            return self._jobs.get(job_id)

    def close(self) -> None:
        """Stop taking jobs; drop those not started."""
        self._worker.shutdown(wait=False, cancel_futures=True)

    def _run(self, job: Job) -> None:
        try:
            asyncio.run(self._replay_all(job))
        except Exception as exc:  # anything the loop itself raised ends the job, said plainly
            job._add({"kind": "error", "error": f"{type(exc).__name__}: {exc}"})
        finally:
            job._add({"kind": "done"}, finished=True)

    async def _replay_all(self, job: Job) -> None:
        for position, entry in enumerate(job.entries, start=1):
            job._add({"kind": "started", "fixture": entry.id, "name": entry.name, "at": position})
            replayed = await self._replay_one(entry, job.prompts)
            job.replayed[entry.id] = replayed
            job._add({"kind": "finished", **replayed.summary()})

    async def _replay_one(self, entry: FixtureEntry, prompts: Mapping[str, str]) -> Replayed:
        try:
            fixture = load_fixture(entry.path)
            before, _ = recorded_invariants(fixture)
        except HarnessError as exc:
            failed = ReplayResult(fixture=str(entry.path), status="error", error=str(exc))
            return Replayed(entry, failed, None, None, "error")
        result = await replay_fixture(self.runner, fixture, policy="live", prompts=prompts)
        recorded = fixture.conversation
        diff = None
        if recorded is not None and result.conversation is not None:
            diff = diff_conversations(recorded, result.conversation)
        return Replayed(entry, result, recorded, diff, before)
