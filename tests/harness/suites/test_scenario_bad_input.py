"""No text breaks the scenario loader: it gives a scenario, or one line naming the file.

Three kinds of text: anything at all; YAML made of the words scenarios use,
shaped at random; and the bundled and sample scenarios with a few
characters or lines changed, the typos a person makes. Then a scenario
whose waits outrun any date, which once failed mid-run without a line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.exceptions import ScenarioError
from harness.suites.scenario import Scenario, parse_scenario

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = sorted(
    [*(ROOT / "scenarios").rglob("*.yaml"), *(ROOT / "tests/data/scenarios/good").glob("*.yaml")]
)
WORDS = [
    "name", "steps", "say", "tap", "send", "expect", "wait", "advance", "redeliver", "users",
    "faults", "invariants", "agent", "as", "gap", "within", "label", "reply_to", "wa_id",
    "bsuid", "type", "text", "body", "reply_contains", "tool_called", "args", "params",
    "never_reasks", "one_reply_per_burst", "last", "last_reply", "25h", "-5m", "9:00", "yes",
    "${friday}", "~", "&a", "*a", "<<", "!!str", "!!int", "image", "location", "latitude",
]  # fmt: skip


def _texts() -> st.SearchStrategy[str]:
    anything = st.text(st.characters(exclude_categories=()), max_size=200)
    words = st.sampled_from(WORDS)
    leaves = words | st.integers() | st.floats() | st.booleans() | st.none() | st.text(max_size=8)
    data = st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(words, inner, max_size=4),
        max_leaves=25,
    )
    shaped = data.map(lambda value: yaml.safe_dump(value, allow_unicode=True))
    samples = st.sampled_from([path.read_text(encoding="utf-8") for path in SAMPLES])
    return anything | shaped | samples | samples.flatmap(_typo)


def _typo(text: str) -> st.SearchStrategy[str]:
    """``text`` with a character inserted, dropped or changed, or a line doubled or dropped."""
    position = st.integers(min_value=0, max_value=max(len(text) - 1, 0))
    char = st.sampled_from([":", "-", " ", "\n", "[", "{", "'", '"', "#", "&", "*", "!", "x", "9"])
    lines = text.splitlines(keepends=True)
    line = st.integers(min_value=0, max_value=max(len(lines) - 1, 0))
    return st.one_of(
        st.tuples(position, char).map(lambda p: text[: p[0]] + p[1] + text[p[0] :]),
        position.map(lambda p: text[:p] + text[p + 1 :]),
        st.tuples(position, char).map(lambda p: text[: p[0]] + p[1] + text[p[0] + 1 :]),
        line.map(lambda n: "".join(lines[: n + 1] + lines[n:])),
        line.map(lambda n: "".join(lines[:n] + lines[n + 1 :])),
    )


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(_texts())
def test_any_text_is_a_scenario_or_one_line_naming_the_file(text: str) -> None:
    try:
        scenario = parse_scenario(text, path="typo.yaml")
    except ScenarioError as exc:
        message = str(exc)
        event("refused")
        assert message.startswith("typo.yaml")
        assert "\n" not in message
        assert message.count(": ") >= 1
    else:
        event("loaded")
        assert isinstance(scenario, Scenario)
        assert parse_scenario(scenario.to_yaml(), path="again.yaml").steps


@pytest.mark.parametrize(
    ("steps", "line"),
    [
        ("  - say: hi\n  - wait: 999999999d\n", 4),
        ("  - say: [a, b, c]\n    gap: 999999999d\n", 3),
        ("  - say: hi\n" + "  - wait: 36000d\n" * 2, 5),
        ("  - say: hi\n  - expect: {replies: 1}\n    within: 36501d\n", 4),
    ],
    ids=["one wait", "a burst's gaps", "waits adding up", "within"],
)
def test_a_scenario_longer_than_a_century_is_refused_at_the_step(steps: str, line: int) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario("name: long\nsteps:\n" + steps, path="long.yaml")
    index = {3: 0, 4: 1, 5: 2}[line]
    assert str(caught.value) == (
        f"long.yaml:{line}: steps[{index}]: by this step the scenario takes over 36500 days,"
        " past what a clock keeps"
    )
