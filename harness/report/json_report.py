"""``report.json``: the whole run as data, loadable back into a :class:`RunResult`.

The file is ``RunResult.model_dump(mode="json")`` with one extra top-level
key, ``summary`` (passed, failed, errors, skipped, inconclusive, total,
``pass_rates`` for scenarios run more than once with ``--repeat``, and
``models``: who answered the run's model calls, counted, each with the line
reports show),
so a dashboard can read the outcome without knowing the model. Each model
call in a conversation names its ``provider`` (``offline-stand-in``,
``anthropic`` ...) and its ``source`` (``live`` or ``recorded``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.exceptions import ConfigError
from harness.files import write_atomic
from harness.report.answers import run_models
from harness.results import RunResult

__all__ = ["load_json", "report_data", "write_json"]


def report_data(run: RunResult) -> dict[str, Any]:
    """The JSON document for a run: the run's fields plus its ``summary``."""
    data = run.model_dump(mode="json")
    data["summary"] = {
        "passed": run.passed,
        "failed": run.failed,
        "errors": run.errors,
        "skipped": run.skipped,
        "inconclusive": run.inconclusive,
        "total": len(run.scenarios),
        "pass_rates": [
            {**rate.model_dump(mode="json"), "rate": round(rate.rate, 4)}
            for rate in run.pass_rates()
        ],
        "models": [
            {
                "provider": count.provider,
                "model": count.model,
                "source": count.source,
                "calls": count.calls,
                "label": count.label,
            }
            for count in run_models(run)
        ],
    }
    return data


def write_json(run: RunResult, path: Path | str) -> Path:
    """Write ``report.json`` atomically and return its path."""
    text = json.dumps(report_data(run), indent=2, ensure_ascii=False) + "\n"
    return write_atomic(path, text)


def load_json(path: Path | str) -> RunResult:
    """Read a ``report.json`` back; a file that is not one raises :class:`ConfigError`."""
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: not valid JSON (line {exc.lineno}: {exc.msg})") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a report is a JSON object, found {type(data).__name__}")
    data.pop("summary", None)
    try:
        return RunResult.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ConfigError(f"{source}: not a harness report: {where}: {first['msg']}") from exc
