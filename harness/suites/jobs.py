"""What a distributed run hands a worker for one scenario, and what comes back.

A job carries plain JSON only, never pickled objects: whoever can write to
the broker must not be able to run code on the workers. It holds the run's
:class:`~harness.suites.runner.RunOptions`, the scenario's file text as
written (so violations name the same lines as in a local run) and the
scenario's place in the run; the answer is the
:class:`~harness.results.ScenarioResult` as JSON.

The job's key is the run id and the scenario's index in the run: a job
handed out twice (a worker died, the queue retried it) is still one
scenario, and the coordinator keeps the first result it gets for each key.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from harness.exceptions import ConfigError
from harness.results import ScenarioResult
from harness.suites.runner import RunOptions
from harness.suites.scenario import Scenario, parse_scenario

__all__ = [
    "JOB_FUNCTION",
    "NOT_PLAYED",
    "ScenarioJob",
    "decode_options",
    "encode_options",
    "job_key",
    "parse_job_key",
    "result_from_json",
    "result_key",
    "stopped_key",
]

#: The name workers register the scenario job under.
JOB_FUNCTION = "run_scenario"


def job_key(run_id: str, index: int) -> str:
    """The key of scenario ``index`` of run ``run_id``: also its store namespace."""
    return f"{run_id}:{index}"


def parse_job_key(key: str) -> tuple[str, int]:
    """The run id and scenario index in job key ``key`` (the inverse of :func:`job_key`)."""
    run_id, _, index = key.rpartition(":")
    return run_id, int(index)


def result_key(key: str) -> str:
    """Where a worker writes the result of job ``key``'s first finished attempt.

    Kept beside the queue's own record of the job: the queue may take a job
    just handed out for a lost one and hand it out again, and the result of
    the attempt already running is then dropped from the job. This one stays.
    """
    return f"harness:distributed:result:{key}"


def stopped_key(run_id: str) -> str:
    """Set once run ``run_id`` has stopped early (``-x``, an outage): its jobs are not played.

    Taking a stopped run's jobs off the queue can race the queue's sweep,
    which may queue a job again a few seconds later; a worker that takes one
    then finds this key and hands it back unplayed.
    """
    return f"harness:distributed:stopped:{run_id}"


#: What a worker answers for a job of a stopped run, instead of a result.
NOT_PLAYED: Final = "not_played"


def encode_options(options: RunOptions) -> dict[str, Any]:
    """The run's options as JSON-ready data (a worker rebuilds them with :func:`decode_options`)."""
    data = dataclasses.asdict(options)
    data["start"] = options.start.isoformat() if options.start is not None else None
    data["import_paths"] = list(options.import_paths)
    json.dumps(data)  # fails here, on the coordinator, rather than on a worker
    return data


def decode_options(data: Mapping[str, Any]) -> RunOptions:
    """Options from :func:`encode_options`; an unknown field is refused."""
    known = {f.name for f in dataclasses.fields(RunOptions)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"run options from the coordinator: unknown field {unknown[0]!r}")
    values = dict(data)
    if values.get("start") is not None:
        values["start"] = datetime.fromisoformat(values["start"])
    values["import_paths"] = tuple(values.get("import_paths", ()))
    return RunOptions(**values)


@dataclasses.dataclass(frozen=True)
class ScenarioJob:
    """One scenario of a run, as a worker receives it."""

    run_id: str
    index: int
    text: str
    path: str
    options: dict[str, Any]

    @classmethod
    def of(cls, run_id: str, index: int, scenario: Scenario, options: RunOptions) -> ScenarioJob:
        """The job for ``scenario``: its file's text when it has one, else its YAML."""
        path = scenario.path
        text = Path(path).read_text(encoding="utf-8") if path is not None else scenario.to_yaml()
        return cls(run_id, index, text, str(path or ""), encode_options(options))

    @property
    def key(self) -> str:
        """The job's key and the scenario's store namespace."""
        return job_key(self.run_id, self.index)

    def to_kwargs(self) -> dict[str, Any]:
        """The job's arguments as the queue stores them."""
        return dataclasses.asdict(self)

    @classmethod
    def from_kwargs(cls, data: Mapping[str, Any]) -> ScenarioJob:
        """The job a worker was handed; a field missing or of the wrong kind is refused."""
        try:
            return cls(
                run_id=str(data["run_id"]),
                index=int(data["index"]),
                text=str(data["text"]),
                path=str(data["path"]),
                options=dict(data["options"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"a scenario job from the coordinator: bad field {exc}") from None

    def scenario(self) -> Scenario:
        """The scenario, parsed as the coordinator parsed it (same file, same lines)."""
        return parse_scenario(self.text, path=self.path or None)


def result_from_json(data: Any) -> ScenarioResult:
    """A worker's answer back as a result."""
    return ScenarioResult.model_validate(data)
