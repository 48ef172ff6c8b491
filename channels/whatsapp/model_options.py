"""The model endpoint's and OTLP receiver's options, for ``harness serve`` and ``harness proxy``.

Both servers answer ``/v1/messages``, ``/v1/chat/completions`` and
``/v1/traces`` beside their own routes (:mod:`harness.endpoints`). These
options say where recorded calls go on to (``--anthropic-upstream``,
``--openai-upstream``) and which tools have side effects
(``--side-effect-tool``); ``harness serve`` also takes the endpoint's mode
and the records it replays or records (``--model-mode``, ``--model-records``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harness.exceptions import ConfigError
from harness.options import side_effect_option, upstream_options

if TYPE_CHECKING:
    from harness.recording import Recording
    from harness.records import LLMRecord

__all__ = ["model_endpoint_options", "model_records_path", "serve_recording"]

F = TypeVar("F", bound=Callable[..., Any])


def model_endpoint_options(command: F) -> F:
    """``--anthropic-upstream``, ``--openai-upstream`` and ``--side-effect-tool``."""
    options = [upstream_options(), side_effect_option()]
    for option in reversed(options):
        command = option(command)
    return command


def model_records_path(path: Path) -> Path:
    """The ``llm.jsonl`` a ``--model-records`` value names: the file, or a fixture's own."""
    from harness.fixture import LOG_FILES

    return path / LOG_FILES["llm"] if path.is_dir() else path


def _load(path: Path) -> list[LLMRecord]:
    from pydantic import ValidationError

    from harness.fixture import read_jsonl
    from harness.records import LLMRecord

    if not path.exists():
        raise ConfigError(f"--model-records: {path} not found")
    records = []
    for line in read_jsonl(path):
        try:
            records.append(LLMRecord.model_validate(line.value))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "record"
            raise ConfigError(f"{path}:{line.number}: {where}: {problem['msg']}") from None
    return records


def serve_recording(mode: str, records: Path | None) -> tuple[Recording, Callable[[], None]]:
    """The recording ``harness serve``'s model endpoint uses, and what closes it.

    ``replay`` reads ``records`` (a fixture directory or an ``llm.jsonl``);
    ``record`` appends each new exchange to it as it is made.
    """
    # Imported here, not above: the commands' declarations use this module's options alone.
    from harness.fixture import JsonlWriter
    from harness.recording import Recording
    from harness.tape import RecordMode

    parsed = RecordMode.parse(mode)
    if parsed is RecordMode.PASSTHROUGH:
        return Recording(), lambda: None
    if records is None:
        raise ConfigError(f"--model-mode {parsed.value}: needs --model-records")
    path = model_records_path(records)
    if parsed is RecordMode.REPLAY:
        return Recording(mode=parsed, llm_records=_load(path)), lambda: None
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = JsonlWriter(path)
    return Recording(mode=parsed, on_llm_record=writer.append), writer.close
