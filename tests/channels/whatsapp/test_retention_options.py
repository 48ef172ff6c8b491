"""``harness serve``'s --keep-* options: one retention policy, bad values refused in one line."""

from __future__ import annotations

from datetime import timedelta

import click
import pytest
from click.testing import CliRunner

from channels.whatsapp._retention_options import retention_options
from channels.whatsapp.cli import serve_command
from channels.whatsapp.retention import SERVE_RETENTION, RetentionPolicy


def _policy(*args: str) -> RetentionPolicy:
    """The policy a command with the retention options is handed for ``args``."""
    seen: list[RetentionPolicy] = []

    @click.command()
    @retention_options
    def command(retention: RetentionPolicy) -> None:
        seen.append(retention)

    result = CliRunner().invoke(command, list(args))
    assert result.exit_code == 0, result.output
    [policy] = seen
    return policy


def test_by_default_serve_keeps_a_day_and_a_few_hundred_turns() -> None:
    assert _policy() == SERVE_RETENTION
    written = RetentionPolicy(
        events=5_000,
        events_for=timedelta(days=1),
        outbox=1_000,
        outbox_for=timedelta(days=1),
        messages=1_000,
        messages_for=timedelta(days=7),
        media=100,
        active=timedelta(minutes=10),
    )
    assert written == SERVE_RETENTION


def test_each_limit_is_a_count_or_an_age_or_all() -> None:
    policy = _policy(
        *("--keep-events", "all", "--keep-events-for", "2h"),
        *("--keep-outbox", "50", "--keep-outbox-for", "ALL"),
        *("--keep-messages", "300", "--keep-messages-for", "1d12h"),
        *("--keep-media", "all", "--active-for", "90s"),
    )
    assert policy == RetentionPolicy(
        events=None,
        events_for=timedelta(hours=2),
        outbox=50,
        outbox_for=None,
        messages=300,
        messages_for=timedelta(days=1, hours=12),
        media=None,
        active=timedelta(seconds=90),
    )
    assert not policy.keeps_all


def test_keep_all_turns_every_limit_off() -> None:
    assert _policy("--keep-all", "--keep-events", "5").keeps_all


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--keep-events", "0"],
            "Error: Invalid value for '--keep-events': expected a whole number from 1, or"
            " 'all'; got '0'",
        ),
        (
            ["--keep-outbox", "many"],
            "Error: Invalid value for '--keep-outbox': expected a whole number from 1, or"
            " 'all'; got 'many'",
        ),
        (
            ["--keep-messages-for", "soon"],
            "Error: Invalid value for '--keep-messages-for': 'soon': expected a number with"
            " a unit (d, h, m, s, ms), e.g. 90s, 5m, 1d2h or 1.5h",
        ),
        (
            ["--keep-events-for", "-1h"],
            "Error: Invalid value for '--keep-events-for': '-1h': it must be longer than 0",
        ),
        (
            ["--active-for", "all"],
            "Error: Invalid value for '--active-for': 'all': expected a number with a unit"
            " (d, h, m, s, ms), e.g. 90s, 5m, 1d2h or 1.5h",
        ),
    ],
)
def test_a_bad_limit_is_refused_in_one_line_naming_the_option(args: list[str], line: str) -> None:
    result = CliRunner().invoke(serve_command, args)
    assert result.exit_code == 2
    assert [text for text in result.output.splitlines() if text.startswith("Error:")] == [line]


def test_serve_lists_the_limits_in_its_help() -> None:
    result = CliRunner().invoke(serve_command, ["--help"])
    for option in ("--keep-events", "--keep-outbox-for", "--keep-messages", "--keep-all"):
        assert option in result.output
