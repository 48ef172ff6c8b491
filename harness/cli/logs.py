"""Log records and warnings on the command line: one line each, never a traceback.

The agent under test runs inside the command (in-process runs and replays)
and may log what goes wrong, often with the exception attached. (Failures of
its background work that it reports through :mod:`harness.failures` are not
logged at all: the scenario's result lists them.) On the terminal each
record becomes one line, the exception reduced to its type and message; the
run's results say the rest. A record whose exception the command reports
itself (a replay's divergence, the store failing under a scenario) is not
printed a second time.
"""

from __future__ import annotations

import logging
import sys
import warnings

from harness.exceptions import Divergence, StoreUnavailable

__all__ = ["OneLineFormatter", "configure_logging"]


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]  # its stream is found each time
    """A handler writing to whatever ``sys.stderr`` is when a record comes."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


class OneLineFormatter(logging.Formatter):
    """``error: mybot: CRM update failed (TimeoutError: the CRM took too long)``."""

    def format(self, record: logging.LogRecord) -> str:
        """The record on one line, its exception (if any) as ``Type: message``."""
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            detail = str(error).strip().splitlines()
            message += f" ({type(error).__name__}{': ' + detail[0] if detail else ''})"
        return f"{record.levelname.lower()}: {record.name}: {message}".replace("\n", " ")


class _ReportedByTheRun(logging.Filter):
    """Drops a record whose exception the run's results report already.

    The recorder notes every divergence of a replay, and the store an outage
    under a scenario, before raising: the agent logging the same error again
    adds nothing. A store failing outside any scenario is still printed.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """False for a divergence or a noted outage, true for the rest."""
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, StoreUnavailable):
            return not error.noted
        return not isinstance(error, Divergence)


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    line: str | None = None,
) -> str:
    """A warning as ``warning: message``, without the source line Python would quote."""
    text = str(message).strip().replace("\n", " ")
    return f"warning: {text}\n"


def configure_logging(level: int = logging.WARNING) -> None:
    """Send log records of ``level`` and above to stderr, one line each (once per process).

    Warnings (a fixture's torn last line, say) are one line too.
    """
    # Only the format: whoever records warnings (pytest.warns ...) still gets them.
    warnings.formatwarning = _one_line_warning
    root = logging.getLogger()
    if any(isinstance(h.formatter, OneLineFormatter) for h in root.handlers):
        return
    handler = _Stderr()
    handler.setFormatter(OneLineFormatter())
    handler.addFilter(_ReportedByTheRun())
    root.addHandler(handler)
    root.setLevel(level)
