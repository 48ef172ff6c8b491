"""The agent's own work failing during a run: reported to the run, one line each, not logged.

An agent does work nobody awaits (a debounced answer, a follow-up, a retried
send), and when that work fails there is no caller to raise to: agents log
it, traceback and all. During a run or a replay such a traceback lands on
the terminal in the middle of the report, and belongs to no scenario.
:func:`report_failure` hands the failure to the run the code is part of
instead: the scenario's result lists it (``agent_errors``), one line per
failure, in the console, ``report.json``, ``junit.xml`` and ``report.html``::

    from harness.failures import report_failure

    def _done(task: asyncio.Task[None]) -> None:
        error = None if task.cancelled() else task.exception()
        if error is not None and not report_failure(error, "background task"):
            log.error("background task failed", exc_info=error)  # not in a harness run

Outside a run it does nothing and returns False, so the agent logs as it
always did. The runner and the replay collect with :func:`collecting_failures`;
the tasks an agent starts inherit it, as context variables go (as they
inherit the run's clock, see :mod:`harness.inflight`). A replay's
:class:`~harness.exceptions.Divergence` is taken but not listed: the replay
reports it itself, once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from harness.exceptions import Divergence

__all__ = ["collecting_failures", "failure_line", "report_failure"]

_current: ContextVar[list[str] | None] = ContextVar("harness_agent_failures", default=None)


def failure_line(error: BaseException, what: str = "background work") -> str:
    """One line for a failure: ``background task failed: Divergence: replay diverged: ...``."""
    detail = str(error).strip().splitlines()
    said = f": {detail[0]}" if detail else ""
    return f"{what} failed: {type(error).__name__}{said}"


def report_failure(error: BaseException, what: str = "background work") -> bool:
    """Report a failure of the agent's own work to the run in progress, if there is one.

    ``what`` names the work (``background task``). True when a run took it
    (then there is nothing left to log); False outside a run.
    """
    collected = _current.get()
    if collected is None:
        return False
    if not isinstance(error, Divergence):  # a replay reports its own divergence, once
        collected.append(failure_line(error, what))
    return True


@contextmanager
def collecting_failures() -> Iterator[list[str]]:
    """Collect, as lines, the failures code inside the block (and its tasks) reports."""
    collected: list[str] = []
    token = _current.set(collected)
    try:
        yield collected
    finally:
        _current.reset(token)
