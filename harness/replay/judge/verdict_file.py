"""``verdicts.json``: a fixture's verdicts, kept with the recorded exchanges that replay them.

Written atomically with secrets scrubbed as in a fixture; read back with
one-line errors naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Final, Literal

from pydantic import ValidationError

from harness.exceptions import FixtureFormatError, FixtureNotFound, SchemaVersionError
from harness.files import write_atomic
from harness.fixture import VERDICTS_FILE
from harness.records import LLMRecord
from harness.redaction import Redactor
from harness.replay.judge._base import Frozen, describe
from harness.replay.judge.verdict import Verdict

__all__ = ["VERDICTS_SCHEMA_VERSION", "VerdictFile", "load_verdicts", "save_verdicts"]

#: The file a fixture keeps its verdicts in, and the version of its format.
VERDICTS_SCHEMA_VERSION: Final = 1


class VerdictFile(Frozen):
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
            f"{target}: invalid verdicts: {describe(exc)}", path=target
        ) from None
