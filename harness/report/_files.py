"""Writing report files whole or not at all.

A report is written to a temporary file beside its target and renamed over
it, so a reader (a CI job collecting ``junit.xml``) never sees half a file.
The temporary file is created with ``open(..., "x")``, so the report gets
the usual permissions (the process umask), not ``mkstemp``'s private 0600.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

__all__ = ["write_text_atomic"]


def write_text_atomic(path: Path | str, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path`` through a temporary file and a rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with temp.open("x", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise
    if os.name == "posix":  # make the rename itself durable
        fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return target
