"""A pytest plugin that counts what the generative tests tried, for RELIABILITY.md.

Loaded with ``-p reliability.counting --counts-out FILE`` by
:mod:`reliability.suite_probes`. It makes the runs repeatable (Hypothesis
derandomized, no example database, so the same code tries the same
examples on any machine), keeps only the tests it is asked to count
(``--only-hypothesis`` keeps those written with ``@given``), and writes one
JSON object per test to FILE: its node id, its outcome, how many examples
Hypothesis ran and how many of them failed, and what the test recorded
itself with ``record_property`` (the browser test records its payloads).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.internal import observability
from hypothesis.internal.observability import (
    add_observability_callback,
    remove_observability_callback,
)

PROFILE = "reliability"

_RESULTS = pytest.StashKey[list[dict[str, Any]]]()
_COUNTS = pytest.StashKey[dict[str, int]]()

_lock = threading.Lock()
_current: dict[str, int] | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--counts-out`` and ``--only-hypothesis``."""
    group = parser.getgroup("reliability counts")
    group.addoption("--counts-out", default=None, help="write the counts here, as JSON lines")
    group.addoption(
        "--only-hypothesis",
        action="store_true",
        help="run only the tests written with Hypothesis's @given",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Fix Hypothesis's choices before the test modules are imported (their settings inherit)."""
    # No deadline and no speed check: a loaded machine must not change the outcome.
    settings.register_profile(
        PROFILE,
        derandomize=True,
        database=None,
        print_blob=False,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.load_profile(PROFILE)
    # Counting needs no line coverage of each example, which on Python 3.11 triples the time.
    observability.OBSERVABILITY_COLLECT_COVERAGE = False
    config.stash[_RESULTS] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--only-hypothesis``, deselect every test not written with ``@given``."""
    if not config.getoption("--only-hypothesis"):
        return
    kept = [i for i in items if getattr(getattr(i, "obj", None), "is_hypothesis_test", False)]
    dropped = [i for i in items if i not in kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def _observed(observation: Any, thread: int) -> None:
    """Count one test case Hypothesis ran, on whichever thread ran it."""
    if getattr(observation, "type", None) != "test_case":
        return
    with _lock:
        if _current is None:
            return
        _current["examples"] += 1
        if observation.status == "failed":
            _current["failed"] += 1


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Count the examples of one test while it runs."""
    global _current
    counts = {"examples": 0, "failed": 0}
    with _lock:
        _current = counts
    add_observability_callback(_observed, all_threads=True)
    try:
        return (yield)
    finally:
        remove_observability_callback(_observed)
        with _lock:
            _current = None
        item.stash[_COUNTS] = counts


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each test's outcome, with its counts and recorded properties, once it has run."""
    report = yield
    failed_setup = report.when == "setup" and not report.passed
    if report.when == "call" or failed_setup:
        counts = item.stash.get(_COUNTS, {"examples": 0, "failed": 0})
        item.config.stash[_RESULTS].append(
            {
                "test": item.nodeid,
                "outcome": report.outcome,
                **counts,
                "recorded": {str(k): v for k, v in item.user_properties},
            }
        )
    return report


def pytest_unconfigure(config: pytest.Config) -> None:
    """Write the counts."""
    out = config.getoption("--counts-out", default=None)
    if out is None or _RESULTS not in config.stash:
        return
    lines = [json.dumps(r, sort_keys=True) for r in config.stash[_RESULTS]]
    Path(out).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
