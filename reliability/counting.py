"""A pytest plugin that counts what the generative tests tried, for RELIABILITY.md.

Loaded by :mod:`reliability.suite_probes` as ``-p reliability.counting
--counts-out FILE``. It makes the runs repeatable: Hypothesis derandomized,
with no example database, no deadline and no speed check, and without the
constants Hypothesis reads from the project's own modules, so the same tests
try the same examples on any machine, loaded or not, whatever the code under
test holds. It keeps only the tests it is asked for (``--generative`` keeps
those Hypothesis drives, ``--also NODEID`` adds others), and writes one JSON
object a line to FILE per test: its node id, its outcome, how many test cases
Hypothesis ran for it and how many failed, and what the test recorded itself
with ``record_property``.
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
from hypothesis.internal.conjecture import providers
from hypothesis.internal.constants_ast import Constants
from hypothesis.internal.observability import (
    add_observability_callback,
    remove_observability_callback,
)

PROFILE = "reliability"

_RESULTS = pytest.StashKey[list[dict[str, Any]]]()
_COUNTS = pytest.StashKey[dict[str, int]]()
_NONE: dict[str, int] = {"examples": 0, "failed": 0}
_EMPTY = Constants()
_lock = threading.Lock()
_current: dict[str, int] | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--counts-out``, ``--generative`` and ``--also``."""
    group = parser.getgroup("reliability counts")
    group.addoption("--counts-out", default=None, help="write the counts here, as JSON lines")
    group.addoption(
        "--generative", action="store_true", help="run only the tests Hypothesis drives"
    )
    group.addoption(
        "--also", action="append", default=[], metavar="NODEID", help="and this test too"
    )


def pytest_configure(config: pytest.Config) -> None:
    """Fix Hypothesis's choices before the test modules are imported (their settings inherit)."""
    settings.register_profile(
        PROFILE,
        derandomize=True,
        database=None,
        print_blob=False,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.load_profile(PROFILE)
    # Counting needs no line coverage of each example (on Python 3.11 it triples the time);
    # Hypothesis exposes this switch for that reason.
    observability.OBSERVABILITY_COLLECT_COVERAGE = False
    # Hypothesis also tries literal constants it finds in the project's modules imported so
    # far: an edit anywhere in the code, or another test run first, would move every count.
    # The counted run draws from its strategies and Hypothesis's own constants only.
    providers._get_local_constants = _no_local_constants
    config.stash[_RESULTS] = []


def _no_local_constants() -> Constants:
    """An empty pool of the project's own constants, in place of the one read from its code."""
    return _EMPTY


def _generative(item: pytest.Item) -> bool:
    """Whether Hypothesis drives the test (``@given``, schemathesis's ``parametrize``)."""
    return bool(getattr(getattr(item, "obj", None), "is_hypothesis_test", False))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--generative``, deselect the tests Hypothesis does not drive, but ``--also``."""
    if not config.getoption("--generative"):
        return
    also = tuple(config.getoption("--also"))
    kept = [i for i in items if _generative(i) or i.nodeid.startswith(also or ("\0",))]
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
    """Count the test cases of one Hypothesis test while it runs."""
    global _current
    counts = {"examples": 0, "failed": 0}
    item.stash[_COUNTS] = counts
    if not _generative(item):
        # Observing a state machine makes Hypothesis print its steps, which schemathesis's
        # machines do not support; those tests count themselves (record_property).
        return (yield)
    with _lock:
        _current = counts
    add_observability_callback(_observed, all_threads=True)
    try:
        return (yield)
    finally:
        remove_observability_callback(_observed)
        with _lock:
            _current = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each test's outcome, with its counts and recorded properties, once it has run."""
    report = yield
    if report.when == "call" or (report.when == "setup" and not report.passed):
        counts: dict[str, int] = item.stash.get(_COUNTS, _NONE)
        item.config.stash[_RESULTS].append(
            {
                "test": item.nodeid,
                "name": item.name,
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
    lines = [json.dumps(r, sort_keys=True) + "\n" for r in config.stash[_RESULTS]]
    Path(out).write_text("".join(lines), encoding="utf-8")
