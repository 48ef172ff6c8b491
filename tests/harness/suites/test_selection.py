"""Choosing scenarios by tag (any of --tag, none of --skip-tag) and by -k, never an empty run."""

from __future__ import annotations

import pytest

from harness.exceptions import ConfigError
from harness.suites.scenario import Scenario, parse_scenario
from harness.suites.selection import scenario_keywords, select_by_keyword, select_by_tags


def _scenario(name: str, *tags: str) -> Scenario:
    return parse_scenario(f"name: {name}\ntags: [{', '.join(tags)}]\nsteps:\n  - say: hi\n")


SUITE = [
    _scenario("a", "booking", "happy"),
    _scenario("b", "booking", "whatsapp-only"),
    _scenario("c", "media"),
    _scenario("d"),
]


def _names(scenarios: list[Scenario]) -> list[str]:
    return [s.name for s in scenarios]


@pytest.mark.parametrize(
    ("tags", "skip", "expected"),
    [
        ((), (), ["a", "b", "c", "d"]),
        (("booking",), (), ["a", "b"]),
        (("happy", "media"), (), ["a", "c"]),  # any of them
        (("booking", "nothing-has-this"), (), ["a", "b"]),  # an unknown tag selects nothing
        ((), ("whatsapp-only",), ["a", "c", "d"]),
        ((), ("booking", "media"), ["d"]),
        (("booking",), ("whatsapp-only",), ["a"]),
    ],
)
def test_tags_keep_any_and_skip_tags_leave_out(
    tags: tuple[str, ...], skip: tuple[str, ...], expected: list[str]
) -> None:
    assert _names(select_by_tags(SUITE, tags, skip)) == expected


@pytest.mark.parametrize(
    ("tags", "skip", "asked"),
    [
        (("nothing-has-this",), (), "--tag nothing-has-this"),
        (("media",), ("media",), "--tag media --skip-tag media"),
        ((), ("booking", "media", "happy", "x"), "--skip-tag booking --skip-tag happy"),
    ],
)
def test_a_selection_of_nothing_is_one_line(
    tags: tuple[str, ...], skip: tuple[str, ...], asked: str
) -> None:
    suite = SUITE[:3]
    with pytest.raises(ConfigError) as caught:
        select_by_tags(suite, tags, skip)
    message = str(caught.value)
    assert asked in message
    assert message.endswith(
        "selects none of the 3 scenarios (their tags: booking, happy, media, whatsapp-only)"
    )
    assert "\n" not in message


def test_an_empty_suite_stays_empty_without_an_error() -> None:
    assert select_by_tags([], ["booking"], []) == []


def test_a_keyword_expression_keeps_the_scenarios_whose_names_or_tags_match() -> None:
    assert _names(select_by_keyword(SUITE, "booking and not whatsapp")) == ["a"]
    assert _names(select_by_keyword(SUITE, "c or d")) == ["c", "d"]


def test_a_keyword_matches_the_scenario_files_path() -> None:
    on_disk = parse_scenario("steps:\n  - say: hi\n", path="suite/payments/refund.yaml")
    assert select_by_keyword([*SUITE, on_disk], "payments") == [on_disk]
    assert scenario_keywords(on_disk) == ["refund", "suite/payments/refund.yaml"]


def test_a_keyword_expression_that_matches_nothing_is_a_usage_error() -> None:
    with pytest.raises(ConfigError) as caught:
        select_by_keyword(SUITE, "refund")
    assert str(caught.value) == "-k 'refund' matches none of the 4 scenarios"
