"""Each test against an agent at a URL plays numbers and message ids of its own.

An agent at a URL is one agent for every test of a session, and of the
sessions after it: it remembers who wrote (a user's history) and which
messages it has seen (a dedupe store, as Meta advises, since Meta
redelivers). A test that played another test's number would meet a user
the agent already knows; one whose message ids another test sent would be
dropped as a redelivery. So, as ``harness run --target-url`` does, each test
gets a namespace of its own (:func:`url_namespace`): the session's id and
the test's, from which its users' numbers
(:func:`~harness.suites.realtime.distinct_user`) and its message ids follow.
In-process tests have none: each builds its own agent, and plays the same
numbers and ids on every run, as its seed says.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

__all__ = ["url_namespace"]

_SESSION = pytest.StashKey[str]()


def url_namespace(config: pytest.Config, nodeid: str) -> str:
    """The namespace of test ``nodeid`` against an agent at a URL, new in every session.

    The same test gets the same namespace throughout a session (its users
    keep their numbers while it runs), and another in the next session.
    """
    session = config.stash.get(_SESSION, None)
    if session is None:
        session = config.stash[_SESSION] = f"pytest-{datetime.now(UTC):%Y%m%d%H%M%S%f}"
    return f"{session}:{hashlib.sha256(nodeid.encode()).hexdigest()[:12]}"
