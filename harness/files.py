"""Writing files whole or not at all.

A file is written to a temporary file beside its target, flushed to disk and
renamed over the target, so a reader (a loader, a CI job collecting
``junit.xml``) sees the old content or the new, never half of it. The
temporary file is created with ``open(..., "x")``, so the result gets the
usual permissions (the process umask), not ``mkstemp``'s private 0600.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path | str, data: bytes | str) -> Path:
    """Write ``data`` (text is UTF-8) to ``path`` through a temporary file and a rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    temp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with temp.open("xb") as handle:
            handle.write(payload)
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
